"""Exercise 10, accounting a training run: typical wrong answers."""
from tests.wrong_answers import Wrong

WRONG = [
    Wrong("param_count", "forgets the position embedding table", r"position", """
def param_count(shape):
    d, f = shape.d_model, shape.d_ff
    block = (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    return shape.vocab_size * d + shape.num_layers * block + 2 * d
"""),
    Wrong("param_count", "counts the tied head as its own V x d matrix", r"tied", """
def param_count(shape):
    d, f = shape.d_model, shape.d_ff
    block = (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    return (2 * shape.vocab_size + shape.context_length) * d + shape.num_layers * block + 2 * d
"""),
    Wrong("param_count", "forgets the biases of the Linears", r"bias", """
def param_count(shape):
    d, f = shape.d_model, shape.d_ff
    block = 3 * d * d + d * d + 2 * d * f + 4 * d
    return (shape.vocab_size + shape.context_length) * d + shape.num_layers * block + 2 * d
"""),
    Wrong("param_count", "forgets the final LayerNorm", r"final LayerNorm|final layer ?norm", """
def param_count(shape):
    d, f = shape.d_model, shape.d_ff
    block = (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    return (shape.vocab_size + shape.context_length) * d + shape.num_layers * block
"""),
    Wrong("training_flops_per_token", "the rule of thumb, 6 x parameters", r"attention|tied head|6 x param|biases", """
def training_flops_per_token(shape):
    d, f = shape.d_model, shape.d_ff
    block = (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    return 6 * ((shape.vocab_size + shape.context_length) * d + shape.num_layers * block + 2 * d)
"""),
    Wrong("training_flops_per_token", "leaves out attention's two matmuls", r"attention", """
def training_flops_per_token(shape):
    d, f = shape.d_model, shape.d_ff
    weights = shape.num_layers * (4 * d * d + 2 * d * f) + shape.vocab_size * d
    return 6 * weights
"""),
    Wrong("training_flops_per_token", "counts attention over half the square, as if the mask saved work", r"full|mask|square", """
def training_flops_per_token(shape):
    d, f, s = shape.d_model, shape.d_ff, shape.context_length
    weights = shape.num_layers * (4 * d * d + 2 * d * f) + shape.vocab_size * d
    attention = shape.num_layers * 2 * (2 * s * d) // 2
    return 3 * (2 * weights + attention)
"""),
    Wrong("memory_per_gpu", "stage 2 shards the gradients but not the optimizer state", r"stage 2|optimizer state", """
def memory_per_gpu(shape, num_gpus, zero_stage):
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError("stages 0 to 3")
    p = param_count(shape)
    weights, grads, state = 2.0 * p, 2.0 * p, 12.0 * p
    if zero_stage == 1 or zero_stage == 3:
        state /= num_gpus
    if zero_stage >= 2:
        grads /= num_gpus
    if zero_stage == 3:
        weights /= num_gpus
    return weights + grads + state
"""),
    Wrong("memory_per_gpu", "returns an int", r"float", """
def memory_per_gpu(shape, num_gpus, zero_stage):
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError("stages 0 to 3")
    p = param_count(shape)
    sharded = [0, 12, 14, 16][zero_stage]
    return (16 - sharded) * p + sharded * p // num_gpus
"""),
    Wrong("memory_per_gpu", "no ValueError for an unknown stage", r"ValueError", """
def memory_per_gpu(shape, num_gpus, zero_stage):
    p = param_count(shape)
    weights, grads, state = 2.0 * p, 2.0 * p, 12.0 * p
    if zero_stage >= 1:
        state /= num_gpus
    if zero_stage >= 2:
        grads /= num_gpus
    if zero_stage >= 3:
        weights /= num_gpus
    return weights + grads + state
"""),
    Wrong("training_days", "divides by 3600: hours, not days", r"hours", """
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, torch.bfloat16)
    if peak is None:
        return None
    return training_flops_per_token(shape) * tokens / (num_gpus * peak * mfu) / 3600
"""),
    Wrong("training_days", "divides by the peak even when it is None", r"None", """
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, torch.bfloat16)
    return training_flops_per_token(shape) * tokens / (num_gpus * peak * mfu) / 86400
"""),
    Wrong("training_days", "uses the fp32 peak", r"fp32 peak|float32 peak", """
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, torch.float32)
    if peak is None:
        return None
    return training_flops_per_token(shape) * tokens / (num_gpus * peak * mfu) / 86400
"""),
    # issue #50: task 2 and task 4 each mistake named, not one generic hint
    Wrong("training_flops_per_token", "counts the forward pass only", r"forward (pass )?only|only the forward|no backward", """
def training_flops_per_token(shape):
    d, f, s = shape.d_model, shape.d_ff, shape.context_length
    weights = shape.num_layers * (4 * d * d + 2 * d * f) + shape.vocab_size * d
    return 2 * weights + shape.num_layers * 4 * s * d
"""),
    Wrong("training_flops_per_token", "backward as one forward: 4 x, not 6 x", r"one backward matmul|twice the forward|backward .* twice", """
def training_flops_per_token(shape):
    d, f, s = shape.d_model, shape.d_ff, shape.context_length
    weights = shape.num_layers * (4 * d * d + 2 * d * f) + shape.vocab_size * d
    return 2 * (2 * weights + shape.num_layers * 4 * s * d)
"""),
    Wrong("training_flops_per_token", "leaves out the tied head's matmul", r"leaves out the tied head|tied head.* still a matmul", """
def training_flops_per_token(shape):
    d, f, s = shape.d_model, shape.d_ff, shape.context_length
    weights = shape.num_layers * (4 * d * d + 2 * d * f)
    return 3 * (2 * weights + shape.num_layers * 4 * s * d)
"""),
    Wrong("training_flops_per_token", "counts the biases as matmul weights", r"counts the biases|bias additions count 0", """
def training_flops_per_token(shape):
    d, f, s = shape.d_model, shape.d_ff, shape.context_length
    weights = shape.num_layers * (4 * d * d + 2 * d * f + 3 * d + d + f + d) + shape.vocab_size * d
    return 3 * (2 * weights + shape.num_layers * 4 * s * d)
"""),
    Wrong("training_days", "leaves out the MFU", r"(leaves out|without) the MFU", """
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, torch.bfloat16)
    if peak is None:
        return None
    return training_flops_per_token(shape) * tokens / (num_gpus * peak) / 86400
"""),
    Wrong("training_days", "counts sequences, not tokens", r"per token|sequences|context_length", """
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, torch.bfloat16)
    if peak is None:
        return None
    return training_flops_per_token(shape) * tokens / shape.context_length / (num_gpus * peak * mfu) / 86400
"""),
    Wrong("training_days", "one GPU's rate: forgets num_gpus", r"one GPU's time|all num_gpus", """
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, torch.bfloat16)
    if peak is None:
        return None
    return training_flops_per_token(shape) * tokens / (peak * mfu) / 86400
"""),
    Wrong("training_days", "multiplies by 6 again: the FLOPs per token already count the backward", r"multiplies by 6 again|already counts", """
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, torch.bfloat16)
    if peak is None:
        return None
    return 6 * training_flops_per_token(shape) * tokens / (num_gpus * peak * mfu) / 86400
"""),
    Wrong("run_mfu", 'a percentage, not a fraction', r"percentage", """
run_mfu = 100 * 6 * 124e6 * 524288 / 1.2 / (8 * 312e12)
"""),
    Wrong("run_mfu", "one GPU's peak, not eight", r"8 x the peak", """
run_mfu = 6 * 124e6 * 524288 / 1.2 / 312e12
"""),
    Wrong("gpt3_days", 'hours where days were asked', r"hours where days", """
gpt3_days = 6 * 175e9 * 300e9 / (1024 * 312e12 * 0.4) / 3600
"""),
    Wrong("gpt3_days", 'the forward pass alone', r"forward pass alone", """
gpt3_days = 2 * 175e9 * 300e9 / (1024 * 312e12 * 0.4) / 86400
"""),
]
