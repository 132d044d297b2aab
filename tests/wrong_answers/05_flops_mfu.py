"""Exercise 5, FLOPs and MFU: typical wrong answers."""
from tests.wrong_answers import Wrong

WRONG = [
    Wrong("matmul_flop_count", "counts m*k*n, forgetting that each term is a multiply and an add", r"2 ?x|multipl|add|factor", """
def matmul_flop_count(a_shape, b_shape):
    *batch_a, m, k = a_shape
    *batch_b, _, n = b_shape
    return math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))) * m * k * n
"""),
    Wrong("matmul_flop_count", "ignores the batch dimensions", r"batch|matmuls", """
def matmul_flop_count(a_shape, b_shape):
    m, k = a_shape[-2:]
    n = b_shape[-1]
    return 2 * m * k * n
"""),
    Wrong("matmul_flop_count", "multiplies both inputs' batch sizes instead of broadcasting them", r"broadcast", """
def matmul_flop_count(a_shape, b_shape):
    *batch_a, m, k = a_shape
    *batch_b, _, n = b_shape
    return 2 * math.prod(batch_a) * math.prod(batch_b) * m * k * n
"""),
    Wrong("linear_model_flops", "training = 3 x forward: counts the input gradient of the first layer, which x does not need",
          r"input.gradient|x is data|gradient of x|first layer", """
def linear_model_flops(batch_shape, widths, training=False):
    tokens = math.prod(batch_shape)
    forward = 2 * tokens * sum(a * b for a, b in zip(widths, widths[1:]))
    return 3 * forward if training else forward
"""),
    Wrong("linear_model_flops", "takes the first batch dimension as the number of tokens", r"tokens|batch_shape|8 x 16", """
def linear_model_flops(batch_shape, widths, training=False):
    tokens = batch_shape[0]
    params = sum(a * b for a, b in zip(widths, widths[1:]))
    if not training:
        return 2 * tokens * params
    return 6 * tokens * params - 2 * tokens * widths[0] * widths[1]
"""),
    Wrong("training_days", "2 x params x tokens: only the forward pass", r"6 ?x|6 \* params|backward", """
def training_days(params, tokens, num_gpus, peak_flops_per_second, mfu):
    return 2 * params * tokens / (num_gpus * peak_flops_per_second * mfu) / 86400
"""),
    Wrong("training_days", "divides by 3600: hours, not days", r"86400|days", """
def training_days(params, tokens, num_gpus, peak_flops_per_second, mfu):
    return 6 * params * tokens / (num_gpus * peak_flops_per_second * mfu) / 3600
"""),
    Wrong("matmul_mfu", "divides by the peak even when it is None", r"None", """
def matmul_mfu(m, k, n, seconds, device_name, dtype):
    return 2 * m * k * n / seconds / peak_flops(device_name, dtype)
"""),
    Wrong("matmul_mfu", "counts m*k*n FLOPs", r"2 ?x|FLOPs of|multipl", """
def matmul_mfu(m, k, n, seconds, device_name, dtype):
    peak = peak_flops(device_name, dtype)
    return None if peak is None else m * k * n / seconds / peak
"""),
    Wrong("matmul_intensity", "reads a broadcast input once per matmul", r"read once|broadcast|shared", """
def matmul_intensity(a_shape, b_shape, bytes_per_element):
    *batch_a, m, k = a_shape
    *batch_b, _, n = b_shape
    matmuls = math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b)))
    elements = matmuls * (m * k + k * n + m * n)
    return 2 * matmuls * m * k * n / (elements * bytes_per_element)
"""),
    Wrong("matmul_intensity", "forgets the bytes of the output", r"output", """
def matmul_intensity(a_shape, b_shape, bytes_per_element):
    *batch_a, m, k = a_shape
    *batch_b, _, n = b_shape
    matmuls = math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b)))
    return 2 * matmuls * m * k * n / ((math.prod(a_shape) + math.prod(b_shape)) * bytes_per_element)
"""),
    Wrong("roofline_seconds", "adds the compute and the memory time of an op instead of taking the slower", r"overlap|slower|max", """
def roofline_seconds(ops, peak_flops_per_second, bytes_per_second):
    return sum(flops / peak_flops_per_second + nbytes / bytes_per_second for flops, nbytes in ops)
"""),
    Wrong("roofline_seconds", "takes the slower of the totals instead of each op's slower side", r"each|own slower|one after another", """
def roofline_seconds(ops, peak_flops_per_second, bytes_per_second):
    compute = sum(flops for flops, _ in ops) / peak_flops_per_second
    memory = sum(nbytes for _, nbytes in ops) / bytes_per_second
    return max(compute, memory)
"""),
    Wrong("matmul_ms", 'multiply-adds counted, not FLOPs', r"multiply-add", """
matmul_ms = 8192**3 / (312e12 * 0.6) * 1e3
"""),
    Wrong("matmul_ms", 'seconds where milliseconds were asked', r"seconds where milliseconds", """
matmul_ms = 2 * 8192**3 / (312e12 * 0.6)
"""),
    Wrong("matmul_ms", 'the MFU left out: the time at the peak', r"MFU|peak", """
matmul_ms = 2 * 8192**3 / 312e12 * 1e3
"""),
    Wrong("two_weeks_flops", 'days left as days, not seconds', r"86,400", """
two_weeks_flops = 8 * 989.5e12 * 0.5 * 14
"""),
    Wrong("two_weeks_flops", 'the MFU left out', r"MFU", """
two_weeks_flops = 8 * 989.5e12 * 14 * 86400
"""),
]
