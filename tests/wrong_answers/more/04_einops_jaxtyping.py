"""Exercise 4, einops and jaxtyping: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_MEAN = '''
{decorator}
def checked_masked_mean(x: Float[Tensor, "batch seq hidden"],
                        mask: {mask}) -> Float[Tensor, "batch hidden"]:
{body}
'''
_MEAN_BODY = '''    weights = mask.to(x.dtype)
    total = einsum(x, weights, "batch seq hidden, batch seq -> batch hidden")
    return total / reduce(weights, "batch seq -> batch 1", "sum")'''
_SCORES = '''
{decorator}
def checked_attention_scores(q: Float[Tensor, "{q}"], k: Float[Tensor, "{k}"]) -> Float[Tensor, "{out}"]:
    return attention_scores(q, k)
'''
_GOOD = dict(decorator="@typechecked", q="*batch seq_q head_dim", k="*batch seq_k head_dim", out="*batch seq_q seq_k")

WRONG = [
    Wrong("split_qkv", "returns a list [q, k, v], not a tuple", r"tuple", """
def split_qkv(qkv, n_heads):
    return list(rearrange(qkv, "b s (three h d) -> three b h s d", three=3, h=n_heads))
"""),
    Wrong("split_qkv", "head_dim before heads inside the parentheses", r"slowest|comes first|order", """
def split_qkv(qkv, n_heads):
    q, k, v = rearrange(qkv, "b s (three d h) -> three b h s d", three=3, h=n_heads)
    return q, k, v
"""),
    Wrong("split_qkv", "splits the features into n_heads parts first, then each into q, k and v",
          r"\[q \| k \| v\]|slowest|comes first", """
def split_qkv(qkv, n_heads):
    q, k, v = rearrange(qkv, "b s (h three d) -> three b h s d", three=3, h=n_heads)
    return q, k, v
"""),
    Wrong("merge_heads", "reshapes without moving heads next to head_dim", r"side by side|followed by|next to", """
def merge_heads(x):
    batch, heads, seq, head_dim = x.shape
    return x.reshape(batch, seq, heads * head_dim)
"""),
    Wrong("merge_heads", "leaves heads and head_dim as two axes", r"heads \* head_dim|one axis|merged", """
def merge_heads(x):
    return rearrange(x, "b h s d -> b s h d")
"""),
    Wrong("merge_heads", "view after the transpose, which torch refuses on a non-contiguous tensor", r"contiguous", """
def merge_heads(x):
    batch, heads, seq, head_dim = x.shape
    return x.transpose(1, 2).view(batch, seq, heads * head_dim)
"""),
    Wrong("attention_scores", "k.T, which reverses every axis of a 4-d k, not the last two", r"last two|every axis|reverses", """
def attention_scores(q, k):
    return q @ k.T / math.sqrt(q.shape[-1])
"""),
    Wrong("attention_scores", "divides by head_dim instead of its square root", r"square root", """
def attention_scores(q, k):
    return einsum(q, k, "... sq d, ... sk d -> ... sq sk") / q.shape[-1]
"""),
    Wrong("attention_scores", "applies the softmax: the task asks for the scores before it", r"softmax", """
def attention_scores(q, k):
    return torch.softmax(einsum(q, k, "... sq d, ... sk d -> ... sq sk") / math.sqrt(q.shape[-1]), dim=-1)
"""),
    Wrong("checked_attention_scores", "annotations without a decorator, so nothing checks them", r"no decorator",
          _SCORES.format(**{**_GOOD, "decorator": ""})),
    Wrong("checked_attention_scores", "@beartype alone, which never compares sizes across arguments", r"jaxtyped",
          _SCORES.format(**{**_GOOD, "decorator": "@beartype"})),
    Wrong("checked_attention_scores", "names one leading axis batch, so a 4-d q and k are rejected",
          r"\*batch|any number|leading", _SCORES.format(
              **{**_GOOD, "q": "batch seq_q head_dim", "k": "batch seq_k head_dim", "out": "batch seq_q seq_k"})),
    Wrong("checked_masked_mean", "no decorator: annotations alone check nothing", r"no decorator", _MEAN.format(
        decorator="", mask='Bool[Tensor, "batch seq"]', body=_MEAN_BODY)),
    Wrong("checked_masked_mean", "multiplies x by the (batch, seq) mask, which does not line up with (batch, seq, hidden)",
          r"line(s)? up|axis for hidden|broadcast", _MEAN.format(decorator="@typechecked", mask='Bool[Tensor, "batch seq"]',
                                                                 body='''    weights = mask.to(x.dtype)
    return (x * weights).sum(1) / weights.sum(1, keepdim=True)''')),
    Wrong("checked_masked_mean", "divides by the number of real tokens in the whole batch, not in each row",
          r"each row|per row|row 0", _MEAN.format(decorator="@typechecked", mask='Bool[Tensor, "batch seq"]',
                                                  body='''    weights = mask.to(x.dtype)
    return einsum(x, weights, "batch seq hidden, batch seq -> batch hidden") / weights.sum()''')),
]
