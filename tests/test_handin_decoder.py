"""What a hidden test hands in is decoded in the grader's trusted process (autograder/trusted/checker.py), from text a
student's code controls. Fuzzed with hypothesis, in a forked child as the checker runs: random JSON, and values crafted
to lie (every dtype name torch has, shapes that are negative, huge or disagree with the bytes, floats that overflow,
flags of the wrong type). Decoding either gives a value of the channel's types or raises DecodeError, the student's
failure; it never raises anything else and never crashes the process."""
from __future__ import annotations

import base64
import json

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.forked import call_in_child
from autograder.trusted.checker import verdict
from utils.handin import DecodeError, decode, encode

DTYPE_NAMES = sorted({str(v).removeprefix("torch.") for v in vars(torch).values() if isinstance(v, torch.dtype)})
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70), st.text(max_size=20),
                   st.floats(allow_nan=False, allow_infinity=False))


def json_values():
    return st.recursive(LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                        max_leaves=20)


@st.composite
def crafted(draw):
    """A tagged value as encode writes them, with any of its parts replaced by a lie."""
    tag = draw(st.sampled_from(["tensor", "float", "tuple", "dict", "dtype", "other"]))
    if tag == "tensor":
        shape = draw(st.lists(st.integers(min_value=-3, max_value=2**45), max_size=5) | json_values())
        data = draw(st.binary(max_size=64))
        spec = {"dtype": draw(st.sampled_from(DTYPE_NAMES) | st.text(max_size=10)), "shape": shape,
                "device": draw(st.sampled_from(["cpu", "cuda:0", "meta"]) | json_values()),
                "parameter": draw(st.booleans() | json_values()), "requires_grad": draw(st.booleans() | json_values()),
                "data": draw(st.just(base64.b64encode(data).decode()) | st.text(max_size=12))}
        if draw(st.booleans()):
            spec.pop(draw(st.sampled_from(sorted(spec))))
        return {"tensor": spec}
    if tag == "float":
        return {"float": draw(st.sampled_from(["0x1p99999", "-0x1p-99999", "inf", "nan", "0x1.8p3", "0x"]) |
                              st.text(max_size=12) | json_values())}
    if tag in ("tuple", "dict"):
        return {tag: draw(json_values())}
    return {tag: draw(st.sampled_from(DTYPE_NAMES) | json_values())}


def texts():
    values = st.one_of(json_values(), crafted(), st.lists(crafted(), max_size=3))
    return st.one_of(values.map(json.dumps), st.text(max_size=40), st.just("[" * 50000 + "]" * 50000), st.just("NaN"))


def fuzz() -> int:
    tried = []

    @settings(max_examples=400, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(texts())
    def decodes_or_refuses(text):
        tried.append(text)
        try:
            value = decode(text)
        except DecodeError:
            return
        assert decode(encode(value)) is not None or value is None  # what decodes, encodes again

    decodes_or_refuses()
    return len(tried)


def test_the_decoder_never_raises_anything_else_nor_crashes():
    assert call_in_child(fuzz, 600) >= 400


def test_a_lie_is_the_students_failure_with_a_clear_message():
    class Hidden:  # the trusted side's reference.hidden, for a check that would pass anything decoded
        @staticmethod
        def check(key, results):
            pass
    lies = ['{"tensor": {"dtype": "qint8", "shape": [1], "device": "cpu", "parameter": false, "requires_grad": false, '
            '"data": "AA=="}}', '{"float": "0x1p99999"}', "[" * 50000 + "]" * 50000, "not json"]
    for text in lies:
        judged = verdict(Hidden, "floats.decode", text)
        assert not judged.ok and not judged.fault and "could not be read" in judged.error, (text[:40], judged)
