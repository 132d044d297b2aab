"""Exercise 7, optimizers: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_SGD = '''
class MomentumSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.01, momentum=0.9, weight_decay=0.0, nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr, mu, wd = {lr}, group["momentum"], group["weight_decay"]
            for p in group["params"]:
                {skip}
                g = p.grad
                d = {d}
                state = self.state[p]
                if "{key}" not in state:
                    state["{key}"] = {first}
                else:
                    state["{key}"].mul_(mu).add_({added})
                v = state["{key}"]
                direction = {direction} if group["nesterov"] else v
                p.sub_(lr * direction)
                {after}
'''
_S = dict(lr='group["lr"]', skip="if p.grad is None:\n                    continue", d="g + wd * p", key="momentum_buffer",
          first="d.clone()", added="d", direction="d + mu * v", after="")
_ADAGRAD = '''
class AdaGrad(torch.optim.Optimizer):
    def __init__(self, params, lr=0.01, eps=1e-10, initial_accumulator_value=0.0):
        super().__init__(params, dict(lr=lr, eps=eps, initial_accumulator_value=initial_accumulator_value))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state[p]
                if "{key}" not in state:
                    state["{key}"] = torch.full_like(p, {start})
                s = state["{key}"]
                {before}
                s.add_({added})
                p.sub_(group["lr"] * g / {denominator})
'''
_AG = dict(key="sum", start='group["initial_accumulator_value"]', before="", added="g * g",
           denominator='(s.sqrt() + group["eps"])')
_ADAMW = '''
class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                {count}
                t = state["step"]
                {decay}
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_({m_beta}).add_((1 - {m_beta}) * g)
                v.mul_({v_beta}).add_((1 - {v_beta}) * g * g)
                m_hat = m / (1 - b1 ** {t})
                v_hat = v / (1 - b2 ** {t})
                p.sub_(lr * m_hat / {denominator})
'''
_AW = dict(count='state["step"] += 1', decay="p.mul_(1 - lr * wd)", m_beta="b1", v_beta="b2", t="t",
           denominator="(v_hat.sqrt() + eps)")
_STATE = '''
def state_bytes(optimizer):
    total = 0
    for p, state in optimizer.state.items():
        for value in {values}:
            {body}
    return total
'''
_SB_BODY = "if isinstance(value, torch.Tensor) and value.dim() > 0:\n                total += value.numel() * value.element_size()"
_LARGEST = '''
def largest_model(num_gpus, bytes_per_gpu, optimizer, param_dtype=torch.float32, master_weights=False,
                  reserved_bytes_per_gpu=0):
    states = {{"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}}[optimizer]
    per_param = {per_param}
    free = {free}
    return {result}
'''
_LM = dict(per_param="2 * param_dtype.itemsize + (4 if master_weights else 0) + 4 * states",
           free="max(0, bytes_per_gpu - reserved_bytes_per_gpu)", result="num_gpus * free // per_param")

WRONG = [
    Wrong("MomentumSGD", "a (1 - momentum) damping on the velocity", r"1 - momentum|average|undamped|running sum",
          _SGD.format(**{**_S, "added": "(1 - mu) * d"})),
    Wrong("MomentumSGD", "weight decay applied to p after the momentum step, not in the gradient",
          r"weight decay.{0,60}(gradient|before|L2)|L2|decoupled|into the gradient",
          _SGD.format(**{**_S, "d": "g", "after": "p.sub_(lr * wd * p)"})),
    Wrong("MomentumSGD", "Nesterov looks ahead with g instead of d", r"nesterov|look.?ahead|\bd \+|weight decay",
          _SGD.format(**{**_S, "direction": "g + mu * v"})),
    Wrong("MomentumSGD", "lr from the defaults, not the group", r"group", _SGD.format(**{**_S, "lr": 'self.defaults["lr"]'})),
    Wrong("MomentumSGD", "the state named 'velocity'", r"momentum_buffer|name", _SGD.format(**{**_S, "key": "velocity"})),
    Wrong("MomentumSGD", "the velocity is p.grad itself, not a copy", r"clone|alias|same tensor|copy", _SGD.format(**{**_S, "first": "d"})),
    Wrong("MomentumSGD", "no skip for a parameter without gradient", r"None|no gradient|without a gradient",
          _SGD.format(**{**_S, "skip": "pass"})),
    Wrong("AdaGrad", "eps inside the square root", r"eps|outside", _ADAGRAD.format(**{**_AG, "denominator": '(s + group["eps"]).sqrt()'})),
    Wrong("AdaGrad", "the running sum starts at 0", r"initial_accumulator_value|start", _ADAGRAD.format(**{**_AG, "start": "0.0"})),
    Wrong("AdaGrad", "adds the gradients, not their squares", r"square", _ADAGRAD.format(**{**_AG, "added": "g"})),
    Wrong("AdaGrad", "divides by the sum itself, not its square root", r"square root|sqrt", _ADAGRAD.format(**{**_AG,
          "denominator": '(s + group["eps"])'})),
    Wrong("AdaGrad", "the state named 'sum_sq'", r"'sum'|\bname|\bkey", _ADAGRAD.format(**{**_AG, "key": "sum_sq"})),
    Wrong("AdaGrad", "the update uses the sum before this step's square is added", r"order|before|after adding|this step",
          _ADAGRAD.format(**{**_AG, "before": 'p.sub_(group["lr"] * g / (s.sqrt() + group["eps"]))',
                             "denominator": "1e30"})),
    Wrong("AdamW", "no bias correction", r"bias correction", _ADAMW.format(**{**_AW, "t": "0 + 1e9"})),
    Wrong("AdamW", "the decay after the update", r"before anything|comes first|after the", _ADAMW.format(**{**_AW, "decay": "pass"}).replace(
        "p.sub_(lr * m_hat / (v_hat.sqrt() + eps))", "p.sub_(lr * m_hat / (v_hat.sqrt() + eps))\n                p.mul_(1 - lr * wd)")),
    Wrong("AdamW", "L2 decay in the gradient", r"decoupled|L2|into the gradient", _ADAMW.format(**{**_AW, "decay": "g = g + wd * p"})),
    Wrong("AdamW", "one step count for the optimizer, shared by its parameters", r"own step|each parameter|shared", _ADAMW.format(**{**_AW,
          "count": 'self.__dict__["t"] = self.__dict__.get("t", 0) + 1; state["step"] = self.__dict__["t"]'})),
    Wrong("AdamW", "eps inside the square root", r"eps|outside", _ADAMW.format(**{**_AW, "denominator": "(v_hat + eps).sqrt()"})),
    Wrong("AdamW", "the step counted after the bias correction: t = 0 at the first step", r"t = 1|step number|first step|starts at 1|\bt\b",
          _ADAMW.format(**{**_AW, "count": "pass"}).replace("p.sub_(lr * m_hat / (v_hat.sqrt() + eps))",
                                                          'p.sub_(lr * m_hat / (v_hat.sqrt() + eps))\n                state["step"] += 1')),
    Wrong("AdamW", "beta2 for m and beta1 for v", r"beta1|beta2|own rate", _ADAMW.format(**{**_AW, "m_beta": "b2", "v_beta": "b1"})),
    Wrong("state_bytes", "0-dim step tensors counted", r"0-dim|step", _STATE.format(values="state.values()", body=_SB_BODY.replace(
        " and value.dim() > 0", ""))),
    Wrong("state_bytes", "4 bytes per element", r"element_size|dtype|float64", _STATE.format(values="state.values()", body=_SB_BODY.replace(
        "value.element_size()", "4"))),
    Wrong("state_bytes", "assumes every value is a tensor", r"plain numbers|only tensors|not a tensor", _STATE.format(values="state.values()",
          body="if value.dim() > 0:\n                total += value.numel() * value.element_size()")),
    Wrong("state_bytes", "counts elements, not bytes", r"bytes|element_size", _STATE.format(values="state.values()", body=_SB_BODY.replace(
        " * value.element_size()", ""))),
    Wrong("state_bytes", "counts only the state names Adam uses", r"any (key|name)|whatever|every (value|tensor)|all values|by name|any optimizer",
          _STATE.format(values='[state[name] for name in ("exp_avg", "exp_avg_sq") if name in state]', body=_SB_BODY)),
    Wrong("state_bytes", "one tensor per parameter", r"every|each|all", _STATE.format(values="list(state.values())[:1]", body=_SB_BODY)),
    Wrong("largest_model", "no gradient: 12 bytes per parameter for AdamW", r"gradient", _LARGEST.format(**{**_LM,
          "per_param": "param_dtype.itemsize + (4 if master_weights else 0) + 4 * states"})),
    Wrong("largest_model", "the reserve set aside once for the cluster", r"every GPU|each GPU|once", _LARGEST.format(**{**_LM,
          "free": "num_gpus * bytes_per_gpu - reserved_bytes_per_gpu", "result": "max(0, free // per_param)"})),
    Wrong("largest_model", "the gradient in fp32 with master weights", r"gradient.{0,40}(dtype|bf16)|param_dtype", _LARGEST.format(**{**_LM,
          "per_param": "param_dtype.itemsize + 4 + (4 if master_weights else 0) + 4 * states"})),
    Wrong("largest_model", "a negative answer when the reserve is larger than the GPU", r"\b0\b|never negative|nothing fits", _LARGEST.format(**{**_LM,
          "free": "bytes_per_gpu - reserved_bytes_per_gpu"})),
    Wrong("largest_model", "true division: a float comes back", r"\bint\b", _LARGEST.format(**{**_LM, "result": "num_gpus * free / per_param"})),
    Wrong("largest_model", "one GPU's answer: not multiplied by num_gpus", r"sharded|all the GPUs|whole cluster|num_gpus|together",
          _LARGEST.format(**{**_LM, "result": "free // per_param"})),
    Wrong("largest_model", "rounds down per GPU, then multiplies by num_gpus", r"rounds? (down )?per GPU|floor per GPU|whole cluster|once, over|not per GPU|round down once",
          _LARGEST.format(**{**_LM, "result": "num_gpus * (free // per_param)"})),
    Wrong("largest_model", "the master copy counted even without master weights", r"master", _LARGEST.format(**{**_LM,
          "per_param": "2 * param_dtype.itemsize + 4 + 4 * states"})),
    Wrong("adamw_gb", "no gradients: 12 bytes per parameter", r"gradient", "adamw_gb = 13e9 * 12 / 1e9\n"),
    Wrong("adamw_gb", "GiB instead of GB", r"GiB", "adamw_gb = 13e9 * 16 / 2**30\n"),
    Wrong("adamw_gb", "parameters and gradients only: the optimizer state forgotten", r"state|moment", "adamw_gb = 13e9 * 8 / 1e9\n"),
    Wrong("adamw_gb", "a master copy counted too: 20 bytes", r"master|20 bytes|copy", "adamw_gb = 13e9 * 20 / 1e9\n"),
    Wrong("adamw_gb", "MB instead of GB", r"\bMB\b|1,?000", "adamw_gb = 13e9 * 16 / 1e6\n"),
]
