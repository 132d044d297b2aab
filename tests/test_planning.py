"""The planning calculator's arithmetic (utils.planning) and its widgets (utils.calculator), without a browser."""
import math

import matplotlib
import pytest
import torch

from utils.calculator import ANSWER_CLASS, describe, planning_calculator
from utils.hardware import MEMORY_BYTES, memory_bytes, peak_flops
from utils.memory import STATE_NAMES, bytes_per_param
from utils.planning import (
    PARTS,
    PLANNABLE_GPUS,
    PRECISIONS,
    Plan,
    bytes_per_param_by_part,
    cluster_flops_per_second,
    days,
    fits,
    largest_model,
    memory_per_gpu,
)

matplotlib.use("Agg")
ALL_SHARDED = dict(shard_optimizer=True, shard_gradients=True, shard_parameters=True)


def test_lecture_2_first_question_about_144_days():
    plan = Plan(params=70e9, tokens=15e12, gpu="H100 SXM", num_gpus=1024, mfu=0.5)
    expected = 6 * 70e9 * 15e12 / (1024 * 989.5e12 * 0.5) / 86_400
    assert math.isclose(days(plan), expected, rel_tol=1e-12) and round(days(plan)) == 144


def test_lecture_2_second_question_40b_on_8_h100s_when_everything_is_sharded():
    for precision in PRECISIONS:
        plan = Plan(params=1e9, tokens=1e12, gpu="H100 SXM", num_gpus=8, mfu=0.5, precision=precision, **ALL_SHARDED)
        assert largest_model(plan) == pytest.approx(40e9, rel=1e-12)
        assert largest_model(Plan(**{**plan.__dict__, **{k: False for k in ALL_SHARDED}})) == pytest.approx(5e9)
    assert fits(Plan(40e9, 1e12, "H100 SXM", 8, 0.5, **ALL_SHARDED))           # exactly 80 GB on each card
    assert not fits(Plan(40.1e9, 1e12, "H100 SXM", 8, 0.5, **ALL_SHARDED))
    assert not fits(Plan(40e9, 1e12, "H100 SXM", 8, 0.5, shard_optimizer=True, shard_gradients=True))


@pytest.mark.parametrize("optimizer", sorted(STATE_NAMES))
@pytest.mark.parametrize("precision", sorted(PRECISIONS))
def test_parts_add_up_to_lecture_7s_bytes_per_parameter(precision, optimizer):
    dtype, master = PRECISIONS[precision]
    parts = bytes_per_param_by_part(precision, optimizer)
    assert sum(parts.values()) == bytes_per_param(optimizer, param_dtype=dtype, master_weights=master)
    assert parts["parameters"] == parts["gradients"] == dtype.itemsize


def test_sharding_divides_only_the_part_it_names():
    base = Plan(params=7e9, tokens=1e12, gpu="A100", num_gpus=64, mfu=0.4)
    whole = memory_per_gpu(base)
    assert whole == {"parameters": 2 * 7e9, "gradients": 2 * 7e9, "optimizer state": 12 * 7e9}
    for flag, part in [("shard_parameters", "parameters"), ("shard_gradients", "gradients"),
                       ("shard_optimizer", "optimizer state")]:
        sharded = memory_per_gpu(Plan(**{**base.__dict__, flag: True}))
        assert sharded[part] == whole[part] / 64
        assert all(sharded[other] == whole[other] for other in PARTS if other != part)


def test_fp32_runs_at_the_fp32_peak():
    plan = Plan(params=1e9, tokens=1e9, gpu="A100", num_gpus=2, mfu=0.5, precision="fp32")
    assert cluster_flops_per_second(plan) == 2 * 0.5 * peak_flops("A100", torch.float32)
    assert days(plan) == pytest.approx(days(Plan(**{**plan.__dict__, "precision": "bf16 mixed"})) * 312 / 19.5)


def test_every_gpu_offered_has_peaks_and_memory():
    assert "H100 SXM" in PLANNABLE_GPUS and len(PLANNABLE_GPUS) >= 8
    for gpu in PLANNABLE_GPUS:
        assert memory_bytes(gpu) == MEMORY_BYTES[gpu] > 10e9
        assert peak_flops(gpu, torch.bfloat16) and peak_flops(gpu, torch.float32)
    assert memory_bytes("NVIDIA H100 80GB HBM3") == 80e9 and memory_bytes("cpu") is None


def test_the_answer_says_days_and_whether_it_fits():
    text = describe(Plan(70e9, 15e12, "H100 SXM", 1024, 0.5))
    assert "143.9 days" in text and "does NOT fit" in text          # 70B x 16 bytes on one card: no
    assert "<b>fits</b>" in describe(Plan(1e9, 1e9, "H100 SXM", 1, 0.5))


def test_moving_a_control_changes_the_answer():
    calculator = planning_calculator()
    controls = [w for box in calculator.children[0].children for w in box.children]
    answer = next(w for w in calculator.children if ANSWER_CLASS in w._dom_classes)
    assert "143.9 days" in answer.value
    next(w for w in controls if w.description == "number of GPUs").value = 2048
    assert "72.0 days" in answer.value
    next(w for w in controls if w.description == "shard parameters").value = True
    assert "2048 H100 SXM" in answer.value.replace(",", "")
