"""The lecture's training run: token files, a batch sampler for tokens that fit in memory, the loop, checkpoints.

Token data is one long 1-D array of integer ids, written to disk as raw bytes (`ndarray.tofile`: no header) and
read back with `np.memmap`. The lecture's data is small, so its sampler holds every token in memory; a real run
reads only the windows a batch needs from the memmap (exercise 8, task 1). The lecture's runs draw random numbers
from two generators: torch's global one (model initialization) and a separate `torch.Generator` that picks the
batches; its checkpoint stores both, which is all those runs need to resume exactly. A run that also draws from
numpy or Python (data augmentation, dropout written with numpy) needs their states as well (exercise 8, tasks 4-5).
"""
from __future__ import annotations

import contextlib
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


# ---- what a hand-written loop does, in order (issue #61) -----------------------------------------------------------
# A loop with gradient accumulation that goes wrong is told what it did: the calls it made in one run of two steps of
# two micro-batches (get_batch, each backward, optimizer.step, zero_grad) and the size of the gradient at each step,
# against the task's order. Nothing here is a loop to copy: it watches the student's.

@dataclass
class LoopRecord:
    """What a train function did: its events in order ("batch", "backward", "step", "zero"), the first parameter's
    gradient at each step, and the batches it was given."""
    events: list[str]
    step_grads: list[Tensor]
    batches: list[tuple[Tensor, Tensor]]


def record_loop(train_fn, data: np.ndarray, steps: int = 2, micro: int = 2, batch_size: int = 2,
                context_length: int = 8) -> tuple[LoopRecord, nn.Module]:
    """Run `train_fn` (exercise 8's signature) on a seeded TinyLM with SGD, recording its events. Returns the record
    and the model as it was before the run (a copy)."""
    import copy

    from utils.grading import earlier_tasks_done_right
    from utils.models import TinyLM
    torch.manual_seed(3)
    model = TinyLM(64, 16, 32)
    initial = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    record = LoopRecord([], [], [])
    first = next(model.parameters())
    first.register_post_accumulate_grad_hook(lambda _: record.events.append("backward"))
    real_step, real_zero = optimizer.step, optimizer.zero_grad

    def step(*args, **kwargs):
        record.events.append("step")
        record.step_grads.append(first.grad.detach().clone() if first.grad is not None else torch.zeros_like(first))
        return real_step(*args, **kwargs)

    def zero(*args, **kwargs):
        record.events.append("zero")
        return real_zero(*args, **kwargs)

    def sampler(data, size, length, device, generator):
        record.events.append("batch")
        pair = get_batch(data, size, length, device, generator)
        record.batches.append(pair)
        return pair

    optimizer.step, optimizer.zero_grad, model.zero_grad = step, zero, zero
    with earlier_tasks_done_right(train_fn, {"get_batch": sampler}):
        train_fn(model, optimizer, data, steps, batch_size, context_length, torch.Generator().manual_seed(0), micro)
    return record, initial


def _first_step_gradient(initial: nn.Module, batches: list[tuple[Tensor, Tensor]], micro: int) -> Tensor:
    """The first parameter's gradient of the mean loss over the first step's `micro` batches."""
    model = initial
    model.zero_grad(set_to_none=True)
    for inputs, targets in batches[:micro]:
        logits = model(inputs)
        (F.cross_entropy(logits.flatten(0, 1), targets.flatten()) / micro).backward()
    return next(model.parameters()).grad


def explain_loop(record: LoopRecord, initial: nn.Module, micro: int = 2) -> str | None:
    """What a recorded loop does against the task's order, in words: steps per micro-batch, gradients cleared between
    micro-batches or never, get_batch calls, and the gradient's size at the first step against the mean loss's."""
    events = record.events
    backwards, steps = events.count("backward"), events.count("step")
    if steps >= backwards > 0 and micro > 1:
        return (f"optimizer.step() ran {steps} times for {backwards} micro-batch backward passes: it steps after "
                f"every micro-batch, so the parameters change between the micro-batches of one step; the task takes "
                f"one step once all {micro} micro-batches have added their gradients")
    first_step = events.index("step") if "step" in events else len(events)
    first_backward = events.index("backward") if "backward" in events else first_step
    if "zero" in events[first_backward + 1:first_step]:
        return ("zero_grad ran between the micro-batches of one step: it clears the gradients the first ones added, "
                "so the step sees only the last micro-batch's")
    if "zero" not in events and steps > 1:
        return "nothing clears the gradients after a step: backward adds into .grad, so each step carries the last one's"
    if record.batches and events.count("batch") != backwards:
        return (f"get_batch ran {events.count('batch')} times for {backwards} backward passes: one call per "
                "micro-batch, each followed by its own forward and backward")
    if record.step_grads and len(record.batches) >= micro:
        right = _first_step_gradient(initial, record.batches, micro)
        from utils.diagnosis import _scale
        c = _scale(record.step_grads[0], right)
        if c is not None and abs(c - micro) < 1e-3 * micro:
            return (f"the gradient at the step is {micro} times the mean loss's: each micro-batch's loss is divided by "
                    "accumulation_steps before its backward, so that their sum is the gradient of the mean")
        if c is not None:
            return f"the gradient at the step is {c:.4g} times the gradient of the mean loss over the step's micro-batches"
    return None


@contextlib.contextmanager
def explained_loop(train_fn, data: np.ndarray) -> Iterator[None]:
    """Within a visible test of exercise 8's train: a failing check gets what the loop did (explain_loop) on a "Found:"
    line, when that says something."""
    try:
        yield
    except AssertionError as error:
        message = str(error)
        try:
            found = explain_loop(*record_loop(train_fn, data))
        except Exception:  # a loop that cannot run the recording: the check's own message stands
            found = None
        if not found or "\nFound:" in message:
            raise
        what, _, hint = message.partition("\nHint:")
        raise AssertionError(f"{what}\nFound: {found}" + (f"\nHint:{hint}" if hint else "")) from None


# ---- task 5 reads task 4's file (issue #61) -------------------------------------------------------------------------
# A wrong save_checkpoint would make a right load_checkpoint fail too. So task 5's tests first try the student's
# save_checkpoint on a run of their own: when its file would not let any loader resume (it does not load with
# weights_only, or lacks the model, the optimizer, the step or one of the random states), the visible test says so and
# names task 4, and grading gives load_checkpoint a stand-in file instead, written by the grader in the layout the
# task's text states.

def _ints_in(value) -> Iterator[Tensor]:
    """Every tensor, and every list or tuple of ints, inside plain data, as a flat int64 tensor."""
    if type(value) is Tensor:
        yield value.detach().flatten().to(torch.int64)
    elif type(value) is dict:
        for item in value.values():
            yield from _ints_in(item)
    elif type(value) in (list, tuple):
        if value and all(type(item) is int and -2**63 <= item < 2**63 for item in value):
            yield torch.tensor(value, dtype=torch.int64)
        for item in value:
            yield from _ints_in(item)


def holds_state(value, state: Tensor) -> bool:
    """Does `value` (what weights_only loading gave back) contain the random state `state`, in any layout?"""
    wanted = state.detach().flatten().to(torch.int64)
    return any(found.shape == wanted.shape and torch.equal(found, wanted) for found in _ints_in(value))


def _global_states() -> tuple:
    import random
    return (random.getstate(), np.random.get_state(), torch.get_rng_state(),
            torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)


def _restore_global_states(states: tuple) -> None:
    import random
    random.setstate(states[0])
    np.random.set_state(states[1])
    torch.set_rng_state(states[2])
    if states[3] is not None:
        torch.cuda.set_rng_state_all(states[3])


def checkpoint_problem(save_fn) -> str | None:
    """What keeps the file `save_fn` (exercise 8's save_checkpoint) writes from letting a loader resume a run, in words;
    None when it holds everything. Runs save_fn once on a small run of its own; every global random state is as
    before afterwards."""
    import random
    import tempfile

    from utils.models import TinyLM
    before = _global_states()
    try:
        torch.manual_seed(11)
        np.random.seed(11)
        random.seed(11)
        model = TinyLM(64, 8, 16)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        model(torch.zeros(1, 4, dtype=torch.int64)).sum().backward()
        optimizer.step()
        generator = torch.Generator().manual_seed(12)
        torch.rand(generator=generator, size=(3,)), torch.rand(2), np.random.rand(2), random.random()
        wanted = {"torch.get_rng_state()": torch.get_rng_state(), "generator.get_state()": generator.get_state(),
                  "np.random.get_state()'s key words": torch.from_numpy(
                      np.random.get_state(legacy=False)["state"]["key"].astype(np.int64)),
                  "random.getstate()": torch.tensor(random.getstate()[1], dtype=torch.int64)}
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "checkpoint.pt"
            try:
                save_fn(str(path), model, optimizer, 3, generator)
            except Exception as error:  # any failure of the student's save is the problem to report
                return f"it raised {type(error).__name__}: {str(error)[:200]}"
            if not path.exists():
                return "it wrote no file at `path`"
            try:
                checkpoint = torch.load(path, weights_only=True)
            except Exception as error:  # what weights_only loading refuses
                from utils.grading import ANSI
                first = ANSI.sub("", str(error)).splitlines()[0][:160]
                return f"torch.load(path, weights_only=True) refuses its file ({first})"
        return _contents_problem(checkpoint, model, wanted)
    finally:
        _restore_global_states(before)


def _contents_problem(checkpoint: object, model: nn.Module, wanted: dict[str, Tensor]) -> str | None:
    if not isinstance(checkpoint, dict):   # weights_only loading gives back dicts and OrderedDicts only
        return "its file holds no dict"
    missing = [key for key in ("model", "optimizer", "step", "rng") if key not in checkpoint]
    if missing:
        return f"its file has no key {missing[0]!r}"
    saved = checkpoint["model"]
    if not isinstance(saved, dict) or any(not (type(saved.get(name)) is Tensor and torch.equal(saved[name], tensor))
                                      for name, tensor in model.state_dict().items()):
        return "'model' is not the model's state dict as it is now"
    if not isinstance(checkpoint["optimizer"], dict) or "state" not in checkpoint["optimizer"]:
        return "'optimizer' is not the optimizer's state dict"
    if type(checkpoint["step"]) is not int:
        return f"'step' is a {type(checkpoint['step']).__name__}, not an int"
    for what, state in wanted.items():
        if not holds_state(checkpoint["rng"], state):
            return f"'rng' does not hold {what}"
    return None


def write_stand_in(path: str | Path, data: Tensor) -> None:
    """Write a stand-in checkpoint (its bytes, as the grader sends them: a uint8 tensor) to `path`."""
    Path(path).write_bytes(data.numpy().tobytes())


def shift_stored_weights(value, weights: list[Tensor], shift: float):
    """`value` (a checkpoint as weights_only loading gives it back) with every stored copy of a tensor of `weights`
    moved by `shift`, in whatever layout it is stored: a loader that reads its weights from the file must then load
    the moved ones (the load test's probe that the file, not something the process kept, is what was read)."""
    if type(value) is Tensor:
        same = any(value.shape == w.shape and value.dtype == w.dtype and torch.equal(value, w) for w in weights)
        return value + shift if same else value
    if isinstance(value, dict):   # a state_dict is an OrderedDict
        return {key: shift_stored_weights(item, weights, shift) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(shift_stored_weights(item, weights, shift) for item in value)
    return value
