"""Exercise 8's references (reference.training_loop) and the lecture's utils.training against numpy's and torch's own
behaviour: token files, batches, seeds, the loop with gradient accumulation, exact resume."""
import copy
import io
import math
import os
import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import utils.training as lecture
from reference.training_loop import (
    get_batch,
    load_checkpoint,
    restore_rng_state,
    rng_state,
    save_checkpoint,
    seed_everything,
    train,
)
from tests import warm
from utils.models import TinyLM, count_params
from utils.training import TOKEN_DTYPE, Batches, markov_tokens, open_tokens, write_tokens

SAMPLERS = {"reference": get_batch, "lecture": lecture.get_batch}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The models here are tiny: one torch thread is fastest, and stays fast on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def global_states():
    """Torch's, numpy's and Python's global random states, in a form == can compare."""
    return torch.get_rng_state().tolist(), np.random.get_state()[1].tolist(), random.getstate()


class CountingTokens:
    """Looks like a huge read-only memmap: counts the tokens read, and refuses to be converted as a whole."""

    def __init__(self, array):
        self.array, self.tokens_read = array, 0

    def __len__(self):
        return len(self.array)

    def __getitem__(self, key):
        window = np.asarray(self.array[key])
        self.tokens_read += window.size
        return window

    def __array__(self, *args, **kwargs):
        raise AssertionError("the whole token array was converted")


class NoisyTinyLM(torch.nn.Module):
    """TinyLM plus dropout and draws from numpy's and Python's generators: resuming must restore every state."""

    def __init__(self, vocab):
        super().__init__()
        self.inner = TinyLM(vocab, 12, 24)
        self.dropout = torch.nn.Dropout(0.2)

    def forward(self, token_ids):
        wobble = 1 + 0.05 * (float(np.random.rand()) + random.random())
        return self.dropout(self.inner(token_ids)) * wobble


# ---------------------------------------------------------------- data on disk

def test_markov_chain_has_the_promised_structure():
    tokens = markov_tokens(50_000, 32, 4, seed=3)
    assert tokens.dtype == TOKEN_DTYPE == np.uint16 and len(tokens) == 50_000
    assert np.array_equal(tokens, markov_tokens(50_000, 32, 4, seed=3))
    assert not np.array_equal(tokens, markov_tokens(50_000, 32, 4, seed=4))
    assert set(np.unique(tokens).tolist()) == set(range(32))  # token + 1 is always a successor: every id is visited
    pairs = np.stack([tokens[:-1], tokens[1:]], axis=1).astype(np.int64)
    for token in range(32):
        followers, counts = np.unique(pairs[pairs[:, 0] == token, 1], return_counts=True)
        assert len(followers) == 4 and (token + 1) % 32 in followers
        assert np.all(np.abs(counts / counts.sum() - 0.25) < 0.06)  # equally likely


@given(st.sampled_from([np.uint16, np.int32, np.int64]), st.integers(min_value=1, max_value=3000))
@settings(max_examples=60, deadline=None)
def test_tofile_writes_raw_bytes_that_memmap_and_fromfile_read_back(tmp_path_factory, dtype, length):
    path = tmp_path_factory.mktemp("tokens") / "tokens.bin"
    tokens = (np.arange(length) * 7919 % 60_000).astype(dtype)
    assert write_tokens(tokens, path) == os.path.getsize(path) == length * np.dtype(dtype).itemsize  # no header
    mapped = open_tokens(path, dtype)
    assert isinstance(mapped, np.memmap) and mapped.shape == (length,)
    assert np.array_equal(mapped, tokens) and np.array_equal(np.fromfile(path, dtype=dtype), tokens)
    offset = length // 3
    piece = np.memmap(path, dtype=dtype, mode="r", offset=offset * np.dtype(dtype).itemsize, shape=(length - offset,))
    assert np.array_equal(piece, tokens[offset:])


def test_np_load_cannot_read_a_raw_token_file(tmp_path):
    path = tmp_path / "tokens.bin"
    write_tokens(np.arange(100, dtype=np.uint16), path)
    with pytest.raises(ValueError):
        np.load(path)
    assert len(np.memmap(path, dtype=np.uint8, mode="r")) == 200  # the wrong dtype silently reads garbage


# ---------------------------------------------------------------- get_batch

@pytest.mark.parametrize("sampler", SAMPLERS)
@given(st.integers(min_value=2, max_value=400), st.integers(min_value=1, max_value=12), st.data())
@settings(max_examples=100, deadline=None)
def test_get_batch_returns_windows_and_shifted_targets(sampler, length, batch_size, draw):
    context_length = draw.draw(st.integers(min_value=1, max_value=length - 1))
    seed = draw.draw(st.integers(min_value=0, max_value=2**32))
    data = (np.arange(length) * 31 % 1000).astype(np.uint16)
    generator, twin = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    before = global_states()
    inputs, targets = SAMPLERS[sampler](data, batch_size, context_length, "cpu", generator)

    starts = torch.randint(0, length - context_length, (batch_size,), generator=twin)  # what torch draws
    as_tensor = torch.from_numpy(data.astype(np.int64))
    expected_inputs = torch.stack([as_tensor[s : s + context_length] for s in starts])
    expected_targets = torch.stack([as_tensor[s + 1 : s + 1 + context_length] for s in starts])
    assert inputs.dtype == targets.dtype == torch.int64
    assert inputs.shape == targets.shape == (batch_size, context_length)
    assert torch.equal(inputs, expected_inputs) and torch.equal(targets, expected_targets)
    assert int(starts.max()) + context_length <= length - 1  # every target index is inside the data
    assert torch.equal(generator.get_state(), twin.get_state())  # one randint call on the given generator ...
    assert global_states() == before  # ... and none on a global one


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_get_batch_is_repeatable_per_generator_and_takes_devices_as_strings_or_objects(sampler):
    get_batch = SAMPLERS[sampler]
    data = markov_tokens(5000, 64, 4, seed=0)
    first = get_batch(data, 8, 16, "cpu", torch.Generator().manual_seed(5))
    again = get_batch(data, 8, 16, torch.device("cpu"), torch.Generator().manual_seed(5))
    other = get_batch(data, 8, 16, "cpu", torch.Generator().manual_seed(6))
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    assert not torch.equal(first[0], other[0])
    assert first[0].device == torch.device("cpu")


def test_get_batch_reads_only_the_windows_where_the_lectures_sampler_reads_everything():
    data = CountingTokens(np.arange(3_000_000, dtype=np.uint32) % 50_000)
    inputs, targets = get_batch(data, 16, 64, "cpu", torch.Generator().manual_seed(0))
    assert data.tokens_read == 16 * 65
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    with pytest.raises(AssertionError, match="converted"):
        lecture.get_batch(data, 16, 64, "cpu", torch.Generator().manual_seed(0))


def test_get_batch_on_a_large_memmap(tmp_path):
    path = tmp_path / "big.bin"
    with open(path, "wb") as f:
        f.truncate(2**28)  # 256 MiB of zeros, sparse on most file systems
    data = open_tokens(path)
    window = np.memmap(path, dtype=np.uint16, mode="r+", offset=2**27, shape=(1000,))
    window[:] = np.arange(1000)  # some ids in the middle of the file
    window.flush()
    del window
    assert len(data) == 2**27
    inputs, targets = get_batch(data, 64, 8, "cpu", torch.Generator().manual_seed(1))
    assert inputs.shape == (64, 8) and inputs.dtype == torch.int64 and int(inputs.sum()) == 0  # all zeros there
    middle = data[2**26 : 2**26 + 1000]  # a slice of a memmap is a memmap: still nothing read
    assert isinstance(middle, np.memmap)
    inputs, targets = get_batch(middle, 4, 8, "cpu", torch.Generator().manual_seed(2))
    assert torch.equal(targets, inputs + 1)  # the marked ids count up
    del data, middle


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_get_batch_on_cuda_matches_cpu():
    data = markov_tokens(5000, 64, 4, seed=0)
    on_gpu = get_batch(data, 8, 16, "cuda", torch.Generator().manual_seed(2))
    on_cpu = get_batch(data, 8, 16, "cpu", torch.Generator().manual_seed(2))
    assert on_gpu[0].device.type == "cuda" and torch.equal(on_gpu[0].cpu(), on_cpu[0])


# ---------------------------------------------------------------- seeds and random states

@given(st.integers(min_value=0, max_value=2**32 - 1))
@settings(max_examples=50, deadline=None)
def test_seed_everything_seeds_each_library_as_it_seeds_itself(seed):
    seed_everything(seed)
    ours = torch.rand(3), np.random.rand(3), random.random()
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    theirs = torch.rand(3), np.random.rand(3), random.random()
    assert torch.equal(ours[0], theirs[0]) and np.array_equal(ours[1], theirs[1]) and ours[2] == theirs[2]


def test_rng_state_survives_weights_only_loading_and_restores_every_generator():
    seed_everything(0)
    generator = torch.Generator().manual_seed(9)
    buffer = io.BytesIO()
    torch.save(rng_state(generator), buffer)
    first = torch.rand(2), np.random.rand(2), random.random(), torch.randint(0, 100, (4,), generator=generator)
    seed_everything(123)
    generator.manual_seed(456)
    buffer.seek(0)
    restore_rng_state(torch.load(buffer, weights_only=True), generator)
    again = torch.rand(2), np.random.rand(2), random.random(), torch.randint(0, 100, (4,), generator=generator)
    assert torch.equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert first[2] == again[2] and torch.equal(first[3], again[3])


def test_the_lectures_rng_state_covers_torch_and_the_batch_generator_only():
    generator = torch.Generator().manual_seed(9)
    torch.manual_seed(1)
    state = lecture.rng_state(generator)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    first = torch.rand(2), torch.randint(0, 100, (4,), generator=generator)
    torch.manual_seed(2)
    generator.manual_seed(3)
    buffer.seek(0)
    lecture.restore_rng_state(torch.load(buffer, weights_only=True), generator)
    again = torch.rand(2), torch.randint(0, 100, (4,), generator=generator)
    assert sorted(state) == ["batches", "torch"]
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])


def test_utils_holds_no_answer_to_exercise_8():
    assert not hasattr(lecture, "seed_everything")


def test_numpy_state_as_numpy_returns_is_refused_by_weights_only():
    buffer = io.BytesIO()
    torch.save({"numpy": np.random.get_state()}, buffer)
    buffer.seek(0)
    with pytest.raises(Exception, match="weights_only"):
        torch.load(buffer, weights_only=True)


# ---------------------------------------------------------------- the loop

def test_train_matches_a_loop_written_with_log_softmax():
    data = markov_tokens(4000, 64, 4, seed=1)
    torch.manual_seed(0)
    model = TinyLM(64, 16, 32)
    twin = copy.deepcopy(model)
    losses = train(model, torch.optim.AdamW(model.parameters(), lr=1e-2), data, 12, 4, 8, torch.Generator().manual_seed(0))

    optimizer, generator, expected = torch.optim.AdamW(twin.parameters(), lr=1e-2), torch.Generator().manual_seed(0), []
    for _ in range(12):
        inputs, targets = get_batch(data, 4, 8, "cpu", generator)
        log_probs = torch.log_softmax(twin(inputs), dim=-1)
        loss = -log_probs.gather(-1, targets.unsqueeze(-1)).mean()  # cross-entropy by hand
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        expected.append(loss.item())
    assert all(type(x) is float for x in losses) and len(losses) == 12
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)
    assert all(p.grad is None for p in model.parameters())  # zero_grad(set_to_none=True) after the last step


def test_the_lectures_loop_on_the_lectures_batches_is_the_reference_loop():
    data = markov_tokens(4000, 64, 4, seed=1)
    torch.manual_seed(0)
    model = TinyLM(64, 16, 32)
    twin = copy.deepcopy(model)
    mine = lecture.train(model, torch.optim.AdamW(model.parameters(), lr=1e-2),
                         Batches(data, 10, 4, 8, torch.Generator().manual_seed(3)))
    theirs = train(twin, torch.optim.AdamW(twin.parameters(), lr=1e-2), data, 10, 4, 8, torch.Generator().manual_seed(3))
    assert mine == theirs
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), twin.parameters()))


def test_batches_are_drawn_only_when_the_loop_asks():
    generator = torch.Generator().manual_seed(0)
    batches = Batches(markov_tokens(1000, 16, 2, seed=0), 3, 2, 4, generator)
    before = generator.get_state()
    assert len(batches) == 3 and torch.equal(generator.get_state(), before)
    assert len(list(batches)) == 3 and not torch.equal(generator.get_state(), before)


@pytest.mark.parametrize("micro", [2, 3])
def test_accumulating_micro_batches_makes_the_step_of_the_whole_batch(micro):
    data = markov_tokens(4000, 64, 4, seed=2)
    torch.manual_seed(0)
    model = TinyLM(64, 16, 32).double()
    twin = copy.deepcopy(model)
    accumulated = train(model, torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9), data, 4, 3, 8,
                        torch.Generator().manual_seed(1), accumulation_steps=micro)
    whole = train(twin, torch.optim.SGD(twin.parameters(), lr=0.5, momentum=0.9), data, 4, 3 * micro, 8,
                  torch.Generator().manual_seed(1))
    np.testing.assert_allclose(accumulated, whole, rtol=1e-12)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-12)


def test_loss_falls_from_ln_vocab_towards_ln_successors():
    data = markov_tokens(2**15, 64, 4, seed=0)
    torch.manual_seed(0)
    model = TinyLM(64, 32, 128)
    losses = lecture.train(model, torch.optim.AdamW(model.parameters(), lr=1e-2),
                           Batches(data, 150, 16, 32, torch.Generator().manual_seed(1)))
    assert abs(losses[0] - math.log(64)) < 0.5
    assert np.mean(losses[-20:]) < math.log(4) + 0.2
    assert np.mean(losses[-20:]) > math.log(4) - 0.1  # nothing beats the chain's own entropy by much


def test_a_progress_line_changes_nothing_about_training(capsys):
    """train(..., description=...) shows a progress line (utils.progress: in a notebook only); the losses are the same."""
    data = markov_tokens(1000, 16, 2, seed=0)
    runs = []
    for description in (None, "steps"):
        torch.manual_seed(0)
        model = TinyLM(16, 4, 8)
        runs.append(lecture.train(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                  Batches(data, 3, 2, 4, torch.Generator().manual_seed(2)), description=description))
    assert runs[0] == runs[1]
    captured = capsys.readouterr()
    assert captured.out == captured.err == ""  # outside a notebook or terminal nothing is drawn


def test_a_progress_line_is_drawn_with_a_description_and_blanked_at_the_end(monkeypatch):
    """Where a line can be shown (a notebook, a terminal), train(..., description=...) draws "steps: done/total" as it
    starts and blanks it when done; without a description it draws nothing."""
    import utils.progress
    data = markov_tokens(1000, 16, 2, seed=0)
    for description, wanted in ((None, []), ("steps", ["steps: 0/3", ""])):
        shown: list[str] = []   # an update at most every 0.5 s: on a slow machine "steps: 1/3" may come between
        monkeypatch.setattr(utils.progress, "_notebook_display", lambda shown=shown: shown.append)
        torch.manual_seed(0)
        model = TinyLM(16, 4, 8)
        lecture.train(model, torch.optim.SGD(model.parameters(), lr=0.1),
                      Batches(data, 3, 2, 4, torch.Generator().manual_seed(2)), description=description)
        assert shown[:1] + shown[-1:] == wanted and all(line.startswith("steps: ") for line in shown[1:-1]), shown


# ---------------------------------------------------------------- checkpoints

def run(seed, steps, data, stop=None, path=None, resume_seed=None):
    """Losses and parameters of `steps` steps; with `stop`, checkpoint there and resume in fresh objects."""
    def fresh(s):
        seed_everything(s)
        model = NoisyTinyLM(50)
        return model, torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1), torch.Generator().manual_seed(s + 1)

    model, optimizer, generator = fresh(seed)
    if stop is None:
        return train(model, optimizer, data, steps, 4, 8, generator), list(model.parameters())
    losses = train(model, optimizer, data, stop, 4, 8, generator)
    save_checkpoint(path, model, optimizer, stop, generator)
    model, optimizer, generator = fresh(resume_seed)
    step = load_checkpoint(path, model, optimizer, generator)
    assert step == stop and type(step) is int
    return losses + train(model, optimizer, data, steps - step, 4, 8, generator), list(model.parameters())


@pytest.mark.parametrize("stop", [0, 1, 5, 11, 12])
def test_resume_is_bit_exact(tmp_path, stop):
    data = np.arange(3000, dtype=np.uint16) * 13 % 50
    straight, straight_params = run(0, 12, data)
    resumed, resumed_params = run(0, 12, data, stop=stop, path=tmp_path / "checkpoint.pt", resume_seed=77)
    assert resumed == straight  # every float, exactly
    assert all(torch.equal(p, q) for p, q in zip(resumed_params, straight_params))
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert sorted(checkpoint) == ["model", "optimizer", "rng", "step"]


def test_resume_without_the_random_states_is_not_exact(tmp_path):
    data = np.arange(3000, dtype=np.uint16) * 13 % 50
    straight, _ = run(0, 8, data)
    run(0, 8, data, stop=4, path=tmp_path / "checkpoint.pt", resume_seed=77)
    seed_everything(77)
    model = NoisyTinyLM(50)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    generator = torch.Generator()
    generator.set_state(checkpoint["rng"]["batches"])  # same batches, but dropout and noise draw other numbers
    assert train(model, optimizer, data, 4, 4, 8, generator) != straight[4:]


def test_the_lectures_checkpoint_resumes_a_run_that_draws_only_from_torch(tmp_path):
    data = markov_tokens(3000, 64, 4, seed=3)

    def fresh(seed):
        torch.manual_seed(seed)
        model = TinyLM(64, 12, 24)
        return model, torch.optim.AdamW(model.parameters(), lr=1e-2), torch.Generator().manual_seed(seed + 1)

    model, optimizer, generator = fresh(0)
    straight = lecture.train(model, optimizer, Batches(data, 10, 4, 8, generator))
    model, optimizer, generator = fresh(0)
    first = lecture.train(model, optimizer, Batches(data, 4, 4, 8, generator))
    lecture.save_checkpoint(tmp_path / "c.pt", model, optimizer, 4, generator)
    model, optimizer, generator = fresh(99)
    assert lecture.load_checkpoint(tmp_path / "c.pt", model, optimizer, generator) == 4
    assert first + lecture.train(model, optimizer, Batches(data, 6, 4, 8, generator)) == straight


def test_the_lectures_checkpoint_misses_numpy_and_python(tmp_path):
    data = np.arange(3000, dtype=np.uint16) * 13 % 50
    straight, _ = run(0, 8, data)
    seed_everything(0)
    model = NoisyTinyLM(50)
    optimizer, generator = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1), torch.Generator().manual_seed(1)
    first = train(model, optimizer, data, 4, 4, 8, generator)
    lecture.save_checkpoint(tmp_path / "c.pt", model, optimizer, 4, generator)
    seed_everything(77)
    model = NoisyTinyLM(50)
    optimizer, generator = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1), torch.Generator()
    lecture.load_checkpoint(tmp_path / "c.pt", model, optimizer, generator)
    assert first == straight[:4] and train(model, optimizer, data, 4, 4, 8, generator) != straight[4:]


def test_adamw_checkpoint_is_about_12_bytes_per_parameter(tmp_path):
    data = markov_tokens(2000, 64, 4, seed=0)
    for save in (save_checkpoint, lecture.save_checkpoint):
        seed_everything(0)
        model = TinyLM(64, 32, 128)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        generator = torch.Generator().manual_seed(0)
        train(model, optimizer, data, 2, 4, 8, generator)
        save(tmp_path / "c.pt", model, optimizer, 2, generator)
        size, params = os.path.getsize(tmp_path / "c.pt"), count_params(model)
        assert params == 14_336 and 12 * params < size < 12 * params + 64 * 1024


# ---------------------------------------------------------------- grading: a mistake in an earlier task costs once

WRONG_EARLIER_TASKS = {
    "get_batch": '''
def get_batch(data, batch_size, context_length, device, generator):
    \'\'\'Wrong: the same window every time, and the targets are the inputs.\'\'\'
    window = torch.from_numpy(np.asarray(data[:context_length], dtype=np.int64))
    inputs = window.repeat(batch_size, 1).to(device)
    return inputs, inputs.clone()
''',
    "seed_everything": '''
def seed_everything(seed):
    \'\'\'Wrong: seeds nothing.\'\'\'
''',
}


KEPT_IN_MEMORY = {   # save_checkpoint keeps the states in the process; load_checkpoint reads the file, uses them
    "save_checkpoint": lambda solution: "import copy as _copy\n_KEPT = {}\n" + solution.replace(
        "def save_checkpoint(", "def _save_to_file(", 1) + "\n\n\ndef save_checkpoint(path, model, optimizer, step, "
        "generator):\n    _KEPT['last'] = (_copy.deepcopy(model.state_dict()), _copy.deepcopy(optimizer.state_dict()))\n"
        "    return _save_to_file(path, model, optimizer, step, generator)\n",
    "load_checkpoint": lambda solution: solution.replace("def load_checkpoint(", "def _load_from_file(", 1) +
        "\n\n\ndef load_checkpoint(path, model, optimizer, generator):\n"
        "    step = _load_from_file(path, model, optimizer, generator)\n"
        "    model.load_state_dict(_KEPT['last'][0])\n    optimizer.load_state_dict(_KEPT['last'][1])\n    return step\n",
}


def test_a_wrong_get_batch_or_seed_everything_costs_only_its_own_points(tmp_path):
    """train calls get_batch: its tests (visible and hidden) run it with a correct get_batch, so a right train earns
    its points beside a wrong get_batch; the checkpoint tasks earn theirs beside a wrong seed_everything."""
    import csv
    import sys

    from tests import submissions

    assignment = "08_training_loop"
    root = submissions.new_course(tmp_path)
    notebooks = submissions._fill(assignment, lambda i, grade_id, solution: WRONG_EARLIER_TASKS.get(grade_id, solution))
    submissions.write_submission(root / "submitted", "wrongearlier", assignment, notebooks)
    kept = submissions._fill(assignment, lambda i, grade_id, solution: KEPT_IN_MEMORY[grade_id](solution)
                             if grade_id in KEPT_IN_MEMORY else solution)
    submissions.write_submission(root / "submitted", "keptinmemory", assignment, kept)
    run = warm.run([sys.executable, "-m", "autograder.grade", str(root / "submitted"), "--course", str(root),
                          "--out", str(root / "graded")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    with open(root / "graded" / "grades.csv") as f:
        rows = [row for row in csv.DictReader(f) if row["assignment"] == assignment]
    scores = {row["task"]: float(row["score"]) for row in rows if row["student"] == "wrongearlier"}
    assert scores == {"test_get_batch": 0, "test_seed_everything": 0, "test_train": 3, "test_save_checkpoint": 2,
                      "test_load_checkpoint": 3, "test_tokens_billions": 1, "test_read_minutes": 1,
                      "resume_without_rng": 0, "TOTAL": 10}, scores  # the written answer, left as released: 0
    # a student's red team (2026-11-29): a load_checkpoint that calls torch.load but restores the weights from what
    # save_checkpoint kept in memory passed; the hidden test now moves the file's stored weights and asks for them
    kept = {row["task"]: float(row["score"]) for row in rows if row["student"] == "keptinmemory"}
    assert kept["test_load_checkpoint"] == 0 and kept["test_save_checkpoint"] == 2 and kept["test_train"] == 3, kept


def test_get_batch_reads_its_windows_pages_of_a_real_memmap_and_a_full_read_all(tmp_path):
    """Issue #52, the student's side: utils.cost counts the file's pages this process maps (smaps), which is what
    grading counts from outside; the course's get_batch maps a few pages around its 8 windows, a full read all 32 MiB."""
    from utils import cost
    with cost.token_memmap(cost.BATCH_FILE_TOKENS, tmp_path) as data:
        budget = cost.file_budget(data.filename, cost.BATCH_FILE_BYTES, windows=8)
        _, batch = cost.measure(lambda: get_batch(data, 8, 64, "cpu", torch.Generator().manual_seed(3)),
                                file="cost-tokens.bin")
        _, whole = cost.measure(lambda: np.array(data), file="cost-tokens.bin")
    if batch.file_bytes is None:
        pytest.skip("no /proc here")
    assert 0 < batch.file_bytes <= budget
    assert whole.file_bytes >= 32 * 2**20 - batch.file_bytes


def test_the_grader_lends_the_tokens_the_visible_test_and_the_checker_assume():
    """Issue #60: the file the grader writes for get_batch's measured part (utils.cost.token_bytes, no numpy in the
    grader), the visible test's file (numpy's wrapping arange) and what the checker's reference reads from it
    (reference.training_loop._TokenFile) are the same tokens."""
    from reference.training_loop import _TokenFile
    from utils import cost
    tokens = 3 * 65536 + 77
    assert cost.token_bytes(tokens) == np.arange(tokens, dtype=np.uint16).tobytes()
    lent = np.frombuffer(cost.token_bytes(cost.BATCH_FILE_TOKENS), dtype=np.uint16)
    for start in (0, 65530, cost.BATCH_FILE_TOKENS - 65):
        assert np.array_equal(_TokenFile()[start:start + 65], lent[start:start + 65])
    assert len(_TokenFile()) == len(lent)
