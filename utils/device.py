"""Which device are we on? One place for device discovery and the one-line description notebooks print."""
from __future__ import annotations

import os
import platform

import torch


def get_device() -> torch.device:
    """The best device this machine has: a CUDA GPU, else Apple's MPS, else the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def has_cuda() -> bool:
    """True when at least one CUDA GPU is usable from this process."""
    return torch.cuda.is_available()


def pick_device(cuda_count: int, mps_available: bool) -> str:
    """The device one process should use on a machine with `cuda_count` CUDA GPUs and maybe an Apple GPU: the first
    GPU ('cuda:0'), else 'mps', else 'cpu'. It works from the two facts, not by asking torch, so it can describe
    machines we do not have. (One process per GPU needs a rank as well: exercise 2.)"""
    if cuda_count:
        return "cuda:0"
    if mps_available:
        return "mps"
    return "cpu"


def describe_device(device: torch.device | str | None = None) -> str:
    """One line saying which device computations will run on (and how big it is)."""
    chosen = torch.device(device) if device is not None else get_device()
    torch_version = f"torch {torch.__version__}"
    if chosen.type == "cuda":
        index = chosen.index if chosen.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        memory_gib = props.total_memory / 2**30
        return (f"CUDA GPU {index} of {torch.cuda.device_count()}: {props.name}, {memory_gib:.1f} GiB, "
                f"compute capability {props.major}.{props.minor} ({torch_version})")
    if chosen.type == "mps":
        return f"Apple GPU via MPS on {platform.machine()} ({torch_version})"
    return (f"CPU only: {platform.machine()}, {os.cpu_count()} logical cores, no GPU found; "
            f"GPU-only cells will say what they skip ({torch_version})")


def cpu_model() -> str:
    """The CPU's model name where the system says it (Linux: /proc/cpuinfo), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_host() -> str:
    """One line naming the machine this process runs on, whatever its GPU: its CPU, cores, system and torch. A
    notebook whose stored outputs come from two machines prints it, so that its untagged outputs have a name."""
    return (f"{cpu_model()} ({platform.machine()}), {os.cpu_count()} logical cores, {platform.system()} "
            f"(torch {torch.__version__})")


def skip_unless_cuda(what: str) -> bool:
    """Return True when CUDA is present; otherwise print one line saying what is skipped, and return False.

    Use it as the guard of a GPU-only demo:  `if skip_unless_cuda("pinned-memory bandwidth"): ...`
    """
    if has_cuda():
        return True
    print(f"Skipped: {what} needs a CUDA GPU, and this machine has none.")
    return False
