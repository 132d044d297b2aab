"""Exercise 10, accounting a training run: the parameter tensors listed by shape and multiplied out, every matmul of
one sequence listed as (m, k, n) and summed, ZeRO as a table of replicated and sharded bytes, and the days from the
tokens the cluster gets through in a day."""

VARIANTS = {
    "param_count": """
def param_count(shape: GPT2Shape) -> int:
    '''Trainable parameters of the GPT-2-style model of this shape (the tied head has none of its own).'''
    d, f = shape.d_model, shape.d_ff
    block = [(d,), (d,),                  # LayerNorm weight and bias
             (3 * d, d), (3 * d,),        # fused q, k, v projection
             (d, d), (d,),                # attention output
             (d,), (d,),                  # LayerNorm
             (f, d), (f,), (d, f), (d,)]  # MLP up and down
    tensors = [(shape.vocab_size, d), (shape.context_length, d)] + block * shape.num_layers + [(d,), (d,)]
    return sum(math.prod(t) for t in tensors)
""",
    "training_flops_per_token": """
def training_flops_per_token(shape: GPT2Shape) -> int:
    '''FLOPs per token of forward, loss and backward on full sequences, counted like FlopCounterMode (matmuls only).'''
    s, d, f, heads = shape.context_length, shape.d_model, shape.d_ff, shape.num_heads
    head_dim = d // heads
    # every matmul of one sequence as (m, k, n)
    block = [(s, d, 3 * d), (s, d, d), (s, d, f), (s, f, d)] + [(s, head_dim, s), (s, s, head_dim)] * heads
    matmuls = block * shape.num_layers + [(s, d, shape.vocab_size)]
    forward = 0
    for m, k, n in matmuls:
        forward += 2 * m * k * n
    backward = 2 * forward       # the gradients of both inputs of every matmul
    return (forward + backward) // s
""",
    "memory_per_gpu": """
def memory_per_gpu(shape: GPT2Shape, num_gpus: int, zero_stage: int) -> float:
    '''Bytes per GPU of bf16 weights and gradients and fp32 AdamW state (master copy, two moments) with ZeRO.'''
    # stage -> (bytes per parameter on every GPU, bytes per parameter split across the GPUs)
    table = {0: (16, 0), 1: (4, 12), 2: (2, 14), 3: (0, 16)}
    if zero_stage not in table:
        raise ValueError("ZeRO stages are 0, 1, 2 and 3")
    replicated, sharded = table[zero_stage]
    n = param_count(shape)
    return float(replicated * n) + sharded * n / num_gpus
""",
    "training_days": """
def training_days(shape: GPT2Shape, tokens: float, num_gpus: int, device_name: str, mfu: float) -> float | None:
    '''Days to train on `tokens` tokens with num_gpus GPUs at their bf16 peak times mfu; None if the peak is unknown.'''
    peak = peak_flops(device_name, torch.bfloat16)
    if peak is None:
        return None
    cluster_flops_per_day = 24 * 3600 * peak * mfu * num_gpus
    tokens_per_day = cluster_flops_per_day / training_flops_per_token(shape)
    return tokens / tokens_per_day
""",
    "run_mfu": """
run_mfu = (6 * 124_000_000 * 524_288 / 1.2) / 8 / 312e12
""",
    "gpt3_days": """
gpt3_days = (6 * 175 * 300 * 10**18) / (0.4 * 1024 * 312 * 10**12 * 24 * 3600)
""",
}
