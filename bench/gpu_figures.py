"""The GPU figures the course quotes, measured side by side in one run (issue #7). Needs CUDA.

    .venv/bin/python -m bench.gpu_figures

Prints: matmul FLOP/s and MFU for fp32 and bf16 (and fp8 through torch._scaled_mm where the GPU has it) against
the peak table in utils.hardware, host-to-device bandwidth from pageable and pinned memory and on-device copy
bandwidth, and bf16 vs fp32 speed and peak memory of one training step. Record the output, with the device and the
date, in docs/benchmarks.md ("GPU figures on an H100") and the issue note.
"""
from __future__ import annotations

import sys

import torch

from utils.flops import matmul_flops
from utils.hardware import current_device_name, peak_flops
from utils.models import DeepLinear
from utils.timing import time_it
from utils.transfer import copy_bandwidth
from utils.units import GB


def matmul_row(n: int, dtype: torch.dtype) -> tuple[float, float | None]:
    a, b = torch.randn(n, n, device="cuda").to(dtype), torch.randn(n, n, device="cuda").to(dtype)
    seconds = time_it(lambda: a @ b, warmup=5, repeats=20, device="cuda")
    peak = peak_flops(current_device_name(), dtype)
    rate = matmul_flops(n, n, n) / seconds  # FLOP/s
    return rate, (rate / peak if peak else None)


def fp8_row(n: int) -> tuple[float, float | None] | None:
    if torch.cuda.get_device_capability() < (8, 9) or not hasattr(torch, "_scaled_mm"):
        return None
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # _scaled_mm wants b column-major
    one = torch.tensor(1.0, device="cuda")
    seconds = time_it(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                      warmup=5, repeats=20, device="cuda")
    peak = peak_flops(current_device_name(), torch.float8_e4m3fn)
    rate = matmul_flops(n, n, n) / seconds  # FLOP/s
    return rate, (rate / peak if peak else None)


def training_step(dtype: torch.dtype) -> tuple[float, int]:
    """Seconds and peak bytes of one forward+backward+AdamW step of a DeepLinear, autocast to `dtype`."""
    model = DeepLinear(4096, 8, 4096).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    x = torch.randn(8192, 4096, device="cuda")

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    seconds = time_it(step, warmup=2, repeats=5, device="cuda")
    return seconds, torch.cuda.max_memory_allocated()


def main() -> None:
    if not torch.cuda.is_available():
        sys.exit("bench.gpu_figures needs a CUDA GPU")
    print(f"device: {current_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"{'matmul':28s} {'TFLOP/s':>9s} {'MFU':>6s}")
    for n in (4096, 8192):
        rows = [(f"n={n} fp32 (TF32 off)", matmul_row(n, torch.float32)), (f"n={n} bf16", matmul_row(n, torch.bfloat16)),
                (f"n={n} fp8 e4m3 (_scaled_mm)", fp8_row(n))]
        for label, row in rows:
            if row is None:
                print(f"{label:28s} {'skipped: needs compute capability 8.9+':>16s}")
                continue
            flops_per_second, utilization = row
            shown = f"{utilization:6.3f}" if utilization is not None else "   n/a (no peak in the table)"
            print(f"{label:28s} {flops_per_second / 1e12:9.1f} {shown}")
    nbytes = 256 * 2**20
    print(f"\ncopy of {nbytes // 2**20} MiB          GB/s")
    for label, source, target, pinned in (("host -> GPU, pageable", "cpu", "cuda", False),
                                          ("host -> GPU, pinned", "cpu", "cuda", True),
                                          ("GPU -> GPU", "cuda", "cuda", False)):
        print(f"{label:28s} {copy_bandwidth(nbytes, source, target, pinned=pinned) / GB:9.1f}")
    print("\ntraining step (DeepLinear 4096 x 8, batch 8192, AdamW)   ms    peak GB")
    base = None
    for dtype in (torch.float32, torch.bfloat16):
        seconds, peak = training_step(dtype)
        base = base or seconds
        print(f"{str(dtype):42s} {seconds * 1e3:8.1f} {peak / GB:9.2f}   ({base / seconds:.2f}x fp32 speed)")


if __name__ == "__main__":
    main()
