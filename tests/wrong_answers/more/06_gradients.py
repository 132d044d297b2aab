"""Exercise 6, gradients: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_TWO_LAYER = '''
def two_layer_grads(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    h2_grad = 2 * h2 / h2.numel()
    h1_grad = h2_grad @ w2.T
    return {result}
'''
_STACK = '''
def stack_grads(x, weights, biases):
    activations = [x]
    for w, b in zip(weights, biases):
        activations.append({forward})
    out_grad = 2 * activations[-1] / activations[-1].numel()
    weight_grads, bias_grads = [None] * len(weights), [None] * len(biases)
    for layer in reversed(range(len(weights))):
        weight_grads[layer] = activations[{inputs}].T @ out_grad
        bias_grads[layer] = out_grad.sum(dim=0)
        if layer > 0:
            out_grad = out_grad @ weights[layer].T
    return weight_grads, bias_grads
'''

WRONG = [
    Wrong("w2_grad", "an elementwise product instead of a matmul", r"elementwise|adds up|sums? over", """
def w2_grad(h1, h2_grad):
    return h1 * h2_grad
"""),
    Wrong("w2_grad", "divides by the batch size, as if w2.grad were a mean over the rows", r"batch size|adds|sum", """
def w2_grad(h1, h2_grad):
    return h1.T @ h2_grad / h1.shape[0]
"""),
    Wrong("h1_grad", "divides by the batch size", r"batch size|adds|sum", """
def h1_grad(w2, h2_grad):
    return h2_grad @ w2.T / h2_grad.shape[0]
"""),
    Wrong("two_layer_grads", "returns a tuple of the four gradients, not a dict", r"dict", _TWO_LAYER.format(
        result="h2_grad, h1.T @ h2_grad, h1_grad, x.T @ h1_grad")),
    Wrong("two_layer_grads", "names the keys after the gradients ('dh2', ...), not the tensors", r"keys?", _TWO_LAYER.format(
        result='{"dh2": h2_grad, "dw2": h1.T @ h2_grad, "dh1": h1_grad, "dw1": x.T @ h1_grad}')),
    Wrong("two_layer_flops", "counts the forward matmul of the first layer only", r"per layer|each layer|one matmul per", """
def two_layer_flops(batch, d, k, x_requires_grad=False):
    forward = 2 * batch * d * d
    backward = 2 * batch * d * k + 2 * batch * d * k + 2 * batch * d * d
    if x_requires_grad:
        backward += 2 * batch * d * d
    return forward, backward
"""),
    Wrong("two_layer_flops", "returns a list", r"tuple", """
def two_layer_flops(batch, d, k, x_requires_grad=False):
    forward = 2 * batch * d * d + 2 * batch * d * k
    backward = 4 * batch * d * k + (4 if x_requires_grad else 2) * batch * d * d
    return [forward, backward]
"""),
    Wrong("stack_grads", "leaves the biases out of the forward pass", r"h1 = 4|forward pass", _STACK.format(
        forward="activations[-1] @ w", inputs="layer")),
    Wrong("stack_grads", "the weight gradient from the layer's output instead of its input", r"layer's input|x as the",
          _STACK.format(forward="activations[-1] @ w + b", inputs="layer + 1")),
    Wrong("stack_flops", "skips the last layer's input gradient instead of x's", r"x's|x is data|first layer", """
def stack_flops(batch, dims, x_requires_grad=False):
    per_layer = [2 * batch * a * b for a, b in zip(dims, dims[1:])]
    forward = sum(per_layer)
    backward = 2 * forward
    if not x_requires_grad:
        backward -= per_layer[-1]
    return forward, backward
"""),
]
