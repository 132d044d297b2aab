"""Exercise 9, mixed precision: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_MASTER = '''
def master_weight_step(model_params, master_params, optimizer):
    {before}
    for param, master in zip(model_params, master_params):
        master.grad = {grad}
    {step}
    with {context}:
        for param, master in zip(model_params, master_params):
            {copy}
    for param, master in zip(model_params, master_params):
        {clear}
'''
_M = dict(before="", grad="param.grad.float()", step="optimizer.step()", context="torch.no_grad()", copy="param.copy_(master)",
          clear="param.grad = None\n        master.grad = None")
_SCALED = '''
def loss_scaled_step(loss, model_params, master_params, optimizer, scale):
    ({scaled}).backward()
    grads = [{unscale} for param in model_params]
    finite = {finite}
    if finite:
        for master, grad in zip(master_params, grads):
            master.grad = grad
        optimizer.step()
        with torch.no_grad():
            for param, master in zip(model_params, master_params):
                param.copy_(master)
    {clear}
    return {result}
'''
_S = dict(scaled="loss * scale", unscale="param.grad.float() / scale", finite="all(bool(torch.isfinite(g).all()) for g in grads)",
          clear="for p in list(model_params) + list(master_params):\n        p.grad = None", result="finite")
_SCALE = '''
def next_loss_scale(scale, found_inf, good_steps, growth_interval):
    if found_inf:
        return {halved}
    good_steps += 1
    if {grow}:
        return {doubled}
    return {kept}
'''
_SC = dict(halved="(scale * 0.5, 0)", grow="good_steps >= growth_interval", doubled="(scale * 2.0, 0)", kept="(scale, good_steps)")
_MLP = '''
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    tokens = batch * seq
    return {result}
'''
_AUTOCAST = '''
def autocast_dtype(op, input_dtype):
    lower = {{"matmul", "linear", "bmm", "conv1d", "scaled_dot_product_attention"}}
    fp32 = {fp32}
    if {keep}:
        return input_dtype
    if op in lower:
        return {lower_result}
    if op in fp32:
        return torch.float32
    return {other}
'''
_A = dict(fp32='{"cross_entropy", "mse_loss", "nll_loss", "prod"}', keep="input_dtype == torch.float64",
          lower_result="torch.bfloat16", other="input_dtype")

WRONG = [
    Wrong("master_weight_step", "the 16-bit gradient given to the master as it is", r"cast|fp32|dtype", _MASTER.format(**{**_M, "grad": "param.grad"})),
    Wrong("master_weight_step", "the copy without torch.no_grad()", r"no_grad", _MASTER.format(**{**_M, "context": "contextlib.nullcontext()"}).replace(
        "def master_weight_step", "import contextlib\ndef master_weight_step")),
    Wrong("master_weight_step", "the model's gradients not cleared", r"model parameter|clear", _MASTER.format(**{**_M, "clear": "master.grad = None"})),
    Wrong("master_weight_step", "the model copied into the masters before the step", r"direction|master to model|never back|kept their old", _MASTER.format(**{**_M,
          "before": "with torch.no_grad():\n        for param, master in zip(model_params, master_params):\n            master.copy_(param)",
          "copy": "master.copy_(param)"})),
    Wrong("master_weight_step", "param.data replaced by the master's: the model becomes fp32", r"16-bit|dtype|in place|bf16|bfloat16", _MASTER.format(**{**_M,
          "copy": "param.data = master.data.clone()"})),
    Wrong("master_weight_step", "optimizer.step() before the masters get their gradients", r"before|order|once they hold|first", _MASTER.format(**{**_M,
          "before": "optimizer.step()", "step": "pass"})),
    Wrong("master_weight_step", "the masters' gradients not cleared", r"master'?s?'? \.?grad|clear the masters|masters", _MASTER.format(**{**_M,
          "clear": "param.grad = None"})),
    Wrong("loss_scaled_step", "unscaled in fp16, then cast", r"fp32|underflow", _SCALED.format(**{**_S, "unscale": "(param.grad / scale).float()"})),
    Wrong("loss_scaled_step", "no inf check: always steps", r"\binf\b|skip", _SCALED.format(**{**_S, "finite": "True"})),
    Wrong("loss_scaled_step", "backward of the loss itself, unscaled", r"scale|loss \* scale", _SCALED.format(**{**_S, "scaled": "loss"})),
    Wrong("loss_scaled_step", "returns a tensor", r"\bbool\b", _SCALED.format(**{**_S, "finite": "torch.stack([torch.isfinite(g).all() for g in grads]).all()"})),
    Wrong("loss_scaled_step", "a skipped step keeps the gradients", r"clear|both cases", _SCALED.format(**{**_S,
          "clear": "if finite:\n        for p in list(model_params) + list(master_params):\n            p.grad = None"})),
    Wrong("loss_scaled_step", "multiplies by the scale again instead of dividing", r"unscale|divid|scale", _SCALED.format(**{**_S,
          "unscale": "param.grad.float() * scale"})),
    Wrong("loss_scaled_step", "only the first parameter's gradient checked", r"\bany\b|every|all", _SCALED.format(**{**_S,
          "finite": "bool(torch.isfinite(grads[0]).all())"})),
    Wrong("next_loss_scale", "floor division halves the scale", r"float|//|floor", _SCALE.format(**{**_SC, "halved": "(scale // 2, 0)"})),
    Wrong("next_loss_scale", "grows when the count before this step reaches the interval", r"reaches|2000th|count",
          _SCALE.format(**{**_SC, "grow": "good_steps - 1 >= growth_interval"})),
    Wrong("next_loss_scale", "an inf keeps the count", r"reset", _SCALE.format(**{**_SC, "halved": "(scale * 0.5, good_steps)"})),
    Wrong("next_loss_scale", "an int scale after growing", r"float", _SCALE.format(**{**_SC, "doubled": "(int(scale * 2), 0)"})),
    Wrong("next_loss_scale", "growing keeps the count", r"reset", _SCALE.format(**{**_SC, "doubled": "(scale * 2.0, good_steps)"})),
    Wrong("next_loss_scale", "returns a list", r"tuple", _SCALE.format(**{**_SC, "kept": "[scale, good_steps]"})),
    Wrong("mlp_activation_bytes", "GELU's input forgotten: two tensors", r"GELU", _MLP.format(
        result="tokens * (dim + hidden) * dtype.itemsize")),
    Wrong("mlp_activation_bytes", "4 bytes per number whatever the dtype", r"dtype|itemsize|bf16|bfloat16", _MLP.format(
        result="tokens * (dim + 2 * hidden) * 4")),
    Wrong("mlp_activation_bytes", "the weights counted too", r"weights|besides", _MLP.format(
        result="(tokens * (dim + 2 * hidden) + 2 * dim * hidden) * dtype.itemsize")),
    Wrong("mlp_activation_bytes", "down's output counted too", r"output|three", _MLP.format(
        result="tokens * (2 * dim + 2 * hidden) * dtype.itemsize")),
    Wrong("mlp_activation_bytes", "every tensor as wide as dim", r"hidden|as wide", _MLP.format(result="tokens * 3 * dim * dtype.itemsize")),
    Wrong("mlp_activation_bytes", "a float comes back", r"\bint\b", _MLP.format(result="tokens * (dim + 2 * hidden) * dtype.itemsize / 1")),
    Wrong("autocast_dtype", "everything in bf16", r"fp32|loss|neither list|input's dtype", _AUTOCAST.format(**{**_A,
          "fp32": "set()", "other": "torch.bfloat16"})),
    Wrong("autocast_dtype", "fp64 cast to bf16 for a matmul", r"fp64|float64", _AUTOCAST.format(**{**_A, "keep": "False"})),
    Wrong("autocast_dtype", "an fp16 matmul stays fp16", r"fp16|float16|16- and 32-bit", _AUTOCAST.format(**{**_A,
          "lower_result": "torch.bfloat16 if input_dtype == torch.float32 else input_dtype"})),
    Wrong("autocast_dtype", "softmax in fp32, as on CUDA", r"softmax|CPU|neither list", _AUTOCAST.format(**{**_A,
          "fp32": '{"cross_entropy", "mse_loss", "nll_loss", "prod", "softmax"}'})),
    Wrong("autocast_dtype", "returns the dtype's name", r"torch\.dtype", _AUTOCAST.format(**{**_A,
          "lower_result": '"bfloat16"', "other": "str(input_dtype).removeprefix('torch.')"}).replace("return torch.float32", "return 'float32'")),
    Wrong("autocast_dtype", "losses follow their input's dtype", r"loss", _AUTOCAST.format(**{**_A, "fp32": '{"prod"}'})),
    Wrong("mixed_adamw_gb", "no master copy: 12 bytes", r"master", "mixed_adamw_gb = 7e9 * 12 / 1e9\n"),
    Wrong("mixed_adamw_gb", "the moments forgotten: 8 bytes", r"moment|state", "mixed_adamw_gb = 7e9 * 8 / 1e9\n"),
    Wrong("mixed_adamw_gb", "GiB instead of GB", r"GiB", "mixed_adamw_gb = 7e9 * 16 / 2**30\n"),
    Wrong("mixed_adamw_gb", "the gradient in fp32: 18 bytes", r"gradient", "mixed_adamw_gb = 7e9 * (2 + 4 + 4 + 4 + 4) / 1e9\n"),
    Wrong("mixed_adamw_gb", "MB instead of GB", r"\bMB\b", "mixed_adamw_gb = 7e9 * 16 / 1e6\n"),
]
