"""The lecture's training run: token files, a batch sampler for tokens that fit in memory, the loop, checkpoints.

Token data is one long 1-D array of integer ids, written to disk as raw bytes (`ndarray.tofile`: no header) and
read back with `np.memmap`. The lecture's data is small, so its sampler holds every token in memory; a real run
reads only the windows a batch needs from the memmap (exercise 8, task 1). The lecture's runs draw random numbers
from two generators: torch's global one (model initialization) and a separate `torch.Generator` that picks the
batches; its checkpoint stores both, which is all those runs need to resume exactly. A run that also draws from
numpy or Python (data augmentation, dropout written with numpy) needs their states as well (exercise 8, tasks 4-5).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

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
              generator: torch.Generator | None) -> tuple[Int[Tensor, "batch seq"], Int[Tensor, "batch seq"]]:
    """`batch_size` random windows of `context_length` tokens (inputs) and the same windows one token on (targets).

    The lecture's sampler, for token arrays that fit in memory: it turns all of `data` into one int64 tensor, on
    every call, and gathers the windows with one index. The start positions come from `generator` (None: torch's
    global generator).
    """
    tokens = torch.from_numpy(np.asarray(data, dtype=np.int64))  # every token: fine for this lecture's 256 KiB
    starts = torch.randint(0, len(tokens) - context_length, (batch_size, 1), generator=generator)
    windows = tokens[starts + torch.arange(context_length + 1)]   # (batch_size, context_length + 1)
    return windows[:, :-1].to(device), windows[:, 1:].to(device)


@dataclass
class Batches:
    """`num_steps` batches from `get_batch`, each drawn only when the loop asks for it, so that `generator` has moved
    on exactly as far as the batches used so far."""
    data: np.ndarray
    num_steps: int
    batch_size: int
    context_length: int
    generator: torch.Generator
    device: torch.device | str = "cpu"

    def __len__(self) -> int:
        return self.num_steps

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor]]:
        for _ in range(self.num_steps):
            yield get_batch(self.data, self.batch_size, self.context_length, self.device, self.generator)


def train(model: nn.Module, optimizer: torch.optim.Optimizer, batches: Iterable[tuple[Tensor, Tensor]],
          description: str | None = None) -> list[float]:
    """One optimizer step per (inputs, targets) batch: forward, cross-entropy loss, backward, step, zero_grad.
    Returns each step's loss (nats per token). With a `description`, a progress bar shows how far it has got."""
    losses = []
    for inputs, targets in batches if description is None else progress(batches, description):
        logits = model(inputs)                                           # (batch, seq, vocab)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())  # mean over batch x seq predictions
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def rng_state(generator: torch.Generator) -> dict[str, Tensor]:
    """The states of the two generators the lecture's runs draw from: torch's global one and the batch `generator`.
    Both are uint8 tensors, which `torch.load(weights_only=True)` accepts."""
    return {"torch": torch.get_rng_state(), "batches": generator.get_state()}


def restore_rng_state(state: dict[str, Tensor], generator: torch.Generator) -> None:
    """Put torch's global generator and the batch `generator` back where `rng_state` found them."""
    torch.set_rng_state(state["torch"])
    generator.set_state(state["batches"])


def save_checkpoint(path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer, step: int,
                    generator: torch.Generator) -> None:
    """Save what the lecture's runs need to go on exactly: parameters, optimizer state, steps done, and the states of
    torch's generator and the batch generator (not numpy's, Python's or CUDA's: the lecture's runs draw from none)."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "rng": rng_state(generator)}, path)


def load_checkpoint(path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer,
                    generator: torch.Generator) -> int:
    """Restore a `save_checkpoint` file into `model`, `optimizer`, torch's generator and `generator`; return the
    number of steps done. `weights_only=True` builds only tensors and plain Python values, so a checkpoint from
    someone else cannot run code on this machine."""
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    restore_rng_state(checkpoint["rng"], generator)
    return checkpoint["step"]



# ---------------------------------------------------------------------------------------------------------------
# What exercise 8's hidden tests build, the same in the student's process and in the grader's: token arrays by name,
# optimizers from a plain-data recipe, a model that draws from every global generator, and a run to checkpoint.
# No answers here: the runs use the lecture's loop and sampler, and whoever calls them seeds the generators.

EXERCISE_TOKENS = {
    "chain(5000, 100, 3, seed=11)": lambda: markov_tokens(5000, 100, 3, seed=11),
    "chain(5000, 100, 3, seed=11) as int32": lambda: markov_tokens(5000, 100, 3, seed=11).astype(np.int32),
    "7 x arange(3000) as int64": lambda: np.arange(3000, dtype=np.int64) * 7,
    "[5, 9]": lambda: np.array([5, 9], dtype=np.uint16),
    "chain(4000, 64, 4, seed=9)": lambda: markov_tokens(4000, 64, 4, seed=9),
    "chain(4000, 20, 2, seed=5)": lambda: markov_tokens(4000, 20, 2, seed=5),
    "arange(5000) % 100": lambda: np.arange(5000, dtype=np.uint16) % 100,
    "chain(3000, 64, 4, seed=4)": lambda: markov_tokens(3000, 64, 4, seed=4),
    "chain(3000, 64, 4, seed=6)": lambda: markov_tokens(3000, 64, 4, seed=6),
    "13 x arange(7000) % 50": lambda: np.arange(7000, dtype=np.uint16) * 13 % 50,
}


def exercise_tokens(name: str) -> np.ndarray:
    """The token array `EXERCISE_TOKENS[name]` makes (a fresh copy each call)."""
    return EXERCISE_TOKENS[name]()


def make_optimizer(recipe: list | tuple, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
    """torch.optim's optimizer from a recipe `(class name, keyword arguments)`, e.g. `("SGD", {"lr": 0.1})`."""
    name, kwargs = recipe
    return getattr(torch.optim, name)(params, **kwargs)


class NoisyTinyLM(nn.Module):
    """TinyLM plus randomness from every global generator, as dropout or data augmentation would add: torch's
    (dropout), numpy's and Python's, and with `cuda_noise` CUDA's."""

    def __init__(self, vocab: int, cuda_noise: bool = False):
        from utils.models import TinyLM

        super().__init__()
        self.inner = TinyLM(vocab, 12, 24)
        self.dropout = torch.nn.Dropout(0.2)
        self.cuda_noise = cuda_noise

    def forward(self, token_ids: Int[Tensor, "batch seq"]) -> Tensor:
        import random

        wobble = 1 + 0.05 * (float(np.random.rand()) + random.random())
        if self.cuda_noise:
            wobble = wobble + 0.05 * torch.rand(1, device="cuda").item()
        return self.dropout(self.inner(token_ids)) * wobble


def run_to_checkpoint(seed_all, seed: int, steps: int, optimizer: list | tuple, tokens: str
                      ) -> tuple[nn.Module, torch.optim.Optimizer, torch.Generator]:
    """A TinyLM trained `steps` steps by the lecture's loop (batches of 4 x 8 tokens of `exercise_tokens(tokens)`),
    after `seed_all(seed)`; then numpy's and Python's generators are moved on a little. Returns the model, its
    optimizer (`make_optimizer(optimizer, ...)`) and the batch generator: a run ready to be checkpointed."""
    import random

    from utils.models import TinyLM

    seed_all(seed)
    model = TinyLM(64, 8, 16)
    built = make_optimizer(optimizer, model.parameters())
    generator = torch.Generator().manual_seed(seed + 100)
    train(model, built, Batches(exercise_tokens(tokens), steps, 4, 8, generator))
    np.random.rand(seed)  # move numpy's and Python's generators somewhere unusual
    random.random()
    return model, built, generator
