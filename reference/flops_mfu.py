"""Exercise 5 (FLOPs and MFU): the answers that torch cannot give, and the trusted half of the hidden tests.

Tasks 1, 2 and 5 need no reference: their hidden tests count FLOPs with `FlopCounterMode` and bytes from the sizes of
meta tensors (here, in the grader's trusted process). Training days, MFU and the roofline time are arithmetic on
numbers torch knows nothing about.
"""
from __future__ import annotations

import torch

from utils.flops import SECONDS_PER_DAY, matmul_flops
from utils.hardware import peak_flops


def training_days(params: float, tokens: float, num_gpus: int, peak_flops_per_second: float, mfu: float) -> float:
    """Days to train: 6 x params x tokens FLOPs over num_gpus x peak (FLOP/s) x mfu x 86400 FLOPs per day."""
    flops_per_day = num_gpus * peak_flops_per_second * mfu * SECONDS_PER_DAY
    return 6 * params * tokens / flops_per_day


def matmul_mfu(m: int, k: int, n: int, seconds: float, device_name: str, dtype: torch.dtype | str) -> float | None:
    """Achieved FLOP/s of an (m x k) @ (k x n) matmul that took `seconds`, over the dense peak; None if unknown."""
    peak = peak_flops(device_name, dtype)
    if peak is None:
        return None
    return matmul_flops(m, k, n) / seconds / peak


def roofline_seconds(ops: list[tuple[float, float]], peak_flops_per_second: float, bytes_per_second: float) -> float:
    """The least time (seconds) of ops run one after another, each (FLOPs, bytes moved): sum of max(F / peak, M / bw)."""
    return sum(max(flops / peak_flops_per_second, moved / bytes_per_second) for flops, moved in ops)


# ---- hidden tests (reference/hidden.py): cases, expected results, checks -----------------------------------------
import random

from reference.hidden import HiddenTest, keep_stand_ins_apart
from reference.hidden import results_list as _results
from utils.flops import count_flops, linear_model_matmul_shapes
from utils.grading import check_float, check_int, check_type


def _meta(shape, dtype=torch.float32, requires_grad=False) -> torch.Tensor:
    return torch.empty(shape, device="meta", dtype=dtype, requires_grad=requires_grad)


def _counted_matmul(a_shape, b_shape) -> int:
    """FlopCounterMode is the oracle: the FLOPs of torch.matmul on meta tensors of these shapes."""
    return count_flops(torch.matmul, _meta(a_shape), _meta(b_shape))


def _matmul_table(pairs) -> list:
    """The right counts of task 1 for the calls a later task may make: (((a_shape, b_shape), count), ...). The
    notebook answers these calls of matmul_flop_count right (utils.earlier.answers_from_table) while it checks the
    later task, so that a mistake in task 1 costs its points only once."""
    return [((a, b), _counted_matmul(a, b)) for a, b in dict.fromkeys(pairs)]




# What each task's count rests on, for the hint of a failed hidden case (the idea and the lecture section).
HINTS = {
    "matmul_flop_count": "each of the m x n outputs of a matmul takes k multiplies and k adds, and the batch "
                         "dimensions broadcast (torch.broadcast_shapes) to the number of matmuls (lecture 5, section 2; "
                         "lecture 3, section 6).",
    "linear_model_flops": "every row of x is a token, whatever the batch dimensions; forward is 2 FLOPs per token per "
                          "parameter, and training adds two gradient matmuls per layer, but not the first layer's "
                          "input gradient: x is data (lecture 5, section 4).",
    "training_days": "training costs 6 FLOPs per parameter per token (forward 2, backward 4); divide by what the GPUs "
                     "deliver, then by the 86400 seconds of a day (lecture 5, section 9).",
    "matmul_mfu": "MFU is the achieved FLOP/s (a multiply and an add per term of the matmul, over the seconds) over "
                  "the device's dense peak for the dtype (lecture 5, section 8).",
    "matmul_intensity": "FLOPs over the bytes moved: every element of a, of b and of the output, each once, and a "
                        "broadcast input read once, not once per matmul (lecture 5, section 10).",
    "roofline_seconds": "an op's arithmetic and memory traffic overlap, so it takes as long as its slower side; ops "
                        "run one after another add up (lecture 5, section 10).",
}


def _pair(got: object, what: str) -> tuple:
    """A (tuple call, torch.Size call) pair that the notebook made."""
    check_type(got, tuple, what)
    check_int(len(got), 2, f"{what}: results handed in")
    return got


# task 1: matmul_flop_count
def _random_batched_shapes(rng: random.Random, sizes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    batch = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
    batch_a = [b if rng.random() < 0.7 else 1 for b in batch]
    batch_b = [b if rng.random() < 0.7 else 1 for b in batch][rng.randint(0, len(batch)):]
    m, k, n = sizes()
    return tuple(batch_a + [m, k]), tuple(batch_b + [k, n])


def _matmul_flop_count_cases() -> list:
    rng = random.Random(5)
    cases = [((1, 1), (1, 1)), ((3, 5), (5, 7)), ((2, 3, 5), (5, 7)), ((5, 7), (6, 7, 2)), ((1, 2, 3, 4), (5, 1, 4, 6)),
             ((2, 1, 3, 1, 4), (5, 1, 4, 2)), ((10**5, 10**4), (10**4, 10**5))]
    for _ in range(120):
        cases.append(_random_batched_shapes(rng, lambda: tuple(rng.randint(1, 4096) for _ in range(3))))
    return list(dict.fromkeys(cases))  # each pair once, as the old test's dict of expected counts had them


def _matmul_flop_count_expected(cases) -> list[int]:
    expected = [_counted_matmul(a, b) for a, b in cases]
    assert all(count > 0 for count in expected)
    return expected


def _matmul_flop_count_check(cases, expected, results) -> None:
    for (a, b), want, got in zip(cases, expected, _results(results, len(cases), "matmul_flop_count")):
        got = _pair(got, f"matmul_flop_count({a}, {b})")
        check_int(got[0], want, f"matmul_flop_count({a}, {b})", hint=HINTS["matmul_flop_count"])
        check_int(got[1], want, f"matmul_flop_count(torch.Size({a}), torch.Size({b}))", hint=HINTS["matmul_flop_count"])


# task 2: linear_model_flops
def _counted_linear_model(batch_shape, widths, training) -> int:
    x = _meta((*batch_shape, widths[0]))
    weights = [_meta((d_in, d_out), requires_grad=training) for d_in, d_out in zip(widths, widths[1:])]

    def run():
        h = x
        for w in weights:
            h = h @ w
        if training:
            h.sum().backward()

    return count_flops(run)


def _linear_model_flops_cases() -> dict:
    rng = random.Random(55)
    models = [((1,), [1, 1]), ((2, 3), [4, 5]), ((7,), [3, 9, 2]), ((2, 2, 2), [8, 8, 8, 8]), ((4096,), [4096, 16384, 4096])]
    for _ in range(40):
        batch_shape = tuple(rng.randint(1, 64) for _ in range(rng.randint(1, 3)))
        widths = [rng.randint(1, 300) for _ in range(rng.randint(2, 6))]
        models.append((batch_shape, widths))
    pairs = [pair for batch_shape, widths in models for pair in linear_model_matmul_shapes(batch_shape, widths)]
    return {"models": models, "matmul_flop_count": _matmul_table(pairs)}


def _linear_model_flops_expected(cases) -> list[int]:
    expected = [_counted_linear_model(batch_shape, widths, training)  # FlopCounterMode is the oracle
                for batch_shape, widths in cases["models"] for training in (False, True)]
    assert all(count > 0 for count in expected)
    return expected


def _linear_model_flops_check(cases, expected, results) -> None:
    runs = [(batch_shape, widths, training) for batch_shape, widths in cases["models"] for training in (False, True)]
    for (batch_shape, widths, training), want, got in zip(runs, expected,
                                                          _results(results, len(runs), "linear_model_flops")):
        check_int(got, want, f"linear_model_flops({batch_shape}, {widths}, training={training})",
                  hint=HINTS["linear_model_flops"], explain=_linear_slips(batch_shape, widths, training, want))


def _linear_slips(batch_shape: tuple, widths: list[int], training: bool, want: int):
    """A wrong linear_model_flops against its structure (utils.diagnosis): per layer a forward matmul, and in training
    a weight-gradient and an input-gradient matmul each as big (not x's); biases (the layers have none) and x's
    gradient not counted; the tokens over every batch dimension."""
    import math as _math

    from utils.diagnosis import MULTIPLY_ADD, Factor, Part, slips
    tokens = _math.prod(batch_shape)
    per_layer = [2 * tokens * a * b for a, b in zip(widths, widths[1:])]
    parts = [Part(f"layer {i + 1}'s forward matmul", f) for i, f in enumerate(per_layer)]
    parts.append(Part("biases, as parameters", 2 * tokens * sum(widths[1:]), "the layers are bias-free", counts=False))
    if training:
        parts += [Part(f"layer {i + 1}'s weight-gradient matmul", f) for i, f in enumerate(per_layer)]
        parts += [Part(f"layer {i + 1}'s input-gradient matmul", f) for i, f in enumerate(per_layer) if i > 0]
        parts.append(Part("x's gradient (layer 1's input-gradient matmul)", per_layer[0], "x is data: nobody needs its "
                          "gradient, so autograd skips it", counts=False))
    factors = [MULTIPLY_ADD]
    if len(batch_shape) > 1:
        factors.append(Factor("the batch dimensions after the first", tokens // batch_shape[0],
                              "every row of x is a token, whatever the batch dimensions"))
    return slips(want, parts, factors, 0, "count")


# task 3: training_days
def _training_days_cases() -> list:
    rng = random.Random(555)
    cases = [(70e9, 15e12, 1024, 989.5e12, 0.5), (175e9, 300e9, 10_000, 312e12, 0.3), (1, 1, 1, 1e12, 1.0),
             (7 * 10**9, 2 * 10**12, 64, 67e12, 0.45)]
    for _ in range(200):
        cases.append((10 ** rng.uniform(6, 13), 10 ** rng.uniform(8, 14), rng.randint(1, 100_000),
                      rng.choice([19.5e12, 67e12, 312e12, 756e12, 989.5e12, 2250e12]), rng.uniform(0.05, 1.0)))
    return cases


def _check_floats(task: str, explain=None):
    def check(cases, expected, results):
        for case, want, got in zip(cases, expected, _results(results, len(cases), task)):
            check_float(got, want, f"{task}{case}", rel_tol=1e-9, hint=HINTS.get(task),
                        explain=explain(case, want) if explain else None)
    return check


def _days_slips(case: tuple, want: float):
    """A wrong training_days against the factors of the product (utils.diagnosis)."""
    from utils.diagnosis import Factor, slips
    params, tokens, num_gpus, peak, mfu = case
    return slips(want, factors=[Factor("the MFU", mfu), Factor("the GPUs", num_gpus), Factor("the 86,400 s of a day", 86400),
                                Factor("the 24 hours of a day", 24),
                                Factor("3 (training is 6 FLOPs per parameter and token: 2 forward, 4 backward)", 3)],
                 rel_tol=1e-6, noun="days")


def _roofline_slips(case: tuple, want: float):
    """A wrong roofline_seconds against the ways the two sides of each op can be combined."""
    ops, peak, bandwidth = case
    ways = {"the sum of each op's two times: arithmetic and memory traffic overlap, so the slower one sets the time":
                sum(f / peak + b / bandwidth for f, b in ops),
            "each op's faster side: the slower one sets its time": sum(min(f / peak, b / bandwidth) for f, b in ops),
            "the roofline of the totals: each op is limited by its own slower side, and ops add up":
                max(sum(f for f, _ in ops) / peak, sum(b for _, b in ops) / bandwidth),
            "FLOPs over the bandwidth and bytes over the peak: FLOPs take peak FLOP/s, bytes take bytes per second":
                sum(max(f / bandwidth, b / peak) for f, b in ops),
            "the first op only: ops run one after another add up": max(ops[0][0] / peak, ops[0][1] / bandwidth)}

    def explain(got: object) -> str | None:
        if type(got) is not float:
            return None
        return next((words for words, value in ways.items() if value != want and abs(got - value) <= 1e-9 * abs(value)),
                    None)
    return explain


# task 4: matmul_mfu
MFU_DEVICES = ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-40GB", "NVIDIA H200", "Tesla T4",
               "NVIDIA L4", "NVIDIA GeForce RTX 4090", "NVIDIA B200", "cpu", "Apple M2", "Intel Arc"]
TIMED = (4096, 4096, 4096)  # the notebook also times a bf16 matmul of this size when it runs on a GPU


def _matmul_mfu_cases() -> dict:
    rng = random.Random(5555)
    dtypes = [torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, "tf32"]
    cases = []
    for _ in range(200):
        m, k, n = (rng.randint(1, 16384) for _ in range(3))
        cases.append((m, k, n, 10 ** rng.uniform(-6, 0), rng.choice(MFU_DEVICES), rng.choice(dtypes)))
    pairs = [((m, k), (k, n)) for m, k, n, *_ in cases] + [((TIMED[0], TIMED[1]), (TIMED[1], TIMED[2]))]
    return {"cases": cases, "matmul_flop_count": _matmul_table(pairs)}


def _matmul_mfu_expected(cases) -> list:
    expected = [matmul_mfu(*case) for case in cases["cases"]]
    assert any(want is None for want in expected) and any(want is not None for want in expected)
    return expected


def _check_mfu(got: object, want: float | None, what: str) -> None:
    if want is None:
        check_type(got, type(None), what, hint="this device and dtype have no known peak: return None.")
    else:
        from utils.diagnosis import MULTIPLY_ADD, Factor, slips
        check_float(got, want, what, rel_tol=1e-9, hint=HINTS["matmul_mfu"], explain=slips(
            want, factors=[MULTIPLY_ADD, Factor("100 (a percentage)", 100), Factor("1,000 (milliseconds and seconds)", 1000)],
            rel_tol=1e-6, noun="MFU"))


def _matmul_mfu_check(cases, expected, results) -> None:
    check_type(results, dict, "matmul_mfu: the results handed in")
    timed = results.get("timed")
    check_type(timed, list, "matmul_mfu: the timed matmul handed in")
    if len(timed) > 1 or not all(type(case) is tuple and len(case) == 6 and case[:3] == TIMED
                                 and type(case[3]) is float and case[3] > 0 and type(case[4]) is str
                                 and case[5] == torch.bfloat16 for case in timed):
        raise AssertionError(f"matmul_mfu: the timed matmul handed in is not one the test makes: {timed!r:.200}")
    got = _results(results.get("results"), len(cases["cases"]) + len(timed), "matmul_mfu")
    # on a GPU also the MFU of a real, timed matmul: the timing was observed in the notebook, the MFU is computed here
    for case, want, value in zip(cases["cases"] + timed, expected + [matmul_mfu(*case) for case in timed], got):
        _check_mfu(value, want, f"matmul_mfu{case}")


# task 5: matmul_intensity
_DTYPE_OF = {1: torch.float8_e4m3fn, 2: torch.bfloat16, 4: torch.float32, 8: torch.float64}


def _counted_intensity(a_shape, b_shape, size) -> float:
    # torch is the oracle: FlopCounterMode's FLOPs, and the bytes of a, b and the output as meta tensors
    a, b = _meta(a_shape), _meta(b_shape)
    flops = count_flops(torch.matmul, a, b)
    stored = [_meta(shape, dtype=_DTYPE_OF[size]) for shape in (a_shape, b_shape, (a @ b).shape)]
    return flops / sum(t.numel() * t.element_size() for t in stored)


def _matmul_intensity_cases() -> dict:
    rng = random.Random(55555)
    cases = [((1, 1), (1, 1), 4), ((1, 10**6), (10**6, 1), 2), ((4096, 4096), (4096, 1), 2), ((3, 5), (5, 7), 8),
             ((64, 2048, 8192), (8192, 8192), 1), ((2, 16, 4096, 64), (2, 16, 64, 4096), 2), ((7, 3), (5, 1, 3, 9), 4)]
    for _ in range(120):
        a, b = _random_batched_shapes(
            rng, lambda: tuple(rng.choice([1, rng.randint(1, 64), rng.randint(1, 20000)]) for _ in range(3)))
        cases.append((a, b, rng.choice([1, 2, 4, 8])))
    return {"cases": cases, "matmul_flop_count": _matmul_table((a, b) for a, b, _ in cases)}


def _matmul_intensity_check(cases, expected, results) -> None:
    for (a, b, size), want, got in zip(cases["cases"], expected,
                                       _results(results, len(cases["cases"]), "matmul_intensity")):
        got = _pair(got, f"matmul_intensity{(a, b, size)}")
        check_float(got[0], want, f"matmul_intensity{(a, b, size)}", rel_tol=1e-9, hint=HINTS["matmul_intensity"],
                    explain=_intensity_slips(a, b, size, want))
        check_float(got[1], want, f"matmul_intensity(torch.Size({a}), torch.Size({b}), {size})", rel_tol=1e-9,
                    hint=HINTS["matmul_intensity"])


def _intensity_slips(a_shape: tuple, b_shape: tuple, size: int, want: float):
    """A wrong intensity, read as the bytes it implies (the count's FLOPs over it) against the bytes' parts."""
    import math as _math

    from utils.diagnosis import MULTIPLY_ADD, Factor, Part, explain_value
    batch = tuple(torch.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    flops = 2 * _math.prod(batch) * m * k * n
    right_bytes = flops / want
    matmuls = _math.prod(batch)
    parts = [Part("a's bytes", _math.prod(a_shape) * size), Part("b's bytes", _math.prod(b_shape) * size),
             Part("the output's bytes", matmuls * m * n * size, "the output is written once"),
             Part("a read once per matmul (a broadcast input is read once)", (matmuls * m * k - _math.prod(a_shape)) * size,
                  counts=False),
             Part("b read once per matmul (a broadcast input is read once)", (matmuls * k * n - _math.prod(b_shape)) * size,
                  counts=False)]
    factors = [Factor(f"the {size} bytes per element", size), Factor("the matmuls of the batch", matmuls)]

    def explain(got: object) -> str | None:
        if type(got) is not float or got <= 0:
            return None
        said = explain_value(flops / got, right_bytes, parts, factors, 1e-6, "bytes moved")
        if said is None:
            said = explain_value(got, want, factors=[MULTIPLY_ADD], rel_tol=1e-6, noun="intensity")
        return said
    return explain


# task 6: roofline_seconds
def _roofline_seconds_cases() -> list:
    rng = random.Random(555555)
    cases = [([(2.0**20, 2.0**10)], 2.0**40, 2.0**30), ([(295, 1)], 989.5e12, 3.35e12), ([(1, 1)], 1.0, 1.0),
             ([(10**12, 10**9), (10**6, 10**9), (3 * 10**11, 10**9)], 1e15, 3e12)]
    for _ in range(300):
        ops = [(rng.choice([rng.randint(1, 10**15), 10 ** rng.uniform(0, 15)]), 10 ** rng.uniform(0, 12))
               for _ in range(rng.randint(1, 6))]
        cases.append((ops, 10 ** rng.uniform(11, 16), 10 ** rng.uniform(10, 13)))
    return cases


def _roofline_seconds_check(cases, expected, results) -> None:
    for (ops, peak, bandwidth), want, got in zip(cases, expected, _results(results, len(cases), "roofline_seconds")):
        check_float(got, want, f"roofline_seconds({ops}, {peak}, {bandwidth})", rel_tol=1e-9,
                    hint=HINTS["roofline_seconds"], explain=_roofline_slips((ops, peak, bandwidth), want))


HIDDEN_TESTS = keep_stand_ins_apart({
    "matmul_flop_count": HiddenTest(cases=_matmul_flop_count_cases, expected=_matmul_flop_count_expected,
                                    check=_matmul_flop_count_check),
    "linear_model_flops": HiddenTest(cases=_linear_model_flops_cases, expected=_linear_model_flops_expected,
                                     check=_linear_model_flops_check),
    "training_days": HiddenTest(cases=_training_days_cases,
                                expected=lambda cases: [training_days(*case) for case in cases],
                                check=_check_floats("training_days", _days_slips)),
    "matmul_mfu": HiddenTest(cases=_matmul_mfu_cases, expected=_matmul_mfu_expected, check=_matmul_mfu_check),
    "matmul_intensity": HiddenTest(cases=_matmul_intensity_cases,
                                   expected=lambda cases: [_counted_intensity(*case) for case in cases["cases"]],
                                   check=_matmul_intensity_check),
    "roofline_seconds": HiddenTest(cases=_roofline_seconds_cases,
                                   expected=lambda cases: [roofline_seconds(*case) for case in cases],
                                   check=_roofline_seconds_check),
})


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import MULTIPLY_ADDS, S_FOR_MS, within_percent

HIDDEN_TESTS["matmul_ms"] = napkin_test(
    {'n': 8192, 'peak_flops_per_second': 312000000000000, 'mfu': 0.6},
    lambda n, peak_flops_per_second, mfu, flops_per_multiply_add, ms_per_second: flops_per_multiply_add * n**3 / (peak_flops_per_second * mfu) * ms_per_second,
    "matmul_ms", "milliseconds", within_percent(5),
    {**MULTIPLY_ADDS, **S_FOR_MS, 0.6: "the time at the peak? At MFU 0.6 the matmul runs at 0.6 of the peak, so it takes longer than at the peak."},
    conventions={"flops_per_multiply_add": (2, "the 2 FLOPs of a multiply-add"), "ms_per_second": (1000, "the 1,000 ms of a second")})

HIDDEN_TESTS["two_weeks_flops"] = napkin_test(
    {'gpus': 8, 'peak_flops_per_second': 989500000000000, 'days': 14, 'mfu': 0.5},
    lambda gpus, peak_flops_per_second, days, mfu, seconds_per_day: gpus * peak_flops_per_second * mfu * days * seconds_per_day,
    "two_weeks_flops", "FLOPs", within_percent(5),
    {1 / 86400: "days where seconds were needed? A FLOP/s rate times seconds gives FLOPs: a day is 86,400 s.", 1 / 1440: "minutes where seconds were needed? A day is 86,400 seconds.", 1 / 24: "hours where seconds were needed? A day is 86,400 seconds.", 2.0: "the MFU left out? At MFU 0.5 the GPUs deliver half their peak.", 1 / 8: "one GPU's FLOPs? All 8 work at once."},
    conventions={"seconds_per_day": (86400, "the 86,400 seconds of a day")})
