"""Exercise 7, models and optimizers: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_HEAD = '''
class {name}(torch.optim.Optimizer):
    def __init__(self, params, {args}):
        super().__init__(params, dict({defaults}))

    @torch.no_grad()
    def step(self, closure=None):
'''
_SGD = _HEAD.format(name="MomentumSGD", args="lr=0.01, momentum=0.9, weight_decay=0.0, nesterov=False",
                    defaults="lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov")
_ADAGRAD = _HEAD.format(name="AdaGrad", args="lr=0.01, eps=1e-10, initial_accumulator_value=0.0",
                        defaults="lr=lr, eps=eps, initial_accumulator_value=initial_accumulator_value")
_ADAMW = _HEAD.format(name="AdamW", args="lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2",
                      defaults="lr=lr, betas=betas, eps=eps, weight_decay=weight_decay")
_ADAGRAD_LOOP = '''        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "sum" not in state:
                    state["sum"] = torch.full_like(p, group["initial_accumulator_value"])
{update}
'''
_ADAMW_LOOP = '''        for group in self.param_groups:
            beta1, beta2 = {betas}
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                t = state["step"]{count}
                p.mul_(1 - group["lr"] * group["weight_decay"])
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * p.grad)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad * p.grad)
                m_hat = state["exp_avg"] / (1 - beta1**t)
                v_hat = {v_hat}
                p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))
'''
_ADAMW_GOOD = dict(betas='group["betas"]', count='\n                state["step"] = t = t + 1',
                   v_hat='state["exp_avg_sq"] / (1 - beta2**t)')
_LARGEST = '''
def largest_model(num_gpus, bytes_per_gpu, optimizer, param_dtype=torch.float32, master_weights=False, reserved_bytes_per_gpu=0):
    states = {states}
    per_param = {per_param}
    return {result}
'''
_STATES = '{"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]'
_PER_PARAM = "2 * param_dtype.itemsize + (4 if master_weights else 0) + 4 * states"
_USABLE = "num_gpus * max(bytes_per_gpu - reserved_bytes_per_gpu, 0) // per_param"

WRONG = [
    Wrong("MomentumSGD", "nesterov looks ahead with the velocity from before this step", r"nesterov|look(s)? ahead", _SGD + """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad + group["weight_decay"] * p
                state = self.state[p]
                old = state.get("momentum_buffer", torch.zeros_like(p))
                state["momentum_buffer"] = group["momentum"] * old + d
                direction = d + group["momentum"] * old if group["nesterov"] else state["momentum_buffer"]
                p.sub_(group["lr"] * direction)
"""),
    Wrong("AdaGrad", "accumulates the gradients, not their squares", r"square", _ADAGRAD + _ADAGRAD_LOOP.format(update='''                state["sum"].add_(p.grad)
                p.sub_(group["lr"] * p.grad / (state["sum"].sqrt() + group["eps"]))''')),
    Wrong("AdaGrad", "one running sum for the whole tensor instead of one per element", r"each element|per element|elementwise",
          _ADAGRAD + _ADAGRAD_LOOP.format(update='''                state["sum"] += (p.grad * p.grad).sum()
                p.sub_(group["lr"] * p.grad / (state["sum"].sqrt() + group["eps"]))''')),
    Wrong("AdaGrad", "divides by the running sum itself, not its square root", r"square root|sqrt", _ADAGRAD + _ADAGRAD_LOOP.format(
        update='''                state["sum"].add_(p.grad * p.grad)
                p.sub_(group["lr"] * p.grad / (state["sum"] + group["eps"]))''')),
    Wrong("AdamW", "counts the step after the update, so the first bias correction divides by 0", r"bias correction|step number",
          _ADAMW + _ADAMW_LOOP.format(**{**_ADAMW_GOOD, "count": ""}).replace(
              '                p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))',
              '                p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))\n                state["step"] += 1')),
    Wrong("AdamW", "uses beta1 for both moments", r"beta2|betas|second moment|exp_avg_sq", _ADAMW + _ADAMW_LOOP.format(
        **{**_ADAMW_GOOD, "betas": '(group["betas"][0], group["betas"][0])'})),
    Wrong("AdamW", "bias-corrects the first moment only", r"bias correction", _ADAMW + _ADAMW_LOOP.format(
        **{**_ADAMW_GOOD, "v_hat": 'state["exp_avg_sq"]'})),
    Wrong("state_bytes", "counts only the first tensor of each parameter's state", r"exp_avg_sq|every tensor|each tensor", """
def state_bytes(optimizer):
    total = 0
    for state in optimizer.state.values():
        tensors = [v for v in state.values() if torch.is_tensor(v) and v.dim() > 0]
        if tensors:
            total += tensors[0].numel() * tensors[0].element_size()
    return total
"""),
    Wrong("state_bytes", "asks every value for .dim(), but a state may hold plain numbers", r"plain numbers|not (all|every)|may be", """
def state_bytes(optimizer):
    return sum(v.numel() * v.element_size() for s in optimizer.state.values() for v in s.values() if v.dim() > 0)
"""),
    Wrong("largest_model", "counts Adam's step counter as a third state tensor", r"step counter|two state tensors|0-dim",
          _LARGEST.format(states='{"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 3, "adamw": 3}[optimizer]',
                          per_param=_PER_PARAM, result=_USABLE)),
    Wrong("largest_model", "keeps the gradient in fp32 whatever param_dtype is", r"gradient", _LARGEST.format(
        states=_STATES, per_param="param_dtype.itemsize + 4 + (4 if master_weights else 0) + 4 * states", result=_USABLE)),
    Wrong("largest_model", "a float from true division", r"\bint\b", _LARGEST.format(
        states=_STATES, per_param=_PER_PARAM, result="num_gpus * max(bytes_per_gpu - reserved_bytes_per_gpu, 0) / per_param")),
    Wrong("largest_model", "keys the table by the classes' names ('AdamW'), so the task's lower-case names fail",
          r"lower case|lower-case", _LARGEST.format(
              states='{"SGD": 0, "Momentum": 1, "AdaGrad": 1, "RMSprop": 1, "Adam": 2, "AdamW": 2}[optimizer]',
              per_param=_PER_PARAM, result=_USABLE)),
]
