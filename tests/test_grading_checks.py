"""The checks exercise tests rely on: they must fail on wrong answers and on tricks, with a readable message."""
import math

import pytest
import torch

import utils.floats
from utils.grading import check_float, check_int, check_str, check_tensor, forbidden


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
    with pytest.raises(AssertionError, match="expected a int, got bool"):
        check_int(True, 1, "x")


def test_tensor_check_is_strict_about_type_dtype_shape():
    expected = torch.ones(2, 3)
    for wrong, message in [(AlwaysEqual(), "expected a torch.Tensor"), (torch.nn.Parameter(expected.clone()), "expected a torch.Tensor"),
                           (expected.double(), "dtype"), (expected.reshape(3, 2), "shape"), (torch.ones(1, 3), "shape"),
                           (expected * 2, "values differ")]:
        with pytest.raises(AssertionError, match=message):
            check_tensor(wrong, expected, "x")


def test_monkeypatched_torch_comparisons_do_not_help(monkeypatch):
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "equal", lambda *a, **k: True)
    monkeypatch.setattr(torch.testing, "assert_close", lambda *a, **k: None)
    with pytest.raises(AssertionError, match="values differ"):
        check_tensor(torch.zeros(2), torch.ones(2), "x")


def test_forbidden_catches_calls_and_imported_aliases():
    def calls_helper(bits):
        return utils.floats.decode_bits(bits, utils.floats.FP16)

    targets = {"utils.floats.decode_bits": (utils.floats, "decode_bits")}
    with pytest.raises(AssertionError, match="called utils.floats.decode_bits"):
        with forbidden(calls_helper, targets, "decode"):
            calls_helper(1)
    assert utils.floats.decode_bits(0x3C00, utils.floats.FP16) == 1.0  # restored afterwards

    namespace = {"helper": utils.floats.decode_bits}
    exec("def aliased(bits):\n    return helper(bits, None)", namespace)
    with pytest.raises(AssertionError, match="uses utils.floats.decode_bits"):
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
