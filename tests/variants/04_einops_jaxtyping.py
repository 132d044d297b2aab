"""Exercise 4, einops and jaxtyping: unbind instead of unpacking, rearrange of a list of heads, q scaled before
the einsum, a matmul under jaxtyped(beartype), and the mean as an einsum with weights 1/count."""

VARIANTS = {
    "split_qkv": """
def split_qkv(qkv: Float[Tensor, "batch seq three_d_model"], n_heads: int) -> tuple[Tensor, Tensor, Tensor]:
    '''(q, k, v), each (batch, n_heads, seq, head_dim), from a fused projection laid out [q | k | v].'''
    head_dim = qkv.shape[-1] // (3 * n_heads)
    parts = rearrange(qkv, "b s (part h d) -> b h s d part", part=3, d=head_dim)
    q, k, v = parts.unbind(dim=-1)
    return q, k, v
""",
    "merge_heads": """
def merge_heads(x: Float[Tensor, "batch heads seq head_dim"]) -> Float[Tensor, "batch seq d_model"]:
    '''(batch, heads, seq, head_dim) -> (batch, seq, heads * head_dim), heads side by side.'''
    heads = list(x.unbind(dim=1))  # rearrange stacks a list of tensors along a new first axis
    return rearrange(heads, "h b s d -> b s (h d)")
""",
    "attention_scores": """
def attention_scores(q: Tensor, k: Tensor) -> Tensor:
    '''q (..., seq_q, head_dim) and k (..., seq_k, head_dim) -> q . k / sqrt(head_dim), shape (..., seq_q, seq_k).'''
    scaled_q = q / math.sqrt(q.shape[-1])
    return einsum(scaled_q, k, "... i d, ... j d -> ... i j")
""",
    "checked_attention_scores": """
@jaxtyped(typechecker=beartype)
def checked_attention_scores(q: Float[Tensor, "*batch seq_q head_dim"],
                             k: Float[Tensor, "*batch seq_k head_dim"]) -> Float[Tensor, "*batch seq_q seq_k"]:
    '''Attention scores whose argument and result shapes are checked on every call.'''
    return (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
""",
    "checked_masked_mean": """
@typechecked
def checked_masked_mean(x: Float[Tensor, "batch seq hidden"],
                        mask: Bool[Tensor, "batch seq"]) -> Float[Tensor, "batch hidden"]:
    '''Mean of x over the positions where mask is True, with shapes checked on every call.'''
    counts = reduce(mask.to(x.dtype), "batch seq -> batch 1", "sum")
    weights = mask.to(x.dtype) / counts     # 1 / count at real tokens, 0 at padding
    return einsum(weights, x, "batch seq, batch seq hidden -> batch hidden")
""",
    "scores_gib": """
scores_gib = 8 * 12 * 2048**2 * 32 / 8 / 1024**3
""",
}
