"""utils.shapes: the run-time shape checks, their short messages, and the checks exercise 4's tests use.

(Exercise 4's answers are not here: its hidden tests compare with torch's own index juggling.)
"""
import dataclasses

import pytest
import torch
from jaxtyping import Bool, Float, TypeCheckError
from torch import Tensor
from torch._tensor_str import PRINT_OPTS

from utils.shapes import (
    check_accepts,
    check_rejects,
    check_uses_einops,
    observe_call,
    shape_error_message,
    short_tensor_reprs,
    typechecked,
)


@typechecked
def scores(q: Float[Tensor, "*batch seq_q d"],
           k: Float[Tensor, "*batch seq_k d"]) -> Float[Tensor, "*batch seq_q seq_k"]:
    return q @ k.transpose(-2, -1)


@typechecked
def wrong_result(x: Float[Tensor, "b s h"]) -> Float[Tensor, "b h"]:
    return x.sum(dim=1, keepdim=True)  # keepdim=True: one dimension too many


def unchecked(q: Float[Tensor, "*batch seq_q d"],
              k: Float[Tensor, "*batch seq_k d"]) -> Float[Tensor, "*batch seq_q seq_k"]:
    return q @ k.transpose(-2, -1)


@pytest.mark.parametrize("q_shape, k_shape", [((2, 3, 4), (2, 5, 4)), ((3, 4), (5, 4)), ((2, 2, 3, 4), (2, 2, 5, 4))])
def test_typechecked_accepts_consistent_shapes(q_shape, k_shape):
    assert scores(torch.ones(q_shape), torch.ones(k_shape)).shape == (*q_shape[:-1], k_shape[-2])


@pytest.mark.parametrize("q, k", [
    (torch.ones(2, 3, 4), torch.ones(2, 5, 6)),                   # d differs
    (torch.ones(2, 3, 4), torch.ones(3, 5, 4)),                   # batch differs
    (torch.ones(4), torch.ones(5, 4)),                            # too few dimensions
    (torch.ones(2, 3, 4, dtype=torch.int64), torch.ones(2, 5, 4)),  # not a float
    ([[1.0]], torch.ones(2, 5, 4)),                               # not a tensor
])
def test_typechecked_rejects_inconsistent_shapes_where_plain_annotations_do_not(q, k):
    with pytest.raises(TypeCheckError):
        scores(q, k)


def test_plain_annotations_check_nothing():
    q, k = torch.ones(2, 3, 4), torch.ones(1, 5, 4)  # batch 2 vs 1: torch broadcasts, the annotation says no
    assert unchecked(q, k).shape == (2, 3, 5)
    with pytest.raises(TypeCheckError):
        scores(q, k)


def message_of(fn, *args) -> str:
    with pytest.raises(TypeCheckError) as caught:
        fn(*args)
    return shape_error_message(caught.value)


def test_short_message_names_the_argument_and_the_reason():
    message = message_of(scores, torch.ones(2, 3, 4), torch.ones(2, 5, 6))
    assert message.splitlines() == [
        "scores() rejected argument 'k': got f32[2,5,6], expected Float[Tensor, '*batch seq_k d']",
        "  why: d is 6 here, but 4 elsewhere in this call",
        "  sizes bound in this call: seq_q=3, d=4, seq_k=5, batch=(2,)",
    ]


@pytest.mark.parametrize("args, reason", [
    ((torch.ones(2, 3, 4), torch.ones(3, 5, 4)), "why: batch is (3,) here, but (2,) elsewhere in this call"),
    ((torch.ones(4), torch.ones(5, 4)), "why: it has 1 dimension, the annotation needs at least 2"),
    ((torch.ones(3, 4, dtype=torch.int32), torch.ones(5, 4)), "why: dtype i32 is not a Float dtype"),
    (([1.0], torch.ones(5, 4)), "why: expected a tensor, got [1.0]"),
])
def test_short_message_explains_each_kind_of_mismatch(args, reason):
    assert reason in [line.strip() for line in message_of(scores, *args).splitlines()]


def test_short_message_for_a_wrong_return_value():
    message = message_of(wrong_result, torch.ones(2, 3, 4))
    assert message.startswith("wrong_result() rejected the return value: got f32[2,1,4], expected Float[Tensor, 'b h']")
    assert "why: it has 3 dimensions, the annotation needs 2" in message


def test_short_message_for_a_repeated_name_and_a_bool_annotation():
    @typechecked
    def diagonal(x: Float[Tensor, "n n"]) -> Float[Tensor, " n"]:
        return x.diagonal()

    @typechecked
    def count(mask: Bool[Tensor, "batch seq"]) -> Tensor:
        return mask.sum()

    assert "why: n is 3 here, but 2 elsewhere in this call" in message_of(diagonal, torch.ones(2, 3))
    assert "why: dtype f32 is not a Bool dtype" in message_of(count, torch.ones(2, 3))


REFUSED = [(torch.randn(2, 3, 4), torch.randn(2, 5, 6)), (torch.randn(2, 3, 4), torch.randn(3, 5, 4)),
           (torch.randn(4), torch.randn(5, 4)), (torch.randn(40, 30, 4).long(), torch.randn(40, 5, 4))]


@pytest.mark.parametrize("args", REFUSED)
def test_a_refusal_reads_the_same_with_short_tensor_reprs_and_leaves_printing_as_it_was(args):
    """The checks call with tensors printing short (beartype prints each refused tensor whole into a message nobody
    reads): the message we read is the same, and torch prints as before once the call is over, however it ended."""
    before = dataclasses.asdict(PRINT_OPTS)
    full = repr(args[1])
    assert check_rejects(scores, args, "scores") == message_of(scores, *args)
    assert observe_call(scores, args)["message"] == message_of(scores, *args)
    with pytest.raises(ZeroDivisionError), short_tensor_reprs():
        assert "..." in repr(torch.arange(10))
        raise ZeroDivisionError("from inside the call")
    assert repr(args[1]) == full and "..." not in repr(torch.arange(10))
    assert dataclasses.asdict(PRINT_OPTS) == before


def test_short_message_falls_back_to_the_first_line_for_other_errors():
    assert shape_error_message(ValueError("first line\nsecond line")) == "ValueError: first line"


def test_check_rejects_returns_the_message_for_a_checked_function():
    assert check_rejects(scores, (torch.ones(2, 3, 4), torch.ones(2, 5, 6)), "scores").startswith("scores() rejected")


def test_check_rejects_fails_with_the_decorator_hint_when_nothing_checks():
    with pytest.raises(AssertionError, match="no decorator"):
        check_rejects(unchecked, (torch.ones(2, 3, 4), torch.ones(1, 5, 4)), "unchecked")  # broadcasts, no error
    with pytest.raises(AssertionError, match="raised RuntimeError from inside the function"):
        check_rejects(unchecked, (torch.ones(2, 3, 4), torch.ones(2, 5, 6)), "unchecked")


def test_check_rejects_fails_when_the_annotation_is_too_loose():
    @typechecked
    def loose(q: Float[Tensor, "..."], k: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
        return q @ k.transpose(-2, -1)

    with pytest.raises(AssertionError, match="annotations let this input in"):
        check_rejects(loose, (torch.ones(2, 3, 4), torch.ones(2, 5, 6)), "loose")


def test_check_uses_einops_looks_through_decorators():
    def by_view(x):
        return x.view(2, 3).transpose(0, 1)

    @typechecked
    def by_einops(x: Float[Tensor, "a b"]) -> Float[Tensor, "b a"]:
        from einops import rearrange
        return rearrange(x, "a b -> b a")

    check_uses_einops(by_einops, "by_einops")
    with pytest.raises(AssertionError, match="does not use einops"):
        check_uses_einops(by_view, "by_view")


def test_check_rejects_names_the_missing_jaxtyped_when_only_beartype_decorates():
    from beartype import beartype

    @beartype
    def per_argument_only(q: Float[Tensor, "*batch seq_q d"], k: Float[Tensor, "*batch seq_k d"]) -> Tensor:
        return torch.einsum("...qd,...kd->...qk", q, k)

    with pytest.raises(AssertionError, match="not with jaxtyped"):
        check_rejects(per_argument_only, (torch.ones(2, 3, 4), torch.ones(2, 5, 6)), "per_argument_only")


def test_check_accepts_returns_the_result_or_explains_the_rejection():
    q, k = torch.ones(2, 3, 4), torch.ones(2, 5, 4)
    assert check_accepts(scores, (q, k), "scores").shape == (2, 3, 5)
    with pytest.raises(AssertionError, match="rejected a valid input") as caught:
        check_accepts(wrong_result, (torch.ones(2, 3, 4),), "wrong_result")
    assert "rejected the return value" in str(caught.value)


# ---- exercise 4: a later task that earns its points after a wrong earlier one
def test_observe_call_and_its_judges_give_check_accepts_and_check_rejects_verdicts():
    from utils.shapes import judge_accepts, judge_rejects, observe_call
    q, k = torch.ones(2, 3, 4), torch.ones(2, 5, 4)
    assert judge_accepts(observe_call(scores, (q, k)), "scores").shape == (2, 3, 5)
    wrong = (torch.ones(2, 3, 4), torch.ones(2, 5, 6))
    assert judge_rejects(observe_call(scores, wrong), "scores") == check_rejects(scores, wrong, "scores")
    with pytest.raises(AssertionError, match="no decorator"):
        judge_rejects(observe_call(unchecked, (torch.ones(2, 3, 4), torch.ones(1, 5, 4))), "unchecked")
    with pytest.raises(AssertionError, match="raised RuntimeError from inside the function"):
        judge_rejects(observe_call(unchecked, wrong), "unchecked")
    with pytest.raises(AssertionError, match="rejected a valid input"):
        judge_accepts(observe_call(wrong_result, (torch.ones(2, 3, 4),)), "wrong_result")
    with pytest.raises(AssertionError, match="not one of"):
        judge_accepts({"outcome": "returned"}, "forged")


UNSCALED_SCORES = '''
def attention_scores(q, k):
    return einsum(q, k, "... seq_q head_dim, ... seq_k head_dim -> ... seq_q seq_k")  # forgot the scaling
'''


def test_exercise_4_task_4_earns_its_points_with_a_wrong_task_3():
    from tests.exercise_cells import run_test_cell
    answers = {"attention_scores": UNSCALED_SCORES}
    with pytest.raises(AssertionError):
        run_test_cell("04_einops_jaxtyping", "test_attention_scores", answers)
    run_test_cell("04_einops_jaxtyping", "test_checked_attention_scores", answers)  # its solution calls attention_scores


EINOPS_WAYS = {   # correct answers the red team of issue #63 wrote, which lost their points to the name check
    "an alias": "from einops import rearrange as einops_rearrange\n"
                "def merge(x):\n    return einops_rearrange(x, 'b h s d -> b s (h d)')",
    "a module alias": "import einops as eo\ndef merge(x):\n    return eo.rearrange(x, 'b h s d -> b s (h d)')",
    "a partial": "import functools\nfrom einops import rearrange as r\n_m = functools.partial(r, pattern='b h s d -> b s (h d)')\n"
                 "def merge(x):\n    return _m(x)",
    "a helper": "from einops import rearrange as r\ndef _helper(x):\n    return r(x, 'b h s d -> b s (h d)')\n"
                "def merge(x):\n    return _helper(x)",
    "torch.compile": "import torch\nfrom einops import rearrange as r\n@torch.compile(backend='eager')\n"
                     "def merge(x):\n    return r(x, 'b h s d -> b s (h d)')",
}


@pytest.mark.parametrize("way", sorted(EINOPS_WAYS))
def test_einops_is_seen_under_any_name_and_through_a_helper(way):
    namespace: dict = {"__name__": "notebook"}
    exec(EINOPS_WAYS[way], namespace)
    check_uses_einops(namespace["merge"], "merge_heads")


def test_no_einops_under_any_name_is_still_refused():
    namespace: dict = {"__name__": "notebook"}
    exec("import torch as einops_like\ndef _helper(x):\n    return x.permute(0, 2, 1, 3)\n"
         "def merge(x):\n    return _helper(x).reshape(2, 3, -1)", namespace)
    with pytest.raises(AssertionError, match="does not use einops"):
        check_uses_einops(namespace["merge"], "merge_heads")


def test_the_visible_rule_check_reads_a_helper_where_cells_have_no_history(tmp_path):
    """The grader runs cells without IPython's history (no `In`): check_rule read only the task's own source, and a
    helper that called rearrange made a correct split_qkv 'use none of einops' (0 points; red team, issue #63)."""
    import subprocess
    import sys
    script = tmp_path / "cells.py"
    script.write_text(
        "from einops import rearrange\nfrom utils.rules import check_rule\n"
        "def _split(t, n):\n    return rearrange(t, 'b s (three h d) -> three b h s d', three=3, h=n)\n"
        "def split_qkv(qkv, n_heads):\n    q, k, v = _split(qkv, n_heads)\n    return q, k, v\n"
        "check_rule('04_einops_jaxtyping', 'test_split_qkv', split_qkv)\nprint('kept')\n")
    from autograder.course import REPO_ROOT
    ran = subprocess.run([sys.executable, str(script)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    assert ran.stdout.strip() == "kept", ran.stdout + ran.stderr
