"""Exercise 8, the training loop: typical wrong answers."""
from tests.wrong_answers import Wrong

_TRAIN = '''
def train(model, optimizer, data, num_steps, batch_size, context_length, generator, accumulation_steps=1):
    device = next(model.parameters()).device
    losses = []
    for _ in range(num_steps):
{body}
    return losses
'''
_LOAD = '''
def load_checkpoint(path, model, optimizer, generator):
    checkpoint = torch.load(path, weights_only=True)
    rng = checkpoint["rng"]
{body}
    return checkpoint["step"]
'''

WRONG = [
    Wrong("get_batch", "draws the starts from torch's global generator", r"generator", """
def get_batch(data, batch_size, context_length, device, generator):
    starts = torch.randint(0, len(data) - context_length, (batch_size,)).tolist()
    windows = np.stack([data[s:s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
"""),
    Wrong("get_batch", "targets are the inputs themselves, not one token later", r"one token later|s_i \+ 1|shifted", """
def get_batch(data, batch_size, context_length, device, generator):
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    inputs = torch.from_numpy(np.stack([data[s:s + context_length] for s in starts]).astype(np.int64))
    return inputs.to(device), inputs.clone().to(device)
"""),
    Wrong("get_batch", "turns the whole memmap into a tensor first", r"whole|read only|windows|converted", """
def get_batch(data, batch_size, context_length, device, generator):
    tokens = torch.from_numpy(np.array(data).astype(np.int64))
    starts = torch.randint(0, len(tokens) - context_length, (batch_size,), generator=generator)
    inputs = torch.stack([tokens[s:s + context_length] for s in starts])
    targets = torch.stack([tokens[s + 1:s + context_length + 1] for s in starts])
    return inputs.to(device), targets.to(device)
"""),
    Wrong("get_batch", "keeps the file's uint16 ids as int32", r"int64", """
def get_batch(data, batch_size, context_length, device, generator):
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([data[s:s + context_length + 1] for s in starts]).astype(np.int32)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
"""),
    Wrong("seed_everything", "forgets numpy", r"numpy|np\.random", """
def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
"""),
    Wrong("seed_everything", "makes a new numpy Generator instead of seeding the global one", r"numpy|np\.random", """
def seed_everything(seed):
    random.seed(seed)
    np.random.default_rng(seed)
    torch.manual_seed(seed)
"""),
    Wrong("train", "never zeroes the gradients", r"zero_grad|clear(s)? the gradients", _TRAIN.format(body='''
        step_loss = 0.0
        for _ in range(accumulation_steps):
            inputs, targets = get_batch(data, batch_size, context_length, device, generator)
            loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
            (loss / accumulation_steps).backward()
            step_loss += loss.item() / accumulation_steps
        optimizer.step()
        losses.append(step_loss)''')),
    Wrong("train", "backward of each micro-batch's loss without dividing by accumulation_steps",
          r"accumulation_steps|divid", _TRAIN.format(body='''
        step_loss = 0.0
        for _ in range(accumulation_steps):
            inputs, targets = get_batch(data, batch_size, context_length, device, generator)
            loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
            loss.backward()
            step_loss += loss.item() / accumulation_steps
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(step_loss)''')),
    Wrong("train", "returns the loss tensors", r"float|\.item", _TRAIN.format(body='''
        total = 0
        for _ in range(accumulation_steps):
            inputs, targets = get_batch(data, batch_size, context_length, device, generator)
            loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
            (loss / accumulation_steps).backward()
            total = total + loss.detach() / accumulation_steps
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(total)''')),
    Wrong("train", "one get_batch call of batch_size x accumulation_steps windows", r"once per micro-batch|micro-batch", _TRAIN.format(body='''
        inputs, targets = get_batch(data, batch_size * accumulation_steps, context_length, device, generator)
        step_loss = 0.0
        for x, y in zip(inputs.split(batch_size), targets.split(batch_size)):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            (loss / accumulation_steps).backward()
            step_loss += loss.item() / accumulation_steps
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(step_loss)''')),
    Wrong("save_checkpoint", "saves numpy's state as it is, with its numpy array", r"weights_only|numpy", """
def save_checkpoint(path, model, optimizer, step, generator):
    rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
           "batches": generator.get_state()}
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "rng": rng}, path)
"""),
    Wrong("save_checkpoint", "leaves out the batch generator's state", r"generator|batch", """
def save_checkpoint(path, model, optimizer, step, generator):
    name, keys, position, has_gauss, cached = np.random.get_state()
    rng = {"python": random.getstate(), "numpy": (name, keys.tolist(), position, has_gauss, cached),
           "torch": torch.get_rng_state()}
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "rng": rng}, path)
"""),
    Wrong("load_checkpoint", "restores the model but not the optimizer", r"optimizer", _LOAD.format(body='''
    model.load_state_dict(checkpoint["model"])
    random.setstate(rng["python"])
    name, keys, position, has_gauss, cached = rng["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    torch.set_rng_state(rng["torch"])
    generator.set_state(rng["batches"])''')),
    Wrong("load_checkpoint", "forgets the batch generator's state", r"generator|random state", _LOAD.format(body='''
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    random.setstate(rng["python"])
    name, keys, position, has_gauss, cached = rng["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    torch.set_rng_state(rng["torch"])''')),
    Wrong("load_checkpoint", "forgets torch's global random state", r"random state|torch|rng", _LOAD.format(body='''
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    random.setstate(rng["python"])
    name, keys, position, has_gauss, cached = rng["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    generator.set_state(rng["batches"])''')),
    # issue #50: reaching past len(data) and data[a:b], and a model object in the checkpoint
    Wrong("get_batch", "reopens the file through data.filename", r"len\(data\)|slic|array-like", """
def get_batch(data, batch_size, context_length, device, generator):
    tokens = np.memmap(data.filename, dtype=np.uint16, mode="r")
    starts = torch.randint(0, len(tokens) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([tokens[s : s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
"""),
    Wrong("save_checkpoint", "saves the model and optimizer objects, not their state dicts", r"state_dict|state dict", """
def save_checkpoint(path, model, optimizer, step, generator):
    name, keys, position, has_gauss, cached = np.random.get_state()
    rng = {"python": random.getstate(), "numpy": (name, keys.tolist(), position, has_gauss, cached),
           "torch": torch.get_rng_state(), "batches": generator.get_state()}
    torch.save({"model": model, "optimizer": optimizer, "step": step, "rng": rng}, path)
"""),
    # typical mistakes of our own
    Wrong("seed_everything", "seeds torch's CUDA generators only", r"torch|CPU", """
def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.cuda.manual_seed_all(seed)
"""),
    Wrong("get_batch", "draws the starts with numpy instead of the generator", r"generator", """
def get_batch(data, batch_size, context_length, device, generator):
    starts = np.random.randint(0, len(data) - context_length, batch_size)
    windows = np.stack([data[s : s + context_length + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(windows[:, :-1].copy()).to(device), torch.from_numpy(windows[:, 1:].copy()).to(device)
"""),
    Wrong("save_checkpoint", "saves the step as a tensor", r"int", """
def save_checkpoint(path, model, optimizer, step, generator):
    name, keys, position, has_gauss, cached = np.random.get_state()
    rng = {"python": random.getstate(), "numpy": (name, keys.tolist(), position, has_gauss, cached),
           "torch": torch.get_rng_state(), "batches": generator.get_state()}
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": torch.tensor(step), "rng": rng}, path)
"""),
    Wrong("tokens_billions", 'one byte per token', r"one byte", """
tokens_billions = 2.8e12 / 1e9
"""),
    Wrong("tokens_billions", '8 bytes per token, as int64', r"uint16|int64", """
tokens_billions = 2.8e12 / 8 / 1e9
"""),
    Wrong("read_minutes", 'seconds where minutes were asked', r"seconds where minutes", """
read_minutes = 2.8e12 / 2e9
"""),
    Wrong("read_minutes", 'hours where minutes were asked', r"hours", """
read_minutes = 2.8e12 / 2e9 / 3600
"""),
]
