"""Exercise 6, gradients by hand: typical wrong answers."""
from tests.wrong_answers import Wrong

WRONG = [
    Wrong("w2_grad", "h1 @ h2_grad, without the transpose (a shape error for most shapes)", r"transpose|\.T\b|shape of w2|\(D, K\)|sums? over the batch", """
def w2_grad(h1, h2_grad):
    return h1 @ h2_grad
"""),
    Wrong("w2_grad", "h2_grad.T @ h1: the transpose of the answer, (K, D)", r"transpose|shape of w2|\(D, K\)", """
def w2_grad(h1, h2_grad):
    return h2_grad.T @ h1
"""),
    Wrong("h1_grad", "h2_grad @ w2, without the transpose: a shape mismatch", r"transpose|\.T\b|shape of h1|\(B, D\)|sum over k", """
def h1_grad(w2, h2_grad):
    return h2_grad @ w2
"""),
    Wrong("h1_grad", "w2 @ h2_grad.T: the transpose of the answer, (D, B)", r"transpose|shape of h1|\(B, D\)", """
def h1_grad(w2, h2_grad):
    return w2 @ h2_grad.T
"""),
    Wrong("two_layer_grads", "h2.grad = 2 h2: the mean's 1/(BK) forgotten", r"mean|B \* K|B x K|BK|every entry|all .* entries", """
def two_layer_grads(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    h2_grad = 2 * h2
    g1 = h1_grad(w2, h2_grad)
    return {"h2": h2_grad, "w2": w2_grad(h1, h2_grad), "h1": g1, "w1": w2_grad(x, g1)}
"""),
    Wrong("two_layer_grads", "divides by the batch size only, not by B * K", r"B \* K|B x K|BK|all B|every entry|entries of h2", """
def two_layer_grads(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    h2_grad = 2 * h2 / x.shape[0]
    g1 = h1_grad(w2, h2_grad)
    return {"h2": h2_grad, "w2": w2_grad(h1, h2_grad), "h1": g1, "w1": w2_grad(x, g1)}
"""),
    Wrong("two_layer_grads", "casts to float32 to be safe, so float64 inputs get float32 gradients", r"float64|dtype", """
def two_layer_grads(x, w1, w2):
    x, w1, w2 = x.float(), w1.float(), w2.float()
    h1 = x @ w1
    h2 = h1 @ w2
    h2_grad = 2 * h2 / h2.numel()
    g1 = h1_grad(w2, h2_grad)
    return {"h2": h2_grad, "w2": w2_grad(h1, h2_grad), "h1": g1, "w1": w2_grad(x, g1)}
"""),
    Wrong("two_layer_flops", "ignores x_requires_grad", r"x_requires_grad|x\.grad|input gradient of (the first|layer 1)", """
def two_layer_flops(batch, d, k, x_requires_grad=False):
    forward = 2 * batch * d * d + 2 * batch * d * k
    return forward, 4 * batch * d * k + 2 * batch * d * d
"""),
    Wrong("two_layer_flops", "backward = 2 x forward, as if x needed its gradient", r"x is data|skip|no x\.grad|x_requires_grad|gradient of x", """
def two_layer_flops(batch, d, k, x_requires_grad=False):
    forward = 2 * batch * d * d + 2 * batch * d * k
    return forward, 2 * forward
"""),
    Wrong("stack_grads", "collects the gradients walking backwards and never reverses the lists", r"order|reverse|last layer first|first layer first|layer 1", """
def stack_grads(x, weights, biases):
    hs = [x]
    for w, b in zip(weights, biases):
        hs.append(hs[-1] @ w + b)
    g = 2 * hs[-1] / hs[-1].numel()
    weight_grads, bias_grads = [], []
    for layer in reversed(range(len(weights))):
        weight_grads.append(w2_grad(hs[layer], g))
        bias_grads.append(g.sum(dim=0))
        g = h1_grad(weights[layer], g)
    return weight_grads, bias_grads
"""),
    Wrong("stack_grads", "the bias gradient is the mean over the batch instead of the sum", r"\bsum|every row|each row", """
def stack_grads(x, weights, biases):
    hs = [x]
    for w, b in zip(weights, biases):
        hs.append(hs[-1] @ w + b)
    g = 2 * hs[-1] / hs[-1].numel()
    weight_grads, bias_grads = [None] * len(weights), [None] * len(weights)
    for layer in reversed(range(len(weights))):
        weight_grads[layer] = hs[layer].T @ g
        bias_grads[layer] = g.mean(dim=0)
        g = g @ weights[layer].T
    return weight_grads, bias_grads
"""),
    Wrong("stack_grads", "sums the bias gradient with a float32 vector of ones, which fails on float64 inputs", r"float64|dtype", """
def stack_grads(x, weights, biases):
    hs = [x]
    for w, b in zip(weights, biases):
        hs.append(hs[-1] @ w + b)
    g = 2 * hs[-1] / hs[-1].numel()
    weight_grads, bias_grads = [None] * len(weights), [None] * len(weights)
    for layer in reversed(range(len(weights))):
        weight_grads[layer] = hs[layer].T @ g
        bias_grads[layer] = torch.ones(g.shape[0]) @ g
        g = g @ weights[layer].T
    return weight_grads, bias_grads
"""),
    Wrong("stack_flops", "leaves out the input gradient of the last layer", r"input.gradient|h_?\(?l-1\)?\.grad|gradient of (its|the layer's) input", """
def stack_flops(batch, dims, x_requires_grad=False):
    per_layer = [2 * batch * a * b for a, b in zip(dims, dims[1:])]
    forward = sum(per_layer)
    backward = forward + sum(per_layer[1:-1])
    if x_requires_grad:
        backward += per_layer[0]
    return forward, backward
"""),
    Wrong("stack_flops", "counts the input gradient of the first layer even when x is data", r"x is data|x_requires_grad|first layer|x\.grad", """
def stack_flops(batch, dims, x_requires_grad=False):
    forward = sum(2 * batch * a * b for a, b in zip(dims, dims[1:]))
    return forward, 2 * forward
"""),
    Wrong("stack_flops", "counts the bias additions as FLOPs", r"bias", """
def stack_flops(batch, dims, x_requires_grad=False):
    per_layer = [2 * batch * a * b + batch * b for a, b in zip(dims, dims[1:])]
    forward = sum(per_layer)
    backward = 2 * forward
    if not x_requires_grad:
        backward -= 2 * batch * dims[0] * dims[1]
    return forward, backward
"""),
    Wrong("step_flops", 'the forward pass only', r"forward pass alone", """
step_flops = 2 * 1.3e9 * 512 * 1024
"""),
    Wrong("step_flops", 'backward counted like forward', r"twice", """
step_flops = 4 * 1.3e9 * 512 * 1024
"""),
]
