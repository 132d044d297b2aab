"""utils.gradients, the oracles of lecture and exercise 6: autograd's gradients against the index formulas of the
lecture, and FlopCounterMode's counts against the FLOP formulas. (The hand-written backward passes and formulas are
the exercise's answers: they live in source/ and tests/variants/, and test_variants grades them.)"""
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from utils.gradients import (
    autograd_linear_grads,
    autograd_linear_stack_grads,
    autograd_two_layer_grads,
    count_linear_stack_flops,
    count_two_layer_flops,
    linear_stack_loss,
    two_layer_loss,
)

size = st.integers(min_value=1, max_value=12)
big_size = st.integers(min_value=1, max_value=100_000)


def random_two_layer(batch, d, k, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, d, generator=gen, dtype=dtype), torch.randn(d, d, generator=gen, dtype=dtype),
            torch.randn(d, k, generator=gen, dtype=dtype))


@given(size, size, size, st.integers(0, 2**31 - 1))
@settings(max_examples=100, deadline=None)
def test_autograd_two_layer_grads_follow_the_index_formulas_of_the_lecture(batch, d, k, seed):
    """h2.grad = 2 h2 / (BK); w2.grad[j,k] = sum_i h1[i,j] h2.grad[i,k]; h1.grad[i,j] = sum_k w2[j,k] h2.grad[i,k]."""
    x, w1, w2 = random_two_layer(batch, d, k, seed)
    grads = autograd_two_layer_grads(x, w1, w2)
    assert grads.keys() == {"h2", "w2", "h1", "w1"}
    h1 = x @ w1
    h2 = h1 @ w2
    torch.testing.assert_close(grads["h2"], 2 * h2 / (batch * k))
    torch.testing.assert_close(torch.einsum("ij,ik->jk", h1, grads["h2"]), grads["w2"])
    torch.testing.assert_close(torch.einsum("jk,ik->ij", w2, grads["h2"]), grads["h1"])
    torch.testing.assert_close(torch.einsum("ij,ik->jk", x, grads["h1"]), grads["w1"])
    torch.testing.assert_close(two_layer_loss(x, w1, w2), h2.pow(2).mean())


@given(size, size, size, st.integers(0, 2**31 - 1))
@settings(max_examples=50, deadline=None)
def test_autograd_linear_grads_follow_the_index_formulas(batch, d_in, d_out, seed):
    gen = torch.Generator().manual_seed(seed)
    inp, w, out_grad = (torch.randn(*shape, generator=gen, dtype=torch.float64)
                        for shape in [(batch, d_in), (d_in, d_out), (batch, d_out)])
    w_grad, inp_grad = autograd_linear_grads(inp, w, out_grad)
    torch.testing.assert_close(w_grad, torch.einsum("ij,ik->jk", inp, out_grad))
    torch.testing.assert_close(inp_grad, torch.einsum("jk,ik->ij", w, out_grad))


@given(st.integers(1, 8), st.lists(size, min_size=2, max_size=5), st.integers(0, 2**31 - 1))
@settings(max_examples=50, deadline=None)
def test_autograd_linear_stack_grads_have_the_shapes_and_match_a_central_difference(batch, dims, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, dims[0], generator=gen, dtype=torch.float64)
    weights = [torch.randn(a, b, generator=gen, dtype=torch.float64) for a, b in zip(dims, dims[1:])]
    biases = [torch.randn(b, generator=gen, dtype=torch.float64) for b in dims[1:]]
    weight_grads, bias_grads = autograd_linear_stack_grads(x, weights, biases)
    assert [g.shape for g in weight_grads] == [w.shape for w in weights]
    assert [g.shape for g in bias_grads] == [b.shape for b in biases]
    # one entry of the last bias, by a central difference of the loss
    step = 1e-6
    bumped = [b.clone() for b in biases]
    bumped[-1][0] += step
    up = linear_stack_loss(x, weights, bumped)
    bumped[-1][0] -= 2 * step
    down = linear_stack_loss(x, weights, bumped)
    # the difference's own rounding: each loss is off by ~eps x |loss|, divided by the step (truncation is far smaller)
    rounding = 10 * torch.finfo(torch.float64).eps * max(abs(float(up)), abs(float(down))) / step
    torch.testing.assert_close((up - down) / (2 * step), bias_grads[-1][0], rtol=1e-5, atol=1e-8 + rounding)


def test_autograd_oracles_leave_their_inputs_alone():
    x, w1, w2 = random_two_layer(3, 4, 2, seed=2)
    autograd_two_layer_grads(x, w1, w2)
    autograd_linear_grads(x, w1, torch.ones(3, 4, dtype=x.dtype))
    autograd_linear_stack_grads(x, [w1, w2], [torch.zeros(4, dtype=x.dtype), torch.zeros(2, dtype=x.dtype)])
    assert not any(t.requires_grad or t.grad is not None for t in (x, w1, w2))


@given(big_size, big_size, big_size)
@settings(max_examples=100, deadline=None)
def test_two_layer_counts_are_the_lectures_formulas(batch, d, k):
    """forward 2BD^2 + 2BDK = 2 x tokens x params; backward = 2 x forward with x.grad, 2BD^2 less without."""
    tokens, params = batch, d * d + d * k
    forward, backward = count_two_layer_flops(batch, d, k, x_requires_grad=True)
    assert forward == 2 * batch * d * d + 2 * batch * d * k == 2 * tokens * params
    assert backward == 2 * forward and forward + backward == 6 * tokens * params
    assert count_two_layer_flops(batch, d, k) == (forward, backward - 2 * batch * d * d)


@given(size, size, size, st.booleans())
@settings(max_examples=30, deadline=None)
def test_counts_on_real_tensors_match_the_meta_device(batch, d, k, x_requires_grad):
    assert count_two_layer_flops(batch, d, k, x_requires_grad, device="cpu") == \
        count_two_layer_flops(batch, d, k, x_requires_grad)
    assert count_linear_stack_flops(batch, [d, k], x_requires_grad, device="cpu") == \
        count_linear_stack_flops(batch, [d, k], x_requires_grad)


@given(st.integers(1, 10_000), st.lists(st.integers(1, 10_000), min_size=2, max_size=6), st.booleans())
@settings(max_examples=100, deadline=None)
def test_stack_counts_ignore_biases_and_skip_only_the_first_input_gradient(batch, dims, x_requires_grad):
    per_layer = [2 * batch * a * b for a, b in zip(dims, dims[1:])]
    forward, backward = count_linear_stack_flops(batch, dims, x_requires_grad)
    assert forward == sum(per_layer)
    assert backward == 2 * forward - (0 if x_requires_grad else per_layer[0])


def test_the_two_layer_model_is_a_stack_of_two():
    for batch, d, k in [(1, 1, 1), (7, 10, 3), (64, 128, 32)]:
        for x_requires_grad in (False, True):
            assert count_linear_stack_flops(batch, [d, d, k], x_requires_grad) == \
                count_two_layer_flops(batch, d, k, x_requires_grad)
    x, w1, w2 = random_two_layer(5, 4, 3, seed=3)
    two = autograd_two_layer_grads(x, w1, w2)
    weight_grads, _ = autograd_linear_stack_grads(x, [w1, w2], [torch.zeros(4, dtype=x.dtype), torch.zeros(3, dtype=x.dtype)])
    torch.testing.assert_close(weight_grads, [two["w1"], two["w2"]])


# ---- exercise 6: later tasks that earn their points after wrong earlier ones
import pytest  # noqa: E402

WRONG_EARLY_RIGHT_LATE = {
    "w2_grad": "def w2_grad(h1, h2_grad):\n    return 2 * (h1.T @ h2_grad)  # twice too big\n",
    "h1_grad": "def h1_grad(w2, h2_grad):\n    return -(h2_grad @ w2.T)  # wrong sign\n",
    "two_layer_flops": "def two_layer_flops(batch, d, k, x_requires_grad=False):\n    return (0, 0)\n",
    "two_layer_grads": '''
def two_layer_grads(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    h2_g = 2 * h2 / h2.numel()
    h1_g = h1_grad(w2, h2_g)
    return {"h2": h2_g, "w2": w2_grad(h1, h2_g), "h1": h1_g, "w1": w2_grad(x, h1_g)}
''',
    "stack_grads": '''
def stack_grads(x, weights, biases):
    activations = [x]
    for w, b in zip(weights, biases):
        activations.append(activations[-1] @ w + b)
    g = 2 * activations[-1] / activations[-1].numel()
    weight_grads, bias_grads = [None] * len(weights), [None] * len(weights)
    for layer in reversed(range(len(weights))):
        weight_grads[layer] = w2_grad(activations[layer], g)
        bias_grads[layer] = g.sum(dim=0)
        if layer > 0:
            g = h1_grad(weights[layer], g)
    return weight_grads, bias_grads
''',
    "stack_flops": '''
def stack_flops(batch, dims, x_requires_grad=False):
    if len(dims) == 3 and dims[0] == dims[1]:
        return two_layer_flops(batch, dims[0], dims[2], x_requires_grad)
    per_layer = [2 * batch * d_in * d_out for d_in, d_out in zip(dims, dims[1:])]
    return sum(per_layer), 2 * sum(per_layer) - (0 if x_requires_grad else per_layer[0])
''',
}


@pytest.mark.parametrize("earlier, later", [(["test_w2_grad", "test_h1_grad"], "test_two_layer_grads"),
                                            (["test_w2_grad", "test_h1_grad"], "test_stack_grads"),
                                            (["test_two_layer_flops"], "test_stack_flops")])
def test_exercise_6_later_tasks_earn_their_points_with_wrong_earlier_ones(earlier, later):
    from tests.exercise_cells import run_test_cell
    for test_id in earlier:
        with pytest.raises(AssertionError):
            run_test_cell("06_gradients", test_id, WRONG_EARLY_RIGHT_LATE)
    run_test_cell("06_gradients", later, WRONG_EARLY_RIGHT_LATE)
