"""Exercise 6, gradients: einsum and broadcast-and-sum instead of matmuls, 2/(BK) as one factor, bias gradients
as a matmul with ones, FLOPs summed per layer."""

VARIANTS = {
    "w2_grad": """
def w2_grad(h1: torch.Tensor, h2_grad: torch.Tensor) -> torch.Tensor:
    '''d loss / d w2 for h2 = h1 @ w2, given h1 (B x D) and h2_grad (B x K).'''
    return torch.einsum("ij,ik->jk", h1, h2_grad)
""",
    "h1_grad": """
def h1_grad(w2: torch.Tensor, h2_grad: torch.Tensor) -> torch.Tensor:
    '''d loss / d h1 for h2 = h1 @ w2, given w2 (D x K) and h2_grad (B x K).'''
    # (B, 1, K) * (1, D, K), summed over k
    return (h2_grad[:, None, :] * w2[None, :, :]).sum(dim=2)
""",
    "two_layer_grads": """
def two_layer_grads(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> dict[str, torch.Tensor]:
    '''Gradients of loss = mean((x @ w1 @ w2) ** 2) w.r.t. h2, w2, h1 and w1, by hand.'''
    h1 = torch.matmul(x, w1)
    h2 = torch.matmul(h1, w2)
    batch, k = h2.shape
    grads = {"h2": h2 * (2.0 / (batch * k))}
    grads["w2"] = w2_grad(h1, grads["h2"])
    grads["h1"] = h1_grad(w2, grads["h2"])
    grads["w1"] = w2_grad(x, grads["h1"])    # the same weight rule, one layer down
    return grads
""",
    "two_layer_flops": """
def two_layer_flops(batch: int, d: int, k: int, x_requires_grad: bool = False) -> tuple[int, int]:
    '''(forward FLOPs, backward FLOPs) of the two-layer model, as FlopCounterMode counts them.'''
    first = 2 * batch * d * d     # x @ w1, and each gradient matmul of layer 1
    second = 2 * batch * d * k    # h1 @ w2, and each gradient matmul of layer 2
    forward = first + second
    backward = 2 * second + first * (2 if x_requires_grad else 1)
    return (forward, backward)
""",
    "stack_grads": """
def stack_grads(x: torch.Tensor, weights: list[torch.Tensor], biases: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    '''(weight grads, bias grads) of loss = mean(h_L ** 2) for h_l = h_(l-1) @ W_l + b_l, by hand.'''
    inputs = []                      # inputs[l] is the input of layer l + 1
    h = x
    for w, b in zip(weights, biases):
        inputs.append(h)
        h = torch.einsum("bi,io->bo", h, w) + b
    grad = h * (2.0 / h.numel())
    weight_grads, bias_grads = [], []
    for layer in range(len(weights) - 1, -1, -1):
        weight_grads.insert(0, torch.einsum("bi,bo->io", inputs[layer], grad))
        bias_grads.insert(0, grad.new_ones(grad.shape[0]) @ grad)
        if layer > 0:
            grad = torch.einsum("bo,io->bi", grad, weights[layer])
    return weight_grads, bias_grads
""",
    "stack_flops": """
def stack_flops(batch: int, dims: list[int], x_requires_grad: bool = False) -> tuple[int, int]:
    '''(forward FLOPs, backward FLOPs) of the linear stack with widths dims, as FlopCounterMode counts them.'''
    forward = backward = 0
    for layer in range(len(dims) - 1):
        cost = 2 * batch * dims[layer] * dims[layer + 1]
        forward += cost
        backward += cost                      # weight gradient
        if layer > 0 or x_requires_grad:
            backward += cost                  # input gradient
    return forward, backward
""",
    "step_flops": """
step_flops = (2 + 4) * 1_300_000_000 * (512 * 1024)
""",
}
