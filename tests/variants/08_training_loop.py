"""Exercise 8, training loop: windows read one by one and stacked by torch, seeding through other entry points,
the loss as log_softmax + nll_loss on reshaped tensors with the micro-batches accumulated by one backward of their
mean, a checkpoint with numpy's state as a dict of plain values."""

VARIANTS = {
    "get_batch": """
def get_batch(data, batch_size: int, context_length: int, device, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    '''Random windows of `data` as int64 (inputs, next-token targets), each of shape (batch_size, context_length).'''
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator)
    inputs, targets = [], []
    for start in starts.tolist():
        inputs.append(torch.from_numpy(np.asarray(data[start : start + context_length], dtype=np.int64)))
        targets.append(torch.from_numpy(np.asarray(data[start + 1 : start + 1 + context_length], dtype=np.int64)))
    inputs, targets = torch.stack(inputs), torch.stack(targets)
    if torch.device(device).type == "cuda":
        return inputs.pin_memory().to(device, non_blocking=True), targets.pin_memory().to(device, non_blocking=True)
    return inputs.to(device), targets.to(device)
""",
    "seed_everything": """
def seed_everything(seed: int) -> None:
    '''Seed Python's random, numpy's global generator and torch's (CPU and every GPU) with `seed`.'''
    torch.random.manual_seed(seed)
    np.random.set_state(np.random.RandomState(seed).get_state())
    random.seed(seed)
""",
    "train": """
def train(model: torch.nn.Module, optimizer: torch.optim.Optimizer, data, num_steps: int, batch_size: int, context_length: int, generator: torch.Generator, accumulation_steps: int = 1) -> list[float]:
    '''Take `num_steps` optimizer steps, each on `accumulation_steps` micro-batches from get_batch; return each step's mean loss.'''
    device = next(iter(model.parameters())).device
    history = []
    step = 0
    while step < num_steps:
        micro_losses = []
        for _ in range(accumulation_steps):
            x, y = get_batch(data, batch_size, context_length, device, generator)
            logits = model(x)
            vocab = logits.shape[-1]
            log_probs = F.log_softmax(logits.reshape(-1, vocab), dim=-1)
            micro_losses.append(F.nll_loss(log_probs, y.reshape(-1)))  # the same as F.cross_entropy
        loss = torch.stack(micro_losses).mean()     # one backward through all micro-batches: the same mean gradient
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        history.append(float(loss.detach()))
        step += 1
    return history
""",
    "save_checkpoint": """
def save_checkpoint(path: str, model: torch.nn.Module, optimizer: torch.optim.Optimizer, step: int, generator: torch.Generator) -> None:
    '''Save model, optimizer, step and every random state to `path`, in a form weights_only loading accepts.'''
    kind, keys, position, has_gauss, cached = np.random.get_state()
    states = {"python": random.getstate(),
              "numpy": {"kind": kind, "keys": keys.tolist(), "position": int(position),
                        "has_gauss": int(has_gauss), "cached": float(cached)},
              "torch": torch.get_rng_state(),
              "generator": generator.get_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": int(step), "rng": states}, path)
""",
    "load_checkpoint": """
def load_checkpoint(path: str, model: torch.nn.Module, optimizer: torch.optim.Optimizer, generator: torch.Generator) -> int:
    '''Restore model, optimizer and every random state from `path`; return the step it was saved at.'''
    saved = torch.load(path, weights_only=True)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    states = saved["rng"]
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy_state = states["numpy"]
    np.random.set_state((numpy_state["kind"], np.array(numpy_state["keys"], dtype=np.uint32), numpy_state["position"],
                         numpy_state["has_gauss"], numpy_state["cached"]))
    torch.set_rng_state(states["torch"])
    generator.set_state(states["generator"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
    return int(saved["step"])
""",
    "tokens_billions": """
tokens_billions = 2_800_000_000_000 // 2 / 10**9
""",
    "read_minutes": """
read_minutes = (2_800_000 / 2_000) / 60
""",
}
