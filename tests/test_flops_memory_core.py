"""The core FLOP and memory formulas, checked against torch (FlopCounterMode, real optimizer state)."""
import torch

from reference.flops_mfu import matmul_mfu, training_days
from utils.flops import count_flops, matmul_flops
from utils.memory import bytes_per_param, largest_model_params, optimizer_state_bytes
from utils.units import GB


def test_matmul_flops_match_flop_counter():
    for m, k, n in [(1, 1, 1), (3, 5, 7), (64, 32, 16)]:
        a, b = torch.randn(m, k), torch.randn(k, n)
        assert count_flops(torch.matmul, a, b) == matmul_flops(m, k, n)


def test_training_days_and_mfu():
    assert round(training_days(70e9, 15e12, 1024, 989.5e12, 0.5)) == 144  # 6.3e24 FLOPs at 4.38e22 FLOPs a day
    half_peak_seconds = matmul_flops(4096, 4096, 4096) / (989.5e12 / 2)  # the time at half the H100's bf16 peak
    assert abs(matmul_mfu(4096, 4096, 4096, half_peak_seconds, "NVIDIA H100 80GB HBM3", torch.bfloat16) - 0.5) < 1e-12


def test_optimizer_state_bytes_match_torch():
    model = torch.nn.Linear(10, 7)
    params = sum(p.numel() for p in model.parameters())
    for name, opt in [("sgd", torch.optim.SGD(model.parameters(), lr=0.1)),
                      ("momentum", torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)),
                      ("adagrad", torch.optim.Adagrad(model.parameters())),
                      ("adamw", torch.optim.AdamW(model.parameters()))]:
        model(torch.randn(3, 10)).sum().backward()
        opt.step()
        held = sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values()
                   if torch.is_tensor(v) and v.dim() > 0)  # the 0-dim 'step' counters are not per-parameter state
        assert held == optimizer_state_bytes(params, name), name


def test_sixteen_bytes_per_param_and_what_fits():
    assert bytes_per_param("adamw") == 16
    assert bytes_per_param("adamw", torch.bfloat16, master_weights=True) == 16
    assert largest_model_params(8 * 80 * GB, 16) == 40 * 10**9
    assert largest_model_params(80 * GB, 16) == 5 * 10**9
