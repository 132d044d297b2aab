"""Training-memory predictions in utils.memory against the tensors torch really holds, and exercise 7's references
for tasks 4 and 5 (reference.models_optimizers)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.models_optimizers import largest_model, state_bytes
from utils.memory import (
    OPTIMIZER_STATE_TENSORS,
    STATE_NAMES,
    MemoryBreakdown,
    bytes_per_param,
    deep_linear_activation_bytes,
    largest_model_params,
    measured_memory,
    optimizer_state_bytes,
    optimizer_state_tensor_bytes,
    saved_tensor_bytes,
    tiny_lm_activation_bytes,
    training_memory,
)
from utils.models import DeepLinear, TinyLM, count_params
from utils.units import GB

TORCH_OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adagrad": lambda ps: torch.optim.Adagrad(ps),
    "rmsprop": lambda ps: torch.optim.RMSprop(ps),
    "adam": lambda ps: torch.optim.Adam(ps),
    "adamw": lambda ps: torch.optim.AdamW(ps),
}


def test_every_optimizer_name_has_a_torch_optimizer_here():
    assert set(TORCH_OPTIMIZERS) == set(OPTIMIZER_STATE_TENSORS) == set(STATE_NAMES)


@pytest.mark.parametrize("name", TORCH_OPTIMIZERS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_prediction_equals_measurement_after_a_step(name, dtype):
    torch.manual_seed(0)
    model = DeepLinear(12, 3, 5).to(dtype)
    optimizer = TORCH_OPTIMIZERS[name](list(model.parameters()))
    x = torch.randn(7, 12, dtype=dtype)
    activations = saved_tensor_bytes(lambda: model(x).square().mean(), model.parameters())
    assert activations == deep_linear_activation_bytes(12, 3, 5, 7, dtype)
    model(x).square().mean().backward()
    optimizer.step()
    predicted = training_memory(model, name, activations)
    measured = measured_memory(model, optimizer, name, activations)
    assert predicted == measured
    assert measured.params == count_params(model) * dtype.itemsize
    assert measured.total == measured.params * (2 + OPTIMIZER_STATE_TENSORS[name]) + activations


def test_frozen_parameters_cost_neither_gradient_nor_state():
    model = DeepLinear(8, 2, 3)
    model.head.weight.requires_grad_(False)
    trainable = 2 * 64
    assert training_memory(model, "adamw") == MemoryBreakdown(trainable * 4, trainable * 4, 2 * trainable * 4, 0)


def test_breakdown_total_is_the_sum():
    assert MemoryBreakdown(1, 20, 300, 4000).total == 4321


@settings(max_examples=40, deadline=None)
@given(dim=st.integers(1, 24), num_layers=st.integers(0, 4), out=st.integers(1, 6), batch=st.integers(1, 9),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16]))
def test_deep_linear_activations_match_saved_tensors(dim, num_layers, out, batch, dtype):
    model = DeepLinear(dim, num_layers, out).to(dtype)
    x = torch.randn(batch, dim, dtype=dtype)
    measured = saved_tensor_bytes(lambda: model(x).square().mean(), model.parameters())
    assert measured == deep_linear_activation_bytes(dim, num_layers, out, batch, dtype)


@settings(max_examples=25, deadline=None)
@given(vocab=st.integers(2, 40), dim=st.integers(1, 12), hidden=st.integers(1, 24), batch=st.integers(1, 4),
       seq=st.integers(1, 12))
def test_tiny_lm_activations_match_saved_tensors(vocab, dim, hidden, batch, seq):
    model = TinyLM(vocab, dim, hidden)
    inputs, targets = torch.randint(0, vocab, (batch, seq)), torch.randint(0, vocab, (batch, seq))

    def forward():
        logits = model(inputs)
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())

    assert saved_tensor_bytes(forward, model.parameters()) == tiny_lm_activation_bytes(vocab, dim, hidden, batch, seq)


def test_saved_tensor_bytes_counts_shared_storage_once_and_skips_excluded():
    w = torch.randn(5, 5, requires_grad=True)
    x = torch.randn(3, 5)
    assert saved_tensor_bytes(lambda: (x @ w).sum(), [w]) == 3 * 5 * 4
    x_needing_grad = torch.randn(3, 5, requires_grad=True)  # now w is saved too, to compute x's gradient
    assert saved_tensor_bytes(lambda: (x_needing_grad @ w).sum()) == 3 * 5 * 4 + 5 * 5 * 4
    assert saved_tensor_bytes(lambda: (x_needing_grad @ w).sum(), [w]) == 3 * 5 * 4
    assert saved_tensor_bytes(lambda: (x[:2] @ w + x[1:] @ w).sum(), [w]) == 3 * 5 * 4  # two views of x


def test_state_bytes_reference_skips_step_counters_and_counts_amsgrad():
    p = torch.nn.Parameter(torch.randn(10, 3))
    optimizer = torch.optim.Adam([p], amsgrad=True)
    assert state_bytes(optimizer) == 0
    p.grad = torch.ones_like(p)
    optimizer.step()
    assert state_bytes(optimizer) == 3 * 30 * 4
    assert optimizer.state[p]["step"].dim() == 0


def test_state_bytes_reference_counts_state_made_in_the_constructor_in_any_dtype():
    p = torch.nn.Parameter(torch.randn(4, 5, dtype=torch.float64))
    assert state_bytes(torch.optim.Adagrad([p])) == 20 * 8       # 'sum' exists before any step


@pytest.mark.parametrize("name", TORCH_OPTIMIZERS)
def test_optimizer_state_bytes_formula_matches_torch(name):
    model = torch.nn.Linear(33, 17)
    optimizer = TORCH_OPTIMIZERS[name](model.parameters())
    model(torch.randn(2, 33)).sum().backward()
    optimizer.step()
    assert set(optimizer.state[model.weight]) - {"step"} == set(STATE_NAMES[name])
    assert optimizer_state_tensor_bytes(optimizer, name) == optimizer_state_bytes(count_params(model), name)
    assert state_bytes(optimizer) == optimizer_state_bytes(count_params(model), name)


def test_what_fits_on_h100s():
    assert bytes_per_param("adamw") == 16
    assert bytes_per_param("adamw", torch.bfloat16, master_weights=True) == 16
    assert bytes_per_param("sgd") == 8 and bytes_per_param("adagrad") == 12
    assert largest_model_params(8 * 80 * GB, bytes_per_param("adamw")) == 40 * 10**9
    assert largest_model_params(80 * GB, bytes_per_param("adamw")) == 5 * 10**9


def test_cluster_reference_examples():
    assert largest_model(8, 80 * GB, "adamw") == 40 * 10**9
    assert largest_model(8, 80 * GB, "adamw", torch.bfloat16, master_weights=True) == 40 * 10**9
    assert largest_model(1, 80 * GB, "adamw", torch.bfloat16) == 80 * GB // 12   # 2 + 2 + 8 bytes
    assert largest_model(1, 80 * GB, "sgd", reserved_bytes_per_gpu=16 * GB) == 8 * 10**9
    assert largest_model(4, 24 * GB, "adagrad", reserved_bytes_per_gpu=30 * GB) == 0


@settings(max_examples=200, deadline=None)
@given(gpus=st.integers(1, 4096), per_gpu=st.integers(0, 2 * 10**11), reserved=st.integers(0, 10**11),
       optimizer=st.sampled_from(sorted(OPTIMIZER_STATE_TENSORS)),
       dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float64]), master=st.booleans())
def test_cluster_answer_is_the_largest_that_fits(gpus, per_gpu, reserved, optimizer, dtype, master):
    params = largest_model(gpus, per_gpu, optimizer, dtype, master, reserved)
    per_param = 2 * dtype.itemsize + 4 * master + 4 * OPTIMIZER_STATE_TENSORS[optimizer]
    usable = gpus * max(per_gpu - reserved, 0)
    assert type(params) is int and params * per_param <= usable < (params + 1) * per_param
