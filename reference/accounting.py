"""Exercise 10 (accounting a training run): GPT-2 on the meta device for torch to count, and the answers.

torch is the oracle of tasks 1 and 2: `gpt2(shape)` builds the model on the meta device (shapes only: no memory, no
arithmetic), `counted_params` counts its parameters and `counted_training_flops_per_token` the FLOPs of one training
step with `FlopCounterMode`. Counting a large model that way takes a while (about 20 ms per block), so the hidden
tests compare with the same counts written out (`param_count`, `training_flops_per_token`), which
tests/test_accounting_reference.py checks equal torch's on every hidden case. `shape` is anything with the fields of
the exercise's `GPT2Shape`. The hidden tests themselves (HIDDEN_TESTS) are at the bottom.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from utils.flops import SECONDS_PER_DAY
from utils.gpt import GPT, GPTConfig
from utils.hardware import peak_flops

# ZeRO stage -> which of (parameters, gradients, optimizer state) are sharded across the GPUs (Rajbhandari et al.).
ZERO_SHARDS = {0: (False, False, False), 1: (False, False, True), 2: (False, True, True), 3: (True, True, True)}
# Bytes per parameter in bf16 mixed precision with AdamW: bf16 weights, bf16 gradients, fp32 master + two moments.
PARAM_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 2, 4 + 4 + 4


def gpt2(shape) -> GPT:
    """GPT-2 of `shape` on the meta device (tensors with shapes and dtypes but no storage): lecture 10's model
    (utils.gpt) with GPT-2's biases in every Linear and its head tied to the token embedding."""
    config = GPTConfig(shape.vocab_size, shape.context_length, shape.d_model, shape.num_layers, shape.num_heads,
                       shape.d_ff, bias=True, tied_head=True)
    with torch.device("meta"):
        return GPT(config)


def counted_params(shape) -> int:
    """Task 1's oracle: trainable parameters (elements) of the model, as torch counts them."""
    return sum(p.numel() for p in gpt2(shape).parameters() if p.requires_grad)


def counted_training_flops_per_token(shape, batch: int = 1) -> int:
    """Task 2's oracle: FLOPs per token of forward, cross-entropy and backward on `batch` sequences of
    context_length tokens, as FlopCounterMode counts them (matmuls only) on the meta device."""
    model = gpt2(shape)
    token_ids = torch.zeros(batch, shape.context_length, dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as counter:
        logits = model(token_ids)
        F.cross_entropy(logits.flatten(0, 1), token_ids.flatten()).backward()
    tokens = batch * shape.context_length
    flops = counter.get_total_flops()
    assert flops % tokens == 0, (flops, tokens)
    return flops // tokens


def param_count(shape) -> int:
    """Task 1 written out: embeddings V d + s d; per block two LayerNorms (4d), Linear(d, 3d) and Linear(d, d) with
    biases (4d^2 + 4d), Linear(d, f) and Linear(f, d) with biases (2 d f + f + d); the final LayerNorm (2d)."""
    v, s, d, layers, f = shape.vocab_size, shape.context_length, shape.d_model, shape.num_layers, shape.d_ff
    return (v + s) * d + layers * (4 * d * d + 2 * d * f + 9 * d + f) + 2 * d


def training_flops_per_token(shape) -> int:
    """Task 2 written out, FLOPs per token: 2 (forward) + 4 (backward) per matmul weight (4d^2 + 2df per block, and
    the tied head's V d), plus attention's two matmuls over the full s x s square, 2 x 2 s d forward per token and
    block, again x 3 with the backward."""
    v, s, d, layers, f = shape.vocab_size, shape.context_length, shape.d_model, shape.num_layers, shape.d_ff
    return 6 * (layers * (4 * d * d + 2 * d * f) + v * d) + 12 * layers * s * d


def memory_per_gpu(shape, num_gpus: int, zero_stage: int) -> float:
    """Task 3: bytes of model states (bf16 weights and gradients, fp32 master weights and AdamW moments) on each of
    `num_gpus` GPUs, with what ZeRO stage `zero_stage` (0-3) shards divided among them. Activations not counted."""
    if zero_stage not in ZERO_SHARDS:
        raise ValueError(f"ZeRO has stages 0 to 3, not {zero_stage!r}")
    params = param_count(shape)
    return sum(part_bytes * params / (num_gpus if sharded else 1)
               for part_bytes, sharded in zip((PARAM_BYTES, GRAD_BYTES, OPTIMIZER_BYTES), ZERO_SHARDS[zero_stage]))


def training_days(shape, tokens: float, num_gpus: int, device_name: str, mfu: float) -> float | None:
    """Task 4: days to train on `tokens` tokens: the step's FLOPs per token x tokens over num_gpus x bf16 peak
    (FLOP/s) x mfu x 86400 s; None when the device's bf16 peak is unknown."""
    peak = peak_flops(device_name, torch.bfloat16)
    if peak is None:
        return None
    return training_flops_per_token(shape) * tokens / (num_gpus * peak * mfu * SECONDS_PER_DAY)


# ---- hidden tests (reference/hidden.py): cases, expected results, checks -----------------------------------------
# A case's shape travels as a tuple of GPT2Shape's six fields; the notebook makes GPT2Shape(*fields) of it. Tasks 3 and
# 4 also send the values of tasks 1 and 2 their shapes need (written out above, equal to torch's counts), so the
# student's later function runs with correct earlier answers (utils.earlier.answers_from_table) and never a function.
import random
from collections import namedtuple

from reference.hidden import HiddenTest, keep_stand_ins_apart, results_list
from utils.diagnosis import MULTIPLY_ADD, Factor, Part, slips
from utils.grading import check_float, check_int, check_type

GPT2Shape = namedtuple("GPT2Shape", "vocab_size context_length d_model num_layers num_heads d_ff")  # repr as the exercise's
GPT2_SMALL, GPT2_MEDIUM = GPT2Shape(50257, 1024, 768, 12, 12, 3072), GPT2Shape(50257, 1024, 1024, 24, 16, 4096)
GPT2_LARGE, GPT2_XL = GPT2Shape(50257, 1024, 1280, 36, 20, 5120), GPT2Shape(50257, 1024, 1600, 48, 25, 6400)
ONES = GPT2Shape(1, 1, 1, 1, 1, 1)
DEVICES = ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA H200",
           "NVIDIA B200", "NVIDIA L4", "NVIDIA GeForce RTX 4090", "Tesla T4", "Tesla V100-SXM2-16GB", "NVIDIA A10G",
           "cpu", "Apple M2"]
BAD_STAGES = [-1, 4, 5, 10]


def _describe(shape: GPT2Shape) -> str:
    """What a shape varies, for a hint."""
    v, s, d, layers, h, f = shape
    return (f"this case has {layers} block{'s' * (layers != 1)}, d_model = {d} in {h} head{'s' * (h != 1)} of "
            f"{d // h}, d_ff = {f} ({'4 x d_model' if f == 4 * d else 'not 4 x d_model'}), V = {v:,}, s = {s:,}")


def _quantities(shape: GPT2Shape) -> list[Factor]:
    v, s, d, layers, h, f = shape
    return [Factor("V", v), Factor("s", s), Factor("d", d), Factor("L", layers), Factor("f (d_ff)", f),
            Factor("4 x d_model", 4 * d), Factor("the heads h", h)]


def param_parts(shape: GPT2Shape) -> list[Part]:
    """The parts task 1's count is the sum of, and those it leaves out (utils.diagnosis), for a wrong count's Found."""
    v, s, d, layers, h, f = shape
    L, D, F_, S, V = (Factor("L", layers), Factor("d", d), Factor("f (d_ff)", f), Factor("s", s), Factor("V", v))
    return [Part("the token embedding (V x d)", v * d, factors=(V, D)),
            Part("the position embedding (s x d)", s * d, "a learned table of its own", factors=(S, D)),
            Part("the attention Linears' weights (4 d^2 per block)", layers * 4 * d * d, factors=(L, D, D)),
            Part("the MLP's weights (2 d f per block)", layers * 2 * d * f, factors=(L, D, F_)),
            Part("the Linears' biases (3d + d + f + d per block)", layers * (5 * d + f), "every Linear has a bias"),
            Part("the LayerNorms' weights (d each, two per block and a final one)", (2 * layers + 1) * d,
                 "a LayerNorm has a weight and a bias"),
            Part("the LayerNorms' biases (d each)", (2 * layers + 1) * d, "a LayerNorm has a weight and a bias"),
            Part("the final LayerNorm (2d)", 2 * d, "the blocks are followed by one more LayerNorm"),
            Part("a head of its own (V x d)", v * d, "GPT-2's head is tied to the token embedding", counts=False)]


def flops_parts(shape: GPT2Shape) -> tuple[list[Part], list[Factor]]:
    """The parts and factors of task 2's count per token, and what it leaves out (utils.diagnosis)."""
    v, s, d, layers, h, f = shape
    right = training_flops_per_token(shape)
    attention = (Factor("L", layers), Factor("s (the count is per token: each token's share of the s x s square)", s),
                 Factor("d", d))
    parts = [Part("the Linears' matmuls (6 x (4 d^2 + 2 d f) per block)", 6 * layers * (4 * d * d + 2 * d * f)),
             Part("attention's two matmuls over the s x s square (12 s d per block)", 12 * layers * s * d,
                  "they have no parameters, but they are matmuls", factors=attention),
             Part("half of attention's FLOPs (a mask saves nothing, and q k^T and weights @ v cost the same)",
                  6 * layers * s * d, factors=attention),
             Part("the tied head's matmul (6 V d)", 6 * v * d, "it holds no parameters of its own, but it is a matmul"),
             Part("the first block's input gradient (its Linear(d, 3d)'s input-gradient matmul, 6 d^2)", 6 * d * d,
                  "the embeddings below it are trained"),
             Part("a third of every matmul's cost (its second backward matmul)", right // 3,
                  "the backward computes the gradient of both inputs of each matmul"),
             Part("the biases, as if they were matmul weights", 6 * layers * (5 * d + f), "bias additions count 0",
                  counts=False),
             Part("the embedding lookups, as matmuls", 6 * v * d + 6 * s * d, "looking up a row costs no FLOPs",
                  counts=False),
             Part("a lookup of the token embedding, as a matmul", 6 * v * d, "looking up a row costs no FLOPs",
                  counts=False)]
    factors = [Factor("3 (the forward, and a backward of twice its cost)", 3), MULTIPLY_ADD]
    return parts, factors


def _check_list(results: object, cases: list, task: str) -> None:
    results_list(results, len(cases), task)


# Task 1: the shapes of the old in-sandbox test (seed 10), then two deeper ones, so that "any depth" means 1 to 128
# blocks as in tasks 3 and 4. Expected: the count written out, which tests/test_accounting_reference.py checks equals
# torch's count of the meta-device model (counted_params) on every one of these shapes. Not torch's count itself here:
# the grader computes the expected results in a fresh trusted process for every submission (autograder/trusted/checker.py
# `verdicts`), and torch's counts of all the cases of tasks 1 and 2 take about 9 s.
def _param_count_cases() -> list[tuple]:
    rng = random.Random(10)
    shapes = [GPT2_SMALL, GPT2_MEDIUM, GPT2_LARGE, GPT2_XL, ONES, GPT2Shape(2, 3, 4, 1, 4, 1)]
    for _ in range(100):
        num_heads = rng.choice([1, 2, 3, 4, 8, 12, 16, 25, rng.randint(1, 32)])
        d_model = num_heads * rng.randint(1, 128)
        shapes.append(GPT2Shape(rng.randint(1, 100_000), rng.choice([1, 1024, rng.randint(1, 32768)]), d_model,
                                rng.randint(1, 48) if rng.random() < 0.1 else rng.randint(1, 3), num_heads,
                                rng.choice([4 * d_model, rng.randint(1, 16384)])))
    deeper = random.Random(11)
    for num_layers in (96, 128):
        num_heads = deeper.randint(1, 32)
        d_model = num_heads * deeper.randint(1, 64)
        shapes.append(GPT2Shape(deeper.randint(1, 100_000), deeper.randint(1, 8192), d_model, num_layers, num_heads,
                                deeper.choice([4 * d_model, deeper.randint(1, 16384)])))
    assert any(shape.num_layers > 40 for shape in shapes) and any(shape.d_ff != 4 * shape.d_model for shape in shapes)
    return [tuple(shape) for shape in shapes]


def _check_param_count(cases, expected, results) -> None:
    _check_list(results, cases, "param_count")
    for fields, want, got in zip(cases, expected, results):
        shape = GPT2Shape(*fields)
        check_int(got, want, f"param_count({shape})", hint=_describe(shape) + ".",
                  explain=slips(want, param_parts(shape), rel_tol=0, noun="count", quantities=_quantities(shape)))


# Task 2: the shapes of the old in-sandbox test (seed 20; it had FlopCounterMode count them in every graded notebook),
# then GPT-2 small to XL and a model of 128 blocks. Expected: the count written out, which
# tests/test_accounting_reference.py checks equals FlopCounterMode's count of a training step of the meta-device model
# on a batch of 1 to 3 sequences (the batch drawn here) on every one of these shapes (about 20 ms per block; see task 1).
def _flops_shapes_and_batches() -> tuple[list[tuple], list[int]]:
    rng = random.Random(20)
    shapes = [ONES, GPT2Shape(3, 5, 4, 2, 2, 7)]
    for num_layers in (1, 1, 1, 1, 1, 2, 2, 3):
        num_heads = rng.choice([1, 2, 3, 4, 8, 12, rng.randint(1, 16)])
        d_model = num_heads * rng.randint(1, 128)
        shapes.append(GPT2Shape(rng.randint(1, 100_000), rng.randint(1, 8192), d_model, num_layers, num_heads,
                                rng.choice([4 * d_model, rng.randint(1, 16384)])))
    batches = [rng.randint(1, 3) for _ in shapes]
    deeper = random.Random(21)
    shapes += [GPT2_SMALL, GPT2_MEDIUM, GPT2_LARGE, GPT2_XL, GPT2Shape(deeper.randint(1, 100_000), deeper.randint(1, 4096),
                                                                      64 * 3, 128, 3, deeper.randint(1, 16384))]
    batches += [deeper.randint(1, 3) for _ in range(5)]
    return [tuple(shape) for shape in shapes], batches


def _check_flops(cases, expected, results) -> None:
    _check_list(results, cases, "training_flops_per_token")
    for fields, want, got in zip(cases, expected, results):
        shape = GPT2Shape(*fields)
        parts, factors = flops_parts(shape)
        rule_of_thumb = Part("the rule of thumb 6 x parameters in place of the matmuls",
                             6 * param_count(shape) - want, "not every parameter is in a matmul, and not every matmul has "
                             "parameters", counts=False)
        check_int(got, want, f"training_flops_per_token({shape})", hint=_describe(shape) + ".",
                  explain=slips(want, [*parts, rule_of_thumb], factors, 0, "count", _quantities(shape)))


# Task 3: the instructor's answer with task 1's count written out (tests/test_accounting_reference.py checks it
# against torch's). The cases of the old in-sandbox test (seed 30), every ZeRO stage on 1 and other numbers of GPUs.
def _memory_cases() -> dict:
    rng = random.Random(30)
    shapes = [GPT2_SMALL, GPT2_MEDIUM, GPT2_LARGE, GPT2_XL, ONES]
    for _ in range(40):
        num_heads = rng.randint(1, 64)
        d_model = num_heads * rng.randint(1, 256)
        shapes.append(GPT2Shape(rng.randint(1, 256_000), rng.randint(1, 32768), d_model, rng.randint(1, 128), num_heads,
                                rng.choice([4 * d_model, rng.randint(1, 65536)])))
    calls = [(tuple(shape), num_gpus, stage) for shape in shapes
             for num_gpus in (1, rng.choice([2, 8, 64, 512, 1024, 4096]), rng.randint(1, 4096)) for stage in (0, 1, 2, 3)]
    return {"calls": calls, "param_count": [(tuple(shape), param_count(shape)) for shape in dict.fromkeys(shapes)],
            "bad_stages": BAD_STAGES}


STAGE_HINTS = {0: "stage 0 copies all 16 bytes per parameter onto every GPU, however many there are",
               1: "stage 1: bf16 weights and gradients (2 + 2 bytes per parameter) on every GPU, the 12 bytes of fp32 "
                  "optimizer state split over the {n} GPU(s)",
               2: "stage 2: bf16 weights (2 bytes per parameter) on every GPU, gradients and optimizer state "
                  "(2 + 12 bytes) split over the {n} GPU(s)",
               3: "stage 3: all 16 bytes per parameter split over the {n} GPU(s)"}


def _check_memory(cases, expected, results) -> None:
    check_type(results, dict, "memory_per_gpu: the results handed in")
    check_type(results.get("memory"), list, "memory_per_gpu: the results handed in")
    check_int(len(results["memory"]), len(cases["calls"]), "memory_per_gpu: how many results were handed in")
    for (fields, num_gpus, stage), want, got in zip(cases["calls"], expected, results["memory"]):
        shape = GPT2Shape(*fields)
        check_float(got, want, f"memory_per_gpu({shape}, {num_gpus}, {stage})", rel_tol=1e-12,
                    hint=STAGE_HINTS[stage].format(n=num_gpus) + f", with P = param_count(shape) = {param_count(shape):,} "
                         "(your function gets the correct count here); return a float.")
    refused = results.get("refused")
    check_type(refused, list, "memory_per_gpu: the results handed in")
    check_int(len(refused), len(cases["bad_stages"]), "memory_per_gpu: how many results were handed in")
    for stage, raised in zip(cases["bad_stages"], refused):
        if raised is not True:
            raise AssertionError(f"memory_per_gpu(GPT2_SMALL, 8, {stage}): expected a ValueError\n"
                                 "Hint: ZeRO has stages 0 to 3 only; raise ValueError for any other stage.")


# Task 4: the instructor's answer with task 2's count written out (checked against FlopCounterMode's by
# tests/test_accounting_reference.py). The cases of the old in-sandbox test (seed 40): devices with and without a
# known bf16 peak, GPU counts, MFUs and token counts (int or float).
def _days_cases() -> dict:
    rng = random.Random(40)
    calls = [(GPT2_SMALL, 9e9, 8, "NVIDIA H100 80GB HBM3", 0.4), (GPT2_XL, 300e9, 1024, "NVIDIA A100-SXM4-80GB", 0.5),
             (GPT2_SMALL, 10**9, 1, "cpu", 0.5), (GPT2_SMALL, 10**9, 1, "Tesla T4", 0.5), (ONES, 1, 1, "NVIDIA H200", 1.0)]
    for _ in range(200):
        num_heads = rng.randint(1, 64)
        d_model = num_heads * rng.randint(1, 256)
        shape = GPT2Shape(rng.randint(1, 256_000), rng.randint(1, 32768), d_model, rng.randint(1, 128), num_heads,
                          rng.choice([4 * d_model, rng.randint(1, 65536)]))
        tokens = rng.choice([rng.randint(1, 10**13), 10 ** rng.uniform(6, 14)])
        calls.append((shape, tokens, rng.choice([1, 8, 1024, rng.randint(1, 100_000)]), rng.choice(DEVICES),
                      rng.uniform(0.05, 1.0)))
    shapes = dict.fromkeys(call[0] for call in calls)
    return {"calls": [(tuple(shape), *rest) for shape, *rest in calls],
            "training_flops_per_token": [(tuple(shape), training_flops_per_token(shape)) for shape in shapes]}


def _days_expected(cases) -> list:
    expected = [training_days(GPT2Shape(*fields), *rest) for fields, *rest in cases["calls"]]
    assert any(want is None for want in expected) and any(want is not None for want in expected)
    return expected


def _check_days(cases, expected, results) -> None:
    _check_list(results, cases["calls"], "training_days")
    for (fields, tokens, num_gpus, device, mfu), want, got in zip(cases["calls"], expected, results):
        what = f"training_days{(GPT2Shape(*fields), tokens, num_gpus, device, mfu)}"
        if want is None:
            check_type(got, type(None), what, hint=f"the course's table knows no bf16 peak for {device!r} "
                                                   "(peak_flops gives None): return None.")
        else:
            peak = peak_flops(device, torch.bfloat16)
            factors = [Factor("the MFU", mfu), Factor("the GPUs", num_gpus), Factor("the 86,400 s of a day", 86400),
                       Factor("the 24 hours of a day", 24), Factor("the context length s", fields[1]),
                       Factor("6 (training_flops_per_token counts the forward and the backward already)", 6),
                       Factor("the bf16 peak over the fp32 one", peak / (peak_flops(device, torch.float32) or peak))]
            check_float(got, want, what, rel_tol=1e-9, explain=slips(want, factors=factors, rel_tol=1e-6, noun="days"),
                        hint=f"on {num_gpus:,} x {device!r} (bf16 peak {peak:.4g} FLOP/s, from peak_flops) at MFU "
                             f"{mfu:.3g}, {tokens:.4g} tokens ({type(tokens).__name__}) of "
                             f"training_flops_per_token(shape) = {training_flops_per_token(GPT2Shape(*fields)):,} FLOPs "
                             "each (your function gets the correct count here); a day has 86400 s; return a float.")


HIDDEN_TESTS = keep_stand_ins_apart({
    "param_count": HiddenTest(cases=_param_count_cases,
                              expected=lambda cases: [param_count(GPT2Shape(*fields)) for fields in cases],
                              check=_check_param_count),
    "training_flops_per_token": HiddenTest(cases=lambda: _flops_shapes_and_batches()[0],
                                           expected=lambda cases: [training_flops_per_token(GPT2Shape(*fields))
                                                                   for fields in cases],
                                           check=_check_flops),
    "memory_per_gpu": HiddenTest(cases=_memory_cases,
                                 expected=lambda cases: [memory_per_gpu(GPT2Shape(*fields), num_gpus, stage)
                                                         for fields, num_gpus, stage in cases["calls"]],
                                 check=_check_memory),
    "training_days": HiddenTest(cases=_days_cases, expected=_days_expected, check=_check_days),
})


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import PERCENT_FOR_FRACTION, within_percent

HIDDEN_TESTS["run_mfu"] = napkin_test(
    {'parameters': 124000000, 'tokens_per_step': 524288, 'seconds_per_step': 1.2, 'gpus': 8, 'peak_flops_per_second': 312000000000000},
    lambda parameters, tokens_per_step, seconds_per_step, gpus, peak_flops_per_second, flops_per_parameter_and_token: flops_per_parameter_and_token * parameters * tokens_per_step / seconds_per_step / (gpus * peak_flops_per_second),
    "run_mfu", "MFU (a fraction)", within_percent(5),
    {**PERCENT_FOR_FRACTION, 8.0: "one GPU's peak? The step runs on all 8: divide by 8 x the peak.", 1 / 3: "the forward pass alone? A training step is 6 x tokens x parameters FLOPs."},
    conventions={"flops_per_parameter_and_token": (6, "the 6 FLOPs per parameter and token the question gives")})

HIDDEN_TESTS["gpt3_days"] = napkin_test(
    {'parameters': 175000000000, 'tokens': 300000000000, 'gpus': 1024, 'peak_flops_per_second': 312000000000000, 'mfu': 0.4},
    lambda parameters, tokens, gpus, peak_flops_per_second, mfu, flops_per_parameter_and_token, seconds_per_day: flops_per_parameter_and_token * parameters * tokens / (gpus * peak_flops_per_second * mfu) / seconds_per_day,
    "gpt3_days", "days", within_percent(5),
    {24.0: "hours where days were asked? A day is 24 hours.", 86400.0: "seconds where days were asked? A day is 86,400 seconds.", 1 / 3: "the forward pass alone? Training is 6 x tokens x parameters FLOPs.", 0.4: "the time at the peak? At MFU 0.4 the GPUs deliver 0.4 of it, so the run takes longer."},
    conventions={"flops_per_parameter_and_token": (6, "the 6 FLOPs per parameter and token the question gives"),
                 "seconds_per_day": (86400, "the 86,400 seconds of a day")})
