"""Exercise 5, FLOPs and MFU: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_MATMUL = '''
def matmul_flop_count(a_shape, b_shape):
    m, k = a_shape[-2], a_shape[-1]
    n = {n}
    batch = {batch}
    return {result}
'''
_MM = dict(n="b_shape[-1]", batch="math.prod(torch.broadcast_shapes(a_shape[:-2], b_shape[:-2]))", result="2 * batch * m * k * n")
_LINEAR = '''
def linear_model_flops(batch_shape, widths, training=False):
    tokens = {tokens}
    layers = [2 * tokens * {weights} for a, b in zip(widths, widths[1:])]
    if not training:
        return sum(layers)
    return {training}
'''
_LM = dict(tokens="math.prod(batch_shape)", weights="a * b", training="3 * sum(layers) - layers[0]")
_DAYS = '''
def training_days(params, tokens, num_gpus, peak_flops_per_second, mfu):
    flops = {flops}
    rate = {rate}
    return {result}
'''
_D = dict(flops="6 * params * tokens", rate="num_gpus * peak_flops_per_second * mfu", result="flops / rate / 86400")
_MFU = '''
def matmul_mfu(m, k, n, seconds, device_name, dtype):
    peak = {peak}
    {guard}
    return {result}
'''
_F = dict(peak="peak_flops(device_name, dtype)", guard="if peak is None:\n        return None",
          result="2 * m * k * n / seconds / peak")
_INTENSITY = '''
def matmul_intensity(a_shape, b_shape, bytes_per_element):
    batch = torch.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    flops = {flops}
    elements = {elements}
    return {result}
'''
_I = dict(flops="2 * math.prod(batch) * m * k * n", elements="math.prod(a_shape) + math.prod(b_shape) + math.prod(batch) * m * n",
          result="flops / (elements * bytes_per_element)")
_ROOF = '''
def roofline_seconds(ops, peak_flops_per_second, bytes_per_second):
    {body}
'''

WRONG = [
    Wrong("matmul_flop_count", "m * k * n: no factor 2", r"multipl(y|ies) and .{0,5}add|2mkn|factor 2|\badds?\b", _MATMUL.format(**{**_MM, "result": "batch * m * k * n"})),
    Wrong("matmul_flop_count", "the batch of a only, no broadcasting", r"broadcast", _MATMUL.format(**{**_MM, "batch": "math.prod(a_shape[:-2])"})),
    Wrong("matmul_flop_count", "multiplies both batches instead of broadcasting them", r"one per pair|broadcast|not 4 x 4",
          _MATMUL.format(**{**_MM, "batch": "math.prod(a_shape[:-2]) * math.prod(b_shape[:-2])"})),
    Wrong("matmul_flop_count", "n taken from a's last axis", r"m x n outputs|outputs|\bn\b", _MATMUL.format(**{**_MM, "n": "a_shape[-1]"})),
    Wrong("matmul_flop_count", "a float comes back", r"\bint\b", _MATMUL.format(**{**_MM, "result": "2.0 * batch * m * k * n"})),
    Wrong("matmul_flop_count", "batch dimensions ignored", r"batch|matmuls", _MATMUL.format(**{**_MM, "batch": "1"})),
    Wrong("linear_model_flops", "training counts x's gradient too: 3 x forward", r"x is data|input gradient|first layer",
          _LINEAR.format(**{**_LM, "training": "3 * sum(layers)"})),
    Wrong("linear_model_flops", "tokens from the first batch dimension only", r"every batch dimension|tokens|8 x 16",
          _LINEAR.format(**{**_LM, "tokens": "batch_shape[0]"})),
    Wrong("linear_model_flops", "biases counted as parameters", r"bias", _LINEAR.format(**{**_LM, "weights": "(a * b + b)"})),
    Wrong("linear_model_flops", "training = 2 x forward: one gradient matmul per layer", r"two gradient|both|weight gradient|input gradient",
          _LINEAR.format(**{**_LM, "training": "2 * sum(layers)"})),
    Wrong("linear_model_flops", "skips the last layer's input gradient instead of the first's", r"first layer|x is data|x's|\bx\b",
          _LINEAR.format(**{**_LM, "training": "3 * sum(layers) - layers[-1]"})),
    Wrong("training_days", "the rate divided by the MFU", r"MFU", _DAYS.format(**{**_D, "rate": "num_gpus * peak_flops_per_second / mfu"})),
    Wrong("training_days", "2 x params x tokens: forward only", r"backward|forward only|\b6\b", _DAYS.format(**{**_D, "flops": "2 * params * tokens"})),
    Wrong("training_days", "seconds, not days", r"seconds|86,?400|days", _DAYS.format(**{**_D, "result": "flops / rate"})),
    Wrong("training_days", "num_gpus forgotten", r"one GPU|num_gpus|GPUs share", _DAYS.format(**{**_D, "rate": "peak_flops_per_second * mfu"})),
    Wrong("training_days", "rounded to 0.1 day", r"round|exact", _DAYS.format(**{**_D, "result": "round(flops / rate / 86400, 1)"})),
    Wrong("training_days", "whole days: int()", r"float|whole days|round", _DAYS.format(**{**_D, "result": "int(flops / rate / 86400)"})),
    Wrong("matmul_mfu", "a percentage", r"percent|fraction", _MFU.format(**{**_F, "result": "100 * 2 * m * k * n / seconds / peak"})),
    Wrong("matmul_mfu", "m * k * n FLOPs", r"multiply and an add|half|factor 2|2mkn", _MFU.format(**{**_F, "result": "m * k * n / seconds / peak"})),
    Wrong("matmul_mfu", "always the fp32 peak", r"dtype|bf16|bfloat16", _MFU.format(**{**_F, "peak": "peak_flops(device_name, torch.float32)"})),
    Wrong("matmul_mfu", "divides by the peak without checking for None", r"None", _MFU.format(**{**_F, "guard": "pass"})),
    Wrong("matmul_mfu", "0.0 for an unknown peak", r"None", _MFU.format(**{**_F, "guard": "if peak is None:\n        return 0.0"})),
    Wrong("matmul_mfu", "seconds read as milliseconds", r"millisecond|1,?000|seconds", _MFU.format(**{**_F, "result": "2 * m * k * n / (seconds * 1000) / peak"})),
    Wrong("matmul_intensity", "FLOPs per element, bytes per element left out", r"per byte|bytes per element", _INTENSITY.format(**{**_I, "result": "flops / elements"})),
    Wrong("matmul_intensity", "a broadcast input counted once per matmul", r"read once|broadcast|as it is stored", _INTENSITY.format(**{**_I,
          "elements": "math.prod(batch) * (m * k + k * n + m * n)"})),
    Wrong("matmul_intensity", "the output's bytes left out", r"output|written", _INTENSITY.format(**{**_I, "elements": "math.prod(a_shape) + math.prod(b_shape)"})),
    Wrong("matmul_intensity", "m * k * n FLOPs", r"multiply and an add|one FLOP per term|factor 2", _INTENSITY.format(**{**_I, "flops": "math.prod(batch) * m * k * n"})),
    Wrong("matmul_intensity", "the bytes of one matmul only, batch left out", r"every element|batch|all heads|whole",
          _INTENSITY.format(**{**_I, "elements": "m * k + k * n + m * n"})),
    Wrong("matmul_intensity", "integer division", r"float", _INTENSITY.format(**{**_I, "result": "flops // (elements * bytes_per_element)"})),
    Wrong("roofline_seconds", "adds compute and memory time", r"overlap|slower|\bmax", _ROOF.format(
        body="return float(sum(f / peak_flops_per_second + b / bytes_per_second for f, b in ops))")),
    Wrong("roofline_seconds", "the faster side (min) instead of the slower", r"slower|\bmax", _ROOF.format(
        body="return float(sum(min(f / peak_flops_per_second, b / bytes_per_second) for f, b in ops))")),
    Wrong("roofline_seconds", "the roofline of the totals instead of each op's", r"each op|one after another|per op|own", _ROOF.format(
        body="return max(sum(f for f, _ in ops) / peak_flops_per_second, sum(b for _, b in ops) / bytes_per_second)")),
    Wrong("roofline_seconds", "only the first op", r"add up|one after another", _ROOF.format(
        body="f, b = ops[0]\n    return max(f / peak_flops_per_second, b / bytes_per_second)")),
    Wrong("roofline_seconds", "FLOPs over the bandwidth and bytes over the peak", r"peak|bandwidth|swap", _ROOF.format(
        body="return float(sum(max(f / bytes_per_second, b / peak_flops_per_second) for f, b in ops))")),
    Wrong("matmul_ms", "n^3 FLOPs: the factor 2 forgotten", r"2 FLOPs|multiply-add|factor 2", "matmul_ms = 8192**3 / (312e12 * 0.6) * 1e3\n"),
    Wrong("matmul_ms", "the MFU left out", r"MFU", "matmul_ms = 2 * 8192**3 / 312e12 * 1e3\n"),
    Wrong("matmul_ms", "multiplies by the MFU", r"MFU", "matmul_ms = 2 * 8192**3 * 0.6 / 312e12 * 1e3\n"),
    Wrong("matmul_ms", "seconds instead of milliseconds", r"seconds", "matmul_ms = 2 * 8192**3 / (312e12 * 0.6)\n"),
    Wrong("matmul_ms", "8192^2 instead of 8192^3", r"8192\^3|cube|n\^3|three|2mkn", "matmul_ms = 2 * 8192**2 / (312e12 * 0.6) * 1e3\n"),
    Wrong("two_weeks_flops", "at peak: the MFU left out", r"MFU|peak", "two_weeks_flops = 8 * 989.5e12 * 14 * 86400\n"),
    Wrong("two_weeks_flops", "hours as seconds: a day of 3600 s", r"\b24\b|hours|day", "two_weeks_flops = 8 * 989.5e12 * 0.5 * 14 * 3600\n"),
    Wrong("two_weeks_flops", "one GPU", r"8 GPUs|eight|one GPU|\b8\b", "two_weeks_flops = 989.5e12 * 0.5 * 14 * 86400\n"),
    Wrong("two_weeks_flops", "no seconds: FLOP/s times days", r"seconds|86,?400", "two_weeks_flops = 8 * 989.5e12 * 0.5 * 14\n"),
    Wrong("two_weeks_flops", "a TFLOP taken as 10^9", r"TFLOP|10\^12|1,?000", "two_weeks_flops = 8 * 989.5e9 * 0.5 * 14 * 86400\n"),
]
