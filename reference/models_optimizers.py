"""Exercise 7 (models and optimizers): the references its hidden tests compare with. Instructor-only.

Tasks 1-3 (MomentumSGD, AdaGrad, AdamW) are compared with torch.optim itself, so they have nothing here.
"""
from __future__ import annotations

import torch

# State tensors the size of the parameters, per optimizer (task 5's table), each 4 bytes (fp32) per parameter.
STATE_TENSORS = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}


def state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Task 4: bytes of every tensor with at least one dimension among the values of `optimizer.state`."""
    return sum(value.numel() * value.element_size()
               for state in optimizer.state.values() for value in state.values()
               if isinstance(value, torch.Tensor) and value.dim() > 0)


def largest_model(num_gpus: int, bytes_per_gpu: int, optimizer: str, param_dtype: torch.dtype = torch.float32,
                  master_weights: bool = False, reserved_bytes_per_gpu: int = 0) -> int:
    """Task 5: most parameters whose weights and gradients (`param_dtype`), optional fp32 master copy and fp32
    optimizer state fit, sharded evenly over `num_gpus` GPUs, after the reserve on each; 0 if the reserve takes all."""
    per_param = 2 * param_dtype.itemsize + 4 * master_weights + 4 * STATE_TENSORS[optimizer]
    free_per_gpu = max(0, bytes_per_gpu - reserved_bytes_per_gpu)
    return num_gpus * free_per_gpu // per_param


# ---- hidden tests (reference/hidden.py): cases, expected results, checks -----------------------------------------
import dataclasses
import random

from reference.hidden import HiddenTest, results_list
from utils.grading import check_int
from utils.optimizer_checks import Case, compare_optimizer_run, optimizer_after_steps, reference_runs, state_bytes_slips


def _optimizer_test(torch_cls: type, cases: list[Case], state_names: set[str], task: str) -> HiddenTest:
    """An optimizer task: the student's class runs every case; torch.optim's class (and, below float64, its float64
    run of the same problem) is what each run is compared with."""
    def check(case_dicts, references, results):
        results_list(results, len(case_dicts), task)
        for case, reference, observed in zip(case_dicts, references, results):
            compare_optimizer_run(observed, Case(**case), reference, state_names, task)
    return HiddenTest(cases=lambda: [dataclasses.asdict(case) for case in cases],
                      expected=lambda case_dicts: reference_runs(torch_cls, [Case(**c) for c in case_dicts]),
                      check=check, varies="the hyperparameters, param groups (each with its own settings), float32 "
                                          "and float64, and parameters passed as a one-shot iterator")


def _momentum_cases() -> list[Case]:
    cases = []
    for dtype, seed in [(torch.float64, 1), (torch.float32, 2)]:
        cases += [Case(dict(lr=0.05, momentum=0.9), dtype=dtype, seed=seed),
                  Case(dict(lr=0.1, momentum=0.5, nesterov=True), dtype=dtype, seed=seed + 10),
                  Case(dict(lr=0.02, momentum=0.99, weight_decay=0.1), dtype=dtype, seed=seed + 20),
                  Case(dict(lr=0.05, momentum=0.8, weight_decay=0.05, nesterov=True), dtype=dtype, seed=seed + 30),
                  Case(dict(lr=0.05, momentum=0.9), groups=({"lr": 0.01, "momentum": 0.5}, {"nesterov": True}),
                       dtype=dtype, seed=seed + 40),
                  Case(dict(lr=0.03, momentum=0.7), groups=({"weight_decay": 0.2}, {"lr": 0.1}), dtype=dtype,
                       seed=seed + 50),
                  Case(dict(lr=0.04, momentum=0.6), dtype=dtype, seed=seed + 60, as_iterator=True)]
    return cases


def _adagrad_cases() -> list[Case]:
    cases = []
    for dtype, seed in [(torch.float64, 3), (torch.float32, 4)]:
        cases += [Case(dict(lr=0.1), dtype=dtype, seed=seed),
                  Case(dict(lr=0.5, eps=0.1), dtype=dtype, seed=seed + 10),
                  Case(dict(lr=0.2, initial_accumulator_value=0.5), dtype=dtype, seed=seed + 20),
                  Case(dict(lr=0.3, eps=1e-3, initial_accumulator_value=2.0), dtype=dtype, seed=seed + 30),
                  Case(dict(lr=0.1, initial_accumulator_value=1.0), groups=({"lr": 0.05}, {"eps": 1e-3}),
                       dtype=dtype, seed=seed + 40),
                  Case(dict(lr=0.2, eps=0.01), dtype=dtype, seed=seed + 50, as_iterator=True)]
    return cases


def _adamw_cases() -> list[Case]:
    cases = []
    for dtype, seed in [(torch.float64, 5), (torch.float32, 6)]:
        cases += [Case(dict(lr=0.05), dtype=dtype, seed=seed),
                  Case(dict(lr=0.1, betas=(0.8, 0.9), eps=0.1, weight_decay=0.3), dtype=dtype, seed=seed + 10),
                  Case(dict(lr=0.01, weight_decay=0.0), dtype=dtype, seed=seed + 20),
                  Case(dict(lr=0.05, betas=(0.0, 0.99), weight_decay=0.5), dtype=dtype, seed=seed + 30),
                  Case(dict(lr=0.2, betas=(0.95, 0.5), eps=1e-3), dtype=dtype, seed=seed + 40, steps=40),
                  Case(dict(lr=0.05), groups=({"lr": 0.01, "weight_decay": 0.5}, {"betas": (0.5, 0.9)}),
                       dtype=dtype, seed=seed + 50),
                  Case(dict(lr=0.02, eps=0.05), groups=({"eps": 1e-8}, {"weight_decay": 0.0}), dtype=dtype,
                       seed=seed + 60),
                  Case(dict(lr=0.03, weight_decay=0.2), dtype=dtype, seed=seed + 70, as_iterator=True)]
    return cases


def _state_bytes_cases() -> list[dict]:
    """Recipes for `utils.optimizer_checks.optimizer_after_steps`: many optimizers, models, dtypes, after 0 to 2 steps."""
    rng = random.Random(11)
    cases = []
    for name in ("SGD", "SGD(momentum=0.9)", "Adagrad", "RMSprop(centered, momentum)", "RMSprop", "Adam",
                 "Adam(amsgrad)", "AdamW", "Adadelta", "Rprop", "NAdam"):
        for dtype in (torch.float32, torch.float64, torch.bfloat16):
            shapes = [(rng.randint(1, 9), rng.randint(1, 9)) for _ in range(rng.randint(1, 4))] + [(rng.randint(1, 7),)]
            cases.append(dict(name=name, dtype=dtype, shapes=shapes, last_trainable=rng.random() < 0.5,
                              steps=rng.randint(0, 1), seed=rng.randint(0, 10**6)))
    return cases


def _check_ints(task: str, describe, explain=None) -> callable:
    """A check for a task whose results are one int per case, equal to the expected one; `explain(case, expected)`
    gives a diagnosis of a wrong one (utils/diagnosis.py)."""
    def check(cases, expected, results):
        results_list(results, len(cases), task)
        for case, want, got in zip(cases, expected, results):
            lazy = (lambda value, case=case, want=want: explain(case, want)(value)) if explain else None
            check_int(got, want, describe(case), explain=lazy)
    return check


def largest_model_slips(num_gpus: int, bytes_per_gpu: int, optimizer: str, param_dtype: torch.dtype,
                        master_weights: bool, reserved: int):
    """A diagnosis of a wrong largest_model: the bytes per parameter the answer implies, against its parts (each one
    left out or counted twice, the master copy counted without master weights), and where the reserve and the
    rounding go (per GPU or once for the cluster). The case's own numbers, said back."""
    from utils.diagnosis import Part, explain_value
    size = param_dtype.itemsize
    parts = [Part(f"the parameter itself ({param_dtype}, {size} bytes)", size),
             Part(f"its gradient ({param_dtype}, {size} bytes)", size,
                  "a gradient has its parameter's dtype"),
             Part("the fp32 master copy (4 bytes)", 4, "only with master_weights=True", counts=master_weights),
             Part(f"the optimizer's state ({STATE_TENSORS[optimizer]} fp32 tensor(s), 4 bytes each)",
                  4 * STATE_TENSORS[optimizer])]
    per_param = 2 * size + 4 * master_weights + 4 * STATE_TENSORS[optimizer]
    free = max(0, bytes_per_gpu - reserved)
    ways = {"it rounds down on each GPU, then multiplies by the GPUs: the state is split evenly, so round down once, "
            "for the whole cluster": num_gpus * (free // per_param),
            "the reserve is set aside once for the cluster: it is set aside on every GPU":
                max(0, num_gpus * bytes_per_gpu - reserved) // per_param,
            "it counts one GPU's memory: sharding spreads the state over all of them": free // per_param}

    reserve = ("no reserve" if reserved == 0 else "a reserve that takes the whole card" if reserved >= bytes_per_gpu
               else "a reserve on each GPU")
    case = (f"the case that failed: {'one GPU' if num_gpus == 1 else f'{num_gpus} GPUs'}, {reserve}, {optimizer}, "
            f"{str(param_dtype).removeprefix('torch.')} parameters, {'with' if master_weights else 'no'} master weights")

    def slip(got: object) -> str | None:
        for words, value in ways.items():
            if got == value:
                return words
        if type(got) is not int or got <= 0 or free == 0:
            return None
        implied = num_gpus * free / got
        for bpp in range(1, 64):   # the whole bytes per parameter that gives this answer, if one does
            if num_gpus * free // bpp == got and bpp != per_param:
                said = explain_value(bpp, per_param, parts, rel_tol=0, noun="bytes per parameter")
                return said or (f"your answer fits {bpp} bytes per parameter (the memory over your count is "
                                f"{implied:.4g}); this case holds {per_param}")
        return None

    def explain(got: object) -> str:
        found = slip(got)
        return f"{found} ({case})" if found else case
    return explain


def _largest_model_cases() -> list[tuple]:
    rng = random.Random(5)
    cases = []
    optimizers = ["sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw"]
    dtypes = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
    for _ in range(300):
        num_gpus = rng.choice([1, 2, 8, 64, 1024, rng.randint(1, 5000)])
        bytes_per_gpu = rng.choice([80 * 10**9, 141 * 10**9, 40 * 10**9, 24 * 2**30, 16 * 2**30,
                                    rng.randint(10**9, 2 * 10**11)])
        reserved = rng.choice([0, 0, 10**10, rng.randint(0, bytes_per_gpu), bytes_per_gpu,
                               bytes_per_gpu + rng.randint(1, 10**10)])
        cases.append((num_gpus, bytes_per_gpu, rng.choice(optimizers), rng.choice(dtypes), rng.random() < 0.5, reserved))
    return cases


HIDDEN_TESTS = {
    "MomentumSGD": _optimizer_test(torch.optim.SGD, _momentum_cases(), {"momentum_buffer"}, "MomentumSGD"),
    "AdaGrad": _optimizer_test(torch.optim.Adagrad, _adagrad_cases(), {"sum"}, "AdaGrad"),
    "AdamW": _optimizer_test(torch.optim.AdamW, _adamw_cases(), {"exp_avg", "exp_avg_sq"}, "AdamW"),
    "state_bytes": HiddenTest(
        cases=_state_bytes_cases,
        expected=lambda cases: [state_bytes(optimizer_after_steps(**recipe)) for recipe in cases],
        check=_check_ints("state_bytes", lambda r: f"state_bytes for {r['name']}, {r['dtype']}, shapes {r['shapes']}, "
                                                   f"after {r['steps']} step(s)",
                          lambda r, want: state_bytes_slips(optimizer_after_steps(**r), want)),
        varies="the optimizer (eleven of torch.optim's, some with 0-dim state), the dtype, frozen parameters and "
               "whether a step was taken"),
    "largest_model": HiddenTest(
        cases=_largest_model_cases,
        expected=lambda cases: [largest_model(*args) for args in cases],
        check=_check_ints("largest_model", lambda a: f"largest_model({a[0]}, {a[1]}, {a[2]!r}, {a[3]}, "
                                                     f"master_weights={a[4]}, reserved_bytes_per_gpu={a[5]})",
                          lambda a, want: largest_model_slips(*a)),
        varies="the GPU count, the memory per GPU, every optimizer, fp16/bf16/fp64 parameters, master weights and "
               "reserves up to and beyond the whole card"),
}


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import GIB_FOR_GB, within_percent

HIDDEN_TESTS["adamw_gb"] = napkin_test(
    {'parameters': 13000000000},
    lambda parameters, parameter_bytes, gradient_bytes, first_moment_bytes, second_moment_bytes, bytes_per_gb: parameters * (parameter_bytes + gradient_bytes + first_moment_bytes + second_moment_bytes) / bytes_per_gb,
    "adamw_gb", "GB", within_percent(5),
    {**GIB_FOR_GB, 0.5: "parameters and gradients only? AdamW also keeps two fp32 moments per parameter.",
     0.75: "12 bytes per parameter: one of AdamW's two moments (m and v) left out, or the gradient? Training holds the "
           "parameter, its gradient and both moments, 4 bytes each.",
     1.25: "a master copy counted too? In fp32 training the parameters are the weights the optimizer updates: there is no other copy."},
    conventions={"parameter_bytes": (4, "the 4 bytes of each fp32 parameter"), "gradient_bytes": (4, "the 4 bytes of its fp32 gradient"),
                 "first_moment_bytes": (4, "the 4 bytes of AdamW's first moment m"), "second_moment_bytes": (4, "the 4 bytes of AdamW's second moment v"),
                 "bytes_per_gb": (1e9, "the 10^9 bytes of a GB")})
