"""Exercise 4, einops and jaxtyping: wrong answers written from the student edition alone (see __init__.py). Five more
were written and left out, as in the other sets: forbidden shortcuts (the old view/permute and transpose/reshape, torch's
einsum, a matmul with .mT, torch's .sum), which the rule checker names (utils/rules.py), not a test's feedback."""
from tests.wrong_answers import Wrong

_SCORES = '''
{decorator}
def checked_attention_scores(q: {q}, k: {k}) -> {out}:
    """Scaled dot-product scores with checked shapes."""
    return attention_scores(q, k)
'''
_G = dict(decorator="@typechecked", q='Float[Tensor, "*batch seq_q head_dim"]', k='Float[Tensor, "*batch seq_k head_dim"]',
          out='Float[Tensor, "*batch seq_q seq_k"]')
_MEAN = '''
{decorator}
def checked_masked_mean(x: Float[Tensor, "batch seq hidden"], mask: {mask}) -> Float[Tensor, "batch hidden"]:
    """The mean of x over the real tokens."""
    weights = mask.to(x.dtype)
    total = einsum(x, weights, "batch seq hidden, batch seq -> batch hidden")
    return total / {count}
'''
_M = dict(decorator="@typechecked", mask='Bool[Tensor, "batch seq"]', count='reduce(weights, "batch seq -> batch 1", "sum")')

WRONG = [
    Wrong("split_qkv", "no h= given: rearrange cannot split a group with two unknown sizes",
          r"h=|n_heads|all but one|two unknown|infer|size of", """
def split_qkv(qkv, n_heads):
    q, k, v = rearrange(qkv, "b s (three h d) -> three b h s d", three=3)
    return q, k, v
"""),
    Wrong("split_qkv", "three innermost in the parentheses: (h d three)", r"\[q \| k \| v\]|slowest|outermost|comes first", """
def split_qkv(qkv, n_heads):
    q, k, v = rearrange(qkv, "b s (h d three) -> three b h s d", three=3, h=n_heads)
    return q, k, v
"""),
    Wrong("split_qkv", "seq before heads in the output", r"heads.{0,30}before.{0,10}seq|axis order|\(batch, (n_)?heads, seq|order of the (output )?axes", """
def split_qkv(qkv, n_heads):
    q, k, v = rearrange(qkv, "b s (three h d) -> three b s h d", three=3, h=n_heads)
    return q, k, v
"""),
    Wrong("split_qkv", "returns the stacked 5-d tensor, not a tuple", r"tuple", """
def split_qkv(qkv, n_heads):
    return rearrange(qkv, "b s (three h d) -> three b h s d", three=3, h=n_heads)
"""),
    Wrong("split_qkv", "head_dim as width // n_heads, forgetting the 3", r"head_dim|3 \* n_heads|width|three", """
def split_qkv(qkv, n_heads):
    head_dim = qkv.shape[-1] // n_heads
    q, k, v = rearrange(qkv, "b s (three h d) -> three b h s d", three=3, h=n_heads, d=head_dim)
    return q, k, v
"""),
    Wrong("merge_heads", "(d h) in the merged axis", r"side by side|head 0's|followed by", """
def merge_heads(x):
    return rearrange(x, "b h s d -> b s (d h)")
"""),
    Wrong("merge_heads", "merges seq and head_dim, keeping the heads axis", r"\(batch, seq, (heads \* head_dim|d_model)\)|heads.{0,20}merged|one axis|axis order",
          """
def merge_heads(x):
    return rearrange(x, "b h s d -> b h (s d)")
"""),
    Wrong("merge_heads", "merges batch and heads", r"\(batch, seq|batch", """
def merge_heads(x):
    return rearrange(x, "b h s d -> (b h) s d")
"""),
    Wrong("merge_heads", "seq first: (seq, batch, d_model)", r"batch.{0,10}seq|axis order|\(batch, seq", """
def merge_heads(x):
    return rearrange(x, "b h s d -> s b (h d)")
"""),
    Wrong("attention_scores", "no scaling", r"sqrt|scal", """
def attention_scores(q, k):
    return einsum(q, k, "... i d, ... j d -> ... i j")
"""),
    Wrong("attention_scores", "multiplies by sqrt(head_dim) instead of dividing", r"divid|multipl", """
def attention_scores(q, k):
    return einsum(q, k, "... i d, ... j d -> ... i j") * math.sqrt(q.shape[-1])
"""),
    Wrong("attention_scores", "one axis name for the queries and the keys", r"seq_q|seq_k|own (seq|name|axis)|same name|different names", """
def attention_scores(q, k):
    return einsum(q, k, "... s d, ... s d -> ... s s") / math.sqrt(q.shape[-1])
"""),
    Wrong("attention_scores", "scales by the square root of seq_k", r"head_dim", """
def attention_scores(q, k):
    return einsum(q, k, "... i d, ... j d -> ... i j") / math.sqrt(k.shape[-2])
"""),
    Wrong("checked_attention_scores", "a bare ... for the leading axes of both", r"\*batch|named variadic|leading axes.{0,30}agree",
          _SCORES.format(**{**_G, "q": 'Float[Tensor, "... seq_q head_dim"]', "k": 'Float[Tensor, "... seq_k head_dim"]',
                            "out": 'Float[Tensor, "... seq_q seq_k"]'})),
    Wrong("checked_attention_scores", "one name, seq, for the queries' and the keys' axes",
          r"seq_q|seq_k|own name|as many keys|same name|keys? .{0,30}differ",
          _SCORES.format(**{**_G, "q": 'Float[Tensor, "*batch seq head_dim"]', "k": 'Float[Tensor, "*batch seq head_dim"]',
                            "out": 'Float[Tensor, "*batch seq seq"]'})),
    Wrong("checked_attention_scores", "no decorator", r"decorator|typechecked", _SCORES.format(**{**_G, "decorator": ""})),
    Wrong("checked_attention_scores", "plain Tensor annotations on the inputs, so nothing is checked",
          r"Float\[Tensor|annotation", _SCORES.format(**{**_G, "q": "Tensor", "k": "Tensor"})),
    Wrong("checked_attention_scores", "the result annotated as queries by head_dim", r"return|result|output|seq_q seq_k",
          _SCORES.format(**{**_G, "out": 'Float[Tensor, "*batch seq_q head_dim"]'})),
    Wrong("checked_attention_scores", "*batch in q but *b in k, so the leading axes are not compared",
          r"same name|shared name|one name|\*batch",
          _SCORES.format(**{**_G, "k": 'Float[Tensor, "*b seq_k head_dim"]'})),
    Wrong("checked_masked_mean", "divides by the sequence length", r"real tokens|count|True entries|number of",
          _MEAN.format(**{**_M, "count": "x.shape[1]"})),
    Wrong("checked_masked_mean", "a plain mean over every position", r"mask|padding|real tokens", '''
@typechecked
def checked_masked_mean(x: Float[Tensor, "batch seq hidden"], mask: Bool[Tensor, "batch seq"]) -> Float[Tensor, "batch hidden"]:
    """The mean of x over the real tokens."""
    return reduce(x, "batch seq hidden -> batch hidden", "mean")
'''),
    Wrong("checked_masked_mean", "the mask annotated Float", r"\bBool\b|\bbool\b|True and False", _MEAN.format(**{**_M, "mask": 'Float[Tensor, "batch seq"]'})),
    Wrong("checked_masked_mean", "the mask's axes named b s, so they are not compared with x's", r"share|same name|agree",
          _MEAN.format(**{**_M, "mask": 'Bool[Tensor, "b s"]'})),
    Wrong("checked_masked_mean", "the count reduced to (batch,), which does not line up with (batch, hidden)",
          r"line(s)? up|per row|broadcast|\(batch, 1\)|keep.{0,20}axis|hidden axis",
          _MEAN.format(**{**_M, "count": 'reduce(weights, "batch seq -> batch", "sum")'})),
    Wrong("scores_gib", "2 bytes per score (bf16) for float32", r"bf16|2 bytes|float32|4 bytes", "scores_gib = 8 * 12 * 2048 * 2048 * 2 / 2**30\n"),
    Wrong("scores_gib", "GB instead of GiB", r"\bGB\b|10\^9", "scores_gib = 8 * 12 * 2048 * 2048 * 4 / 1e9\n"),
    Wrong("scores_gib", "one sequence: the batch forgotten", r"batch", "scores_gib = 12 * 2048 * 2048 * 4 / 2**30\n"),
    Wrong("scores_gib", "counts the scores and their softmax", r"one (scores )?tensor|only the scores|twice|softmax", "scores_gib = 2 * 8 * 12 * 2048 * 2048 * 4 / 2**30\n"),
    Wrong("scores_gib", "bits, not bytes", r"bits", "scores_gib = 8 * 12 * 2048 * 2048 * 32 / 2**30\n"),
]
