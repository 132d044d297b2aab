"""Exercise 10's reference (reference.accounting): the counts written out equal torch's own counts of the GPT-2 it
builds on the meta device, parameters and FlopCounterMode's FLOPs of a training step, for GPT-2 small and others."""
import random

import pytest
import torch

import reference.accounting as accounting
from utils.gpt import GPTConfig as Shape  # the exercise's GPT2Shape has the same fields

GPT2_SMALL = Shape(50257, 1024, 768, 12, 12, 3072)
rng = random.Random(10)
SHAPES = [GPT2_SMALL, Shape(1, 1, 1, 1, 1, 1), Shape(10, 4, 6, 2, 3, 8)] + [
    Shape(rng.randint(1, 60000), rng.randint(1, 2048), heads * rng.randint(1, 64), rng.randint(1, 3), heads,
          rng.randint(1, 4096)) for heads in (1, 3, 8)]


def test_gpt2_small_has_its_124m_parameters():
    assert accounting.param_count(GPT2_SMALL) == accounting.counted_params(GPT2_SMALL) == 124_439_808
    assert accounting.training_flops_per_token(GPT2_SMALL) == 854_438_400


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_written_out_counts_are_torchs(shape):
    assert accounting.param_count(shape) == accounting.counted_params(shape)
    assert accounting.training_flops_per_token(shape) == accounting.counted_training_flops_per_token(shape, batch=2)


def test_the_model_is_gpt2s_and_lives_on_the_meta_device():
    model = accounting.gpt2(Shape(10, 4, 6, 2, 3, 8))
    assert all(p.device.type == "meta" for p in model.parameters())
    names = {name for name, _ in model.named_parameters()}
    assert "blocks.0.attention.qkv.bias" in names and "blocks.1.mlp.down.bias" in names
    assert not any("head" in name for name in names)  # tied to the token embedding
    logits = model(torch.zeros(3, 4, dtype=torch.long, device="meta"))
    assert logits.shape == (3, 4, 10)


def test_memory_and_days():
    params = 124_439_808
    assert accounting.memory_per_gpu(GPT2_SMALL, 1, 0) == 16 * params
    assert accounting.memory_per_gpu(GPT2_SMALL, 8, 1) == pytest.approx(4 * params + 12 * params / 8, rel=1e-15)
    assert accounting.memory_per_gpu(GPT2_SMALL, 8, 2) == pytest.approx(2 * params + 14 * params / 8, rel=1e-15)
    assert accounting.memory_per_gpu(GPT2_SMALL, 8, 3) == pytest.approx(16 * params / 8, rel=1e-15)
    assert type(accounting.memory_per_gpu(GPT2_SMALL, 1, 0)) is float
    for stage in (-1, 4):
        with pytest.raises(ValueError):
            accounting.memory_per_gpu(GPT2_SMALL, 8, stage)
    days = accounting.training_days(GPT2_SMALL, 9e9, 8, "NVIDIA H100 80GB HBM3", 0.4)
    assert days == pytest.approx(854_438_400 * 9e9 / (8 * 989.5e12 * 0.4 * 86400), rel=1e-12)
    assert accounting.training_days(GPT2_SMALL, 9e9, 8, "cpu", 0.4) is None
    assert accounting.training_days(GPT2_SMALL, 9e9, 8, "Tesla T4", 0.4) is None  # no bf16 peak


def test_hidden_tests_expect_torchs_own_counts():
    """The hidden tests of tasks 1 and 2 expect the written-out counts (the grader computes expected results for every
    submission, and torch's counts of these cases take seconds): on every one of their cases, they are torch's."""
    from reference import hidden
    for fields in hidden.cases("accounting.param_count"):
        assert accounting.param_count(Shape(*fields)) == accounting.counted_params(Shape(*fields)), fields
    shapes, batches = accounting._flops_shapes_and_batches()
    own = hidden.cases("accounting.training_flops_per_token")   # less those training_days' stand-in knows (#48)
    assert set(own) <= set(shapes) and len(own) >= len(shapes) - 10
    assert max(shape[3] for shape in shapes) == 128  # the intro promises 1 to 128 blocks
    for fields, batch in zip(shapes, batches):
        assert accounting.training_flops_per_token(Shape(*fields)) == \
            accounting.counted_training_flops_per_token(Shape(*fields), batch=batch), fields


def test_hidden_cases_of_tasks_3_and_4_carry_the_correct_earlier_counts():
    """Tasks 3 and 4 run the student's function with a stand-in for task 1's or 2's that knows these values only."""
    from reference import hidden
    memory = hidden.cases("accounting.memory_per_gpu")
    counts = dict(memory["param_count"])
    assert {fields for fields, _, _ in memory["calls"]} <= set(counts) and tuple(accounting.GPT2_SMALL) in counts
    assert all(counts[fields] == accounting.param_count(Shape(*fields)) for fields in counts)
    assert {stage for _, _, stage in memory["calls"]} == {0, 1, 2, 3}
    days = hidden.cases("accounting.training_days")
    flops = dict(days["training_flops_per_token"])
    assert {call[0] for call in days["calls"]} <= set(flops)
    assert all(flops[fields] == accounting.training_flops_per_token(Shape(*fields)) for fields in flops)
    assert max(fields[3] for fields in flops) == 128 and max(fields[3] for fields in counts) > 100
