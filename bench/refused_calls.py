"""What a shape check's refused call costs, with torch printing tensors whole and short (utils.shapes.short_tensor_reprs).

    .venv/bin/python -m bench.refused_calls [--calls 200]

A jaxtyped + beartype function, annotated as exercise 4's checked attention scores are, is called with a key whose
head_dim differs (the refusal its hidden tests ask for). beartype writes each refused tensor's repr into a message
that jaxtyping throws away for its own; torch formats a repr element by element in Python. Prints milliseconds per
refused call (median of five rounds) each way, and checks that the message we read is the same.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor

from utils.shapes import SHAPE_ERRORS, shape_error_message, short_tensor_reprs


@jaxtyped(typechecker=beartype)
def scores(q: Float[Tensor, "*batch seq_q d"], k: Float[Tensor, "*batch seq_k d"]) -> Float[Tensor, "*batch seq_q seq_k"]:
    return q @ k.transpose(-2, -1)


def refused_message(q: Tensor, k: Tensor) -> str:
    try:
        scores(q, k)
    except SHAPE_ERRORS as error:
        return shape_error_message(error)
    raise AssertionError("the call was not refused")


def ms_per_call(calls: int, q: Tensor, k: Tensor, short: bool) -> float:
    """Median over five rounds of the milliseconds one refused call takes."""
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            if short:
                with short_tensor_reprs():
                    refused_message(q, k)
            else:
                refused_message(q, k)
        rounds.append((time.perf_counter() - started) * 1000 / calls)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 4, 8, generator=generator), torch.randn(2, 3, 5, 6, generator=generator)
    whole, short = refused_message(q, k), None
    with short_tensor_reprs():
        short = refused_message(q, k)
    assert whole == short, (whole, short)
    print(f"a refused call, q {tuple(q.shape)}, k {tuple(k.shape)}: "
          f"{ms_per_call(args.calls, q, k, short=False):.1f} ms printing tensors whole, "
          f"{ms_per_call(args.calls, q, k, short=True):.1f} ms printing them short; the message read is the same")


if __name__ == "__main__":
    main()
