"""The checks exercise tests rely on: they must fail on wrong answers and on tricks, with a readable message."""
import math

import pytest
import torch

import utils.floats
from utils.grading import check_float, check_int, check_str, check_tensor, check_type, errors_named, forbidden


class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


class SneakyFloat(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


def test_exact_values_pass():
    check_float(0.15625, 0.15625, "x")
    check_float(math.nan, math.nan, "x")
    check_int(128, 128, "x")
    check_str("normal", "normal", "x")
    check_tensor(torch.arange(3.0), torch.arange(3.0), "x")


@pytest.mark.parametrize("value", [AlwaysEqual(), SneakyFloat(1.0), 1, True, "1.0", torch.tensor(1.0)])
def test_float_check_rejects_lookalikes(value):
    with pytest.raises(AssertionError, match="expected a float"):
        check_float(value, 1.0, "x")


def test_wrong_values_and_signed_zero_fail_with_hint():
    with pytest.raises(AssertionError, match="expected 1.0, got 2.0\nHint: look"):
        check_float(2.0, 1.0, "x", hint="look")
    with pytest.raises(AssertionError):
        check_float(0.0, -0.0, "x")
    with pytest.raises(AssertionError, match="expected an int, got bool"):
        check_int(True, 1, "x")


def test_check_type_wants_exactly_the_type():
    check_type(3, int, "n")
    check_type(1.5, float, "x")
    for value, kind, said in ((True, int, "expected an int, got bool"), (1, float, "expected a float, got int"),
                              (SneakyFloat(1.0), float, "expected a float, got SneakyFloat"), ("3", int, "got str")):
        with pytest.raises(AssertionError, match=said):
            check_type(value, kind, "x")


def test_a_relative_tolerance_accepts_what_lies_within_it_and_no_more():
    check_float(1.0 + 1e-9, 1.0, "x", rel_tol=1e-6)
    check_float(-2.0 * (1 - 1e-7), -2.0, "x", rel_tol=1e-6)
    check_float(math.inf, math.inf, "x", rel_tol=1e-6)
    for value, expected, rel_tol in ((1.0 + 1e-5, 1.0, 1e-6), (1.0 + 1e-9, 1.0, 0.0), (-0.0, 0.0, 0.0),
                                     (1e308, math.inf, 1e-6), (-math.inf, math.inf, 1e-6)):
        with pytest.raises(AssertionError):
            check_float(value, expected, "x", rel_tol=rel_tol)


def test_tensor_check_is_strict_about_type_dtype_shape():
    expected = torch.ones(2, 3)
    for wrong, message in [(AlwaysEqual(), "expected a torch.Tensor"), (torch.nn.Parameter(expected.clone()), "expected a torch.Tensor"),
                           (expected.double(), "dtype"), (expected.reshape(3, 2), "shape"), (torch.ones(1, 3), "shape"),
                           (expected * 2, "values differ")]:
        with pytest.raises(AssertionError, match=message):
            check_tensor(wrong, expected, "x")


def test_small_tensors_that_differ_are_shown_whole_and_large_ones_summarised():
    with pytest.raises(AssertionError, match=r"values differ: expected \[\[1, 2\]\], got \[\[2, 1\]\]\nFound: the right values, in the wrong places[^\n]*\nHint: look"):
        check_tensor(torch.tensor([[2.0, 1.0]]), torch.tensor([[1.0, 2.0]]), "x", hint="look")
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 20"):
        check_tensor(torch.arange(20.0) + (torch.arange(20) == 3), torch.arange(20.0), "x")


def test_a_known_mistake_gets_its_own_hint():
    want = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    mistakes = [(want.T, "transposed"), (want * 2, "twice")]
    for got, named in [(want.T.clone(), "transposed"), (want * 2, "twice"), (want + 1, "generic")]:
        with pytest.raises(AssertionError, match=f"Hint: {named}$"):
            check_tensor(got, want, "x", hint="generic", mistakes=mistakes)
    with pytest.raises(AssertionError, match="expected shape \\(2, 1\\), got \\(1, 2\\)\nHint: transposed"):
        check_tensor(torch.tensor([[1.0, 3.0]]), want[:, :1], "x", hint="generic",
                     mistakes=[(torch.tensor([[1.0, 3.0]]), "transposed")])
    with pytest.raises(AssertionError, match="Hint: off by one$"):
        check_int(5, 4, "x", hint="generic", mistakes={5: "off by one"})
    with pytest.raises(AssertionError, match="Hint: generic$"):
        check_int(6, 4, "x", hint="generic", mistakes={5: "off by one"})
    with pytest.raises(AssertionError, match="Hint: hours$"):
        check_float(24.0 * 3.5, 3.5, "x", hint="generic", rel_tol=1e-9, mistakes={24.0 * 3.5: "hours"})


def test_errors_named_turns_a_known_raw_error_into_a_hint_and_lets_others_through():
    with pytest.raises(AssertionError, match="w2_grad: raised RuntimeError: mat1 and mat2 shapes cannot be multiplied.*"
                                             "\nHint: transpose"):
        with errors_named("w2_grad", {"cannot be multiplied": "transpose"}):
            torch.ones(2, 3) @ torch.ones(2, 3)
    with pytest.raises(ZeroDivisionError):
        with errors_named("x", {"cannot be multiplied": "transpose"}):
            _ = 1 / 0
    with pytest.raises(AssertionError, match="^mine$"):
        with errors_named("x", {"mine": "not this"}):
            raise AssertionError("mine")


def test_monkeypatched_torch_comparisons_do_not_help(monkeypatch):
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "equal", lambda *a, **k: True)
    monkeypatch.setattr(torch.testing, "assert_close", lambda *a, **k: None)
    monkeypatch.setattr(torch, "isclose", lambda a, b, **k: torch.ones_like(a, dtype=torch.bool))
    with pytest.raises(AssertionError, match="values differ"):
        check_tensor(torch.zeros(2), torch.ones(2), "x")


def test_the_quick_comparison_agrees_with_assert_close_wherever_it_answers():
    """utils.grading._closeness says what torch.testing.assert_close would, without building its message, for two
    strided floating-point tensors of one dtype, shape and device, and nothing (None) otherwise: drawn values at the
    edge of the tolerance (one unit in the last place either side of atol + rtol x |expected|), NaN, infinities,
    signed zeros, four dtypes, with and without tolerances."""
    from utils.grading import _closeness

    def asserted(value, expected, atol, rtol) -> bool:
        try:
            torch.testing.assert_close(value, expected, atol=atol, rtol=rtol, equal_nan=True)
        except AssertionError:
            return False
        return True
    generator = torch.Generator().manual_seed(0)
    answered = 0
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        for atol, rtol in ((0.0, 0.0), (1e-3, 1e-3), (1e-5, 0.0), (0.0, 1e-2)):
            for _ in range(25):
                expected = torch.randn(7, generator=generator, dtype=torch.float64)
                edge = atol + rtol * expected.abs()
                step = torch.randint(-1, 2, (7,), generator=generator).double()   # inside, on or past the edge
                value = expected + edge * (1 + step * torch.finfo(dtype).eps) * torch.randint(0, 2, (7,), generator=generator)
                specials = torch.tensor([math.nan, math.inf, -math.inf, -0.0], dtype=torch.float64)
                picks = torch.randint(0, 7, (2,), generator=generator)
                value[picks[0]], expected[picks[0]] = specials[picks[1] % 4], specials[picks[1] % 4]
                value, expected = value.to(dtype), expected.to(dtype)
                close = _closeness(value, expected, atol, rtol)
                assert close is not None and close == asserted(value, expected, atol, rtol), (dtype, atol, rtol, value, expected)
                answered += close
    assert 0 < answered < 400   # both verdicts were drawn
    for value, expected in ((torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64)),   # not floating
                            (torch.ones(2), torch.ones(2, dtype=torch.float64)),                     # dtypes apart
                            (torch.ones(2).to_sparse(), torch.ones(2).to_sparse()),                 # not strided
                            (torch.ones(2, dtype=torch.complex64), torch.ones(2, dtype=torch.complex64))):
        assert _closeness(value, expected, 0.0, 0.0) is None


def test_forbidden_catches_calls_and_imported_aliases():
    def calls_helper(bits):
        return utils.floats.from_bits(bits, utils.floats.FP16)

    targets = {"utils.floats.from_bits": (utils.floats, "from_bits")}
    with pytest.raises(AssertionError, match="called utils.floats.from_bits"):
        with forbidden(calls_helper, targets, "decode"):
            calls_helper(1)
    assert utils.floats.from_bits(0x3C00, utils.floats.FP16) == 1.0  # restored afterwards

    namespace = {"helper": utils.floats.from_bits}
    exec("def aliased(bits):\n    return helper(bits, None)", namespace)
    with pytest.raises(AssertionError, match="uses utils.floats.from_bits"):
        with forbidden(namespace["aliased"], targets, "decode"):
            pass


def test_forbidden_leaves_classes_exactly_as_they_were():
    import torch

    from utils.grading import forbidden
    before = dict(torch.Tensor.__dict__)

    def solution(x):
        return x.stride()
    with pytest.raises(AssertionError, match="called torch.Tensor.stride"):
        with forbidden(solution, {"torch.Tensor.stride": (torch.Tensor, "stride")}, "strides"):
            solution(torch.zeros(2, 3))
    assert dict(torch.Tensor.__dict__) == before
    assert torch.zeros(2, 3).stride() == (3, 1)


def test_rounding_bound_accepts_every_order_and_rejects_wrong_answers():
    """Dot products in bf16: summed term by term in bf16 (the worst order), scaled before or after, or computed in
    float32 and rounded once, all pass; a missing scale, a wrong dtype, nan and inf fail."""
    from utils.grading import check_within_rounding_bound

    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(50, 8, generator=generator).bfloat16(), torch.randn(40, 8, generator=generator).bfloat16()
    exact = q.double() @ k.double().T / math.sqrt(8)
    magnitude = q.double().abs() @ k.double().abs().T / math.sqrt(8)
    like = q @ k.T / math.sqrt(8)
    term_by_term = torch.zeros(50, 40, dtype=torch.bfloat16)
    for d in range(8):
        term_by_term = term_by_term + q[:, None, d] * k[None, :, d]
    correct = [like, (q / math.sqrt(8)) @ k.T, (q.float() @ k.float().T / math.sqrt(8)).bfloat16(), term_by_term / math.sqrt(8)]
    for value in correct:
        check_within_rounding_bound(value, like, exact, magnitude, 9, "scores")
    for wrong, message in [(q @ k.T, "away from the float64 result"), (like.float(), "dtype"),
                           (like.clone().fill_(math.nan), "away|values differ"),
                           (like.clone().fill_(math.inf), "away|values differ")]:
        with pytest.raises(AssertionError, match=message):
            check_within_rounding_bound(wrong, like, exact, magnitude, 9, "scores")


def test_earlier_tasks_done_right_swaps_in_correct_helpers_and_puts_them_back():
    from utils.grading import earlier_tasks_done_right
    namespace = {}
    exec("def count(n):\n    return n + 1  # wrong\n\ndef doubled(n):\n    return 2 * count(n)\n", namespace)
    doubled = namespace["doubled"]
    assert doubled(3) == 8
    with earlier_tasks_done_right(doubled, {"count": lambda n: n, "absent": len}):
        assert doubled(3) == 6
        assert "absent" not in namespace
    assert doubled(3) == 8
    with pytest.raises(ZeroDivisionError), earlier_tasks_done_right(doubled, {"count": lambda n: n / 0}):
        doubled(1)
    assert doubled(3) == 8


def test_answers_from_table_stand_in_for_an_earlier_task_on_its_table_only():
    import dataclasses

    from utils.earlier import answers_from_table
    from utils.grading import earlier_tasks_done_right

    @dataclasses.dataclass(frozen=True)
    class Shape:
        width: int
    namespace = {}
    exec("def count(n):\n    return n + 1  # wrong\n\ndef doubled(n):\n    return 2 * count(n=n)\n", namespace)
    doubled, count = namespace["doubled"], namespace["count"]
    with earlier_tasks_done_right(doubled, {"count": answers_from_table(count, [((3,), 3), ((5,), 5)])}):
        assert doubled(3) == 6 and doubled(5) == 10
        assert doubled(4) == 10  # not in the table: the student's own count answers
    assert doubled(3) == 8
    width = answers_from_table(lambda shape: -1, [((Shape(2),), 20)])
    assert width(Shape(2)) == width(shape=Shape(2)) == 20 and width(Shape(3)) == -1
    assert answers_from_table(lambda a, b: "own", [((1, 2), "x")])(1, b=2) == "x"
    assert answers_from_table(lambda a, b: "own", [((1, 2), "x")])(1.0, 2) == "own"  # exact types: 1.0 is not 1


def test_a_stand_in_compares_only_plain_tensors_outside_any_mode_of_the_callers():
    """The red team's exploit (issue #63): a tensor subclass whose subtraction returns zeros matched every entry of a
    stand-in's table of the same shape and took the right answer for inputs of its choosing (06's gradients, 6 points,
    unflagged); a torch function mode of the caller's can do the same to plain tensors. Both reach the student's own
    function; a plain tensor and a Parameter still get the table's answer."""
    from torch.overrides import TorchFunctionMode

    from utils.earlier import answers_from_table
    known = torch.arange(4.0).reshape(2, 2)
    grad = answers_from_table(lambda g: "own", [((known,), "right")])

    class Zeros(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in ("__sub__", "sub", "__rsub__"):
                return torch.zeros(2, 2, dtype=torch.float64)
            return super().__torch_function__(func, types, args, kwargs or {})

    class SubtractionIsZero(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in ("__sub__", "sub", "__rsub__"):
                return torch.zeros(2, 2, dtype=torch.float64)
            return func(*args, **(kwargs or {}))

    anything = torch.full((2, 2), 7.0)
    assert grad(known.clone()) == grad(torch.nn.Parameter(known.clone())) == "right"
    assert grad(anything.as_subclass(Zeros)) == "own"
    with SubtractionIsZero():
        assert grad(anything) == "own"
    assert grad(anything) == "own"


@pytest.mark.parametrize("value, message", [((3, 4, 5), "expected 2 entries"), ((3,), "expected 2 entries"),
                                            ((), "expected 2 entries"), ([3, 4], "expected a tuple"),
                                            (torch.Size([3, 4]), "expected a tuple"), ((3, 4.0), "plain ints"),
                                            ((3, True), "plain ints"), ((4, 3), r"expected \(3, 4\), got \(4, 3\)")])
def test_a_tuple_of_ints_must_match_in_length_type_and_order(value, message):
    """Exercise 3's shapes and strides: a longer tuple with the right start, (3, 4, 5) for (3, 4), is wrong."""
    from utils.grading import check_ints
    check_ints((3, 4), (3, 4), "shape")
    with pytest.raises(AssertionError, match=message):
        check_ints(value, (3, 4), "shape")


def test_a_tensor_on_another_device_is_told_its_device():
    """The meta device stands in for a GPU: the student's tensor on another device than the reference is told so,
    not that its values differ."""
    with pytest.raises(AssertionError, match="expected device cpu, got meta"):
        check_tensor(torch.ones(2, device="meta"), torch.ones(2), "x")


def test_the_rounding_bound_is_operations_times_eps_times_the_magnitude_and_no_more():
    """Four roundings in float32 of a sum of positive terms (the magnitude is the value itself): an error of up to 4
    eps passes, twice that fails."""
    from utils.grading import check_within_rounding_bound
    eps = torch.finfo(torch.float32).eps
    exact = magnitude = torch.tensor([1.0], dtype=torch.float64)
    like = torch.tensor([1.0])
    for steps in (0, 2, 4):
        check_within_rounding_bound(torch.tensor([1.0 + steps * eps]), like, exact, magnitude, 4, "sum")
    with pytest.raises(AssertionError, match="rounding 4 operations in torch.float32 can explain at most 4.77e-07"):
        check_within_rounding_bound(torch.tensor([1.0 + 8 * eps]), like, exact, magnitude, 4, "sum")


def test_as_accurate_as_torch_allows_ten_times_torchs_own_error():
    """torch's result 1e-3 from the exact one: 9e-3 passes, 2e-2 fails (ten times torch's error, plus 4 ulp)."""
    from utils.grading import check_as_accurate_as_torch
    exact = torch.tensor([1.0], dtype=torch.float64)
    torch_value = torch.tensor([1.001])
    check_as_accurate_as_torch(torch.tensor([1.009]), torch_value, exact, "x")
    with pytest.raises(AssertionError, match="away from the float64 result"):
        check_as_accurate_as_torch(torch.tensor([1.02]), torch_value, exact, "x")


def test_a_bool_must_be_the_right_one_and_a_real_bool():
    from utils.grading import check_bool
    check_bool(True, True, "flag")
    check_bool(False, False, "flag")
    for value, message in [(False, "expected True, got False\nHint: look"), (1, "expected a bool, got int"),
                           (torch.tensor(True), "expected a bool, got Tensor")]:
        with pytest.raises(AssertionError, match=message):
            check_bool(value, True, "flag", hint="look")


def test_a_string_must_match_exactly():
    check_str("fp16", "fp16", "name")
    with pytest.raises(AssertionError, match="expected 'fp16', got 'FP16'\nHint: look"):
        check_str("FP16", "fp16", "name", hint="look")


def test_an_error_is_quoted_on_one_line_its_first_and_last_lines_cut_to_size():
    from utils.grading import error_line
    assert error_line(ValueError("")) == "ValueError"
    assert error_line(RuntimeError("\x1b[31mshape mismatch\x1b[0m")) == "RuntimeError: shape mismatch"
    long = ValueError("a" * 400 + "\n\n  middle\n" + "z" * 250)
    assert error_line(long) == f"ValueError: {'a' * 300} ... {'z' * 200}"
