"""The pieces of a training loop: token files, batches, seeds, the loop itself, and checkpoints that resume exactly.

Token data is one long 1-D array of integer ids, written to disk as raw bytes (`ndarray.tofile`: no header) and
read back with `np.memmap`, so a batch reads only the few tokens it needs. A run draws random numbers from four
generators: Python's `random`, numpy's global one, torch's global one (model init, dropout) and a separate
`torch.Generator` that picks the batches. A checkpoint stores all four, as tensors and plain Python values that
`torch.load(path, weights_only=True)` accepts, so a resumed run continues exactly as if it had never stopped.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from jaxtyping import Int
from torch import Tensor, nn

from utils.progress import progress

TOKEN_DTYPE = np.uint16  # 2 bytes a token: ids up to 65,535 (GPT-2 has 50,257 tokens, LLaMA 1 and 2 have 32,000)


def markov_tokens(num_tokens: int, vocab_size: int, successors: int, seed: int) -> np.ndarray:
    """A token stream from a fixed random Markov chain, as a `TOKEN_DTYPE` array of `num_tokens` ids.

    Each token is followed by one of `successors` distinct tokens, all equally likely: the next id (token + 1,
    wrapping around) and `successors - 1` others drawn once from `seed`.
    A model that has learned the chain reaches a loss of ln(successors) nats per token; a uniform guess scores
    ln(vocab_size).
    """
    rng = np.random.default_rng(seed)
    next_tokens = []
    for token in range(vocab_size):  # token + 1 is always among the successors, so the chain visits every token
        others = np.delete(np.arange(vocab_size), (token + 1) % vocab_size)
        next_tokens.append([(token + 1) % vocab_size] + rng.choice(others, size=successors - 1, replace=False).tolist())
    picks = rng.integers(0, successors, size=num_tokens).tolist()
    token = int(rng.integers(vocab_size))
    stream = []
    for pick in picks:
        stream.append(token)
        token = next_tokens[token][pick]
    return np.array(stream, dtype=TOKEN_DTYPE)


def write_tokens(tokens: np.ndarray, path: str | Path) -> int:
    """Write `tokens` to `path` as raw bytes (no header: neither dtype nor length is stored); return the bytes written."""
    tokens.tofile(path)
    return tokens.nbytes


def open_tokens(path: str | Path, dtype: type = TOKEN_DTYPE) -> np.memmap:
    """Map a raw token file read-only, without reading it. The file does not say its dtype: the caller must."""
    return np.memmap(path, dtype=dtype, mode="r")


def get_batch(data: np.ndarray, batch_size: int, context_length: int, device: torch.device | str,
              generator: torch.Generator) -> tuple[Int[Tensor, "batch seq"], Int[Tensor, "batch seq"]]:
    """`batch_size` random windows of `context_length` tokens (inputs) and the same windows moved one token on (targets).

    The start positions come from `generator` alone, never from a global generator, so the batch order depends
    only on that generator's seed. Only the windows are read from `data` (a memmap stays on disk) and turned into
    int64 tensors; on a CUDA device they go through pinned memory with non-blocking copies.
    """
    device = torch.device(device)
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([data[start : start + context_length + 1] for start in starts]).astype(np.int64)
    inputs = torch.from_numpy(windows[:, :-1].copy())
    targets = torch.from_numpy(windows[:, 1:].copy())
    if device.type == "cuda":  # page-locked (pinned) host memory lets the copy run while the CPU moves on
        return inputs.pin_memory().to(device, non_blocking=True), targets.pin_memory().to(device, non_blocking=True)
    return inputs.to(device), targets.to(device)


def seed_everything(seed: int) -> None:
    """Seed Python's `random`, numpy's global generator and torch's (which covers every CUDA device as well)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state(generator: torch.Generator) -> dict:
    """The state of every generator a run draws from, as tensors and plain values that `weights_only` loading accepts.

    numpy's state holds a numpy array, which `torch.load(weights_only=True)` refuses, so its 624 key words
    are stored as an int64 tensor.
    """
    name, keys, position, has_gauss, cached_gaussian = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached_gaussian),
        "torch": torch.get_rng_state(),
        "batches": generator.get_state(),
    }
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
    """Save what a run needs to go on exactly: parameters, optimizer state, steps done, and every RNG state."""
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": step,
        "rng": rng_state(generator),
    }
    torch.save(checkpoint, path)


def load_checkpoint(path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer,
                    generator: torch.Generator) -> int:
    """Restore a `save_checkpoint` file into `model`, `optimizer` and every RNG; return the number of steps done.

    `weights_only=True` lets the unpickler build only tensors and plain Python values, so a checkpoint from
    someone else cannot run code on this machine.
    """
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    restore_rng_state(checkpoint["rng"], generator)
    return checkpoint["step"]


def train(model: nn.Module, optimizer: torch.optim.Optimizer, data: np.ndarray, num_steps: int, batch_size: int,
          context_length: int, generator: torch.Generator, description: str | None = None) -> list[float]:
    """Take `num_steps` optimizer steps on random batches of `data`; return each step's loss (nats per token).

    One step: batch, forward, cross-entropy loss, backward, optimizer step, zero_grad. With a `description`,
    a progress bar shows how far it has got.
    """
    device = next(model.parameters()).device
    steps = range(num_steps) if description is None else progress(range(num_steps), description)
    losses = []
    for _ in steps:
        inputs, targets = get_batch(data, batch_size, context_length, device, generator)
        logits = model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses
