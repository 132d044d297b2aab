"""Shared code for the course *PyTorch primitives and resource accounting*.

Notebooks and tests import from here; nothing in here is copied into a notebook.
"""
from utils.device import describe_device, get_device, has_cuda, skip_unless_cuda
from utils.floats import (BF16, FORMATS, FP8_E4M3, FP8_E5M2, FP16, FP32, FloatFormat, FormatLimits,
                          bits_of, format_limits, from_bits, round_trip)
from utils.hardware import PEAK_FLOPS, current_device_name, explain_peak, peak_flops
from utils.timing import synchronize, time_it
from utils.units import GB, KB, MB, TB, GiB, KiB, MiB, TiB, bytes_for, format_bytes, tensor_bytes

__all__ = ["describe_device", "get_device", "has_cuda", "skip_unless_cuda",
           "BF16", "FORMATS", "FP8_E4M3", "FP8_E5M2", "FP16", "FP32", "FloatFormat", "FormatLimits",
           "bits_of", "format_limits", "from_bits", "round_trip",
           "PEAK_FLOPS", "current_device_name", "explain_peak", "peak_flops",
           "synchronize", "time_it",
           "GB", "KB", "MB", "TB", "GiB", "KiB", "MiB", "TiB", "bytes_for", "format_bytes", "tensor_bytes"]
