"""Exercise 8 (the training loop): the references its hidden tests compare with. Instructor-only.

A run draws random numbers from four generators: Python's `random`, numpy's global one, torch's global one (model
initialization, dropout) and a separate `torch.Generator` that picks the batches; on a GPU also CUDA's. The
checkpoint stores all of them as tensors and plain Python values that `torch.load(weights_only=True)` accepts.
"""
from __future__ import annotations

import copy
import random
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from jaxtyping import Int
from torch import Tensor, nn


def get_batch(data: np.ndarray, batch_size: int, context_length: int, device: torch.device | str,
              generator: torch.Generator) -> tuple[Int[Tensor, "batch seq"], Int[Tensor, "batch seq"]]:
    """Task 1: random windows of `data` (a memmap or any array-like), reading only the windows, as int64 inputs and
    next-token targets on `device`; through pinned memory on CUDA."""
    device = torch.device(device)
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([data[start : start + context_length + 1] for start in starts]).astype(np.int64)
    inputs, targets = torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())
    if device.type == "cuda":  # page-locked host memory lets the copy run while the CPU moves on
        return inputs.pin_memory().to(device, non_blocking=True), targets.pin_memory().to(device, non_blocking=True)
    return inputs.to(device), targets.to(device)


def seed_everything(seed: int) -> None:
    """Task 2: seed Python's `random`, numpy's global generator and torch's (which covers every CUDA device)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(model: nn.Module, optimizer: torch.optim.Optimizer, data: np.ndarray, num_steps: int, batch_size: int,
          context_length: int, generator: torch.Generator, accumulation_steps: int = 1) -> list[float]:
    """Task 3: `num_steps` optimizer steps, each on the gradient of `accumulation_steps` micro-batches of
    `batch_size` windows (their mean loss); returns each step's loss, the mean of its micro-batches' losses."""
    device = next(model.parameters()).device
    history = []
    for _ in range(num_steps):
        total = 0.0
        for _ in range(accumulation_steps):
            inputs, targets = get_batch(data, batch_size, context_length, device, generator)
            loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
            (loss / accumulation_steps).backward()  # backward adds into .grad: the mean over the micro-batches
            total += loss.item()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        history.append(total / accumulation_steps)
    return history


def rng_state(generator: torch.Generator) -> dict:
    """Every generator's state; numpy's 624 key words as an int64 tensor, since weights_only refuses numpy arrays."""
    name, keys, position, has_gauss, cached_gaussian = np.random.get_state()
    state = {"python": random.getstate(),
             "numpy": (name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached_gaussian),
             "torch": torch.get_rng_state(), "batches": generator.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict, generator: torch.Generator) -> None:
    """Put every generator back where `rng_state` found it."""
    name, keys, position, has_gauss, cached_gaussian = state["numpy"]
    random.setstate(state["python"])
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached_gaussian))
    torch.set_rng_state(state["torch"])
    generator.set_state(state["batches"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer, step: int,
                    generator: torch.Generator) -> None:
    """Task 4: parameters, optimizer state, steps done and every random state, loadable with weights_only=True."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "rng": rng_state(generator)}, path)


def load_checkpoint(path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer,
                    generator: torch.Generator) -> int:
    """Task 5: restore a `save_checkpoint` file into `model`, `optimizer` and every generator; return its step."""
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    restore_rng_state(checkpoint["rng"], generator)
    return checkpoint["step"]


# ---- hidden tests (reference/hidden.py): cases, expected results, checks -----------------------------------------
import contextlib

import utils.training as lecture
from reference.hidden import HiddenTest
from utils import cost as _cost
from utils.grading import check_as_accurate_as_torch, check_float, check_int, check_str, check_tensor, check_type
from utils.models import TinyLM
from utils.training import NoisyTinyLM, exercise_tokens, make_optimizer, run_to_checkpoint


@contextlib.contextmanager
def _one_thread():
    """The notebook runs torch on one thread: the expected runs do too, so that they are the same bits."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _global_draws() -> list:
    """What torch's, numpy's and Python's global generators give next (the hidden tests draw the same)."""
    return [torch.rand(2), torch.from_numpy(np.random.rand(2)), random.random()]


def _seeded_draws(seed: int) -> list:
    """The draws `_global_draws` gives right after the three global generators are seeded with `seed`."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return _global_draws()


def _check_list(results: object, count: int, what: str) -> None:
    check_type(results, list, f"{what}: the results handed in")
    check_int(len(results), count, f"{what}: how many results were handed in")


def _check_dict(value: object, what: str) -> dict:
    check_type(value, dict, what)
    return value


def _check_batch(got: object, want: tuple, what: str) -> None:
    check_type(got, tuple, what, hint="return a tuple (inputs, targets).")
    check_int(len(got), 2, f"length of {what}", hint="return a tuple (inputs, targets).")
    check_tensor(got[0], want[0], f"inputs of {what}")
    check_tensor(got[1], want[1], f"targets of {what}")


def _check_global_draws(got: object, case_seed: int, what: str) -> None:
    want = _seeded_draws(case_seed)
    check_type(got, list, f"the global generators' draws after {what}")
    check_int(len(got), 3, f"the global generators' draws after {what}")
    hint = "use only `generator`, never a global generator."
    check_tensor(got[0], want[0], f"torch's global random state after {what}", hint=hint)
    check_tensor(got[1], want[1], f"numpy's global random state after {what}", hint=hint)
    check_float(got[2], want[2], f"Python's global random state after {what}", hint=hint)


# ---- task 1: get_batch
LENT = f"the grader's file of {_cost.BATCH_FILE_TOKENS:,} tokens"  # the case the cost budget is measured on


class _TokenFile:
    """The tokens of the file the grader lends the measured part (utils.cost.token_bytes: 0, 1, 2, ... wrapping at
    65536), read as a memmap is: len() and slices, made when read."""

    def __len__(self) -> int:
        return _cost.BATCH_FILE_TOKENS

    def __getitem__(self, where: slice) -> np.ndarray:
        return (np.arange(*where.indices(len(self))) % 65536).astype(np.uint16)


def _get_batch_cases() -> list[dict]:
    """Windows of small token arrays, and, at a place drawn at random among them, the call the cost budget is measured
    on (issue #60): a batch of 8 windows of 65 tokens from a memmap of the 32 MiB file the grader lends."""
    cases = []
    for tokens in ("chain(5000, 100, 3, seed=11)", "chain(5000, 100, 3, seed=11) as int32", "7 x arange(3000) as int64",
                   "[5, 9]"):
        length = len(exercise_tokens(tokens))
        for batch_size, context_length in [(1, 1), (3, 5), (16, 32), (5, length - 1), (2, length // 2)]:
            if context_length >= length or context_length < 1:
                continue
            for seed in (0, 7):
                for device_object in (False, True):
                    cases.append(dict(tokens=tokens, memmap=tokens == "chain(5000, 100, 3, seed=11)",
                                      batch_size=batch_size, context_length=context_length, seed=seed, device="cpu",
                                      device_object=device_object, global_seed=len(cases), lent=False))
    lent = dict(tokens=LENT, memmap=True, batch_size=_cost.BATCH_SIZE, context_length=_cost.BATCH_CONTEXT, seed=3,
                device="cpu", device_object=False, global_seed=len(cases), lent=True)
    cases.insert(random.Random(8).randrange(len(cases) + 1), lent)
    if torch.cuda.is_available():
        for seed in (0, 1):
            cases.append(dict(tokens="chain(5000, 100, 3, seed=11)", memmap=True, batch_size=8, context_length=16,
                              seed=seed, device="cuda", device_object=False, global_seed=len(cases), lent=False))
    return cases


def _describe_get_batch(case: dict) -> str:
    kind = "a memmap of " if case["memmap"] else ""
    device = f"torch.device({case['device']!r})" if case["device_object"] else repr(case["device"])
    return (f"get_batch({kind}{case['tokens']}, {case['batch_size']}, {case['context_length']}, {device}, "
            f"torch.Generator().manual_seed({case['seed']}))")


def _get_batch_expected(cases: list[dict]) -> list[dict]:
    expected = []
    for case in cases:
        generator = torch.Generator().manual_seed(case["seed"])
        data = _TokenFile() if case["lent"] else exercise_tokens(case["tokens"])
        batch = get_batch(data, case["batch_size"], case["context_length"], "cpu", generator)
        expected.append({"batch": batch, "generator": generator.get_state()})
    return expected


def _get_batch_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "get_batch")
    for case, want, result in zip(cases, expected, results):
        what = _describe_get_batch(case)
        result = _check_dict(result, f"what was handed in for {what}")
        _check_batch(result.get("batch"), want["batch"], what)
        devices = result.get("devices")
        check_type(devices, list, f"the devices of {what}")
        for device in devices:
            check_str(device, "cuda:0" if case["device"] == "cuda" else "cpu", f"the device of the tensors of {what}",
                      hint="move both tensors to `device`.")
        check_tensor(result.get("generator"), want["generator"], f"the generator's state after {what}",
                     hint="draw the starts with one torch.randint(..., generator=generator) call.")
        _check_global_draws(result.get("global_draws"), case["global_seed"], what)


# ---- task 2: seed_everything
SEEDS = (1, 42, 2025, 123456789, 2**31 - 1)


def _seed_cases() -> dict:
    return {"seeds": list(SEEDS), "cuda": torch.cuda.is_available()}


def _seed_expected(cases: dict) -> list:
    expected = []
    for seed in cases["seeds"]:
        seed_everything(seed)
        expected.append([torch.rand(3), torch.from_numpy(np.random.rand(3)), random.random()])
    return expected


def _seed_check(cases, expected, results) -> None:
    _check_list(results, len(cases["seeds"]), "seed_everything")
    for seed, want, got in zip(cases["seeds"], expected, results):
        check_type(got, list, f"the draws after seed_everything({seed})")
        check_int(len(got), 4, f"the draws after seed_everything({seed})")
        check_tensor(got[0], want[0], f"torch.rand(3) after seed_everything({seed})", hint="torch's global generator was not seeded with `seed` (lecture 8, section 3).")
        check_tensor(got[1], want[1], f"np.random.rand(3) after seed_everything({seed})", hint="numpy's global generator was not seeded with `seed` (lecture 8, section 3).")
        check_float(got[2], want[2], f"random.random() after seed_everything({seed})", hint="Python's random module was not seeded with `seed` (lecture 8, section 3).")
        if cases["cuda"]:
            check_int(got[3], seed, f"torch.cuda.initial_seed() after seed_everything({seed})",
                      hint="torch.manual_seed seeds every CUDA device too.")


# ---- task 3: train, on batches handed in as cases (the course's correct get_batch, as a table)
TRAIN_RUNS = [  # vocab, optimizer, steps, batch_size, context_length, micro-batches, tokens
    (64, ("AdamW", {"lr": 1e-2}), 25, 8, 16, 1, "chain(4000, 64, 4, seed=9)"),
    (20, ("SGD", {"lr": 0.1, "momentum": 0.9}), 20, 4, 7, 3, "chain(4000, 20, 2, seed=5)"),
    (100, ("AdamW", {"lr": 3e-3, "weight_decay": 0.1}), 15, 2, 33, 2, "arange(5000) % 100"),
    (64, ("Adam", {"lr": 1e-3}), 12, 1, 5, 4, "chain(4000, 64, 4, seed=9)"),
    (64, ("Adam", {"lr": 1e-3}), 0, 8, 8, 2, "chain(4000, 64, 4, seed=9)"),
]


def _train_cases() -> list[dict]:
    cases = []
    for vocab, optimizer, steps, batch_size, context_length, micro, tokens in TRAIN_RUNS:
        data, generator = exercise_tokens(tokens), torch.Generator().manual_seed(steps)
        batches = [list(get_batch(data, batch_size, context_length, "cpu", generator)) for _ in range(steps * micro)]
        cases.append(dict(vocab=vocab, optimizer=optimizer, steps=steps, batch_size=batch_size,
                          context_length=context_length, micro=micro, tokens=tokens, init_seed=vocab + steps,
                          batches=batches))
    return cases


def _describe_train(case: dict) -> str:
    return (f"train on a {case['vocab']}-token vocabulary with {case['optimizer'][0]}{case['optimizer'][1]}, "
            f"{case['steps']} steps of {case['micro']} micro-batch(es) of ({case['batch_size']}, "
            f"{case['context_length']})")


def _train_expected(cases: list[dict]) -> list[dict]:
    expected = []
    with _one_thread():
        for case in cases:
            torch.manual_seed(case["init_seed"])
            model = TinyLM(case["vocab"], 12, 24)
            exact_model = copy.deepcopy(model).double()  # the same run in float64: what float32 runs approximate
            runs = []
            for m in (model, exact_model):
                losses = train(m, make_optimizer(case["optimizer"], m.parameters()), exercise_tokens(case["tokens"]),
                               case["steps"], case["batch_size"], case["context_length"],
                               torch.Generator().manual_seed(case["steps"]), case["micro"])
                runs.append((losses, {name: p.detach().clone() for name, p in m.named_parameters()}))
            expected.append({"float32": runs[0], "float64": runs[1]})
    return expected


def _train_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "train")
    for case, want, result in zip(cases, expected, results):
        what = _describe_train(case)
        result = _check_dict(result, f"what was handed in for {what}")
        got = result.get("losses")
        check_type(got, list, what, hint="return a list with one loss per step.")
        calls = result.get("calls")
        check_str(str(calls), str([[case["batch_size"], case["context_length"]]] * (case["steps"] * case["micro"])),
                  f"the (batch_size, context_length) of each get_batch call in {what}",
                  hint="call get_batch(data, batch_size, context_length, ...) once per micro-batch.")
        check_int(len(got), case["steps"], f"number of losses of {what}", hint="one loss per optimizer step.")
        for loss in got:
            check_type(loss, float, f"each loss of {what}", hint="loss.item() turns a 0-dim tensor into a float.")
        (want_losses, want_params), (exact_losses, exact_params) = want["float32"], want["float64"]
        # as close to the float64 run as the reference's float32 run, up to rounding (rules at the top)
        check_as_accurate_as_torch(torch.tensor(got, dtype=torch.float32), torch.tensor(want_losses, dtype=torch.float32),
                                   torch.tensor(exact_losses, dtype=torch.float64), f"losses of {what}",
                                   hint="the step's loss is the mean of its micro-batches' losses, and their gradients "
                                        "must add up to the gradient of that mean (lecture 8, section 4).")
        params = _check_dict(result.get("params"), f"the parameters after {what}")
        for name, tensor in want_params.items():
            check_as_accurate_as_torch(params.get(name), tensor, exact_params[name], f"parameter {name} after {what}",
                                       hint="step once per accumulation_steps micro-batches, then zero the gradients.")


# ---- task 4: save_checkpoint (files written in the notebook's process, observed there as plain data)
CHECKPOINT_RUNS = [dict(seed=1, steps=4, optimizer=("AdamW", {"lr": 1e-2}), tokens="chain(3000, 64, 4, seed=4)"),
                   dict(seed=2, steps=7, optimizer=("SGD", {"lr": 0.1, "momentum": 0.9}), tokens="chain(3000, 64, 4, seed=4)")]


def _save_cases() -> list[dict]:
    return [dict(run, cuda=torch.cuda.is_available()) for run in CHECKPOINT_RUNS]


def _save_expected(cases: list[dict]) -> list[dict]:
    expected = []
    with _one_thread():
        for case in cases:
            model, optimizer, generator = run_to_checkpoint(seed_everything, case["seed"], case["steps"],
                                                            case["optimizer"], case["tokens"])
            numpy_keys = np.random.get_state()[1]
            expected.append({
                "model": {name: t.clone() for name, t in model.state_dict().items()},
                "optimizer": {index: {key: t.clone() for key, t in state.items()}
                              for index, state in optimizer.state_dict()["state"].items()},
                "lr": optimizer.state_dict()["param_groups"][0]["lr"],
                "torch": torch.get_rng_state(), "generator": generator.get_state(),
                "numpy_words": torch.from_numpy(numpy_keys.astype(np.int64)),
                "numpy_bytes": torch.from_numpy(numpy_keys.astype("<u4").view(np.uint8).copy()),
                "python_words": torch.tensor(random.getstate()[1], dtype=torch.int64),
                "params": {name: p.detach().clone() for name, p in model.named_parameters()},
                "after": [torch.rand(2), torch.rand(2, generator=generator), torch.from_numpy(np.random.rand(2)),
                          random.random()]})
    return expected


def _save_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "save_checkpoint")
    for case, want, result in zip(cases, expected, results):
        what = f"the checkpoint after {case['steps']} steps with {case['optimizer'][0]}"
        result = _check_dict(result, f"what was handed in for {what}")
        if result.get("missing"):
            raise AssertionError(f"save_checkpoint wrote no file at `path` ({what}).\nHint: torch.save(checkpoint, path).")
        if result.get("load_error") is not None:
            raise AssertionError(f"torch.load(path, weights_only=True) refused {what}: {result['load_error']}\n"
                                 "Hint: store only tensors and plain Python values; convert numpy's state array.")
        checkpoint = _check_dict(result.get("checkpoint"), what)
        check_int(checkpoint.get("step"), case["steps"], f"'step' of {what}")
        _check_saved_state(checkpoint, want, what)
        _check_saved_rng(checkpoint, case, want, result, what)
        _check_nothing_drawn(result, want, what)


def _check_saved_state(checkpoint: dict, want: dict, what: str) -> None:
    """The checkpoint's model and optimizer state dicts, and its learning rate."""
    saved_model = checkpoint.get("model")
    if type(saved_model) is not dict:
        raise AssertionError(f"'model' of {what} is not a state dict.\nHint: save what the model's state dict holds, its "
                             "tensors by name, not the model object (lecture 8, section 6).")
    check_int(len(saved_model), len(want["model"]), f"number of tensors in 'model' of {what}")
    for name, tensor in want["model"].items():
        check_tensor(saved_model.get(name), tensor, f"'model'[{name!r}] of {what}")
    saved_optimizer = checkpoint.get("optimizer")
    if type(saved_optimizer) is not dict or type(saved_optimizer.get("state")) is not dict:
        raise AssertionError(f"'optimizer' of {what} is not a state dict.\nHint: save what the optimizer's state dict "
                             "holds, its state tensors and settings, not the optimizer object (lecture 8, section 6).")
    for index, state in want["optimizer"].items():
        saved_state = _check_dict(saved_optimizer["state"].get(str(index)), f"'optimizer' state {index} of {what}")
        for key, tensor in state.items():
            check_tensor(saved_state.get(key), tensor, f"'optimizer' state {index} {key!r} of {what}")
    groups = saved_optimizer.get("param_groups")
    check_type(groups, list, f"'param_groups' of the optimizer in {what}")
    check_float(_check_dict(groups[0] if groups else None, f"param group 0 in {what}").get("lr"), want["lr"],
                f"lr in {what}")


def _check_saved_rng(checkpoint: dict, case: dict, want: dict, result: dict, what: str) -> None:
    """The checkpoint's 'rng' holds every random state: torch's, the generator's, numpy's, Python's (and CUDA's)."""
    rng = checkpoint.get("rng")
    if not lecture.holds_state(rng, want["torch"]):
        raise AssertionError(f"'rng' of {what} does not hold torch.get_rng_state().")
    if not lecture.holds_state(rng, want["generator"]):
        raise AssertionError(f"'rng' of {what} does not hold generator.get_state().")
    if not (lecture.holds_state(rng, want["numpy_words"]) or lecture.holds_state(rng, want["numpy_bytes"])):
        raise AssertionError(f"'rng' of {what} does not hold the 624 key words of np.random.get_state().")
    if not lecture.holds_state(rng, want["python_words"]):
        raise AssertionError(f"'rng' of {what} does not hold random.getstate().")
    if case["cuda"]:
        cuda_states = result.get("cuda_states")
        check_type(cuda_states, list, "CUDA's random states before saving")
        if not all(type(s) is torch.Tensor and lecture.holds_state(rng, s) for s in cuda_states):
            raise AssertionError(f"'rng' of {what} does not hold torch.cuda.get_rng_state_all().")


def _check_nothing_drawn(result: dict, want: dict, what: str) -> None:
    """Saving drew no random number and changed no parameter."""
    after = result.get("after")
    check_type(after, list, f"the draws after saving {what}")
    check_int(len(after), 4, f"the draws after saving {what}")
    check_tensor(after[0], want["after"][0], "torch's random state after save_checkpoint", hint="saving must not draw numbers.")
    check_tensor(after[1], want["after"][1], "the generator's state after save_checkpoint", hint="saving must not draw numbers.")
    check_tensor(after[2], want["after"][2], "numpy's random state after save_checkpoint", hint="saving must not draw numbers.")
    check_float(after[3], want["after"][3], "Python's random state after save_checkpoint", hint="saving must not draw numbers.")
    params = _check_dict(result.get("params"), f"the parameters after saving {what}")
    for name, tensor in want["params"].items():
        check_tensor(params.get(name), tensor, f"parameter {name} after save_checkpoint")


# ---- task 5: load_checkpoint, checked against the run that never stopped (computed here)
RESUME_RUNS = [  # label, vocab, optimizer, seed, steps, stop, batch_size, context_length, tokens
    ("noisy TinyLM, AdamW, 12 steps, checkpoint after 5", 64, ("AdamW", {"lr": 1e-2, "weight_decay": 0.1}), 3, 12, 5,
     8, 16, "chain(3000, 64, 4, seed=6)"),
    ("noisy TinyLM, SGD with momentum, 9 steps, checkpoint after 1", 50, ("SGD", {"lr": 0.3, "momentum": 0.9}), 8, 9,
     1, 4, 9, "13 x arange(7000) % 50"),
    ("noisy TinyLM, Adam, 8 steps, checkpoint after 7", 64, ("Adam", {"lr": 3e-3}), 21, 8, 7, 2, 32,
     "chain(3000, 64, 4, seed=6)"),
]


def _load_cases() -> list[dict]:
    """The resume runs, each with the stand-in checkpoint a load_checkpoint gets when task 4's file would not resume
    any run (utils.training.checkpoint_problem): this module's save_checkpoint at the same point of the same run, as
    the notebook's test makes it, in the layout task 4's text states, as bytes (a uint8 tensor)."""
    keys = ("label", "vocab", "optimizer", "seed", "steps", "stop", "batch_size", "context_length", "tokens")
    cases = [dict(zip(keys, run), cuda=torch.cuda.is_available()) for run in RESUME_RUNS]
    return [dict(case, stand_in=_stand_in(case)) for case in cases]


def _stand_in(case: dict) -> torch.Tensor:
    """The checkpoint the notebook's resumed run would save after `stop` steps, as its bytes."""
    import io

    def seed_all(seed: int) -> None:   # as the notebook's test seeds a fresh run
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

    before = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    try:
        with _one_thread():
            seed_all(case["seed"])
            model = NoisyTinyLM(case["vocab"], case["cuda"])
            optimizer = make_optimizer(case["optimizer"], model.parameters())
            generator = torch.Generator().manual_seed(case["seed"] + 1)
            lecture.train(model, optimizer, lecture.Batches(exercise_tokens(case["tokens"]), case["stop"],
                                                            case["batch_size"], case["context_length"], generator))
            buffer = io.BytesIO()
            save_checkpoint(buffer, model, optimizer, case["stop"], generator)
    finally:
        random.setstate(before[0])
        np.random.set_state(before[1])
        torch.set_rng_state(before[2])
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8).clone()


def _load_expected(cases: list[dict]) -> list[dict]:
    """The runs that never stopped: the lecture's loop (the one the notebook resumes with) from seed_everything."""
    expected = []
    with _one_thread():
        for case in cases:
            seed_everything(case["seed"])
            model = NoisyTinyLM(case["vocab"], case["cuda"])
            optimizer = make_optimizer(case["optimizer"], model.parameters())
            generator = torch.Generator().manual_seed(case["seed"] + 1)
            losses = lecture.train(model, optimizer, lecture.Batches(exercise_tokens(case["tokens"]), case["steps"],
                                                                     case["batch_size"], case["context_length"], generator))
            expected.append({"losses": losses, "params": [p.detach().clone() for p in model.parameters()]})
    return expected


def _load_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "load_checkpoint")
    for case, want, result in zip(cases, expected, results):
        result = _check_dict(result, f"what was handed in for {case['label']}")
        problem = result.get("stand_in")
        label = case["label"] if type(problem) is not str else (
            f"{case['label']}, on the grader's stand-in file: your save_checkpoint's file would not resume a run "
            f"({problem[:200]}; task 4), so task 5 was checked on a file in the layout task 4's text gives")
        flags = result.get("weights_only")
        if type(flags) is not list or not flags or any(flag is not True for flag in flags):
            raise AssertionError(f"load_checkpoint must read the file with torch.load(path, weights_only=True) ({label}).")
        check_int(result.get("step"), case["stop"], f"the step load_checkpoint returned ({label})",
                  hint="return the step the checkpoint was saved at, as an int (task 4 saved it).")
        losses = result.get("losses")
        check_type(losses, list, f"the losses of the resumed run ({label})")
        check_int(len(losses), len(want["losses"]), f"the number of losses of the resumed run ({label})")
        for loss in losses:
            check_type(loss, float, f"each loss of the resumed run ({label})")
        check_tensor(torch.tensor(losses, dtype=torch.float64), torch.tensor(want["losses"], dtype=torch.float64),
                     f"losses of the resumed run ({label})",
                     hint="restore the model, the optimizer and every random state (Python, numpy, torch, the generator"
                          + (", CUDA" if case["cuda"] else "") + ").")
        params = result.get("params")
        check_type(params, list, f"the parameters after resuming ({label})")
        check_int(len(params), len(want["params"]), f"the parameters after resuming ({label})")
        for index, (p, q) in enumerate(zip(params, want["params"])):
            check_tensor(p, q, f"parameter {index} after resuming ({label})")
        moved = result.get("moved_weights_loaded")
        if type(problem) is not str and (type(moved) is not list or not moved or any(m is not True for m in moved)):
            raise AssertionError(f"load_checkpoint did not give the model the weights stored in its file ({label}): "
                                 "the test moved every weight stored in the file by 1 and wrote it again under "
                                 "another name, and the model got other weights.\nHint: restore the model and the "
                                 "optimizer from what loading the file returns, not from anything "
                                 "kept in memory.")


HIDDEN_TESTS = {
    "get_batch": HiddenTest(cases=_get_batch_cases, expected=_get_batch_expected, check=_get_batch_check),
    "seed_everything": HiddenTest(cases=_seed_cases, expected=_seed_expected, check=_seed_check),
    "train": HiddenTest(cases=_train_cases, expected=_train_expected, check=_train_check),
    "save_checkpoint": HiddenTest(cases=_save_cases, expected=_save_expected, check=_save_check),
    "load_checkpoint": HiddenTest(cases=_load_cases, expected=_load_expected, check=_load_check),
}


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import within_percent

HIDDEN_TESTS["tokens_billions"] = napkin_test(
    {'file_bytes': 2800000000000},
    lambda file_bytes, bytes_per_token, tokens_per_billion: file_bytes / bytes_per_token / tokens_per_billion,
    "tokens_billions", "billion tokens", within_percent(2),
    {2.0: "one byte per token? A uint16 takes 2 bytes.", 0.25: "8 bytes per token, as int64? The file holds uint16: 2 bytes each.", 1000.0: "millions where billions were asked?", 1 / 8: "bits where bytes were meant? A uint16 is 16 bits, 2 bytes."},
    conventions={"bytes_per_token": (2, "the 2 bytes of a uint16 token"), "tokens_per_billion": (1e9, "the 10^9 tokens of a billion")})

HIDDEN_TESTS["read_minutes"] = napkin_test(
    {'file_bytes': 2800000000000, 'bytes_per_second': 2000000000},
    lambda file_bytes, bytes_per_second, seconds_per_minute: file_bytes / bytes_per_second / seconds_per_minute,
    "read_minutes", "minutes", within_percent(5),
    {60.0: "seconds where minutes were asked? A minute is 60 seconds.", 1 / 60: "hours where minutes were asked?", 1e9 / 2**30: "GiB/s where GB/s were given? 2 GB/s is 2 x 10^9 bytes per second.", 8.0: "the file in bits over a rate in bytes? Both are bytes here."},
    conventions={"seconds_per_minute": (60, "the 60 seconds of a minute")})

# ---- cost budgets (issues #52, #60): measured by the grader from outside the notebook process, on the hidden calls.
# They replace the CountingTokens stand-in: a real memmap file, read however the code likes (slices, a new mapping,
# a new file descriptor, any system call), counted by the kernel where every way of reading it meets: the disk.
from reference.hidden import CostBudget

COST_BUDGETS = [CostBudget(
    key="training_loop.get_batch",
    what=f"get_batch on the hidden cases, among them a memmap of {_cost.BATCH_FILE_TOKENS:,} uint16 tokens (32 MiB) "
         f"with batch size {_cost.BATCH_SIZE} and context {_cost.BATCH_CONTEXT}",
    hint="read only the windows a batch needs, as slices data[a:b] of the memmap (lecture 8, section 1).",
    file=_cost.BATCH_FILE, file_tokens=_cost.BATCH_FILE_TOKENS, file_bytes=_cost.BATCH_FILE_BYTES)]
