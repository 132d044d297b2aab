"""Shared code for the course *PyTorch primitives and resource accounting*.

Notebooks and tests import from here; nothing in here is copied into a notebook.

`import utils` itself imports nothing heavy: each name below (and each module, `utils.floats`) is imported the
first time it is used (PEP 562's module `__getattr__`). So the grader can import the torch-free `utils.rules`
without importing torch (docs/benchmarks.md says what that saves each grading run).
"""
from __future__ import annotations

import importlib

# Each name, and the module it lives in.
_HOMES = {
    "device": ["describe_device", "get_device", "has_cuda", "skip_unless_cuda"],
    "floats": ["BF16", "FORMATS", "FP8_E4M3", "FP8_E5M2", "FP16", "FP32", "FloatFormat", "FormatLimits",
               "bits_of", "format_limits", "from_bits", "round_trip"],
    "hardware": ["PEAK_FLOPS", "current_device_name", "explain_peak", "peak_flops"],
    "timing": ["synchronize", "time_it"],
    "units": ["GB", "KB", "MB", "TB", "GiB", "KiB", "MiB", "TiB", "bytes_for", "format_bytes", "tensor_bytes"],
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = [name for names in _HOMES.values() for name in names]


def __getattr__(name: str):
    """`utils.time_it` (from utils.timing) or `utils.floats` (a module), imported on first use and kept."""
    if name in _HOME_OF:
        value = getattr(importlib.import_module(f"{__name__}.{_HOME_OF[name]}"), name)
    else:
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise  # the module exists but something it imports does not
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
