"""Exercise 8, the training loop: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_BATCH = '''
def get_batch(data, batch_size, context_length, device, generator):
    starts = {starts}
    windows = {windows}
    inputs = torch.from_numpy({inputs})
    targets = torch.from_numpy({targets})
    return inputs.to(device), targets.to(device)
'''
_B = dict(starts="torch.randint(0, len(data) - context_length, (batch_size,), generator=generator)",
          windows="np.stack([np.asarray(data[s:s + context_length + 1]) for s in starts.tolist()]).astype(np.int64)",
          inputs="windows[:, :-1].copy()", targets="windows[:, 1:].copy()")
_SEED = '''
def seed_everything(seed):
{body}
'''
_TRAIN = '''
def train(model, optimizer, data, num_steps, batch_size, context_length, generator, accumulation_steps=1):
    device = next(model.parameters()).device
    losses = []
    for _ in range(num_steps):
        total = 0.0
        for _ in range(accumulation_steps):
            {zero_inner}
            inputs, targets = get_batch(data, batch_size, context_length, device, generator)
            logits = model(inputs)
            loss = {loss}
            ({backward}).backward()
            total += {record}
            {step_inner}
        {step}
        {zero}
        losses.append({result})
    return losses
'''
_T = dict(zero_inner="", loss="F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))",
          backward="loss / accumulation_steps", record="loss.item()", step_inner="", step="optimizer.step()",
          zero="optimizer.zero_grad(set_to_none=True)", result="total / accumulation_steps")
_SAVE = '''
def save_checkpoint(path, model, optimizer, step, generator):
    keys = np.random.get_state()
    rng = {{"python": random.getstate(),
           "numpy": {numpy},
           "torch": torch.get_rng_state(),
           {generator}}}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    {write}({{"{model_key}": {model}, "optimizer": optimizer.state_dict(), "step": {step}, "rng": rng}}, path)
'''
_SV = dict(numpy="(keys[0], torch.from_numpy(keys[1].astype(np.int64)), keys[2], keys[3], keys[4])",
           generator='"generator": generator.get_state()', write="torch.save", model_key="model", model="model.state_dict()",
           step="step")
_LOAD = '''
def load_checkpoint(path, model, optimizer, generator):
    checkpoint = torch.load(path{weights_only})
    model.load_state_dict(checkpoint["model"])
    {optimizer}
    rng = checkpoint["rng"]
    random.setstate(rng["python"])
    {numpy}
    {torch_state}
    {generator}
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return {step}
'''
_L = dict(weights_only=", weights_only=True", optimizer='optimizer.load_state_dict(checkpoint["optimizer"])',
          numpy='name, keys, pos, has_gauss, cached = rng["numpy"]\n    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))',
          torch_state='torch.set_rng_state(rng["torch"])', generator='generator.set_state(rng["generator"])', step='int(checkpoint["step"])')
# a load_checkpoint reads its own save_checkpoint's layout: each entry of task 5 redefines task 4's function as written with it
_LOAD = _SAVE.format(**_SV).replace("{", "{{").replace("}", "}}") + _LOAD

WRONG = [
    Wrong("get_batch", "torch's global generator instead of the one given", r"generator",
          _BATCH.format(**{**_B, "starts": "torch.randint(0, len(data) - context_length, (batch_size,))"})),
    Wrong("get_batch", "one position too few to start from: len(data) - context_length - 1", r"every position|where a whole window|\brange\b|len\(data\)",
          _BATCH.format(**{**_B, "starts": "torch.randint(0, len(data) - context_length - 1, (batch_size,), generator=generator)"})),
    Wrong("get_batch", "uint16 tensors: no cast to int64", r"int64", _BATCH.format(**{**_B,
          "windows": "np.stack([np.asarray(data[s:s + context_length + 1]) for s in starts.tolist()]).astype(np.int32)"})),
    Wrong("get_batch", "targets as the inputs rolled by one, wrapping around", r"one token later|next token|same window",
          _BATCH.format(**{**_B, "targets": "np.roll(windows[:, :-1], -1, axis=1)"})),
    Wrong("get_batch", "the whole of data turned into an array first", r"whole|read only|budget|MiB|windows",
          _BATCH.format(**{**_B, "windows":
              "(lambda everything: np.stack([everything[s:s + context_length + 1] for s in starts.tolist()]))(np.array(data)).astype(np.int64)"})),
    Wrong("get_batch", "numpy's global generator draws the starts", r"generator|torch\.randint", _BATCH.format(**{**_B,
          "starts": "torch.from_numpy(np.random.randint(0, len(data) - context_length, batch_size))"})),
    Wrong("get_batch", "returns numpy arrays", r"torch tensors|numpy|Tensor", """
def get_batch(data, batch_size, context_length, device, generator):
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator)
    windows = np.stack([np.asarray(data[s:s + context_length + 1]) for s in starts.tolist()]).astype(np.int64)
    return windows[:, :-1], windows[:, 1:]
"""),
    Wrong("seed_everything", "numpy forgotten", r"numpy", _SEED.format(body="    random.seed(seed)\n    torch.manual_seed(seed)")),
    Wrong("seed_everything", "a new numpy Generator instead of the global one", r"global|np\.random", _SEED.format(
        body="    random.seed(seed)\n    np.random.default_rng(seed)\n    torch.manual_seed(seed)")),
    Wrong("seed_everything", "only the CUDA generators of torch", r"torch's global|CPU", _SEED.format(
        body="    random.seed(seed)\n    np.random.seed(seed)\n    torch.cuda.manual_seed_all(seed)")),
    Wrong("seed_everything", "a new torch.Generator instead of torch's global one", r"global|torch's", _SEED.format(
        body="    random.seed(seed)\n    np.random.seed(seed)\n    return torch.Generator().manual_seed(seed)")),
    Wrong("seed_everything", "Python's random forgotten", r"Python", _SEED.format(body="    np.random.seed(seed)\n    torch.manual_seed(seed)")),
    Wrong("train", "the micro-batch losses not divided by accumulation_steps", r"divid|accumulation_steps|mean loss|times too",
          _TRAIN.format(**{**_T, "backward": "loss"})),
    Wrong("train", "optimizer.step() after every micro-batch", r"once per step|step once|every micro-batch|each micro-batch|once .{0,20}micro-batches",
          _TRAIN.format(**{**_T, "step_inner": "optimizer.step()", "step": "pass"})),
    Wrong("train", "no zero_grad", r"zero_grad|clear|still holds", _TRAIN.format(**{**_T, "zero": "pass"})),
    Wrong("train", "zero_grad before every micro-batch: nothing accumulates", r"accumulat|between micro-batches|clears?.{0,40}micro",
          _TRAIN.format(**{**_T, "zero_inner": "optimizer.zero_grad(set_to_none=True)"})),
    Wrong("train", "the last micro-batch's loss instead of their mean", r"mean of (its|the) micro-batches", _TRAIN.format(**{**_T,
          "result": "loss.item()"})),
    Wrong("train", "loss tensors in the list, not floats", r"float|item", _TRAIN.format(**{**_T, "record": "loss.detach()"})),
    Wrong("train", "one get_batch call for all micro-batches, then split", r"once per micro-batch|get_batch", """
def train(model, optimizer, data, num_steps, batch_size, context_length, generator, accumulation_steps=1):
    device = next(model.parameters()).device
    losses = []
    for _ in range(num_steps):
        inputs, targets = get_batch(data, batch_size * accumulation_steps, context_length, device, generator)
        total = 0.0
        for part_x, part_y in zip(inputs.chunk(accumulation_steps), targets.chunk(accumulation_steps)):
            logits = model(part_x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), part_y.reshape(-1))
            (loss / accumulation_steps).backward()
            total += loss.item()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(total / accumulation_steps)
    return losses
"""),
    Wrong("train", "cross_entropy on (batch, seq, vocab) logits, not flattened", r"dimension 1|flatten|classes",
          _TRAIN.format(**{**_T, "loss": "F.cross_entropy(logits, targets)"})),
    Wrong("save_checkpoint", "numpy's state saved as it is, with its numpy array", r"numpy", _SAVE.format(**{**_SV, "numpy": "keys"})),
    Wrong("save_checkpoint", "the model object itself", r"object itself|state dict|state_dict", _SAVE.format(**{**_SV, "model": "model"})),
    Wrong("save_checkpoint", "the batch generator's state forgotten", r"generator", _SAVE.format(**{**_SV, "generator": '"unused": None'})),
    Wrong("save_checkpoint", "pickle.dump instead of torch.save", r"torch\.save|torch's own saving|pickle", "import pickle\n" + _SAVE.format(**{**_SV,
          "write": "(lambda obj, path: pickle.dump(obj, open(path, 'wb')))"})),
    Wrong("save_checkpoint", "the step as a tensor", r"\bint\b", _SAVE.format(**{**_SV, "step": "torch.tensor(step)"})),
    Wrong("save_checkpoint", "the model under the key 'model_state'", r"\bkey", _SAVE.format(**{**_SV, "model_key": "model_state"})),
    Wrong("save_checkpoint", "the generator's state as a list of ints", r"generator|get_state", _SAVE.format(**{**_SV,
          "generator": '"generator": generator.get_state().tolist()'})),
    Wrong("load_checkpoint", "torch.load without weights_only=True", r"weights_only", _LOAD.format(**{**_L, "weights_only": ", weights_only=False"})),
    Wrong("load_checkpoint", "the batch generator not restored", r"generator", _LOAD.format(**{**_L, "generator": "pass"})),
    Wrong("load_checkpoint", "numpy's state not restored", r"numpy", _LOAD.format(**{**_L, "numpy": "pass"})),
    Wrong("load_checkpoint", "the step returned as a tensor", r"\bint\b", _LOAD.format(**{**_L, "step": 'torch.tensor(checkpoint["step"])'})),
    Wrong("load_checkpoint", "the optimizer not restored", r"optimizer", _LOAD.format(**{**_L, "optimizer": "pass"})),
    Wrong("load_checkpoint", "torch's and the generator's states swapped", r"torch's|generator|swap", _LOAD.format(**{**_L,
          "torch_state": 'torch.set_rng_state(rng["generator"])', "generator": 'generator.set_state(rng["torch"])'})),
    Wrong("tokens_billions", "one byte per token", r"2 bytes|uint16|bytes per token", "tokens_billions = 2.8e12 / 1e9\n"),
    Wrong("tokens_billions", "bytes times 2 instead of over 2", r"divid|multipl|2 bytes", "tokens_billions = 2.8e12 * 2 / 1e9\n"),
    Wrong("tokens_billions", "tokens, not billions", r"billion|10\^9", "tokens_billions = 2.8e12 / 2\n"),
    Wrong("tokens_billions", "2^30 for a billion", r"10\^9|2\^30|GiB|billion", "tokens_billions = 2.8e12 / 2 / 2**30\n"),
    Wrong("tokens_billions", "16 bytes per token (bits taken as bytes)", r"bits|\b16\b", "tokens_billions = 2.8e12 / 16 / 1e9\n"),
    Wrong("read_minutes", "seconds, not minutes", r"seconds|\b60\b", "read_minutes = 2.8e12 / 2e9\n"),
    Wrong("read_minutes", "hours, not minutes", r"hours|\b60\b", "read_minutes = 2.8e12 / 2e9 / 3600\n"),
    Wrong("read_minutes", "2 GiB/s for 2 GB/s", r"GiB|2\^30", "read_minutes = 2.8e12 / (2 * 2**30) / 60\n"),
    Wrong("read_minutes", "twice the bytes (2 bytes per token counted again)", r"2x|twice|bytes", "read_minutes = 2 * 2.8e12 / 2e9 / 60\n"),
    Wrong("read_minutes", "the file in bits over a rate in bytes", r"bits", "read_minutes = 2.8e12 * 8 / 2e9 / 60\n"),
]
