"""Exercise 5, FLOPs and MFU: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_DAYS = '''
def training_days(params, tokens, num_gpus, peak_flops_per_second, mfu):
    return {formula}
'''
_MFU = '''
def matmul_mfu(m, k, n, seconds, device_name, dtype):
    peak = {peak}
    if peak is None:
        return None
    return {result}
'''
_INTENSITY = '''
def matmul_intensity(a_shape, b_shape, bytes_per_element):
    *batch_a, m, k = a_shape
    *batch_b, _, n = b_shape
    matmuls = math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b)))
    elements = math.prod(a_shape) + math.prod(b_shape) + matmuls * m * n
    return {result}
'''

WRONG = [
    Wrong("matmul_flop_count", "numpy's prod, so the count is a numpy int64", r"\bint\b", """
def matmul_flop_count(a_shape, b_shape):
    *batch_a, m, k = a_shape
    *batch_b, _, n = b_shape
    return 2 * np.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b)), dtype=np.int64) * m * k * n
"""),
    Wrong("matmul_flop_count", "counts the batch of a only", r"broadcast", """
def matmul_flop_count(a_shape, b_shape):
    *batch_a, m, k = a_shape
    n = b_shape[-1]
    return 2 * math.prod(batch_a) * m * k * n
"""),
    Wrong("linear_model_flops", "squares each width instead of multiplying neighbouring widths", r"next width|d_in x d_out|neighbou?r", """
def linear_model_flops(batch_shape, widths, training=False):
    tokens = math.prod(batch_shape)
    params = sum(w * w for w in widths[:-1])
    forward = 2 * tokens * params
    return 3 * forward - 2 * tokens * widths[0] * widths[1] if training else forward
"""),
    Wrong("linear_model_flops", "training as forward plus one backward of the same size", r"two gradient matmuls", """
def linear_model_flops(batch_shape, widths, training=False):
    tokens = math.prod(batch_shape)
    forward = 2 * tokens * sum(a * b for a, b in zip(widths, widths[1:]))
    return 2 * forward if training else forward
"""),
    Wrong("linear_model_flops", "ignores training: always the forward pass", r"training", """
def linear_model_flops(batch_shape, widths, training=False):
    tokens = math.prod(batch_shape)
    return 2 * tokens * sum(a * b for a, b in zip(widths, widths[1:]))
"""),
    Wrong("training_days", "multiplies by the MFU instead of dividing by it", r"MFU", _DAYS.format(
        formula="6 * params * tokens / (num_gpus * peak_flops_per_second) * mfu / 86400")),
    Wrong("training_days", "one GPU's rate: forgets num_gpus", r"GPUs|num_gpus", _DAYS.format(
        formula="6 * params * tokens / (peak_flops_per_second * mfu) / 86400")),
    Wrong("training_days", "whole days by floor division", r"float", _DAYS.format(
        formula="6 * params * tokens / (num_gpus * peak_flops_per_second * mfu) // 86400")),
    Wrong("matmul_mfu", "the H100's bf16 peak for every device and dtype", r"device and (the )?dtype|each device",
          _MFU.format(peak="989.5e12 if peak_flops(device_name, dtype) else None", result="2 * m * k * n / seconds / peak")),
    Wrong("matmul_mfu", "a percentage instead of a fraction", r"percent|fraction", _MFU.format(
        peak="peak_flops(device_name, dtype)", result="100 * 2 * m * k * n / seconds / peak")),
    Wrong("matmul_intensity", "FLOPs per element, forgetting the bytes per element", r"per byte|bytes per element", _INTENSITY.format(
        result="2 * matmuls * m * k * n / elements")),
    Wrong("matmul_intensity", "counts the multiplies but not the adds", r"multipl(y|ies) and|adds|2 x", _INTENSITY.format(
        result="matmuls * m * k * n / (elements * bytes_per_element)")),
    Wrong("roofline_seconds", "each op as long as its faster side", r"slower", """
def roofline_seconds(ops, peak_flops_per_second, bytes_per_second):
    return sum(min(flops / peak_flops_per_second, moved / bytes_per_second) for flops, moved in ops)
"""),
]
