"""utils.strides against torch, the oracle: the metadata arithmetic gives torch's own stride(), storage_offset(),
is_contiguous() and view() verdicts on many random shapes, permutations and slices (size-0 and size-1 dims included)."""
import math
import random

import matplotlib
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from utils.strides import (TORCH_LAYOUT_ORACLES, ViewMeta, check_bool, check_ints, contiguous_strides, forbidding,
                           is_contiguous, meta_of, offset_of, permute_view, plot_storage, random_shape_with_numel, random_view, same_storage, select_view,
                           slice_view, sliding_windows, storage_indices, transpose_view, view_strides)

matplotlib.use("Agg")

SIZES = st.sampled_from([0, 1, 1, 2, 3, 4, 5])
SHAPES = st.lists(SIZES, min_size=0, max_size=4).map(tuple)
EXAMPLES = settings(max_examples=200, deadline=None)


def base_tensor(shape: tuple[int, ...]) -> torch.Tensor:
    """A fresh contiguous tensor whose every element holds its own storage index."""
    return torch.arange(math.prod(shape), dtype=torch.int64).view(shape)


@st.composite
def random_views(draw) -> tuple[torch.Tensor, torch.Tensor, ViewMeta]:
    """(base, a view of it made by torch, the metadata utils.strides predicts for that view)."""
    base = base_tensor(draw(SHAPES))
    view, meta = base, meta_of(base)
    for _ in range(draw(st.integers(0, 4))):
        ndim = view.dim()
        op = draw(st.sampled_from(["permute", "transpose", "slice", "select"] if ndim else ["noop"]))
        if op == "permute":
            dims = draw(st.permutations(range(ndim)))
            view, meta = view.permute(dims), permute_view(meta, dims)
        elif op == "transpose":
            d0, d1 = draw(st.integers(0, ndim - 1)), draw(st.integers(0, ndim - 1))
            view, meta = view.transpose(d0, d1), transpose_view(meta, d0, d1)
        elif op == "slice":
            dim = draw(st.integers(0, ndim - 1))
            start = draw(st.none() | st.integers(-7, 7))
            stop = draw(st.none() | st.integers(-7, 7))
            step = draw(st.integers(1, 4))
            index = [slice(None)] * ndim
            index[dim] = slice(start, stop, step)
            view, meta = view[tuple(index)], slice_view(meta, dim, start, stop, step)
        elif op == "select" and view.shape[dim := draw(st.integers(0, ndim - 1))] > 0:
            i = draw(st.integers(-view.shape[dim], view.shape[dim] - 1))
            view, meta = view.select(dim, i), select_view(meta, dim, i)
    return base, view, meta


@st.composite
def shape_with_numel(draw, numel: int) -> tuple[int, ...]:
    """A random shape holding exactly `numel` elements (with some size-1 dims sprinkled in)."""
    if numel == 0:
        shape = draw(st.lists(st.integers(0, 4), max_size=3)) + [0]
    else:
        shape, left = [], numel
        while left > 1 and len(shape) < 5:
            factor = draw(st.sampled_from([d for d in range(1, left + 1) if left % d == 0]))
            shape.append(factor)
            left //= factor
        shape.append(left)
    if draw(st.booleans()):
        shape.insert(draw(st.integers(0, len(shape))), 1)
    return tuple(draw(st.permutations(shape)))


def test_the_4x4_example_from_the_course():
    x = base_tensor((4, 4))
    assert contiguous_strides((4, 4)) == x.stride() == (4, 1)
    assert offset_of((1, 2), x.stride()) == 1 * 4 + 2 * 1 == 6 == x[1, 2].item()
    assert meta_of(x.T) == transpose_view(meta_of(x), 0, 1) == ViewMeta((4, 4), (1, 4), 0)
    assert not is_contiguous((4, 4), (1, 4))


@given(SHAPES)
@EXAMPLES
def test_contiguous_strides_match_a_fresh_tensor(shape):
    assert contiguous_strides(shape) == torch.empty(shape).stride()
    assert is_contiguous(shape, contiguous_strides(shape))


@given(random_views())
@EXAMPLES
def test_view_metadata_matches_torch(case):
    base, view, meta = case
    assert same_storage(view, base)
    assert meta == (tuple(view.shape), view.stride(), view.storage_offset())
    assert is_contiguous(meta.shape, meta.strides) == view.is_contiguous()
    assert torch.equal(storage_indices(view), view)  # each base element holds its storage index


@given(random_views(), st.data())
@EXAMPLES
def test_offset_of_finds_the_element(case, data):
    _, view, meta = case
    if view.numel() == 0:
        return
    index = tuple(data.draw(st.integers(0, size - 1)) for size in meta.shape)
    assert offset_of(index, meta.strides, meta.storage_offset) == view[index].item()


@given(st.lists(st.tuples(SIZES, st.integers(0, 30)), max_size=4), st.integers(0, 5))
@EXAMPLES
def test_is_contiguous_matches_torch_on_arbitrary_strides(dims, offset):
    shape, strides = tuple(d[0] for d in dims), tuple(d[1] for d in dims)
    t = torch.empty(1000).as_strided(shape, strides, offset)  # 1000 > the largest index reached (4 * 30 * 4 + 5)
    assert is_contiguous(shape, strides) == t.is_contiguous()


@given(random_views(), st.data())
@EXAMPLES
def test_view_strides_predict_view_and_reshape(case, data):
    _, view, meta = case
    new_shape = data.draw(shape_with_numel(view.numel()))
    try:
        torch_strides = view.view(new_shape).stride()
    except RuntimeError as error:
        assert "view size is not compatible" in str(error)
        torch_strides = None
    assert view_strides(meta.shape, meta.strides, new_shape) == torch_strides
    if view.numel() > 0:  # reshape returns a view exactly when view would work, else a copy
        assert same_storage(view.reshape(new_shape), view) == (torch_strides is not None)


@given(st.lists(st.tuples(SIZES, st.integers(0, 30)), max_size=4), st.data())
@EXAMPLES
def test_view_strides_on_arbitrary_strides(dims, data):
    shape, strides = tuple(d[0] for d in dims), tuple(d[1] for d in dims)
    t = torch.empty(1000).as_strided(shape, strides)
    new_shape = data.draw(shape_with_numel(t.numel()))
    try:
        torch_strides = t.view(new_shape).stride()
    except RuntimeError:
        torch_strides = None
    assert view_strides(shape, strides, new_shape) == torch_strides


def test_view_strides_known_cases():
    x = base_tensor((4, 4))
    assert view_strides((4, 4), (4, 1), (2, 8)) == (8, 1)
    assert view_strides((4, 4), (1, 4), (16,)) is None  # the transpose
    left = x[:, :2]  # shape (4, 2), stride (4, 1): rows are separate chunks
    assert view_strides(left.shape, left.stride(), (2, 2, 2)) == left.view(2, 2, 2).stride() == (8, 4, 1)
    assert view_strides(left.shape, left.stride(), (8,)) is None
    with pytest.raises(ValueError):
        view_strides((4, 4), (4, 1), (5, 3))


@given(st.integers(1, 12), st.integers(0, 3), st.integers(1, 3), st.data())
@EXAMPLES
def test_sliding_windows_is_a_view_equal_to_unfold(length, start, step, data):
    x = torch.arange(40.0)[start::step][:length]
    width = data.draw(st.integers(1, x.numel()))
    windows = sliding_windows(x, width)
    assert same_storage(windows, x)
    assert torch.equal(windows, x.unfold(0, width, 1))


def test_same_storage_is_not_data_ptr():
    x = base_tensor((4, 4))
    row = x[1]
    assert row.data_ptr() == x.data_ptr() + 4 * x.element_size()  # data_ptr points at the first element
    assert same_storage(row, x) and not same_storage(x.clone(), x) and not same_storage(x.T.contiguous(), x)


def test_select_rejects_out_of_range_and_slice_rejects_bad_steps():
    meta = meta_of(base_tensor((3, 2)))
    with pytest.raises(IndexError):
        select_view(meta, 0, 3)
    with pytest.raises(ValueError):
        slice_view(meta, 0, None, None, 0)


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

    def asks_torch(shape):
        return torch.zeros(shape).stride()

    with forbidding(asks_torch, TORCH_LAYOUT_ORACLES, "row_major_strides"):
        with pytest.raises(AssertionError, match="Tensor.stride"):
            asks_torch((2, 3))
        with pytest.raises(AssertionError, match="torch.as_strided"):
            torch.as_strided(torch.zeros(4), (2,), (2,))
    assert set(torch.Tensor.__dict__) == set(before)
    assert all(torch.Tensor.__dict__[key] is value for key, value in before.items())
    assert all(getattr(torch, name) is value for name, value in torch_before.items())
    assert asks_torch((2, 3)) == (3, 1)
