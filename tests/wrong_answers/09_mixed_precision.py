"""Exercise 9, mixed precision: typical wrong answers."""
from tests.wrong_answers import Wrong

_STEP = '''
def master_weight_step(model_params, master_params, optimizer):
{body}
'''
_SCALED = '''
def loss_scaled_step(loss, model_params, master_params, optimizer, scale):
    (loss * scale).backward()
{body}
'''
_CLEAR = '''
    for param, master in zip(model_params, master_params):
        param.grad = None
        master.grad = None'''

WRONG = [
    Wrong("master_weight_step", "copies the masters back without torch.no_grad(): autograd refuses an in-place copy into a leaf",
          r"no_grad", _STEP.format(body='''
    for param, master in zip(model_params, master_params):
        master.grad = param.grad.float()
    optimizer.step()
    for param, master in zip(model_params, master_params):
        param.copy_(master)''' + _CLEAR)),
    Wrong("master_weight_step", "gives the master the bf16 gradient as it is, without casting it to fp32",
          r"cast|fp32|float32", _STEP.format(body='''
    for param, master in zip(model_params, master_params):
        master.grad = param.grad
    optimizer.step()
    with torch.no_grad():
        for param, master in zip(model_params, master_params):
            param.copy_(master)''' + _CLEAR)),
    Wrong("master_weight_step", "never clears the gradients", r"None|clear", _STEP.format(body='''
    for param, master in zip(model_params, master_params):
        master.grad = param.grad.float()
    optimizer.step()
    with torch.no_grad():
        for param, master in zip(model_params, master_params):
            param.copy_(master)''')),
    Wrong("master_weight_step", "rebinds param.data to the master, so the model turns fp32", r"bf16|dtype|in place|copy_", _STEP.format(body='''
    for param, master in zip(model_params, master_params):
        master.grad = param.grad.float()
    optimizer.step()
    for param, master in zip(model_params, master_params):
        param.data = master.data.clone()''' + _CLEAR)),
    Wrong("loss_scaled_step", "unscales in fp16 and casts afterwards, so the small gradients underflow again",
          r"in fp32|fp32|float32|underflow", _SCALED.format(body='''
    grads = [(param.grad / scale).float() for param in model_params]
    finite = all(bool(torch.isfinite(g).all()) for g in grads)
    if finite:
        for master, grad in zip(master_params, grads):
            master.grad = grad
        optimizer.step()
        with torch.no_grad():
            for param, master in zip(model_params, master_params):
                param.copy_(master)''' + _CLEAR + '''
    return finite''')),
    Wrong("loss_scaled_step", "never skips: steps even when a gradient is inf", r"\binf|skip", _SCALED.format(body='''
    for param, master in zip(model_params, master_params):
        master.grad = param.grad.float() / scale
    optimizer.step()
    with torch.no_grad():
        for param, master in zip(model_params, master_params):
            param.copy_(master)''' + _CLEAR + '''
    return True''')),
    Wrong("loss_scaled_step", "returns a tensor bool", r"\bbool", _SCALED.format(body='''
    grads = [param.grad.float() / scale for param in model_params]
    finite = torch.stack([torch.isfinite(g).all() for g in grads]).all()
    if finite:
        for master, grad in zip(master_params, grads):
            master.grad = grad
        optimizer.step()
        with torch.no_grad():
            for param, master in zip(model_params, master_params):
                param.copy_(master)''' + _CLEAR + '''
    return finite''')),
    Wrong("next_loss_scale", "grows one step late: compares the count with growth_interval before adding the good step",
          r"growth_interval|reaches|2000th|count", """
def next_loss_scale(scale, found_inf, good_steps, growth_interval):
    if found_inf:
        return scale * 0.5, 0
    if good_steps == growth_interval:
        return scale * 2.0, 0
    return scale, good_steps + 1
"""),
    Wrong("next_loss_scale", "an inf halves the scale but keeps the count", r"reset", """
def next_loss_scale(scale, found_inf, good_steps, growth_interval):
    if found_inf:
        return scale * 0.5, good_steps
    good_steps += 1
    if good_steps == growth_interval:
        return scale * 2.0, 0
    return scale, good_steps
"""),
    Wrong("next_loss_scale", "floor division: halving the scale with // turns 1.0 into 0.0", r"0\.5|floor|//", """
def next_loss_scale(scale, found_inf, good_steps, growth_interval):
    if found_inf:
        return scale // 2, 0
    good_steps += 1
    if good_steps == growth_interval:
        return scale * 2, 0
    return scale, good_steps
"""),
    Wrong("mlp_activation_bytes", "counts one hidden-sized activation instead of two (GELU's input forgotten)",
          r"GELU|three|input of", """
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    return batch * seq * (dim + hidden) * dtype.itemsize
"""),
    Wrong("mlp_activation_bytes", "4 bytes per number whatever the dtype", r"itemsize|bytes per (number|element)|bf16|dtype", """
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    return batch * seq * (dim + 2 * hidden) * 4
"""),
    Wrong("mlp_activation_bytes", "returns a float from a division", r"\bint\b|float", """
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    return batch * seq * (dim + 2 * hidden) * torch.finfo(dtype).bits / 8
"""),
    Wrong("autocast_dtype", "returns the input's dtype for fp16 inputs: only fp32 is cast", r"fp16|float16", """
def autocast_dtype(op, input_dtype):
    if input_dtype != torch.float32 and input_dtype != torch.bfloat16:
        return input_dtype
    if op in ("matmul", "linear", "bmm", "conv1d", "scaled_dot_product_attention"):
        return torch.bfloat16
    if op in ("cross_entropy", "mse_loss", "nll_loss", "prod"):
        return torch.float32
    return input_dtype
"""),
    Wrong("autocast_dtype", "casts fp64 too", r"fp64|float64", """
def autocast_dtype(op, input_dtype):
    if op in ("matmul", "linear", "bmm", "conv1d", "scaled_dot_product_attention"):
        return torch.bfloat16
    if op in ("cross_entropy", "mse_loss", "nll_loss", "prod"):
        return torch.float32
    return input_dtype
"""),
    Wrong("autocast_dtype", "puts softmax and layer_norm on the fp32 list, as CUDA autocast does", r"softmax|layer_norm|neither list|CPU", """
def autocast_dtype(op, input_dtype):
    if input_dtype == torch.float64:
        return torch.float64
    if op in ("matmul", "linear", "bmm", "conv1d", "scaled_dot_product_attention"):
        return torch.bfloat16
    if op in ("cross_entropy", "mse_loss", "nll_loss", "prod", "softmax", "layer_norm"):
        return torch.float32
    return input_dtype
"""),
    # of our own
    Wrong("master_weight_step", "steps the optimizer but never copies the masters back", r"copy|back|model parameter", _STEP.format(body='''
    for param, master in zip(model_params, master_params):
        master.grad = param.grad.float()
    optimizer.step()''' + _CLEAR)),
    Wrong("mixed_adamw_gb", 'the fp32 master weights left out', r"master", """
mixed_adamw_gb = 7e9 * (2 + 2 + 4 + 4) / 1e9
"""),
    Wrong("mixed_adamw_gb", 'everything in bf16', r"everything in bf16", """
mixed_adamw_gb = 7e9 * 4 * 2 / 1e9
"""),
]
