"""utils.gradients against torch: hand-written backward passes against autograd, FLOP formulas against FlopCounterMode."""
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from utils.flops import training_flops
from utils.gradients import (autograd_linear_stack_grads, autograd_two_layer_grads, count_linear_stack_flops,
                             count_two_layer_flops, linear_stack_flops, linear_stack_grads, mean_square_loss,
                             mean_square_loss_grad, two_layer_backward, two_layer_flops, two_layer_forward,
                             two_layer_grads)

size = st.integers(min_value=1, max_value=12)
big_size = st.integers(min_value=1, max_value=100_000)


def random_two_layer(batch, d, k, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, d, generator=gen, dtype=dtype), torch.randn(d, d, generator=gen, dtype=dtype),
            torch.randn(d, k, generator=gen, dtype=dtype))


@given(size, size, size, st.integers(0, 2**31 - 1))
@settings(max_examples=150, deadline=None)
def test_hand_written_backward_matches_autograd(batch, d, k, seed):
    x, w1, w2 = random_two_layer(batch, d, k, seed)
    by_hand, by_autograd = two_layer_grads(x, w1, w2), autograd_two_layer_grads(x, w1, w2)
    assert by_hand.keys() == by_autograd.keys() == {"h2", "w2", "h1", "w1"}
    for name in by_autograd:
        torch.testing.assert_close(by_hand[name], by_autograd[name])


@given(size, size, size, st.integers(0, 2**31 - 1))
@settings(max_examples=50, deadline=None)
def test_gradient_of_x_matches_autograd(batch, d, k, seed):
    x, w1, w2 = random_two_layer(batch, d, k, seed)
    x_leaf = x.clone().requires_grad_(True)
    mean_square_loss(two_layer_forward(x_leaf, w1, w2)[1]).backward()
    h1, h2 = two_layer_forward(x, w1, w2)
    grads = two_layer_backward(x, w1, w2, h1, mean_square_loss_grad(h2), with_x_grad=True)
    torch.testing.assert_close(grads["x"], x_leaf.grad)
    assert "x" not in two_layer_backward(x, w1, w2, h1, mean_square_loss_grad(h2))


def test_index_formulas_of_the_lecture():
    """w2.grad[j,k] = sum_i h1[i,j] h2.grad[i,k] and h1.grad[i,j] = sum_k w2[j,k] h2.grad[i,k], as einsums."""
    x, w1, w2 = random_two_layer(5, 4, 3, seed=6)
    grads = autograd_two_layer_grads(x, w1, w2)
    h1, _ = two_layer_forward(x, w1, w2)
    torch.testing.assert_close(torch.einsum("ij,ik->jk", h1, grads["h2"]), grads["w2"])
    torch.testing.assert_close(torch.einsum("jk,ik->ij", w2, grads["h2"]), grads["h1"])
    torch.testing.assert_close(torch.einsum("ij,ik->jk", x, grads["h1"]), grads["w1"])


def test_float32_hand_and_autograd_agree_closely():
    x, w1, w2 = random_two_layer(64, 32, 16, seed=1, dtype=torch.float32)
    by_hand, by_autograd = two_layer_grads(x, w1, w2), autograd_two_layer_grads(x, w1, w2)
    for name in by_autograd:
        assert by_hand[name].dtype == torch.float32
        torch.testing.assert_close(by_hand[name], by_autograd[name], rtol=1e-5, atol=1e-6)


def test_autograd_oracles_leave_their_inputs_alone():
    x, w1, w2 = random_two_layer(3, 4, 2, seed=2)
    autograd_two_layer_grads(x, w1, w2)
    autograd_linear_stack_grads(x, [w1, w2], [torch.zeros(4, dtype=x.dtype), torch.zeros(2, dtype=x.dtype)])
    assert not any(t.requires_grad or t.grad is not None for t in (x, w1, w2))


@given(big_size, big_size, big_size, st.booleans())
@settings(max_examples=100, deadline=None)
def test_two_layer_flops_match_flop_counter_on_meta(batch, d, k, x_requires_grad):
    assert two_layer_flops(batch, d, k, x_requires_grad) == count_two_layer_flops(batch, d, k, x_requires_grad)


@given(size, size, size, st.booleans())
@settings(max_examples=40, deadline=None)
def test_two_layer_flops_match_flop_counter_on_real_tensors(batch, d, k, x_requires_grad):
    counted = count_two_layer_flops(batch, d, k, x_requires_grad, device="cpu")
    assert two_layer_flops(batch, d, k, x_requires_grad) == counted


@given(big_size, big_size, big_size)
@settings(max_examples=100, deadline=None)
def test_backward_is_twice_forward_and_training_is_six_tokens_params(batch, d, k):
    tokens, params = batch, d * d + d * k
    forward, backward = count_two_layer_flops(batch, d, k, x_requires_grad=True)
    assert forward == 2 * tokens * params and backward == 2 * forward
    assert forward + backward == training_flops(params, tokens)
    forward, backward = count_two_layer_flops(batch, d, k, x_requires_grad=False)
    assert forward + backward == training_flops(params, tokens) - 2 * batch * d * d  # no x.grad matmul


dims_strategy = st.lists(size, min_size=2, max_size=5)


@given(st.integers(1, 8), dims_strategy, st.integers(0, 2**31 - 1))
@settings(max_examples=100, deadline=None)
def test_linear_stack_grads_match_autograd(batch, dims, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, dims[0], generator=gen, dtype=torch.float64)
    weights = [torch.randn(a, b, generator=gen, dtype=torch.float64) for a, b in zip(dims, dims[1:])]
    biases = [torch.randn(b, generator=gen, dtype=torch.float64) for b in dims[1:]]
    by_hand, by_autograd = linear_stack_grads(x, weights, biases), autograd_linear_stack_grads(x, weights, biases)
    for hand, auto in zip(by_hand, by_autograd):
        assert len(hand) == len(auto) == len(weights)
        for h, a in zip(hand, auto):
            torch.testing.assert_close(h, a)


@given(st.integers(1, 10_000), st.lists(st.integers(1, 10_000), min_size=2, max_size=6), st.booleans())
@settings(max_examples=100, deadline=None)
def test_linear_stack_flops_match_flop_counter_on_meta(batch, dims, x_requires_grad):
    assert linear_stack_flops(batch, dims, x_requires_grad) == count_linear_stack_flops(batch, dims, x_requires_grad)


def test_linear_stack_flops_on_real_tensors_and_the_two_layer_case():
    for dims, x_requires_grad in [([3, 5], False), ([3, 5], True), ([4, 6, 2, 7], False), ([4, 6, 2, 7], True)]:
        counted = count_linear_stack_flops(5, dims, x_requires_grad, device="cpu")
        assert linear_stack_flops(5, dims, x_requires_grad) == counted
    assert linear_stack_flops(7, [10, 10, 3]) == two_layer_flops(7, 10, 3)
