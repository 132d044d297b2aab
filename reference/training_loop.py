"""Exercise 8 (the training loop): the references its hidden tests compare with. Instructor-only.

A run draws random numbers from four generators: Python's `random`, numpy's global one, torch's global one (model
initialization, dropout) and a separate `torch.Generator` that picks the batches; on a GPU also CUDA's. The
checkpoint stores all of them as tensors and plain Python values that `torch.load(weights_only=True)` accepts.
"""
from __future__ import annotations

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
