"""Exercise 4, einops and jaxtyping: typical wrong answers."""
from tests.wrong_answers import Wrong

WRONG = [
    Wrong("split_qkv", "the factors in the parentheses in the wrong order: heads outermost instead of the 3",
          r"parenthes|outermost|\[q \| k \| v\]|3 first", """
def split_qkv(qkv, n_heads):
    q, k, v = rearrange(qkv, "batch seq (heads three head_dim) -> three batch heads seq head_dim", three=3, heads=n_heads)
    return q, k, v
"""),
    Wrong("split_qkv", "keeps seq before heads in the output", r"\(batch, heads, seq, head_dim\)|\(batch, n_heads, seq|heads before seq|shape", """
def split_qkv(qkv, n_heads):
    q, k, v = rearrange(qkv, "batch seq (three heads head_dim) -> three batch seq heads head_dim", three=3, heads=n_heads)
    return q, k, v
"""),
    Wrong("merge_heads", "puts head_dim outside heads in the merged axis", r"side by side|head 0's|heads head_dim|followed by", """
def merge_heads(x):
    return rearrange(x, "batch heads seq head_dim -> batch seq (head_dim heads)")
"""),
    Wrong("merge_heads", "merges heads into seq instead of into the features", r"\(batch, seq, (heads \* head_dim|d_model)\)|shape", """
def merge_heads(x):
    return rearrange(x, "batch heads seq head_dim -> batch (heads seq) head_dim")
"""),
    Wrong("attention_scores", "forgets the 1/sqrt(head_dim) scaling", r"sqrt", """
def attention_scores(q, k):
    return einsum(q, k, "... seq_q head_dim, ... seq_k head_dim -> ... seq_q seq_k")
"""),
    Wrong("attention_scores", "scales by the square root of seq instead of head_dim", r"head_dim", """
def attention_scores(q, k):
    return einsum(q, k, "... seq_q head_dim, ... seq_k head_dim -> ... seq_q seq_k") / math.sqrt(q.shape[-2])
"""),
    Wrong("attention_scores", "names the leading axes instead of using ..., so other ranks fail", r"\.\.\.", """
def attention_scores(q, k):
    return einsum(q, k, "batch heads seq_q d, batch heads seq_k d -> batch heads seq_q seq_k") / math.sqrt(q.shape[-1])
"""),
    Wrong("checked_attention_scores", "a bare ... for the leading axes, so q and k may disagree there", r"\*batch|leading axes", """
@typechecked
def checked_attention_scores(q: Float[Tensor, "... seq_q head_dim"],
                             k: Float[Tensor, "... seq_k head_dim"]) -> Float[Tensor, "... seq_q seq_k"]:
    '''Scores with checked shapes.'''
    return attention_scores(q, k)
"""),
    Wrong("checked_attention_scores", "gives k's last axis its own name, so head_dim is not checked", r"head_dim", """
@typechecked
def checked_attention_scores(q: Float[Tensor, "*batch seq_q head_dim"],
                             k: Float[Tensor, "*batch seq_k d_k"]) -> Float[Tensor, "*batch seq_q seq_k"]:
    '''Scores with checked shapes.'''
    return attention_scores(q, k)
"""),
    Wrong("checked_masked_mean", "averages over every position, padding included", r"mask|padding|real tokens|positions 0 and 1", """
@typechecked
def checked_masked_mean(x: Float[Tensor, "batch seq hidden"], mask: Bool[Tensor, "batch seq"]) -> Float[Tensor, "batch hidden"]:
    '''Mean over the real tokens.'''
    return reduce(x, "batch seq hidden -> batch hidden", "mean")
"""),
    Wrong("checked_masked_mean", "annotates the mask as Float, so a float mask is accepted", r"Bool", """
@typechecked
def checked_masked_mean(x: Float[Tensor, "batch seq hidden"], mask: Float[Tensor, "batch seq"] | Bool[Tensor, "batch seq"]) -> Float[Tensor, "batch hidden"]:
    '''Mean over the real tokens.'''
    weights = mask.to(x.dtype)
    total = einsum(x, weights, "batch seq hidden, batch seq -> batch hidden")
    return total / reduce(weights, "batch seq -> batch 1", "sum")
"""),
    Wrong("checked_masked_mean", "divides by the sequence length instead of the number of real tokens", r"real tokens|count|number of|True entries|positions 0 and 1", """
@typechecked
def checked_masked_mean(x: Float[Tensor, "batch seq hidden"], mask: Bool[Tensor, "batch seq"]) -> Float[Tensor, "batch hidden"]:
    '''Mean over the real tokens.'''
    total = einsum(x, mask.to(x.dtype), "batch seq hidden, batch seq -> batch hidden")
    return total / x.shape[1]
"""),
    Wrong("scores_gib", 'the head axis forgotten', r"head", """
scores_gib = 8 * 2048 * 2048 * 4 / 2**30
"""),
    Wrong("scores_gib", 'seq x head width, not seq x seq', r"seq x seq", """
scores_gib = 8 * 12 * 2048 * 64 * 4 / 2**30
"""),
]
