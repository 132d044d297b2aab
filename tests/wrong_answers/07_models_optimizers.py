"""Exercise 7, optimizers: typical wrong answers."""
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

WRONG = [
    Wrong("MomentumSGD", "an exponential average of the gradients (1 - momentum) instead of a sum", r"momentum \* v \+|v <- momentum|1 - momentum|dampening|velocity", _SGD + """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad + group["weight_decay"] * p
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = d.clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_((1 - group["momentum"]) * d)
                v = state["momentum_buffer"]
                p.sub_(group["lr"] * (d + group["momentum"] * v if group["nesterov"] else v))
"""),
    Wrong("MomentumSGD", "ignores nesterov", r"nesterov", _SGD + """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad + group["weight_decay"] * p
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = d.clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                p.sub_(group["lr"] * state["momentum_buffer"])
"""),
    Wrong("MomentumSGD", "leaves out the weight decay", r"weight.decay", _SGD + """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = d.clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                v = state["momentum_buffer"]
                p.sub_(group["lr"] * (d + group["momentum"] * v if group["nesterov"] else v))
"""),
    Wrong("AdaGrad", "eps inside the square root", r"eps|square root", _ADAGRAD + """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "sum" not in state:
                    state["sum"] = torch.full_like(p, group["initial_accumulator_value"])
                state["sum"].add_(p.grad * p.grad)
                p.sub_(group["lr"] * p.grad / (state["sum"] + group["eps"]).sqrt())
"""),
    Wrong("AdaGrad", "the sum starts at 0, ignoring initial_accumulator_value", r"started at 0|starts at initial_accumulator_value", _ADAGRAD + """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "sum" not in state:
                    state["sum"] = torch.zeros_like(p)
                state["sum"].add_(p.grad * p.grad)
                p.sub_(group["lr"] * p.grad / (state["sum"].sqrt() + group["eps"]))
"""),
    Wrong("AdamW", "no bias correction", r"bias correction", _ADAMW + """
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                p.mul_(1 - group["lr"] * group["weight_decay"])
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * p.grad)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad * p.grad)
                p.sub_(group["lr"] * state["exp_avg"] / (state["exp_avg_sq"].sqrt() + group["eps"]))
"""),
    Wrong("AdamW", "weight decay added to the gradient (Adam's L2), not decoupled", r"decoupled|weight.decay", _ADAMW + """
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                g = p.grad + group["weight_decay"] * p
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * g)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * g * g)
                m_hat = state["exp_avg"] / (1 - beta1**t)
                v_hat = state["exp_avg_sq"] / (1 - beta2**t)
                p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))
"""),
    Wrong("AdamW", "eps inside the square root", r"eps", _ADAMW + """
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * p.grad)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad * p.grad)
                m_hat = state["exp_avg"] / (1 - beta1**t)
                v_hat = state["exp_avg_sq"] / (1 - beta2**t)
                p.sub_(group["lr"] * m_hat / (v_hat + group["eps"]).sqrt())
"""),
    Wrong("state_bytes", "counts the 0-dim step tensors too", r"0-dim|step", """
def state_bytes(optimizer):
    return sum(v.numel() * v.element_size() for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v))
"""),
    Wrong("state_bytes", "4 bytes per element, whatever the dtype", r"element_size|dtype|bytes per element|fp64|float64|bf16|fp16", """
def state_bytes(optimizer):
    return sum(4 * v.numel() for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v) and v.dim() > 0)
"""),
    Wrong("largest_model", "ignores the reserve", r"reserve", """
def largest_model(num_gpus, bytes_per_gpu, optimizer, param_dtype=torch.float32, master_weights=False, reserved_bytes_per_gpu=0):
    states = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]
    per_param = 2 * param_dtype.itemsize + (4 if master_weights else 0) + 4 * states
    return num_gpus * bytes_per_gpu // per_param
"""),
    Wrong("largest_model", "a negative count when the reserve is larger than the GPU", r"0|nothing fits|reserve", """
def largest_model(num_gpus, bytes_per_gpu, optimizer, param_dtype=torch.float32, master_weights=False, reserved_bytes_per_gpu=0):
    states = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]
    per_param = 2 * param_dtype.itemsize + (4 if master_weights else 0) + 4 * states
    return num_gpus * (bytes_per_gpu - reserved_bytes_per_gpu) // per_param
"""),
    Wrong("largest_model", "the master copy in the parameters' dtype instead of fp32", r"master", """
def largest_model(num_gpus, bytes_per_gpu, optimizer, param_dtype=torch.float32, master_weights=False, reserved_bytes_per_gpu=0):
    states = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]
    per_param = 2 * param_dtype.itemsize + (param_dtype.itemsize if master_weights else 0) + 4 * states
    return num_gpus * max(bytes_per_gpu - reserved_bytes_per_gpu, 0) // per_param
"""),
    # issue #50: a parameter without a gradient, and the reserve per GPU
    Wrong("MomentumSGD", "does not skip a parameter whose .grad is None", r"grad is None|without a gradient|no gradient", _SGD + """
        for group in self.param_groups:
            for p in group["params"]:
                d = p.grad if group["weight_decay"] == 0 else p.grad + group["weight_decay"] * p
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = d.clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                v = state["momentum_buffer"]
                p.sub_(group["lr"] * (d + group["momentum"] * v if group["nesterov"] else v))
"""),
    Wrong("AdamW", "does not skip a parameter whose .grad is None", r"grad is None|without a gradient|no gradient", _ADAMW + """
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * p.grad)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad * p.grad)
                m_hat = state["exp_avg"] / (1 - beta1**t)
                v_hat = state["exp_avg_sq"] / (1 - beta2**t)
                p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))
"""),
    Wrong("largest_model", "subtracts the reserve once from the cluster's total, not on every GPU", r"every GPU|each GPU|per GPU", """
def largest_model(num_gpus, bytes_per_gpu, optimizer, param_dtype=torch.float32, master_weights=False, reserved_bytes_per_gpu=0):
    states = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]
    per_param = 2 * param_dtype.itemsize + (4 if master_weights else 0) + 4 * states
    return max(num_gpus * bytes_per_gpu - reserved_bytes_per_gpu, 0) // per_param
"""),
    # typical mistakes of our own
    Wrong("MomentumSGD", "reads the hyperparameters from self.defaults, not from the parameter's group", r"from the parameter's group", _SGD + """
        hyper = self.defaults
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad + hyper["weight_decay"] * p
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = d.clone()
                else:
                    state["momentum_buffer"].mul_(hyper["momentum"]).add_(d)
                v = state["momentum_buffer"]
                p.sub_(hyper["lr"] * (d + hyper["momentum"] * v if hyper["nesterov"] else v))
"""),
    Wrong("AdaGrad", "keeps the running sum in float32 whatever the parameter's dtype", r"dtype|like the parameter", _ADAGRAD + """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "sum" not in state:
                    state["sum"] = torch.full(p.shape, group["initial_accumulator_value"])
                state["sum"].add_(p.grad * p.grad)
                p.sub_(group["lr"] * p.grad / (state["sum"].sqrt() + group["eps"]))
"""),
    Wrong("AdamW", "one step count for the whole optimizer, not one per parameter", r"own step|per parameter|each parameter|its own", _ADAMW + """
        self.t = getattr(self, "t", 0)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                self.t += 1
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                t = self.t
                p.mul_(1 - group["lr"] * group["weight_decay"])
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * p.grad)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad * p.grad)
                m_hat = state["exp_avg"] / (1 - beta1**t)
                v_hat = state["exp_avg_sq"] / (1 - beta2**t)
                p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))
"""),
    Wrong("AdamW", "the weight decay after the Adam step instead of before", r"before|decay first|order", _ADAMW + """
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * p.grad)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad * p.grad)
                m_hat = state["exp_avg"] / (1 - beta1**t)
                v_hat = state["exp_avg_sq"] / (1 - beta2**t)
                p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))
                p.mul_(1 - group["lr"] * group["weight_decay"])
"""),
    Wrong("state_bytes", "counts the parameters' bytes instead of the state's", r"state", """
def state_bytes(optimizer):
    return sum(p.numel() * p.element_size() for p in optimizer.state)
"""),
    Wrong("largest_model", "forgets the gradient: one copy of the parameters", r"gradient", """
def largest_model(num_gpus, bytes_per_gpu, optimizer, param_dtype=torch.float32, master_weights=False, reserved_bytes_per_gpu=0):
    states = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]
    per_param = param_dtype.itemsize + (4 if master_weights else 0) + 4 * states
    return num_gpus * max(bytes_per_gpu - reserved_bytes_per_gpu, 0) // per_param
"""),
    Wrong("AdamW", "reads lr and weight_decay from self.defaults, not from the parameter's group", r"from the parameter's group", _ADAMW + """
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                p.mul_(1 - self.defaults["lr"] * self.defaults["weight_decay"])
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * p.grad)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad * p.grad)
                m_hat = state["exp_avg"] / (1 - beta1**t)
                v_hat = state["exp_avg_sq"] / (1 - beta2**t)
                p.sub_(self.defaults["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))
"""),
    Wrong("adamw_gb", 'the optimizer state left out', r"two fp32 moments", """
adamw_gb = 13e9 * (4 + 4) / 1e9
"""),
    Wrong("adamw_gb", 'one moment, not two', r"m and v", """
adamw_gb = 13e9 * 12 / 1e9
"""),
    Wrong("adamw_gb", 'GiB where GB were asked', r"GiB \(2\^30", """
adamw_gb = 13e9 * 16 / 2**30
"""),
]
