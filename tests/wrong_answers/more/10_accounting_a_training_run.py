"""Exercise 10, accounting a training run: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_PARAMS = '''
def param_count(shape):
    d, f = shape.d_model, shape.d_ff
    block = {block}
    return (shape.vocab_size + shape.context_length) * d + shape.num_layers * block + {final}
'''
_BLOCK = "(d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d"
_FLOPS = '''
def training_flops_per_token(shape):
    d, f, s = shape.d_model, shape.d_ff, shape.context_length
    weights = shape.num_layers * (3 * d * d + d * d + 2 * d * f) + {head}
    attention = {attention}
    return 3 * (2 * weights + attention)
'''
_FLOPS_GOOD = dict(head="shape.vocab_size * d", attention="shape.num_layers * 4 * s * d")
_MEMORY = '''
def memory_per_gpu(shape, num_gpus, zero_stage):
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError("ZeRO has stages 0 to 3")
    p = param_count(shape)
    weights, grads, state = 2.0 * p, 2.0 * p, {state} * p
{sharding}
    return weights + grads + state
'''
_SHARDING = '''    if zero_stage >= 1:
        state /= num_gpus
    if zero_stage >= 2:
        grads /= num_gpus
    if zero_stage >= 3:
        weights /= num_gpus'''
_DAYS = '''
def training_days(shape, tokens, num_gpus, device_name, mfu):
    peak = peak_flops(device_name, {dtype})
    if peak is None:
        return None
    return {flops} * tokens / (num_gpus * peak * mfu) / 86400
'''

WRONG = [
    Wrong("param_count", "each LayerNorm with a weight but no bias", r"LayerNorm.*bias|bias.*LayerNorm|weight only", _PARAMS.format(
        block="(d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 2 * d", final="d")),
    Wrong("param_count", "the MLP as 4 x d wide, whatever d_ff says", r"d_ff", _PARAMS.format(
        block="(d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 4 * d", final="2 * d")),
    Wrong("param_count", "reads the shape like a dict, shape['d_model']", r"fields|shape\.d_model", """
def param_count(shape):
    d, f = shape["d_model"], shape["d_ff"]
    block = (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    return (shape["vocab_size"] + shape["context_length"]) * d + shape["num_layers"] * block + 2 * d
"""),
    Wrong("training_flops_per_token", "counts the embedding lookup as a matmul too", r"lookup|embedding", _FLOPS.format(
        **{**_FLOPS_GOOD, "head": "2 * shape.vocab_size * d"})),
    Wrong("training_flops_per_token", "attention's FLOPs for a whole sequence, not per token", r"per token|whole sequence",
          _FLOPS.format(**{**_FLOPS_GOOD, "attention": "shape.num_layers * 4 * s * s * d"})),
    Wrong("memory_per_gpu", "stage 1 shards everything", r"stage 1 shards|only the optimizer state", _MEMORY.format(
        state="12.0", sharding='''    if zero_stage >= 1:
        weights, grads, state = weights / num_gpus, grads / num_gpus, state / num_gpus''')),
    Wrong("memory_per_gpu", "the master copy in bf16: 14 bytes per parameter", r"master", _MEMORY.format(
        state="10.0", sharding=_SHARDING)),
    Wrong("memory_per_gpu", "stage 3 keeps the weights whole", r"stage 3|weights too", _MEMORY.format(
        state="12.0", sharding=_SHARDING.replace("zero_stage >= 3", "zero_stage >= 4"))),
    Wrong("training_days", "asks peak_flops for 'bf16', a name it does not know", r"torch\.bfloat16", _DAYS.format(
        dtype='"bf16"', flops="training_flops_per_token(shape)")),
    Wrong("training_days", "6 x parameters per token instead of task 2's count", r"rule of thumb|task 2", _DAYS.format(
        dtype="torch.bfloat16", flops="6 * param_count(shape)")),
]
