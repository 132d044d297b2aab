import time

import pytest
import torch

from utils.device import describe_device, get_device, skip_unless_cuda
from utils.hardware import (
    DEVICE_NAMES,
    MEMORY_BANDWIDTH,
    PEAK_FLOPS,
    SAME_COMPUTE,
    explain_peak,
    gpu_key,
    memory_bandwidth,
    peak_flops,
)
from utils.timing import time_it


# What torch.cuda.get_device_name() prints on each card (the strings its driver reports).
@pytest.mark.parametrize("name, key", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA B200", "B200"),
    ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA A100-SXM4-40GB", "A100 40GB"), ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"), ("Tesla T4", "T4"), ("NVIDIA L4", "L4"), ("NVIDIA L40", "L40"),
    ("NVIDIA L40S", "L40S"), ("NVIDIA A10", "A10"), ("NVIDIA A10G", "A10G"), ("Tesla V100-SXM2-16GB", "V100"),
    ("Tesla V100-PCIE-32GB", "V100 PCIe"), ("NVIDIA GeForce RTX 4090", "RTX 4090"), ("NVIDIA GeForce RTX 3090", "RTX 3090"),
    ("nvidia  h100 80gb hbm3", "H100 SXM"), ("H100 SXM", "H100 SXM"), ("A100", "A100"),
    # near misses get nothing rather than a neighbour's peak
    ("NVIDIA GH200 480GB", None), ("NVIDIA GeForce RTX 3090 Ti", None), ("NVIDIA GeForce RTX 4090 D", None),
    ("NVIDIA L4 Ti", None), ("NVIDIA RTX A6000", None), ("cpu", None), ("Intel Arc", None), ("Apple M2", None)])
def test_gpu_names_map_to_table_keys(name, key):
    assert gpu_key(name) == key


def test_look_alike_cards_get_their_own_figures():
    assert peak_flops("NVIDIA L40", torch.bfloat16) == 181e12 != peak_flops("NVIDIA L4", torch.bfloat16)
    assert peak_flops("NVIDIA A10G", torch.bfloat16) is None           # no data sheet: unknown, not the A10's 125
    assert peak_flops("NVIDIA A10", torch.bfloat16) == 125e12
    assert peak_flops("NVIDIA A100 80GB PCIe", torch.bfloat16) == peak_flops("NVIDIA A100-SXM4-40GB", torch.bfloat16) == 312e12
    assert memory_bandwidth("NVIDIA A100-SXM4-40GB") == 1.555e12 and memory_bandwidth("NVIDIA A100 80GB PCIe") == 1.935e12
    assert memory_bandwidth("NVIDIA A10G") == 600e9 and memory_bandwidth("NVIDIA GH200 480GB") is None


def test_every_table_key_has_a_bandwidth_and_every_name_a_key():
    assert set(MEMORY_BANDWIDTH) == set(PEAK_FLOPS) | set(SAME_COMPUTE)
    assert set(DEVICE_NAMES.values()) <= set(MEMORY_BANDWIDTH)


def test_dense_peaks_from_the_course():
    assert peak_flops("NVIDIA H100 80GB HBM3", torch.bfloat16) == 989.5e12  # not the 1979 sparse figure
    assert peak_flops("NVIDIA H100 80GB HBM3", torch.float32) == 67e12
    assert peak_flops("NVIDIA A100-SXM4-40GB", torch.bfloat16) == 312e12
    assert peak_flops("NVIDIA A100-SXM4-40GB", torch.float32) == 19.5e12
    assert 989.5e12 / 3.35e12 == pytest.approx(295, abs=1)  # the H100 ridge point the FLOPs topic uses


def test_unknown_device_or_dtype_gives_none_not_a_crash():
    assert peak_flops("cpu", torch.float32) is None
    assert peak_flops("Tesla T4", torch.bfloat16) is None
    assert "cannot be computed" in explain_peak("cpu", torch.float32)
    assert all(v > 1e12 for table in PEAK_FLOPS.values() for v in table.values())  # never a fake peak of 1


def test_time_it_returns_median_seconds_after_warmup():
    calls = []

    def fn():
        calls.append(1)
        time.sleep(0.01)

    seconds = time_it(fn, warmup=2, repeats=3)
    assert len(calls) == 5 and 0.009 < seconds < 0.5


def test_device_description_on_this_machine(capsys):
    device = get_device()
    line = describe_device()
    assert str(torch.__version__) in line and "\n" not in line
    if device.type == "cpu":
        assert line.startswith("CPU only")
        assert skip_unless_cuda("a demo") is False
        assert capsys.readouterr().out == "Skipped: a demo needs a CUDA GPU, and this machine has none.\n"
