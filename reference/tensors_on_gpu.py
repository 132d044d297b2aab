"""Exercise 2 (tensors on the GPU), the instructor's references: the device a process picks, what the caching
allocator charges for a list of tensors, and whether `.to` copies, all worked out from arguments alone.

Hidden tests compare with these on every machine, and also with torch itself where the machine can answer
(`.to` on real CPU and CUDA tensors, `torch.cuda.memory_allocated` on a GPU).
"""
from __future__ import annotations

from typing import Sequence

import torch

ALLOCATOR_BLOCK_BYTES = 512  # PyTorch's c10/cuda/CUDACachingAllocator.cpp: kMinBlockSize


def pick_device(cuda_count: int, mps_available: bool, local_rank: int = 0) -> str:
    """'cuda:<local_rank>' when there are GPUs (ValueError when that GPU does not exist), else 'mps', else 'cpu'."""
    if cuda_count > 0:
        if not 0 <= local_rank < cuda_count:
            raise ValueError(f"local_rank {local_rank} needs GPU {local_rank}, but there are only {cuda_count}")
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"


def allocated_bytes(tensors: Sequence[tuple[Sequence[int], torch.dtype]]) -> int:
    """Growth of `torch.cuda.memory_allocated()`, in bytes, when each (shape, dtype) becomes its own CUDA tensor:
    each tensor's bytes (counted by torch on the meta device) rounded up to whole 512-byte blocks; 0 stays 0.
    Exact for tensors up to 1 MiB."""
    total = 0
    for shape, dtype in tensors:
        nbytes = torch.empty(tuple(shape), dtype=dtype, device="meta").nbytes
        total += -(-nbytes // ALLOCATOR_BLOCK_BYTES) * ALLOCATOR_BLOCK_BYTES
    return total


def _resolve(device: str | torch.device, current_cuda: int) -> torch.device:
    """'cuda' without an index means the current CUDA device; every other device is taken as written."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", current_cuda)
    return device


def to_copies(source_device: str, source_dtype: torch.dtype, target_device: str | None = None,
              target_dtype: torch.dtype | None = None, copy: bool = False, current_cuda: int = 0) -> bool:
    """Whether `x.to(target_device, target_dtype, copy=copy)` copies a tensor `x` on `source_device` with
    `source_dtype` (True) or returns `x` itself (False); None keeps x's device or dtype."""
    source = _resolve(source_device, current_cuda)
    target = source if target_device is None else _resolve(target_device, current_cuda)
    new_dtype = target_dtype is not None and target_dtype != source_dtype
    return copy or target != source or new_dtype


# ---- hidden tests (reference/hidden.py): cases, expected results, checks -----------------------------------------
import random
import statistics

import utils.transfer
from reference.hidden import HiddenTest
from reference.hidden import results_list as _results
from utils.device import has_cuda
from utils.grading import check_float, check_int, check_str, check_type
from utils.transfer import check_bool

_DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2,
           torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64]




def _outcome(observed: object, what: str) -> tuple[str, object]:
    """An `utils.handin.outcome` pair, or AssertionError."""
    if type(observed) is not tuple or len(observed) != 2 or observed[0] not in ("returned", "raised"):
        raise AssertionError(f"{what}: the outcome handed in is not one of utils.handin.outcome's")
    return observed


# pick_device ------------------------------------------------------------------------------------------------------
def _pick_cases() -> list[tuple[int, bool, int]]:
    return [(count, mps, rank) for count in (0, 1, 2, 3, 4, 8, 16) for mps in (False, True)
            for rank in (-1, 0, 1, 2, 3, 7, 8, 15, 16)]


def _pick_expected(cases: list) -> list[str | None]:
    """The device, or None where there is no GPU `local_rank` (a ValueError)."""
    def one(count, mps, rank):
        try:
            return pick_device(count, mps, rank)
        except ValueError:
            return None
    return [one(*case) for case in cases]


def _pick_check(cases, expected, results) -> None:
    for (count, mps, rank), want, got in zip(cases, expected, _results(results, len(cases), "pick_device")):
        what = f"pick_device({count}, {mps}, local_rank={rank})"
        check_type(got, tuple, f"{what}: what was handed in")
        check_int(len(got), 2, f"{what}: what was handed in")
        given, default = (_outcome(g, what) for g in got)
        if count > 0 and mps and given == ("returned", "mps"):
            raise AssertionError(f"{what} returned 'mps' on a machine with {count} CUDA GPU(s)\n"
                                 f"Hint: the task's order: a CUDA GPU comes first, before mps, and the CPU last.")
        if want is None:
            if given != ("raised", "ValueError"):
                raise AssertionError(f"{what} should raise ValueError: there is no GPU {rank}.\n"
                                     f"Hint: a local_rank needs a GPU of that index, and the GPUs are numbered from 0.")
            continue
        if given[0] == "raised":
            raise AssertionError(f"{what} raised {given[1]}\nHint: only a local_rank with no GPU of its index raises.")
        check_str(given[1], want, what)
        if rank == 0:
            if default[0] == "raised":
                raise AssertionError(f"{what} with local_rank left at its default raised {default[1]}")
            check_str(default[1], want, f"{what} with local_rank left at its default")


# allocated_bytes --------------------------------------------------------------------------------------------------
def _allocated_cases() -> dict:
    rng = random.Random(3)
    singles = []
    for dtype in _DTYPES:
        per_block = 512 // dtype.itemsize
        for numel in (0, 1, 2, per_block - 1, per_block, per_block + 1, 3 * per_block, 3 * per_block + 1,
                      2**20 // dtype.itemsize):
            singles.append([((numel,), dtype)])
        singles.append([((7, 0, 5), dtype)])
        singles.append([((3, 5, 7), dtype)])
    lists = []
    for _ in range(300):
        tensors = []
        for _ in range(rng.randrange(0, 8)):
            tensors.append((tuple(rng.randrange(0, 40) for _ in range(rng.randrange(0, 4))), rng.choice(_DTYPES)))
        lists.append(tensors)
    measured = has_cuda() and utils.transfer.default_caching_allocator()  # on a GPU, torch is the oracle too
    return {"lists": singles + lists, "measured": lists[:40] if measured else []}


def _allocated_expected(cases: dict) -> list[int]:
    return ([allocated_bytes(tensors) for tensors in cases["lists"]]
            + [utils.transfer.measured_allocated_bytes(tensors) for tensors in cases["measured"]])


def _allocated_check(cases, expected, results) -> None:
    everything = cases["lists"] + cases["measured"]
    for tensors, want, got in zip(everything, expected, _results(results, len(everything), "allocated_bytes")):
        check_type(got, tuple, f"allocated_bytes({tensors}): what was handed in")
        check_int(len(got), 2, f"allocated_bytes({tensors}): what was handed in")
        check_int(got[0], want, f"allocated_bytes({tensors})")
        check_int(got[1], want, f"allocated_bytes({tensors}) with torch.Size shapes")


# to_copies --------------------------------------------------------------------------------------------------------
def _copies_cases() -> list[tuple]:
    """The reference's table of device and dtype pairs, then cases torch answers with real tensors on this machine."""
    devices = ["cpu", "cuda", "cuda:0", "cuda:1", "cuda:2"]
    dtypes = [torch.float32, torch.bfloat16, torch.int64]
    cases = [(source, source_dtype, target, target_dtype, copy, current, False) for source in devices
             for target in [None] + devices + ["cuda:3"] for source_dtype in dtypes for target_dtype in [None] + dtypes
             for copy in (False, True) for current in (0, 1, 2)]
    cases += [("cpu", source_dtype, target, target_dtype, copy, 0, True)
              for source_dtype in dtypes + [torch.float16, torch.uint8]
              for target_dtype in [None, torch.float32, torch.float16, torch.int64]
              for target in (None, "cpu") for copy in (False, True)]
    if has_cuda():
        current = torch.cuda.current_device()
        cases += [(f"cuda:{current}", torch.float32, target, target_dtype, False, current, True)
                  for target in (None, "cuda", f"cuda:{current}", "cpu") for target_dtype in (None, torch.float32, torch.float16)]
    return cases


def _copies_expected(cases: list) -> list[bool]:
    """The reference's answer, or for a real case what torch itself does to a real tensor here."""
    expected = []
    for source, source_dtype, target, target_dtype, copy, current, real in cases:
        if real:
            x = torch.zeros(3, dtype=source_dtype, device=source)
            expected.append(x.to(device=target, dtype=target_dtype, copy=copy).data_ptr() != x.data_ptr())
        else:
            expected.append(to_copies(source, source_dtype, target, target_dtype, copy, current))
    return expected


def _copies_check(cases, expected, results) -> None:
    for case, want, got in zip(cases, expected, _results(results, len(cases), "to_copies")):
        args = case[:6]
        check_type(got, tuple, f"to_copies{args}: what was handed in")
        check_int(len(got), 2, f"to_copies{args}: what was handed in")
        check_bool(got[0], want, f"to_copies{args}")
        check_bool(got[1], want, f"to_copies{args}, arguments passed by keyword")


# copy_gb_per_s ----------------------------------------------------------------------------------------------------
def _bandwidth_cases() -> dict:
    rng = random.Random(11)
    scenarios = []
    for _ in range(60):
        warmup, repeats = rng.randrange(0, 4), rng.randrange(1, 9)
        durations = [rng.uniform(0.05, 1.0) for _ in range(warmup)] + [rng.uniform(1e-4, 1e-2) for _ in range(repeats)]
        if repeats >= 3:
            durations[warmup + rng.randrange(repeats)] = 0.5  # a stray slow run
        nbytes = rng.choice([1, 512, 4096, 10**6, 2**26, 10**10, rng.randrange(1, 10**9)])
        scenarios.append((warmup, repeats, durations, nbytes, rng.uniform(1e-7, 1e-5)))
    return {"scenarios": scenarios, "real_cpu": [1, 2**16, 2**22]}


def _bandwidth_check(cases, expected, results) -> None:
    check_type(results, dict, "copy_gb_per_s: the results handed in")
    real = results.get("real_cpu")
    check_type(real, list, "copy_gb_per_s: the real CPU copies")
    check_int(len(real), len(cases["real_cpu"]), "copy_gb_per_s: how many real CPU copies")
    for nbytes, measured in zip(cases["real_cpu"], real):  # timings: never asserted beyond plausibility
        check_type(measured, float, f"copy_gb_per_s of a real {nbytes}-byte CPU copy")
        if not 1e-9 < measured < 5000:
            raise AssertionError(f"copy_gb_per_s measured {measured:g} GB/s for a {nbytes}-byte CPU copy\n"
                                 f"Hint: check the units: bytes per second / 1e9.")
    # Where the student's process had a CUDA GPU it copied to it from pageable and from pinned memory, and handed in
    # the GPU's device string; the trusted side needs no GPU to check these.
    gpu, real_gpu = results.get("gpu"), results.get("real_gpu")
    check_type(real_gpu, dict, "copy_gb_per_s: the real host-to-device copies")
    if gpu is not None:
        check_type(gpu, str, "copy_gb_per_s: the GPU the real copies went to")
        if sorted(real_gpu) != ["pageable", "pinned"]:
            raise AssertionError(f"copy_gb_per_s: the host-to-device copies to {gpu} handed in are {sorted(real_gpu)}, "
                                 "not one from pageable and one from pinned memory")
    elif real_gpu:
        raise AssertionError("copy_gb_per_s: host-to-device timings were handed in without the GPU they ran on")
    for kind, measured in real_gpu.items():  # pinned is usually, not always, faster
        what = f"copy_gb_per_s of a 64 MiB host-to-device copy from {kind} memory to {gpu} (the GPU case)"
        check_type(measured, float, what)
        if not 0.01 < measured < 5000:
            raise AssertionError(f"{what}: {measured:g} GB/s is not plausible\n"
                                 f"Hint: check the units and the synchronize.")
    simulated = results.get("simulated")
    check_type(simulated, list, "copy_gb_per_s: the simulated copies")
    check_int(len(simulated), len(cases["scenarios"]), "copy_gb_per_s: how many simulated copies")
    for (warmup, repeats, durations, nbytes, _), got in zip(cases["scenarios"], simulated):
        what = f"copy_gb_per_s(nbytes={nbytes}, warmup={warmup}, repeats={repeats}) on copies of {durations} s"
        check_type(got, tuple, what)
        check_int(len(got), 2, what)
        check_float(got[0], nbytes / statistics.median(durations[warmup:]) / 1e9, what, rel_tol=1e-9)
        check_int(got[1], warmup + repeats, f"number of copy() calls in {what}")


HIDDEN_TESTS = {
    "pick_device": HiddenTest(_pick_cases, _pick_expected, _pick_check,
                              varies="the number of GPUs (0 to 16), whether MPS exists, and local ranks from -1 past "
                                     "the last GPU"),
    "allocated_bytes": HiddenTest(_allocated_cases, _allocated_expected, _allocated_check,
                                  varies="every dtype, sizes at and around the 512-byte blocks, empty tensors, lists "
                                         "of up to 7 tensors, and torch.Size shapes (on a machine with a CUDA GPU, "
                                         "also what its memory_allocated() really grows by)"),
    "to_copies": HiddenTest(_copies_cases, _copies_expected, _copies_check,
                            varies="source and target devices (cpu, cuda with and without an index, another "
                                   "current GPU), dtypes, copy=True, arguments by keyword, and what torch really does "
                                   "to CPU tensors (and CUDA tensors, where there is a GPU)"),
    "copy_gb_per_s": HiddenTest(_bandwidth_cases, lambda cases: None, _bandwidth_check,
                                varies="warm-up and repeat counts, a stray slow run among the timed ones, sizes "
                                       "from 1 byte to 10 GB, real CPU copies, and (where there is a CUDA GPU) "
                                       "host-to-device copies from pageable and pinned memory"),
}


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import MS_FOR_S, within_percent

HIDDEN_TESTS["copy_seconds"] = napkin_test(
    {'gib': 4, 'bytes_per_second': 25000000000},
    lambda gib, bytes_per_second, bytes_per_gib: gib * bytes_per_gib / bytes_per_second,
    "copy_seconds", "seconds", within_percent(5),
    {**MS_FOR_S, 8.0: "the bandwidth read as gigabits per second? 25 GB/s is gigabytes.", 1e9 / 2**30: "4 GiB taken as 4 GB? A GiB is 2^30 bytes, 7% more."},
    conventions={"bytes_per_gib": (2**30, "the 2^30 bytes of a GiB")})
