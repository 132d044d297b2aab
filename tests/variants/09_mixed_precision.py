"""Exercise 9, mixed precision: copies through .data, unscaling by multiplying with 1/scale, the inf check as
isinf/isnan, the scale rule with >=, bytes per element from a tensor, autocast's lists as a dict."""

VARIANTS = {
    "master_weight_step": """
def master_weight_step(model_params: list[torch.Tensor], master_params: list[torch.Tensor],
                       optimizer: torch.optim.Optimizer) -> None:
    '''Hand the 16-bit gradients to the fp32 masters, step, copy the masters back into the model, clear all gradients.'''
    for low, high in zip(model_params, master_params):
        high.grad = low.grad.float()
        low.grad = None
    optimizer.step()
    for low, high in zip(model_params, master_params):
        low.data.copy_(high.data)        # .data: an in-place copy autograd does not see; rounds to 16 bits
        high.grad = None
""",
    "loss_scaled_step": """
def loss_scaled_step(loss: torch.Tensor, model_params: list[torch.Tensor], master_params: list[torch.Tensor],
                     optimizer: torch.optim.Optimizer, scale: float) -> bool:
    '''Backward of loss * scale, unscale in fp32, skip the step on inf/nan, else step the fp32 masters; True if stepped.'''
    loss.mul(scale).backward()
    inverse = 1.0 / scale
    unscaled = []
    for low in model_params:
        unscaled.append(low.grad.float() * inverse)    # fp32 first: unscaling in fp16 would underflow again
        low.grad = None
    healthy = not any(torch.isinf(g).any() or torch.isnan(g).any() for g in unscaled)
    if healthy:
        for high, grad in zip(master_params, unscaled):
            high.grad = grad
        optimizer.step()
        with torch.no_grad():
            for low, high in zip(model_params, master_params):
                low.copy_(high)
    for high in master_params:
        high.grad = None
    return healthy
""",
    "next_loss_scale": """
def next_loss_scale(scale: float, found_inf: bool, good_steps: int, growth_interval: int) -> tuple[float, int]:
    '''The loss scale and count of good steps after one step, by GradScaler's rule.'''
    if found_inf:
        return scale / 2, 0
    if good_steps + 1 >= growth_interval:
        return scale + scale, 0
    return float(scale), good_steps + 1
""",
    "mlp_activation_bytes": """
def mlp_activation_bytes(batch: int, seq: int, dim: int, hidden: int, dtype: torch.dtype) -> int:
    '''Bytes of the activations an MLP block saves for backward, stored in `dtype`.'''
    tokens = batch * seq
    numbers = tokens * dim + tokens * hidden + tokens * hidden   # up's input, GELU's input, down's input
    return numbers * torch.empty(0, dtype=dtype).element_size()
""",
    "autocast_dtype": """
AUTOCAST_RULES = {
    **dict.fromkeys(["matmul", "linear", "bmm", "conv1d", "scaled_dot_product_attention"], torch.bfloat16),
    **dict.fromkeys(["cross_entropy", "mse_loss", "nll_loss", "prod"], torch.float32),
}


def autocast_dtype(op: str, input_dtype: torch.dtype) -> torch.dtype:
    '''The dtype CPU bf16 autocast gives the output of `op` applied to an input of `input_dtype`.'''
    if input_dtype is torch.float64:
        return torch.float64   # autocast leaves fp64 alone
    return AUTOCAST_RULES.get(op, input_dtype)   # ops on neither list follow their input
""",
    "mixed_adamw_gb": """
mixed_adamw_gb = 7 * (2 * 2 + 3 * 4)
""",
}
