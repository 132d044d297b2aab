"""Exercise 4 (einops and jaxtyping): the trusted half of its hidden tests (reference/hidden.py).

The answers need no instructor code: torch's own index juggling (view/permute/transpose, matmul, boolean indexing)
is the oracle, in the dtype of the case, in float64, and on the absolute values (the size of the terms) for the
rounding bound. All of it runs here, in the grader's trusted process; the notebook only calls the student's
functions on the cases and hands in what they returned (utils.shapes.observe_call for the shape-checked tasks).
"""
from __future__ import annotations

import math
import random

import torch
from torch import Tensor

from reference.hidden import HiddenTest
from reference.hidden import results_list as _results
from utils.diagnosis import tensor_slips
from utils.grading import check_int, check_tensor, check_type, check_within_rounding_bound
from utils.shapes import judge_accepts, judge_rejects, merge_heads_input

DTYPES = [torch.float32, torch.float64, torch.bfloat16]




# ---- task 1: split_qkv -------------------------------------------------------------------------------------------
def _split_qkv_cases() -> list[tuple[Tensor, int]]:
    rng = random.Random(41)
    generator = torch.Generator().manual_seed(41)
    cases = []
    for _ in range(60):
        batch, seq, heads, head_dim = (rng.randint(1, 4) for _ in range(4))
        dtype = rng.choice(DTYPES)
        cases.append((torch.randn(batch, seq, 3 * heads * head_dim, generator=generator).to(dtype), heads))
    return cases


def _split_qkv_expected(cases) -> list[Tensor]:
    # torch is the oracle: the view/permute chain of the task text
    expected = []
    for qkv, heads in cases:
        batch, seq, width = qkv.shape
        expected.append(qkv.view(batch, seq, 3, heads, width // (3 * heads)).permute(2, 0, 3, 1, 4))
    return expected


def _split_qkv_check(cases, expected, results) -> None:
    for (qkv, heads), want, got in zip(cases, expected, _results(results, len(cases), "split_qkv")):
        what = f"split_qkv(qkv of shape {tuple(qkv.shape)} and {qkv.dtype}, {heads})"
        check_type(got, tuple, what)
        check_int(len(got), 3, f"len({what})")
        for name, g, w in zip("qkv", got, want):
            check_tensor(g, w, f"{name} from {what}")


# ---- task 2: merge_heads -----------------------------------------------------------------------------------------
def _merge_heads_cases() -> dict:
    rng = random.Random(42)
    generator = torch.Generator().manual_seed(42)
    inputs = []
    for _ in range(60):
        batch, heads, seq, head_dim = (rng.randint(1, 5) for _ in range(4))
        dtype = rng.choice(DTYPES)
        case = {"x": torch.randn(batch, heads, seq, head_dim, generator=generator).to(dtype), "transposed": False}
        if rng.random() < 0.5:  # a non-contiguous input, as a transpose produces it
            case = {"x": torch.randn(batch, seq, heads, head_dim, generator=generator).to(dtype), "transposed": True}
        inputs.append(case)
    return {"inputs": inputs, "qkv": torch.randn(2, 5, 3 * 12, generator=generator)}  # 3 heads of 4 features


def _merge_heads_expected(cases) -> list[Tensor]:
    expected = []
    for case in cases["inputs"]:  # torch's old way is the oracle
        x = merge_heads_input(case)
        batch, heads, seq, head_dim = x.shape
        expected.append(x.transpose(1, 2).reshape(batch, seq, heads * head_dim))
    return expected + [cases["qkv"][..., :12]]


def _merge_heads_check(cases, expected, results) -> None:
    results = _results(results, len(cases["inputs"]) + 1, "merge_heads")
    for case, want, got in zip(cases["inputs"], expected, results):
        x = merge_heads_input(case)
        check_tensor(got, want, f"merge_heads(x of shape {tuple(x.shape)}, {x.dtype}, contiguous={x.is_contiguous()})")
    check_tensor(results[-1], expected[-1], "merge_heads(q) undoes the split of q")


# ---- task 3: attention_scores ------------------------------------------------------------------------------------
def _scores_by_matmul(q: Tensor, k: Tensor) -> Tensor:
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def _scores_truth(q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """torch's matmul is the oracle: in q's dtype (for dtype and shape), in float64, and on |q|, |k| (the terms' sizes)."""
    return (_scores_by_matmul(q, k), _scores_by_matmul(q.double(), k.double()),
            _scores_by_matmul(q.double().abs(), k.double().abs()))


def _attention_scores_cases() -> list[tuple[Tensor, Tensor]]:
    rng = random.Random(43)
    generator = torch.Generator().manual_seed(43)
    cases = []
    for _ in range(60):
        leading = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 3)))
        seq_q, seq_k, head_dim = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 8)
        dtype = rng.choice(DTYPES)
        q = torch.randn(*leading, seq_q, head_dim, generator=generator).to(dtype)
        k = torch.randn(*leading, seq_k, head_dim, generator=generator).to(dtype)
        cases.append((q, k))
    return cases


def _attention_scores_check(cases, expected, results) -> None:
    for (q, k), (like, exact, magnitude), got in zip(cases, expected, _results(results, len(cases), "attention_scores")):
        what = f"attention_scores(q {tuple(q.shape)}, k {tuple(k.shape)}, {q.dtype})"
        # head_dim products and sums, and up to two scalings (of the result, or of q and of k): head_dim + 2 roundings
        check_within_rounding_bound(got, like, exact, magnitude, q.shape[-1] + 2, what,
                                    explain=tensor_slips(exact, _score_scales(q, k)))


def _score_scales(q: Tensor, k: Tensor) -> dict[str, float]:
    """The square roots a score may be scaled by, for a diagnosis (utils/diagnosis.py)."""
    return {"sqrt(head_dim)": math.sqrt(q.shape[-1]), "sqrt(seq_q)": math.sqrt(q.shape[-2]),
            "sqrt(seq_k)": math.sqrt(k.shape[-2])}


# ---- task 4: checked_attention_scores ----------------------------------------------------------------------------
def _describe(values) -> list[str]:
    return [f"{tuple(t.shape)} {t.dtype}" if isinstance(t, Tensor) else type(t).__name__ for t in values]


def _checked_attention_scores_cases() -> dict:
    rng = random.Random(44)
    generator = torch.Generator().manual_seed(44)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(shape, generator=generator).to(dtype)

    accepted = []
    for _ in range(40):
        leading = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 3)))
        seq_q, seq_k, head_dim = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 8)
        dtype = rng.choice(DTYPES)
        accepted.append((randn(*leading, seq_q, head_dim, dtype=dtype), randn(*leading, seq_k, head_dim, dtype=dtype)))
    rejected = [
        (randn(3, 4), randn(5, 6)),                        # head_dim differs
        (randn(2, 3, 4), randn(2, 5, 6)),
        (randn(2, 3, 4), randn(3, 5, 4)),                  # batch differs
        (randn(2, 2, 3, 4), randn(2, 3, 5, 4)),
        (randn(1, 3, 4), randn(2, 5, 4)),                  # broadcastable, still different
        (randn(2, 3, 4), randn(5, 4)),                     # leading axes (2,) against ()
        (randn(3, 4), randn(2, 5, 4)),
        (randn(4), randn(5, 4)),                           # fewer than 2 axes
        (randn(3, 4), randn(4)),
        (torch.ones(3, 4, dtype=torch.int64), randn(5, 4)),  # not a float
        (randn(3, 4), torch.ones(5, 4, dtype=torch.bool)),
        (randn(3, 4), torch.ones(5, 4, dtype=torch.int32)),
        ([[1.0] * 4] * 3, randn(5, 4)),                    # not a tensor
    ]
    # The right scores of task 3 for the accepted cases, so that a mistake there does not cost task 4 its points
    # (utils.earlier.answers_from_table stands in for attention_scores while the notebook checks task 4).
    earlier = [((q, k), _scores_by_matmul(q, k)) for q, k in accepted]
    return {"accepted": accepted, "rejected": rejected, "attention_scores": earlier}


def _checked_attention_scores_check(cases, expected, results) -> None:
    check_type(results, dict, "checked_attention_scores: the results handed in")
    accepted = _results(results.get("accepted"), len(cases["accepted"]), "checked_attention_scores (accepted inputs)")
    rejected = _results(results.get("rejected"), len(cases["rejected"]), "checked_attention_scores (wrong inputs)")
    for (q, k), (like, exact, magnitude), observed in zip(cases["accepted"], expected, accepted):
        what = f"checked_attention_scores(q {tuple(q.shape)}, k {tuple(k.shape)}, {q.dtype})"
        check_within_rounding_bound(judge_accepts(observed, what), like, exact, magnitude, q.shape[-1] + 2, what)
    for (q, k), observed in zip(cases["rejected"], rejected):
        shapes = _describe((q, k))
        judge_rejects(observed, f"checked_attention_scores(q {shapes[0]}, k {shapes[1]})")


# ---- task 5: checked_masked_mean ---------------------------------------------------------------------------------
def _checked_masked_mean_cases() -> dict:
    rng = random.Random(45)
    generator = torch.Generator().manual_seed(45)

    def random_mask(batch, seq):
        mask = torch.rand(batch, seq, generator=generator) < 0.5
        mask[torch.arange(batch), torch.randint(0, seq, (batch,), generator=generator)] = True  # one real token per row
        return mask

    accepted = []
    for _ in range(50):
        batch, seq, hidden = rng.randint(1, 4), rng.randint(1, 8), rng.randint(1, 6)
        dtype = rng.choice(DTYPES)
        x = torch.randn(batch, seq, hidden, generator=generator).to(dtype)
        accepted.append((x, random_mask(batch, seq)))
    x = torch.randn(2, 3, 4, generator=generator)
    mask = random_mask(2, 3)
    rejected = [
        (x, mask.float()),                               # not a bool mask
        (x, mask.long()),
        (x.long(), mask),                                # not a float x
        (x, mask[:, :2]),                                # seq differs
        (x, random_mask(3, 3)),                          # batch differs
        (x, random_mask(1, 3)),                          # batch differs, broadcastable
        (x, random_mask(3, 2)),                          # (seq, batch): transposed mask
        (x, mask[0]),                                    # mask without batch
        (x, mask[..., None]),                            # mask with an extra axis
        (x[0], mask),                                    # x without batch
        (x[..., None], mask),                            # x with an extra axis
        (x.tolist(), mask),                              # not a tensor
    ]
    return {"accepted": accepted, "rejected": rejected}


def _mean_counts(x: Tensor, mask: Tensor) -> dict[str, list[float]]:
    """What a row's sum may be divided by, for a diagnosis: its real tokens, or every position."""
    return {"the row's real tokens": mask.sum(1).tolist(), "the sequence length": [x.shape[1]] * x.shape[0]}


def _mean_of_selected(x: Tensor, mask: Tensor) -> Tensor:
    """torch is the oracle: boolean indexing picks each row's real tokens, then mean."""
    return torch.stack([x[row][mask[row]].mean(dim=0) for row in range(x.shape[0])])


def _checked_masked_mean_check(cases, expected, results) -> None:
    check_type(results, dict, "checked_masked_mean: the results handed in")
    accepted = _results(results.get("accepted"), len(cases["accepted"]), "checked_masked_mean (accepted inputs)")
    rejected = _results(results.get("rejected"), len(cases["rejected"]), "checked_masked_mean (wrong inputs)")
    for (x, mask), (like, exact, magnitude), observed in zip(cases["accepted"], expected, accepted):
        what = f"checked_masked_mean(x {tuple(x.shape)} {x.dtype}, mask {mask.int().tolist()})"
        # a sum of at most seq terms, the count and the division: seq + 2 roundings, in whatever order
        check_within_rounding_bound(judge_accepts(observed, what), like, exact, magnitude, x.shape[1] + 2, what,
                                    explain=tensor_slips(exact, row_quantities=_mean_counts(x, mask)))
    for (x, mask), observed in zip(cases["rejected"], rejected):
        shapes = _describe((x, mask))
        judge_rejects(observed, f"checked_masked_mean(x {shapes[0]}, mask {shapes[1]})")


HIDDEN_TESTS = {
    "split_qkv": HiddenTest(cases=_split_qkv_cases, expected=_split_qkv_expected, check=_split_qkv_check),
    "merge_heads": HiddenTest(cases=_merge_heads_cases, expected=_merge_heads_expected, check=_merge_heads_check),
    "attention_scores": HiddenTest(cases=_attention_scores_cases,
                                   expected=lambda cases: [_scores_truth(q, k) for q, k in cases],
                                   check=_attention_scores_check),
    "checked_attention_scores": HiddenTest(cases=_checked_attention_scores_cases,
                                           expected=lambda cases: [_scores_truth(q, k) for q, k in cases["accepted"]],
                                           check=_checked_attention_scores_check),
    "checked_masked_mean": HiddenTest(
        cases=_checked_masked_mean_cases,
        expected=lambda cases: [(_mean_of_selected(x, mask), _mean_of_selected(x.double(), mask),
                                 _mean_of_selected(x.double().abs(), mask)) for x, mask in cases["accepted"]],
        check=_checked_masked_mean_check),
}


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import BITS_FOR_BYTES, GB_FOR_GIB, within_percent

HIDDEN_TESTS["scores_gib"] = napkin_test(
    {'batch': 8, 'heads': 12, 'seq': 2048, 'head_width': 64},
    lambda batch, heads, seq, head_width, bytes_per_score, bytes_per_gib: batch * heads * seq * seq * bytes_per_score / bytes_per_gib,
    "scores_gib", "GiB", within_percent(2),
    {**GB_FOR_GIB, **BITS_FOR_BYTES, 1 / 12: "one head's scores? The output keeps the head axis h: 12 of them.", 1 / 32: "q by d, not q by k? The scores are one number per (query, key) pair: seq x seq per head.", 0.5: "2 bytes per score? They are float32: 4 bytes."},
    conventions={"bytes_per_score": (4, "the 4 bytes of a float32 score"), "bytes_per_gib": (2**30, "the 2^30 bytes of a GiB")})
