"""Exercise 3 (strides and views), what the hidden tests need besides torch: random cases.

torch is the oracle for every task (stride(), storage_offset(), is_contiguous(), view(), unfold), so no answer lives
here; these make the views and shapes the hidden tests ask torch about.
"""
from __future__ import annotations

import math
import random

import torch
from jaxtyping import Int64
from torch import Tensor


def random_view(rng: random.Random, max_dims: int = 4, max_size: int = 5) -> Int64[Tensor, "..."]:
    """A random view of a fresh int64 arange (each element holds its storage index), made by up to four random
    permutes, transposes, slices (steps 1 to 3) and selects; size-0 and size-1 dims come up often."""
    sizes = [0] + [1] * 2 + list(range(2, max_size + 1)) * 3  # size 0 and size 1 are common, but not the rule
    shape = [rng.choice(sizes) for _ in range(rng.choice([0] + list(range(1, max_dims + 1)) * 3))]
    view = torch.arange(math.prod(shape), dtype=torch.int64).view(shape)
    for _ in range(rng.randint(0, 4)):
        if view.dim() == 0:
            break
        dim = rng.randrange(view.dim())
        op = rng.choice(["permute", "permute", "transpose", "slice", "slice", "select"])
        if op == "permute":
            view = view.permute(rng.sample(range(view.dim()), view.dim()))
        elif op == "transpose":
            view = view.transpose(dim, rng.randrange(view.dim()))
        elif op == "slice":
            start = rng.choice([None, None, rng.randint(-6, 6)])  # mostly non-empty slices, some empty ones
            stop = rng.choice([None, None, rng.randint(-6, 6)])
            index = [slice(None)] * view.dim()
            index[dim] = slice(start, stop, rng.randint(1, 3))
            view = view[tuple(index)]
        elif view.shape[dim] > 0:
            view = view.select(dim, rng.randrange(view.shape[dim]))
    return view


def random_shape_with_numel(rng: random.Random, numel: int) -> tuple[int, ...]:
    """A random shape holding exactly `numel` elements, in a random order, sometimes with an extra size-1 dim."""
    if numel == 0:
        shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 2))] + [0]
    else:
        shape, left = [], numel
        while left > 1 and len(shape) < 4:
            factor = rng.choice([d for d in range(1, left + 1) if left % d == 0])
            shape.append(factor)
            left //= factor
        shape.append(left)
    if rng.random() < 0.3:
        shape.append(1)
    rng.shuffle(shape)
    return tuple(shape)


# ---- hidden tests (reference/hidden.py): cases, expected results, checks -----------------------------------------
from reference.hidden import HiddenTest, keep_stand_ins_apart
from reference.hidden import results_list as _results
from utils import cost as _cost
from utils.grading import check_int, check_str, check_tensor, check_type
from utils.strides import check_bool, check_ints, check_metadata


def _storage_index_cases() -> list[tuple]:
    """(index, strides, offset) of an element of a random view."""
    rng = random.Random(3)
    cases = []
    while len(cases) < 400:
        view = random_view(rng)
        if view.numel() == 0:
            continue
        index = tuple(rng.randrange(size) for size in view.shape)
        cases.append((index, tuple(view.stride()), view.storage_offset()))
    return cases


def _storage_index_expected(cases: list) -> list[int]:
    """Where torch finds the element: read from a view, with that layout, of an arange (value = storage index)."""
    return [int(torch.arange(10_000).as_strided(tuple(i + 1 for i in index), strides, offset)[index])
            for index, strides, offset in cases]


def _storage_index_check(cases, expected, results) -> None:
    for (index, strides, offset), want, got in zip(cases, expected, _results(results, len(cases), "storage_index")):
        check_int(got, want, f"storage_index({index}, {strides}, {offset})")


def _row_major_cases() -> list[tuple]:
    rng = random.Random(4)
    shapes = [tuple(rng.choice([0, 1, 1, 2, 3, 5, 8]) for _ in range(rng.randint(0, 5))) for _ in range(300)]
    return shapes + [(4 * 12288, 12288), (1, 1, 1), (0,), (0, 0), (3, 0), (1000, 1, 7)]


def _row_major_check(cases, expected, results) -> None:
    for shape, want, got in zip(cases, expected, _results(results, len(cases), "row_major_strides")):
        check_type(got, tuple, f"row_major_strides({shape}): what was handed in")
        check_int(len(got), 2, f"row_major_strides({shape}): what was handed in")
        check_ints(got[0], want, f"row_major_strides({shape})")
        check_ints(got[1], want, f"row_major_strides(torch.Size({shape}))")


def _fresh_strides(shapes) -> list[tuple]:
    """Task 2's right answers for these shapes only, as a table for utils.earlier.answers_from_table."""
    return [((shape,), tuple(torch.empty(shape, device="meta").stride())) for shape in dict.fromkeys(shapes)]


def _contiguous_cases() -> dict:
    """The calls (shape, strides), and task 2's right answers for their shapes: a student's is_contiguous that calls
    their row_major_strides runs with a stand-in that knows these."""
    rng = random.Random(5)
    cases = []
    for _ in range(300):
        view = random_view(rng)
        cases.append((tuple(view.shape), tuple(view.stride())))
    for _ in range(300):  # arbitrary strides, not only those of views torch makes
        shape = tuple(rng.choice([0, 1, 1, 2, 3, 4]) for _ in range(rng.randint(0, 4)))
        strides = tuple(rng.choice([0, 1, 2, 3, 4, 6, 8, 12, 24, rng.randint(0, 30)]) for _ in shape)
        if rng.random() < 0.4:  # make it contiguous, then perturb the strides of size-1 dims only
            strides = tuple(rng.randint(0, 9) if size == 1 else s
                            for size, s in zip(shape, torch.empty(shape, device="meta").stride()))
        cases.append((shape, strides))
    return {"calls": cases, "row_major_strides": _fresh_strides(shape for shape, _ in cases)}


def _contiguous_check(cases, expected, results) -> None:
    calls = cases["calls"]
    for (shape, strides), want, got in zip(calls, expected, _results(results, len(calls), "is_contiguous")):
        check_bool(got, want, f"is_contiguous({shape}, {strides})")


def _slice_cases() -> list[tuple]:
    rng = random.Random(6)
    cases = []
    while len(cases) < 400:
        view = random_view(rng)
        if view.dim() == 0:
            continue
        dim = rng.randrange(view.dim())
        start, stop, step = rng.choice([None, rng.randint(-7, 7)]), rng.choice([None, rng.randint(-7, 7)]), rng.randint(1, 4)
        cases.append((tuple(view.shape), tuple(view.stride()), view.storage_offset(), dim, start, stop, step))
    return cases


def _slice_expected(cases: list) -> list[tuple]:
    """What torch's own slicing gives, on a view of a large enough storage with the case's layout."""
    expected = []
    for shape, strides, offset, dim, start, stop, step in cases:
        view = torch.empty(10_000).as_strided(shape, strides, offset)
        index = [slice(None)] * len(shape)
        index[dim] = slice(start, stop, step)
        sliced = view[tuple(index)]
        expected.append((tuple(sliced.shape), tuple(sliced.stride()), sliced.storage_offset()))
    return expected


def _slice_check(cases, expected, results) -> None:
    for args, want, got in zip(cases, expected, _results(results, len(cases), "slice_metadata")):
        check_metadata(got, want, f"slice_metadata{args}")


def _windows_cases() -> list[dict]:
    """100 small windows of an arange of 60, and, among them at places drawn at random, the calls the cost budget is
    measured on (issue #60): windows of width 1024 over 66,559 elements, 256 MiB as float32 (and 128 MiB as bf16,
    strided with an offset) if copied, no memory at all as a view."""
    rng = random.Random(7)
    cases = []
    for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.float64):
        for _ in range(25):
            start, step = rng.randint(0, 5), rng.randint(1, 4)
            length = len(range(start, 60, step))
            length = min(length, rng.randint(1, 12))
            cases.append(dict(dtype=dtype, size=60, start=start, step=step, length=length, width=rng.randint(1, length),
                              big=False))
    length, width = _cost.WINDOWS_LENGTH, _cost.WINDOWS_WIDTH
    for big in (dict(dtype=torch.float32, size=length, start=0, step=1, length=length, width=width, big=True),
                dict(dtype=torch.bfloat16, size=2 * length + 5, start=5, step=2, length=length, width=width, big=True)):
        cases.insert(rng.randrange(len(cases) + 1), big)
    return cases


def window_input(case: dict) -> torch.Tensor:
    """The strided 1-D input of a sliding_windows case: every step-th number of an arange, from start."""
    return torch.arange(case["size"]).to(case["dtype"])[case["start"]::case["step"]][: case["length"]]


def _window_layout(case: dict) -> dict:
    """What the windows of a large case must be, worked out from the case alone: a view of x (length n, stride s,
    offset o) of shape (n - w + 1, w), strides (s, s), offset o. No tensor: the checker compares in forked children,
    where a parallel op on a large tensor would hang on the thread pool the parent started."""
    length = min(case["length"], len(range(case["start"], case["size"], case["step"])))
    return {"shape": (length - case["width"] + 1, case["width"]), "strides": (case["step"], case["step"]),
            "offset": case["start"], "dtype": case["dtype"], "what": f"x of length {length}, stride {case['step']}, "
                                                                  f"offset {case['start']}, {case['dtype']}"}


def _windows_expected(cases: list) -> list:
    return [_window_layout(case) if case["big"] else window_input(case).unfold(0, case["width"], 1) for case in cases]


def _windows_check(cases, expected, results) -> None:
    for case, want, got in zip(cases, expected, _results(results, len(cases), "sliding_windows")):
        if case["big"]:
            what = f"sliding_windows(x, {case['width']}) for {want['what']}"
            shape, strides = want["shape"], want["strides"]
        else:
            x = window_input(case)
            what = (f"sliding_windows(x, {case['width']}) for x of length {x.shape[0]}, stride {x.stride(0)}, offset "
                    f"{x.storage_offset()}, {x.dtype}")
            shape, strides = tuple(want.shape), tuple(want.stride())
        check_type(got, dict, f"{what}: what was handed in")
        if case["big"] and "result" not in got:  # its layout only: a view of x with this layout holds these numbers
            check_ints(got.get("shape"), shape, f"shape of {what}")
            check_int(got.get("offset"), want["offset"], f"storage offset of {what}")
            check_str(str(got.get("dtype")), str(want["dtype"]), f"dtype of {what}")
        elif case["big"]:
            check_type(got.get("result"), torch.Tensor, what)
        else:
            check_tensor(got.get("result"), want, what)
        if got.get("is_view_of_x") is not True:
            raise AssertionError(f"{what}: the result is not a view of x\nHint: build it with as_strided on x.")
        check_ints(got.get("strides"), strides, f"strides of {what}")


def _can_view_cases() -> dict:
    """The calls (shape, strides, new_shape), and tasks 2 and 3's right answers for them: a student's can_view that
    calls their row_major_strides (on a shape or a new shape) or is_contiguous (on the case's layout) runs with
    stand-ins that know these."""
    rng = random.Random(8)
    cases = []
    while len(cases) < 500:
        view = random_view(rng)
        if view.numel() <= 1 and rng.random() < 0.8:
            continue
        shape = tuple(view.shape)
        if len(shape) >= 2 and rng.random() < 0.4:  # merge two neighbouring dims: the interesting case
            d = rng.randrange(len(shape) - 1)
            new_shape = shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2:]
        else:
            new_shape = random_shape_with_numel(rng, view.numel())
        cases.append((shape, tuple(view.stride()), new_shape))
    layouts = list(dict.fromkeys((shape, strides) for shape, strides, _ in cases))
    return {"calls": cases,
            "row_major_strides": _fresh_strides([c[0] for c in cases] + [c[2] for c in cases]),
            "is_contiguous": [(layout, torch.empty(10_000).as_strided(*layout).is_contiguous()) for layout in layouts]}


def _can_view_expected(cases: dict) -> list[bool]:
    expected = []
    for shape, strides, new_shape in cases["calls"]:
        try:
            torch.empty(10_000).as_strided(shape, strides).view(new_shape)
            expected.append(True)
        except RuntimeError:
            expected.append(False)
    assert 100 < sum(expected) < 450  # both verdicts are well represented
    return expected


def _chunks(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """The elements of each chunk of a layout, outermost first, size-1 dimensions dropped (lecture 3, section 3)."""
    kept = [(size, stride) for size, stride in zip(shape, strides) if size != 1]
    chunks: list[int] = []
    for d, (size, stride) in enumerate(kept):
        if d > 0 and kept[d - 1][1] == stride * size:
            chunks[-1] *= size
        else:
            chunks.append(size)
    return chunks or [1]


def _can_view_check(cases, expected, results) -> None:
    calls = cases["calls"]
    for (shape, strides, new_shape), want, got in zip(calls, expected, _results(results, len(calls), "can_view")):
        if 0 in shape:
            hint = "a tensor with no elements can always be viewed."
        else:
            ones = [d for d, size in enumerate(shape) if size == 1]
            dropped = f"dropping its size-1 dimension(s) {ones}, " if ones else ""
            hint = (f"{dropped}this layout is {len(_chunks(shape, strides))} chunk(s) of {_chunks(shape, strides)} "
                    f"elements (outermost first); a view works when each chunk is the product of a run of "
                    f"neighbouring new dimensions, size-1 new dimensions fitting anywhere (lecture 3, section 3).")
        check_bool(got, want, f"can_view({shape}, {strides}, {new_shape})", hint=hint)


HIDDEN_TESTS = keep_stand_ins_apart({
    "storage_index": HiddenTest(_storage_index_cases, _storage_index_expected, _storage_index_check,
                                varies="random views made by permutes, transposes, slices with steps and selects (strides in any "
                                       "order, storage offsets), sizes 0 and 1"),
    "row_major_strides": HiddenTest(_row_major_cases,
                                    lambda cases: [tuple(torch.empty(s, device="meta").stride()) for s in cases],
                                    _row_major_check,
                                    varies="shapes with 0 to 5 dimensions, sizes 0 and 1, and torch.Size inputs"),
    "is_contiguous": HiddenTest(_contiguous_cases,
                                lambda cases: [torch.empty(1000).as_strided(shape, strides).is_contiguous()
                                               for shape, strides in cases["calls"]],
                                _contiguous_check,
                                varies="views torch makes and arbitrary strides, size-0 and size-1 dimensions with "
                                       "any stride; your is_contiguous ran with a correct row_major_strides"),
    "slice_metadata": HiddenTest(_slice_cases, _slice_expected, _slice_check,
                                 varies="the sliced dimension, negative and missing start and stop, steps up to 4, "
                                        "and inputs that are already views with an offset"),
    "sliding_windows": HiddenTest(_windows_cases, _windows_expected, _windows_check,
                                  varies="the dtype, inputs that are strided views with an offset, and every width"),
    "can_view": HiddenTest(_can_view_cases, _can_view_expected, _can_view_check,
                           varies="views torch makes, merged neighbouring dimensions, and new shapes of the same numel; "
                                  "your can_view ran with a correct row_major_strides and is_contiguous"),
})


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import BITS_FOR_BYTES, within_percent

HIDDEN_TESTS["copy_mib"] = napkin_test(
    {'rows': 8192, 'cols': 4096},
    lambda rows, cols, bytes_per_element, bytes_per_mib: rows * cols * bytes_per_element / bytes_per_mib,
    "copy_mib", "MiB", within_percent(2),
    {**BITS_FOR_BYTES, 0.25: "elements counted where bytes were asked? Each float32 element is 4 bytes.", 2**20 / 1e6: "MB (10^6 bytes) where MiB (2^20 bytes) were asked?",
     1 / 1024: "GiB where MiB were asked? A GiB is 1,024 MiB.", 2.0: "x counted too? x exists already and x.t() is a view: only the copy is new memory."},
    conventions={"bytes_per_element": (4, "the 4 bytes of a float32 element"),
                 "bytes_per_mib": (2**20, "the 2^20 bytes of a MiB")})

# ---- cost budgets (issues #52, #60): measured by the grader from outside the notebook process, on the hidden calls
from reference.hidden import CostBudget

COST_BUDGETS = [CostBudget(
    key="strides_views.sliding_windows",
    what=f"sliding_windows on the hidden cases, among them x of {_cost.WINDOWS_LENGTH:,} elements with width "
         f"{_cost.WINDOWS_WIDTH} (a {_cost.WINDOWS_LENGTH - _cost.WINDOWS_WIDTH + 1:,} x {_cost.WINDOWS_WIDTH} "
         f"result: 256 MiB if copied)",
    hint="a view shares x's storage and costs no memory: set the size and strides with as_strided, copy nothing "
         "(lecture 3).",
    peak_bytes=_cost.WINDOWS_PEAK_BYTES)]
