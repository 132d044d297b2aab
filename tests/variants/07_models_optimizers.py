"""Exercise 7, optimizers: new tensors and `p -= ...` instead of in-place chains, addcmul_/addcdiv_ for AdaGrad,
lerp_ and torch's step-size arrangement for AdamW, nbytes for the state, a cluster's free bytes computed first."""

VARIANTS = {
    "MomentumSGD": """
class MomentumSGD(torch.optim.Optimizer):
    '''SGD with momentum, optional Nesterov and L2 weight decay, step for step like torch.optim.SGD.'''

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.9, weight_decay: float = 0.0,
                 nesterov: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr, mu, decay = group["lr"], group["momentum"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad.clone()
                if decay != 0:
                    d += decay * p
                state = self.state[p]
                if "momentum_buffer" in state:
                    v = mu * state["momentum_buffer"] + d
                else:
                    v = d.clone()
                state["momentum_buffer"] = v
                direction = d + mu * v if group["nesterov"] else v
                p -= lr * direction
""",
    "AdaGrad": """
class AdaGrad(torch.optim.Optimizer):
    '''AdaGrad with an initial accumulator value, step for step like torch.optim.Adagrad.'''

    def __init__(self, params, lr: float = 0.01, eps: float = 1e-10, initial_accumulator_value: float = 0.0):
        super().__init__(params, dict(lr=lr, eps=eps, initial_accumulator_value=initial_accumulator_value))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if "sum" not in self.state[p]:
                    self.state[p]["sum"] = torch.full_like(p, group["initial_accumulator_value"])
                s = self.state[p]["sum"]
                s.addcmul_(g, g)                                   # s += g * g
                p.addcdiv_(g, s.sqrt().add_(group["eps"]), value=-group["lr"])
""",
    "AdamW": """
class AdamW(torch.optim.Optimizer):
    '''Adam with bias correction and decoupled weight decay, step for step like torch.optim.AdamW.'''

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = int(state["step"].item())
                p.mul_(1 - lr * group["weight_decay"])
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(g, 1 - beta1)                          # m + (1 - beta1)(g - m) = beta1 m + (1 - beta1) g
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                # lr * m_hat / (sqrt(v_hat) + eps), with the corrections taken out as scalars
                step_size = lr / (1 - beta1**t)
                denominator = (v.sqrt() / math.sqrt(1 - beta2**t)).add_(eps)
                p.addcdiv_(m, denominator, value=-step_size)
""",
    "state_bytes": """
def state_bytes(optimizer: torch.optim.Optimizer) -> int:
    '''Bytes of the tensors with at least one dimension that `optimizer.state` holds.'''
    return sum(value.nbytes for state in optimizer.state.values() for value in state.values()
               if isinstance(value, torch.Tensor) and value.ndim >= 1)
""",
    "largest_model": """
def largest_model(num_gpus: int, bytes_per_gpu: int, optimizer: str, param_dtype: torch.dtype = torch.float32,
                  master_weights: bool = False, reserved_bytes_per_gpu: int = 0) -> int:
    '''Most parameters whose weights, gradients, master copy and optimizer state fit on the cluster.'''
    if optimizer == "sgd":
        state_tensors = 0
    elif optimizer in ("adam", "adamw"):
        state_tensors = 2
    else:
        state_tensors = 1   # momentum, adagrad, rmsprop
    bytes_per_param = param_dtype.itemsize * 2 + 4 * state_tensors
    if master_weights:
        bytes_per_param += 4
    free_per_gpu = bytes_per_gpu - reserved_bytes_per_gpu
    if free_per_gpu <= 0:
        return 0
    return (free_per_gpu * num_gpus) // bytes_per_param
""",
    "adamw_gb": """
adamw_gb = 13 * 16
""",
}
