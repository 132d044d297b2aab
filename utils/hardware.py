"""Peak FLOP/s of accelerators, by GPU name and dtype: the denominator of MFU.

Dense numbers from the vendors' data sheets (no 2:4 sparsity: that doubles the headline figure without
doing more useful work). fp32 means plain fp32 on the CUDA cores, which is what torch uses by default
(`torch.get_float32_matmul_precision() == "highest"`, TF32 off); "tf32" is listed separately.
"""
from __future__ import annotations

import torch

TFLOPS = 1e12

# GPU -> dtype -> dense peak in FLOP/s. Missing pairs are unknown, not zero.
PEAK_FLOPS: dict[str, dict[object, float]] = {
    "B200": {torch.bfloat16: 2250 * TFLOPS, torch.float16: 2250 * TFLOPS, torch.float8_e4m3fn: 4500 * TFLOPS},
    "H200": {torch.bfloat16: 989.5 * TFLOPS, torch.float16: 989.5 * TFLOPS, torch.float32: 67 * TFLOPS,
             "tf32": 494.7 * TFLOPS, torch.float8_e4m3fn: 1979 * TFLOPS},
    "H100 SXM": {torch.bfloat16: 989.5 * TFLOPS, torch.float16: 989.5 * TFLOPS, torch.float32: 67 * TFLOPS,
                 "tf32": 494.7 * TFLOPS, torch.float8_e4m3fn: 1979 * TFLOPS},
    "H100 NVL": {torch.bfloat16: 835 * TFLOPS, torch.float16: 835 * TFLOPS, torch.float32: 60 * TFLOPS,
                 torch.float8_e4m3fn: 1670 * TFLOPS},
    "H100 PCIe": {torch.bfloat16: 756 * TFLOPS, torch.float16: 756 * TFLOPS, torch.float32: 51 * TFLOPS,
                  "tf32": 378 * TFLOPS, torch.float8_e4m3fn: 1513 * TFLOPS},
    "A100": {torch.bfloat16: 312 * TFLOPS, torch.float16: 312 * TFLOPS, torch.float32: 19.5 * TFLOPS,
             "tf32": 156 * TFLOPS},
    "L40S": {torch.bfloat16: 362 * TFLOPS, torch.float16: 362 * TFLOPS, torch.float32: 91.6 * TFLOPS,
             torch.float8_e4m3fn: 733 * TFLOPS},
    "L4": {torch.bfloat16: 121 * TFLOPS, torch.float16: 121 * TFLOPS, torch.float32: 30.3 * TFLOPS,
           torch.float8_e4m3fn: 242.5 * TFLOPS},
    "A10": {torch.bfloat16: 125 * TFLOPS, torch.float16: 125 * TFLOPS, torch.float32: 31.2 * TFLOPS},
    "V100": {torch.float16: 125 * TFLOPS, torch.float32: 15.7 * TFLOPS},
    "T4": {torch.float16: 65 * TFLOPS, torch.float32: 8.1 * TFLOPS},
    "RTX 4090": {torch.bfloat16: 165.2 * TFLOPS, torch.float16: 165.2 * TFLOPS, torch.float32: 82.6 * TFLOPS},
    "RTX 3090": {torch.bfloat16: 71 * TFLOPS, torch.float16: 71 * TFLOPS, torch.float32: 35.6 * TFLOPS},
}

# Substrings of `torch.cuda.get_device_name()` -> table key, most specific first.
_NAME_PATTERNS = (
    ("B200", "B200"), ("H200", "H200"), ("H100 NVL", "H100 NVL"), ("H100 PCIe", "H100 PCIe"),
    ("H100", "H100 SXM"), ("A100", "A100"), ("L40S", "L40S"), ("L4", "L4"), ("A10", "A10"),
    ("V100", "V100"), ("T4", "T4"), ("RTX 4090", "RTX 4090"), ("RTX 3090", "RTX 3090"),
)


def gpu_key(device_name: str) -> str | None:
    """The table key for a device name such as 'NVIDIA H100 80GB HBM3', or None if the GPU is not in the table."""
    for pattern, key in _NAME_PATTERNS:
        if pattern.lower() in device_name.lower():
            return key
    return None


def peak_flops(device_name: str, dtype: torch.dtype | str) -> float | None:
    """Dense peak FLOP/s of `device_name` for `dtype`, or None when the table has no such GPU or dtype."""
    key = gpu_key(device_name)
    if key is None:
        return None
    return PEAK_FLOPS[key].get(dtype)


def current_device_name() -> str:
    """'cpu' or the CUDA device's marketing name, as torch reports it."""
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def explain_peak(device_name: str, dtype: torch.dtype | str) -> str:
    """A sentence giving the peak, or saying plainly why there is none (so no one divides by a made-up peak)."""
    peak = peak_flops(device_name, dtype)
    if peak is None:
        return f"No peak FLOP/s known for {device_name!r} with {dtype}: MFU cannot be computed here."
    return f"{device_name} peak for {dtype}: {peak / TFLOPS:g} TFLOP/s (dense)."


# GPU -> memory bandwidth in bytes/s (HBM or GDDR to the chip), from the same data sheets: the other side of
# the roofline. One number per table key; where a GPU came with several memory options we list the one the
# peak FLOP/s above belongs to (A100: the 80 GB SXM card; the 40 GB card has 1.555e12 B/s).
MEMORY_BANDWIDTH: dict[str, float] = {
    "B200": 8e12, "H200": 4.8e12, "H100 SXM": 3.35e12, "H100 NVL": 3.9e12, "H100 PCIe": 2.0e12,
    "A100": 2.039e12, "L40S": 864e9, "L4": 300e9, "A10": 600e9, "V100": 900e9, "T4": 320e9,
    "RTX 4090": 1008e9, "RTX 3090": 936e9,
}


def memory_bandwidth(device_name: str) -> float | None:
    """Memory bandwidth of `device_name` in bytes/s, or None when the GPU is not in the table (a CPU is not)."""
    key = gpu_key(device_name)
    return None if key is None else MEMORY_BANDWIDTH.get(key)
