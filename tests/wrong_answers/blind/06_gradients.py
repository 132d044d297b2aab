"""Exercise 6, gradients: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_TWO = '''
def two_layer_grads(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    B, K = h2.shape
    h2_grad = {h2_grad}
    w2g = h1.T @ h2_grad
    h1g = h2_grad @ w2.T
    w1g = {w1g}
    return {result}
'''
_T = dict(h2_grad="2 * h2 / (B * K)", w1g="x.T @ h1g", result='{"h2": h2_grad, "w2": w2g, "h1": h1g, "w1": w1g}')
_TWO_FLOPS = '''
def two_layer_flops(batch, d, k, x_requires_grad=False):
    first, second = {first}, {second}
    forward = first + second
    backward = {backward}
    return {result}
'''
_TF = dict(first="2 * batch * d * d", second="2 * batch * d * k",
           backward="first + 2 * second + (first if x_requires_grad else 0)", result="(forward, backward)")
_STACK = '''
def stack_grads(x, weights, biases):
    inputs, h = [], x
    for w, b in zip(weights, biases):
        inputs.append(h)
        h = {forward}
    grad = {top}
    weight_grads, bias_grads = [], []
    for w, h_in in zip(reversed(weights), reversed(inputs)):
        weight_grads.append({wgrad})
        bias_grads.append({bgrad})
        grad = grad @ w.T
    return {result}
'''
_SG = dict(forward="h @ w + b", top="2 * h / h.numel()", wgrad="h_in.T @ grad", bgrad="grad.sum(0)",
           result="weight_grads[::-1], bias_grads[::-1]")
_STACK_FLOPS = '''
def stack_flops(batch, dims, x_requires_grad=False):
    layers = [{layer} for a, b in zip(dims, dims[1:])]
    forward = {forward}
    backward = {backward}
    return forward, backward
'''
_SF = dict(layer="2 * batch * a * b", forward="sum(layers)",
           backward="2 * sum(layers) - (0 if x_requires_grad else layers[0])")

WRONG = [
    Wrong("w2_grad", "h1 @ h2_grad.T: the batch index is not the one summed", r"inner index|\(D, K\)|arrange|sums over the batch", """
def w2_grad(h1, h2_grad):
    return h1 @ h2_grad.T
"""),
    Wrong("w2_grad", "h2_grad.T @ h1: w2.grad transposed", r"transpos", """
def w2_grad(h1, h2_grad):
    return h2_grad.T @ h1
"""),
    Wrong("w2_grad", "divides by the batch size", r"batch size|divid|mean", """
def w2_grad(h1, h2_grad):
    return h1.T @ h2_grad / h1.shape[0]
"""),
    Wrong("w2_grad", "an elementwise product instead of a matmul", r"elementwise|matmul", """
def w2_grad(h1, h2_grad):
    return h1.T * h2_grad
"""),
    Wrong("w2_grad", "h2_grad @ h1.T", r"inner index|arrange|\(D, K\)|shape", """
def w2_grad(h1, h2_grad):
    return h2_grad @ h1.T
"""),
    Wrong("h1_grad", "h2_grad @ w2 without the transpose", r"sums over k|inner index|arrange", """
def h1_grad(w2, h2_grad):
    return h2_grad @ w2
"""),
    Wrong("h1_grad", "w2 @ h2_grad.T: h1.grad transposed", r"transpos", """
def h1_grad(w2, h2_grad):
    return w2 @ h2_grad.T
"""),
    Wrong("h1_grad", "divides by the batch size", r"batch|divid|mean", """
def h1_grad(w2, h2_grad):
    return h2_grad @ w2.T / h2_grad.shape[0]
"""),
    Wrong("h1_grad", "sums the batch first: one row for all tokens", r"one row per token|\(B, D\)|rows|batch", """
def h1_grad(w2, h2_grad):
    return h2_grad.sum(0) @ w2.T
"""),
    Wrong("h1_grad", "an elementwise product instead of a matmul", r"elementwise|matmul", """
def h1_grad(w2, h2_grad):
    return w2 * h2_grad
"""),
    Wrong("two_layer_grads", "h2.grad without the mean's division", r"mean|B \* K|division|B x K", _TWO.format(**{**_T, "h2_grad": "2 * h2"})),
    Wrong("two_layer_grads", "h2.grad divided by B only", r"K times|B x K|every entry|all entries", _TWO.format(**{**_T, "h2_grad": "2 * h2 / B"})),
    Wrong("two_layer_grads", "h2.grad without the factor 2 of the square", r"factor 2|square|2 ?h_?2|twice|derivative",
          _TWO.format(**{**_T, "h2_grad": "h2 / (B * K)"})),
    Wrong("two_layer_grads", "w1.grad with h1 as the layer's input instead of x", r"x as|\binput|layer's input", _TWO.format(**{**_T, "w1g": "h1.T @ h1g"})),
    Wrong("two_layer_grads", "keys dh2, dw2, dh1, dw1", r"key", _TWO.format(**{**_T, "result": '{"dh2": h2_grad, "dw2": w2g, "dh1": h1g, "dw1": w1g}'})),
    Wrong("two_layer_grads", "w1.grad as h1.grad.T @ x: transposed", r"transpos|order", _TWO.format(**{**_T, "w1g": "h1g.T @ x"})),
    Wrong("two_layer_flops", "backward counts x.grad always", r"x is data|x_requires_grad|x\.grad", _TWO_FLOPS.format(**{**_TF,
          "backward": "2 * forward"})),
    Wrong("two_layer_flops", "backward = forward: one matmul per layer", r"two|weight-gradient|input-gradient", _TWO_FLOPS.format(**{**_TF,
          "backward": "forward"})),
    Wrong("two_layer_flops", "mkn without the 2", r"2mkn|multiply and an add|factor 2", _TWO_FLOPS.format(**{**_TF,
          "first": "batch * d * d", "second": "batch * d * k"})),
    Wrong("two_layer_flops", "the second layer as d x d", r"D x K|d \* k|second layer|\(d, k\)|layer 2|\bk\b", _TWO_FLOPS.format(**{**_TF,
          "second": "2 * batch * d * d"})),
    Wrong("two_layer_flops", "x.grad never counted", r"x_requires_grad|x\.grad", _TWO_FLOPS.format(**{**_TF,
          "backward": "first + 2 * second"})),
    Wrong("two_layer_flops", "returns a list", r"tuple", _TWO_FLOPS.format(**{**_TF, "result": "[forward, backward]"})),
    Wrong("stack_grads", "bias grad as the mean over the batch", r"mean over the batch|every row", _STACK.format(**{**_SG, "bgrad": "grad.mean(0)"})),
    Wrong("stack_grads", "lists in the backward pass's order", r"revers", _STACK.format(**{**_SG, "result": "weight_grads, bias_grads"})),
    Wrong("stack_grads", "the top gradient divided by the batch only", r"K times|all entries|every entry|B x K|over all",
          _STACK.format(**{**_SG, "top": "2 * h / h.shape[0]"})),
    Wrong("stack_grads", "the forward pass leaves out the biases", r"forward.{0,40}bias|bias.{0,40}(forward|h_l|activation)|adds? the bias",
          _STACK.format(**{**_SG, "forward": "h @ w"})),
    Wrong("stack_grads", "each layer's output used as its input", r"\binput|keep each layer", _STACK.format(**{**_SG,
          "forward": "h @ w + b", "wgrad": "h_in.T @ grad"}).replace("        inputs.append(h)\n        h = h @ w + b",
                                                                       "        h = h @ w + b\n        inputs.append(h)")),
    Wrong("stack_grads", "bias grads of shape (1, d), summed with keepdim", r"keepdim|\(d,\)|shape of b|bias.{0,30}shape|shape",
          _STACK.format(**{**_SG, "bgrad": "grad.sum(0, keepdim=True)"})),
    Wrong("stack_flops", "biases counted as FLOPs", r"bias", _STACK_FLOPS.format(**{**_SF, "layer": "2 * batch * a * b + batch * b"})),
    Wrong("stack_flops", "x.grad counted always", r"x is data|x_requires_grad|x\.grad", _STACK_FLOPS.format(**{**_SF, "backward": "2 * sum(layers)"})),
    Wrong("stack_flops", "the last layer's input gradient skipped instead of the first's", r"first layer|x's|last layer",
          _STACK_FLOPS.format(**{**_SF, "backward": "2 * sum(layers) - (0 if x_requires_grad else layers[-1])"})),
    Wrong("stack_flops", "no factor 2 in the forward matmuls", r"2mkn|factor 2|multiply and an add", _STACK_FLOPS.format(**{**_SF,
          "layer": "batch * a * b"})),
    Wrong("stack_flops", "backward has the weight gradients only", r"input-gradient|every layer whose input", _STACK_FLOPS.format(**{**_SF,
          "backward": "sum(layers) + (layers[0] if x_requires_grad else 0)"})),
    Wrong("stack_flops", "square layers: a x a", r"one width to the next|d_(in|l-1)|next width|\bd_out|a x b|width", _STACK_FLOPS.format(**{**_SF,
          "layer": "2 * batch * a * a"})),
    Wrong("step_flops", "forward only: 2 x params x tokens", r"backward|forward only|\b3x|\b6\b", "step_flops = 2 * 1.3e9 * 512 * 1024\n"),
    Wrong("step_flops", "sequences, not tokens", r"tokens|1,?024|sequence", "step_flops = 6 * 1.3e9 * 512\n"),
    Wrong("step_flops", "4 x params x tokens: backward as large as forward", r"backward.{0,30}twice|\b4\b|\b6\b", "step_flops = 4 * 1.3e9 * 512 * 1024\n"),
    Wrong("step_flops", "one sequence: the batch forgotten", r"\b512\b|batch|sequences", "step_flops = 6 * 1.3e9 * 1024\n"),
    Wrong("step_flops", "multiply-adds: 3 x params x tokens", r"multiply-add|2 FLOPs", "step_flops = 3 * 1.3e9 * 512 * 1024\n"),
]
