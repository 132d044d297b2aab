"""Exercise 9, mixed precision: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_STEP = '''
def master_weight_step(model_params, master_params, optimizer):
{body}
'''
_HAND = '''
    for param, master in zip(model_params, master_params):
        master.grad = param.grad.to(torch.float32)'''
_COPY = '''
    with torch.no_grad():
        for param, master in zip(model_params, master_params):
            param.copy_(master)'''
_CLEAR = '''
    for param, master in zip(model_params, master_params):
        param.grad = None
        master.grad = None'''
_SCALED = '''
def loss_scaled_step(loss, model_params, master_params, optimizer, scale):
{body}
'''
_UNSCALE = '''
    grads = [param.grad.to(torch.float32) / scale for param in model_params]
    finite = all(bool(torch.isfinite(g).all()) for g in grads)'''
_STEP_MASTERS = '''
        for master, grad in zip(master_params, grads):
            master.grad = grad
        optimizer.step()
        with torch.no_grad():
            for param, master in zip(model_params, master_params):
                param.copy_(master)'''
_AUTOCAST = '''
def autocast_dtype(op, input_dtype):
    if input_dtype == torch.float64:
        return {fp64}
    if op in ("matmul", "linear", "bmm", "conv1d", "scaled_dot_product_attention"):
        return {low}
    if op in ({fp32_ops}):
        return {fp32}
    return {same}
'''
_CAST = dict(fp64="torch.float64", low="torch.bfloat16", fp32_ops='"cross_entropy", "mse_loss", "nll_loss", "prod"',
             fp32="torch.float32", same="input_dtype")

WRONG = [
    Wrong("master_weight_step", "steps the optimizer before handing the masters their gradients",
          r"master gets|old values", _STEP.format(body="    optimizer.step()" + _HAND + _COPY + _CLEAR)),
    Wrong("master_weight_step", "copies the model into the masters instead of the masters into the model",
          r"from master to model|old values", _STEP.format(body=_HAND + '''
    optimizer.step()
    with torch.no_grad():
        for param, master in zip(model_params, master_params):
            master.copy_(param)''' + _CLEAR)),
    Wrong("master_weight_step", "clears the masters' gradients with optimizer.zero_grad, but not the model's",
          r"model parameters", _STEP.format(body=_HAND + "\n    optimizer.step()" + _COPY + "\n    optimizer.zero_grad(set_to_none=True)")),
    Wrong("loss_scaled_step", "never unscales: the masters step with gradients scale times too big", r"unscale", _SCALED.format(
        body='''    (loss * scale).backward()
    grads = [param.grad.to(torch.float32) for param in model_params]
    finite = all(bool(torch.isfinite(g).all()) for g in grads)
    if finite:''' + _STEP_MASTERS + _CLEAR + "\n    return finite")),
    Wrong("loss_scaled_step", "clears the gradients only when it steps", r"both cases", _SCALED.format(
        body="    (loss * scale).backward()" + _UNSCALE + "\n    if finite:" + _STEP_MASTERS + _CLEAR.replace(
            "\n    for", "\n        for").replace("\n        param.grad", "\n            param.grad").replace(
            "\n        master.grad", "\n            master.grad") + "\n    return finite")),
    Wrong("loss_scaled_step", "backward of the loss itself, not of loss * scale, so the small gradients underflow",
          r"scale the loss|loss \* scale", _SCALED.format(body="    loss.backward()" + _UNSCALE + "\n    if finite:" +
                                                            _STEP_MASTERS + _CLEAR + "\n    return finite")),
    Wrong("next_loss_scale", "returns a list", r"tuple", """
def next_loss_scale(scale, found_inf, good_steps, growth_interval):
    if found_inf:
        return [scale * 0.5, 0]
    if good_steps + 1 == growth_interval:
        return [scale * 2.0, 0]
    return [scale, good_steps + 1]
"""),
    Wrong("next_loss_scale", "the scale as an int", r"float", """
def next_loss_scale(scale, found_inf, good_steps, growth_interval):
    if found_inf:
        return int(scale / 2), 0
    if good_steps + 1 == growth_interval:
        return int(scale * 2), 0
    return int(scale), good_steps + 1
"""),
    Wrong("mlp_activation_bytes", "counts the block's output too", r"input of up|of GELU and of down|autograd keeps", """
def mlp_activation_bytes(batch, seq, dim, hidden, dtype):
    return batch * seq * (2 * dim + 2 * hidden) * dtype.itemsize
"""),
    Wrong("autocast_dtype", "returns dtype names as strings", r"torch\.dtype", _AUTOCAST.format(
        fp64='"torch.float64"', low='"torch.bfloat16"', fp32_ops=_CAST["fp32_ops"], fp32='"torch.float32"',
        same="str(input_dtype)")),
    Wrong("autocast_dtype", "no fp32 list: losses follow their input", r"loss", _AUTOCAST.format(**{**_CAST, "fp32_ops": ""})),
]
