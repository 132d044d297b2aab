"""utils.strides (what the lecture and the exercise's tests use) and the random cases of exercise 3's hidden tests
(reference.strides_views), against torch: storages, storage indices, the picture, the checks and the forbidding of
torch's layout oracles. The exercise's answers themselves are checked against torch in its hidden tests."""
import math
import random

import matplotlib
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.strides_views import random_shape_with_numel, random_view
from utils.strides import (
    TORCH_LAYOUT_ORACLES,
    ViewMeta,
    check_bool,
    check_ints,
    forbidding,
    meta_of,
    plot_storage,
    same_storage,
    storage_indices,
)

matplotlib.use("Agg")

SIZES = st.sampled_from([0, 1, 1, 2, 3, 4, 5])
SHAPES = st.lists(SIZES, min_size=0, max_size=4).map(tuple)
EXAMPLES = settings(max_examples=200, deadline=None)


def base_tensor(shape: tuple[int, ...]) -> torch.Tensor:
    """A fresh contiguous tensor whose every element holds its own storage index."""
    return torch.arange(math.prod(shape), dtype=torch.int64).view(shape)


@st.composite
def random_views(draw) -> tuple[torch.Tensor, torch.Tensor]:
    """(base, a view of it made by torch with random permutes, transposes, slices and selects)."""
    base = base_tensor(draw(SHAPES))
    view = base
    for _ in range(draw(st.integers(0, 4))):
        ndim = view.dim()
        op = draw(st.sampled_from(["permute", "transpose", "slice", "select"] if ndim else ["noop"]))
        if op == "permute":
            view = view.permute(draw(st.permutations(range(ndim))))
        elif op == "transpose":
            view = view.transpose(draw(st.integers(0, ndim - 1)), draw(st.integers(0, ndim - 1)))
        elif op == "slice":
            index = [slice(None)] * ndim
            index[draw(st.integers(0, ndim - 1))] = slice(draw(st.none() | st.integers(-7, 7)),
                                                          draw(st.none() | st.integers(-7, 7)), draw(st.integers(1, 4)))
            view = view[tuple(index)]
        elif op == "select" and view.shape[dim := draw(st.integers(0, ndim - 1))] > 0:
            view = view.select(dim, draw(st.integers(-view.shape[dim], view.shape[dim] - 1)))
    return base, view


def test_the_4x4_example_from_the_course():
    x = base_tensor((4, 4))
    assert meta_of(x) == ViewMeta((4, 4), (4, 1), 0) and meta_of(x.T) == ViewMeta((4, 4), (1, 4), 0)
    assert storage_indices(x)[1, 2].item() == 1 * 4 + 2 * 1 == 6
    assert storage_indices(x.T).flatten().tolist()[:6] == [0, 4, 8, 12, 1, 5]


@given(random_views())
@EXAMPLES
def test_storage_indices_and_metadata_are_torchs(case):
    base, view = case
    assert same_storage(view, base)
    assert meta_of(view) == (tuple(view.shape), view.stride(), view.storage_offset())
    assert all(type(v) is int for v in meta_of(view).strides + (meta_of(view).storage_offset,))
    assert torch.equal(storage_indices(view), view)  # each base element holds its own storage index


def test_torchs_plain_python_layout_helpers_are_among_the_oracles():
    """torch keeps plain-Python versions of two exercise answers; the exercise forbids them with the rest."""
    helpers = torch._prims_common
    assert helpers.make_contiguous_strides_for((2, 0, 3)) == torch.empty(2, 0, 3).stride() == (3, 3, 1)
    assert helpers.check_contiguous_sizes_strides((4, 4), (4, 1))
    assert not helpers.check_contiguous_sizes_strides((4, 4), (1, 4))
    assert {"torch._prims_common.make_contiguous_strides_for",
            "torch._prims_common.check_contiguous_sizes_strides"} <= set(TORCH_LAYOUT_ORACLES)


def test_same_storage_is_not_data_ptr():
    x = base_tensor((4, 4))
    row = x[1]
    assert row.data_ptr() == x.data_ptr() + 4 * x.element_size()  # data_ptr points at the first element
    assert same_storage(row, x) and not same_storage(x.clone(), x) and not same_storage(x.T.contiguous(), x)


def test_checks_reject_look_alikes():
    check_ints((3, 1), (3, 1), "ok")
    for wrong in [[3, 1], torch.Size([3, 1]), (3, True), (3, 2), (3,), (3.0, 1)]:
        with pytest.raises(AssertionError):
            check_ints(wrong, (3, 1), "wrong")
    check_bool(False, False, "ok")
    for wrong in [0, torch.tensor(False), True, None]:
        with pytest.raises(AssertionError):
            check_bool(wrong, False, "wrong")


def test_plot_storage_highlights_the_cells_a_view_reads():
    x = torch.arange(16.0).view(4, 4)
    fig = plot_storage({"column": x[:, 1], "transpose": x.T})
    column_panel = fig.axes[0]
    highlighted = [p.get_x() for p in column_panel.patches if p.get_facecolor()[:3] != (232 / 255,) * 3]
    assert highlighted == [1, 5, 9, 13]
    assert column_panel.get_title() and fig.axes[-1].get_xlabel()
    assert len(fig.axes[1].patches) == 16



def test_random_cases_for_the_exercise_are_views_of_every_kind():
    rng = random.Random(0)
    views = [random_view(rng) for _ in range(300)]
    for view in views:
        assert torch.equal(storage_indices(view), view)  # a real view of its arange base
        new_shape = random_shape_with_numel(rng, view.numel())
        assert math.prod(new_shape) == view.numel()
    assert sum(not v.is_contiguous() for v in views) > 30
    assert sum(v.numel() == 0 for v in views) > 10 and sum(1 in v.shape for v in views) > 30
    assert sum(v.storage_offset() > 0 for v in views) > 30 and sum(v.dim() == 0 for v in views) > 5


def test_forbidding_blocks_the_oracles_then_leaves_torch_exactly_as_it_was():
    before = dict(torch.Tensor.__dict__)
    torch_before = {name: getattr(torch, name) for name in ("as_strided", "empty_strided")}
    helpers_before = dict(torch._prims_common.__dict__)

    def asks_torch(shape):
        return torch.zeros(shape).stride()

    with forbidding(asks_torch, TORCH_LAYOUT_ORACLES, "row_major_strides"):
        with pytest.raises(AssertionError, match="Tensor.stride"):
            asks_torch((2, 3))
        with pytest.raises(AssertionError, match="torch.as_strided"):
            torch.as_strided(torch.zeros(4), (2,), (2,))
        with pytest.raises(AssertionError, match="make_contiguous_strides_for"):
            torch._prims_common.make_contiguous_strides_for((2, 3))
    assert set(torch.Tensor.__dict__) == set(before)
    assert all(torch.Tensor.__dict__[key] is value for key, value in before.items())
    assert all(getattr(torch, name) is value for name, value in torch_before.items())
    assert all(torch._prims_common.__dict__[key] is value for key, value in helpers_before.items())
    assert asks_torch((2, 3)) == (3, 1)


def test_exercise_3_stand_ins_know_torchs_answers_for_the_checked_cases_only():
    """Tasks 3 and 6 run with stand-ins for row_major_strides and is_contiguous: their tables are torch's answers for
    the shapes and layouts of the cases, and nothing else."""
    from reference import hidden
    contiguous = hidden.cases("strides_views.is_contiguous")
    # the calls can_view's stand-in for is_contiguous answers are not is_contiguous's own (issue #48): fewer calls
    assert {args[0] for args, _ in contiguous["row_major_strides"]} >= {shape for shape, _ in contiguous["calls"]}
    view = hidden.cases("strides_views.can_view")
    assert ({args[0] for args, _ in view["row_major_strides"]}
            == {shape for shape, _, _ in view["calls"]} | {new for _, _, new in view["calls"]})
    assert {layout for layout, _ in view["is_contiguous"]} == {(shape, strides) for shape, strides, _ in view["calls"]}
    for (shape,), strides in contiguous["row_major_strides"] + view["row_major_strides"]:
        assert strides == torch.empty(shape).stride()
    for (shape, strides), verdict in view["is_contiguous"]:
        assert verdict == torch.empty(10_000).as_strided(shape, strides).is_contiguous()


def test_a_view_meets_its_memory_budget_and_a_copy_does_not():
    """Issue #52, the student's side: utils.cost measures in this process what grading measures from outside. The
    course's sliding_windows (a view) raises the peak by nothing; a copy of the same windows by 256 MiB."""
    from utils import cost

    def sliding_windows(x, width):
        return x.as_strided((x.shape[0] - width + 1, width), (x.stride(0), x.stride(0)), x.storage_offset())
    x = torch.empty(cost.WINDOWS_LENGTH)
    _, view = cost.measure(lambda: sliding_windows(x, cost.WINDOWS_WIDTH))
    _, copy = cost.measure(lambda: sliding_windows(x, cost.WINDOWS_WIDTH).contiguous())
    if view.peak_bytes is None:
        pytest.skip("this process may not reset its own memory high-water mark (/proc/self/clear_refs)")
    assert view.peak_bytes < cost.WINDOWS_PEAK_BYTES // 4
    assert copy.peak_bytes >= 256 * 2**20
    cost.check_cost(view, "a view", "-", peak_bytes=cost.WINDOWS_PEAK_BYTES)
    with pytest.raises(AssertionError, match="the budget is 16.0 MiB"):
        cost.check_cost(copy, "a copy", "-", peak_bytes=cost.WINDOWS_PEAK_BYTES)
