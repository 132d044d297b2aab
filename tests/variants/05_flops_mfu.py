"""Exercise 5, FLOPs and MFU: broadcasting by hand, per-layer sums, other orders of the float formulas, the bytes of
a batched matmul from its output shape, and the roofline's time from its rate instead of from the two times."""

VARIANTS = {
    "matmul_flop_count": """
def matmul_flop_count(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> int:
    '''FLOPs of torch.matmul on tensors of shapes (..., m, k) and (..., k, n), batch dimensions broadcast.'''
    batch_a, batch_b = list(a_shape[:-2]), list(b_shape[:-2])
    width = max(len(batch_a), len(batch_b))
    batch_a = [1] * (width - len(batch_a)) + batch_a
    batch_b = [1] * (width - len(batch_b)) + batch_b
    matmuls = 1
    for size_a, size_b in zip(batch_a, batch_b):
        matmuls *= size_a if size_b == 1 else size_b
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    return matmuls * (2 * m * k * n)
""",
    "linear_model_flops": """
def linear_model_flops(batch_shape: tuple[int, ...], widths: list[int], training: bool = False) -> int:
    '''FLOPs of a forward pass (or a forward + backward pass) of bias-free linear layers of the given widths.'''
    tokens = 1
    for size in batch_shape:
        tokens *= size
    total = 0
    for layer in range(len(widths) - 1):
        matmul = 2 * tokens * widths[layer] * widths[layer + 1]
        total += matmul                  # forward
        if training:
            total += matmul              # weight gradient
            if layer > 0:
                total += matmul          # input gradient (not for x, which is data)
    return total
""",
    "training_days": """
def training_days(params: float, tokens: float, num_gpus: int, peak_flops_per_second: float, mfu: float) -> float:
    '''Days to train `params` parameters on `tokens` tokens with `num_gpus` GPUs at the given peak and MFU.'''
    flops_per_day = num_gpus * peak_flops_per_second * mfu * 86400
    return 6 * params * tokens / flops_per_day
""",
    "matmul_mfu": """
def matmul_mfu(m: int, k: int, n: int, seconds: float, device_name: str, dtype: torch.dtype) -> float | None:
    '''MFU of an (m x k) @ (k x n) matmul that took `seconds`, or None if the device's peak is unknown.'''
    peak = peak_flops(device_name, dtype)
    if peak is None:
        return None
    seconds_at_peak = 2 * m * k * n / peak
    return seconds_at_peak / seconds
""",
    "matmul_intensity": """
def matmul_intensity(a_shape: tuple[int, ...], b_shape: tuple[int, ...], bytes_per_element: int) -> float:
    '''FLOPs per byte of torch.matmul on shapes (..., m, k) and (..., k, n): inputs read once, output written once.'''
    out_shape = list(torch.broadcast_shapes(a_shape[:-2], b_shape[:-2])) + [a_shape[-2], b_shape[-1]]
    flops = matmul_flop_count(a_shape, b_shape)           # task 1
    stored = 0
    for shape in (a_shape, b_shape, out_shape):
        stored += math.prod(shape)
    return flops / stored / bytes_per_element
""",
    "roofline_seconds": """
def roofline_seconds(ops: list[tuple[float, float]], peak_flops_per_second: float, bytes_per_second: float) -> float:
    '''The least time in seconds of ops run one after another, each given as (FLOPs, bytes moved).'''
    # the roofline's rate: min(peak, intensity x bandwidth) FLOP/s; an op's time is its FLOPs at that rate
    times = []
    for flops, bytes_moved in ops:
        rate = min(peak_flops_per_second, flops / bytes_moved * bytes_per_second)
        times.append(flops / rate)
    return float(sum(sorted(times)))
""",
    "matmul_ms": """
matmul_ms = 1000 * (2 * 8192 * 8192 * 8192) / (0.6 * 312 * 10**12)
""",
    "two_weeks_flops": """
two_weeks_flops = 14 * 86_400 * (8 * 989.5 * 10**12) / 2
""",
}
