"""Peak FLOP/s of accelerators, by GPU name and dtype: the denominator of MFU.

Dense numbers from the vendors' data sheets (no 2:4 sparsity: that doubles the headline figure without
doing more useful work). fp32 means plain fp32 on the CUDA cores, which is what torch uses by default
(`torch.get_float32_matmul_precision() == "highest"`, TF32 off); "tf32" is listed separately.
"""
from __future__ import annotations

import torch

from utils.units import GB

TFLOPS = 1e12

# GPU -> dtype -> dense peak in FLOP/s. Missing pairs are unknown, not zero. Sources: NVIDIA's data sheets,
# B200 https://www.nvidia.com/en-us/data-center/hgx/ (per GPU of an HGX B200),
# H200 https://www.nvidia.com/en-us/data-center/h200/, H100 https://www.nvidia.com/en-us/data-center/h100/,
# A100 https://www.nvidia.com/en-us/data-center/a100/, L40S https://www.nvidia.com/en-us/data-center/l40s/,
# L40 https://www.nvidia.com/en-us/data-center/l40/, L4 https://www.nvidia.com/en-us/data-center/l4/,
# A10 https://www.nvidia.com/en-us/data-center/products/a10-gpu/, V100 and T4 (their data-center pages), and the
# Ada/Ampere GeForce architecture white papers. Sheets quote the 2:4-sparse figure first; these are half of it.
PEAK_FLOPS: dict[str, dict[object, float]] = {
    "B200": {torch.bfloat16: 2250 * TFLOPS, torch.float16: 2250 * TFLOPS, torch.float8_e4m3fn: 4500 * TFLOPS},
    "H200": {torch.bfloat16: 989.5 * TFLOPS, torch.float16: 989.5 * TFLOPS, torch.float32: 67 * TFLOPS,
             "tf32": 494.7 * TFLOPS, torch.float8_e4m3fn: 1979 * TFLOPS},
    "H200 NVL": {torch.bfloat16: 835.5 * TFLOPS, torch.float16: 835.5 * TFLOPS, torch.float32: 60 * TFLOPS,
                 "tf32": 417.5 * TFLOPS, torch.float8_e4m3fn: 1670.5 * TFLOPS},
    "H100 SXM": {torch.bfloat16: 989.5 * TFLOPS, torch.float16: 989.5 * TFLOPS, torch.float32: 67 * TFLOPS,
                 "tf32": 494.7 * TFLOPS, torch.float8_e4m3fn: 1979 * TFLOPS},
    "H100 NVL": {torch.bfloat16: 835 * TFLOPS, torch.float16: 835 * TFLOPS, torch.float32: 60 * TFLOPS,
                 torch.float8_e4m3fn: 1670 * TFLOPS},
    "H100 PCIe": {torch.bfloat16: 756 * TFLOPS, torch.float16: 756 * TFLOPS, torch.float32: 51 * TFLOPS,
                  "tf32": 378 * TFLOPS, torch.float8_e4m3fn: 1513 * TFLOPS},
    "A100": {torch.bfloat16: 312 * TFLOPS, torch.float16: 312 * TFLOPS, torch.float32: 19.5 * TFLOPS,
             "tf32": 156 * TFLOPS},  # every A100 (40/80 GB, SXM/PCIe) computes alike; memory differs (below)
    "L40S": {torch.bfloat16: 362 * TFLOPS, torch.float16: 362 * TFLOPS, torch.float32: 91.6 * TFLOPS,
             "tf32": 183 * TFLOPS, torch.float8_e4m3fn: 733 * TFLOPS},
    "L40": {torch.bfloat16: 181 * TFLOPS, torch.float16: 181 * TFLOPS, torch.float32: 90.5 * TFLOPS,
            "tf32": 90.5 * TFLOPS, torch.float8_e4m3fn: 362 * TFLOPS},
    "L4": {torch.bfloat16: 121 * TFLOPS, torch.float16: 121 * TFLOPS, torch.float32: 30.3 * TFLOPS,
           torch.float8_e4m3fn: 242.5 * TFLOPS},
    "A10": {torch.bfloat16: 125 * TFLOPS, torch.float16: 125 * TFLOPS, torch.float32: 31.2 * TFLOPS},
    # A10G (AWS G5): NVIDIA publishes no data sheet and third-party tensor figures disagree, so its peaks are unknown.
    "A10G": {},
    "V100": {torch.float16: 125 * TFLOPS, torch.float32: 15.7 * TFLOPS},
    "V100 PCIe": {torch.float16: 112 * TFLOPS, torch.float32: 14 * TFLOPS},
    "T4": {torch.float16: 65 * TFLOPS, torch.float32: 8.1 * TFLOPS},
    "RTX 4090": {torch.bfloat16: 165.2 * TFLOPS, torch.float16: 165.2 * TFLOPS, torch.float32: 82.6 * TFLOPS},
    "RTX 3090": {torch.bfloat16: 71 * TFLOPS, torch.float16: 71 * TFLOPS, torch.float32: 35.6 * TFLOPS},
}

# What `torch.cuda.get_device_name()` says on each card -> table key. Matched whole (case and spacing aside), never
# as a substring: 'NVIDIA L40' contains 'L4' and 'NVIDIA A10G' contains 'A10', and each has peaks of its own.
DEVICE_NAMES: dict[str, str] = {
    "NVIDIA B200": "B200",
    "NVIDIA H200": "H200", "NVIDIA H200 NVL": "H200 NVL",
    "NVIDIA H100 80GB HBM3": "H100 SXM", "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H100 NVL": "H100 NVL",
    "NVIDIA A100-SXM4-80GB": "A100", "NVIDIA A100-SXM4-40GB": "A100 40GB", "NVIDIA A100-PCIE-40GB": "A100 40GB",
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA L40S": "L40S", "NVIDIA L40": "L40", "NVIDIA L4": "L4", "NVIDIA A10": "A10", "NVIDIA A10G": "A10G",
    "Tesla V100-SXM2-16GB": "V100", "Tesla V100-SXM2-32GB": "V100", "Tesla V100-PCIE-16GB": "V100 PCIe",
    "Tesla V100-PCIE-32GB": "V100 PCIe", "Tesla T4": "T4",
    "NVIDIA GeForce RTX 4090": "RTX 4090", "NVIDIA GeForce RTX 3090": "RTX 3090",
}
# Table keys that share another key's compute peaks (they differ only in memory).
SAME_COMPUTE = {"A100 40GB": "A100", "A100 PCIe 80GB": "A100"}


def _normalised(name: str) -> str:
    return " ".join(name.upper().split())


_BY_NAME = {_normalised(name): key for name, key in DEVICE_NAMES.items()}


def gpu_key(device_name: str) -> str | None:
    """The table key for a device name as torch reports it ('NVIDIA H100 80GB HBM3' -> 'H100 SXM'), or for a table
    key itself ('H100 SXM'); None for a CPU or a GPU the tables do not know."""
    wanted = _normalised(device_name)
    keys = {_normalised(key): key for key in [*PEAK_FLOPS, *SAME_COMPUTE]}
    return _BY_NAME.get(wanted) or keys.get(wanted)


def peak_flops(device_name: str, dtype: torch.dtype | str) -> float | None:
    """Dense peak FLOP/s of `device_name` for `dtype`, or None when the table has no such GPU or dtype."""
    key = gpu_key(device_name)
    if key is None:
        return None
    return PEAK_FLOPS[SAME_COMPUTE.get(key, key)].get(dtype)


def current_device_name() -> str:
    """'cpu' or the CUDA device's marketing name, as torch reports it."""
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def explain_peak(device_name: str, dtype: torch.dtype | str) -> str:
    """A sentence giving the peak, or saying plainly why there is none (so no one divides by a made-up peak)."""
    peak = peak_flops(device_name, dtype)
    if peak is None:
        return f"No peak FLOP/s known for {device_name!r} with {dtype}: MFU cannot be computed here."
    return f"{device_name} peak for {dtype}: {peak / TFLOPS:g} TFLOP/s (dense)."


# GPU -> memory bandwidth in bytes/s (HBM or GDDR to the chip), from the same data sheets: the other side of the
# roofline. "A100" is the 80 GB SXM card, the one its row of peaks is quoted for. A10G: AWS's G5 documentation.
MEMORY_BANDWIDTH: dict[str, float] = {
    "B200": 8e12, "H200": 4.8e12, "H200 NVL": 4.8e12, "H100 SXM": 3.35e12, "H100 NVL": 3.9e12, "H100 PCIe": 2.0e12,
    "A100": 2.039e12, "A100 PCIe 80GB": 1.935e12, "A100 40GB": 1.555e12, "L40S": 864e9, "L40": 864e9, "L4": 300e9,
    "A10": 600e9, "A10G": 600e9, "V100": 900e9, "V100 PCIe": 900e9, "T4": 320e9, "RTX 4090": 1008e9,
    "RTX 3090": 936e9,
}


def memory_bandwidth(device_name: str) -> float | None:
    """Memory bandwidth of `device_name` in bytes/s, or None when the GPU is not in the table (a CPU is not)."""
    key = gpu_key(device_name)
    return None if key is None else MEMORY_BANDWIDTH.get(key)


# GPU -> memory in bytes, as the data sheets state it ("80GB" read as 80e9 bytes, the convention of lecture 2's
# napkin math; the cards hold slightly more in binary units). V100s come with 16 or 32 GB under one key: unknown.
MEMORY_BYTES: dict[str, float] = {
    "B200": 180 * GB, "H200": 141 * GB, "H200 NVL": 141 * GB, "H100 SXM": 80 * GB, "H100 NVL": 94 * GB,
    "H100 PCIe": 80 * GB, "A100": 80 * GB, "A100 PCIe 80GB": 80 * GB, "A100 40GB": 40 * GB, "L40S": 48 * GB,
    "L40": 48 * GB, "L4": 24 * GB, "A10": 24 * GB, "A10G": 24 * GB, "T4": 16 * GB, "RTX 4090": 24 * GB,
    "RTX 3090": 24 * GB,
}


def memory_bytes(device_name: str) -> float | None:
    """Memory of `device_name` in bytes (data-sheet GB), or None when unknown (a CPU, a V100 of either size)."""
    key = gpu_key(device_name)
    return None if key is None else MEMORY_BYTES.get(key)
