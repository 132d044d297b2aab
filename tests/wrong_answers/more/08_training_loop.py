"""Exercise 8, the training loop: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_BATCH = '''
def get_batch(data, batch_size, context_length, device, generator):
    starts = torch.randint(0, {high}, (batch_size,), generator=generator).tolist()
    windows = np.stack([data[s : s + context_length + 1] for s in starts]).astype(np.int64)
    inputs, targets = {result}
    return inputs.to(device), targets.to(device)
'''
_TENSORS = "torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())"
_TRAIN = '''
def train(model, optimizer, data, num_steps, batch_size, context_length, generator, accumulation_steps=1):
    device = next(model.parameters()).device
    losses = []
    for _ in range(num_steps):
{body}
    return losses
'''
_STEP = '''        step_loss = 0.0
        for _ in range(accumulation_steps):
            inputs, targets = get_batch(data, batch_size, context_length, device, generator)
            loss = {loss}
            (loss / accumulation_steps).backward()
            step_loss += loss.item() / accumulation_steps
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(step_loss)'''
_FLAT_LOSS = "F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())"
_SAVE = '''
def save_checkpoint(path, model, optimizer, step, generator):
    name, keys, position, has_gauss, cached = np.random.get_state()
    rng = {{"python": random.getstate(), "numpy": (name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached),
           "torch": torch.get_rng_state(), "batches": generator.get_state()}}
    torch.save({{"model": {model}, "optimizer": optimizer.state_dict(), "step": step, "rng": rng}}, path)
'''
_LOAD = '''
def load_checkpoint(path, model, optimizer, generator):
    checkpoint = torch.load(path{weights_only})
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    rng = checkpoint["rng"]
    random.setstate(rng["python"])
    name, keys, position, has_gauss, cached = rng["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    torch.set_rng_state(rng["torch"])
    generator.set_state(rng["batches"])
    {ret}
'''

WRONG = [
    Wrong("get_batch", "draws starts below len(data) - context_length - 1, so the last window is never picked",
          r"whole window|fits", _BATCH.format(high="len(data) - context_length - 1", result=_TENSORS)),
    Wrong("get_batch", "returns numpy arrays", r"torch tensors|not numpy", _BATCH.format(
        high="len(data) - context_length", result="windows[:, :-1], windows[:, 1:]").replace(
            "return inputs.to(device), targets.to(device)", "return inputs, targets")),
    Wrong("get_batch", "inputs and targets swapped: the inputs are the later tokens", r"one token later|first 8", _BATCH.format(
        high="len(data) - context_length", result="torch.from_numpy(windows[:, 1:].copy()), torch.from_numpy(windows[:, :-1].copy())")),
    Wrong("train", "cross_entropy on (batch, seq, vocab) logits as they are", r"classes|flatten", _TRAIN.format(
        body=_STEP.format(loss="F.cross_entropy(model(inputs), targets)"))),
    Wrong("train", "returns the mean loss of all steps, not one loss per step", r"list", _TRAIN.format(
        body=_STEP.format(loss=_FLAT_LOSS)).replace("    return losses", "    return sum(losses) / len(losses)")),
    Wrong("train", "the step's loss is the last micro-batch's, not their mean", r"mean of its micro-batches", _TRAIN.format(
        body=_STEP.format(loss=_FLAT_LOSS).replace("step_loss += loss.item() / accumulation_steps",
                                                   "step_loss = loss.item()"))),
    Wrong("train", "zeroes the gradients before the step instead of after, so the last step's stay",
          r"still holds|clear", _TRAIN.format(body='''        optimizer.zero_grad(set_to_none=True)
        step_loss = 0.0
        for _ in range(accumulation_steps):
            inputs, targets = get_batch(data, batch_size, context_length, device, generator)
            loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
            (loss / accumulation_steps).backward()
            step_loss += loss.item() / accumulation_steps
        optimizer.step()
        losses.append(step_loss)''')),
    Wrong("save_checkpoint", "saves the list of parameters instead of the state dict", r"state dict|by name",
          _SAVE.format(model="list(model.parameters())")),
    Wrong("load_checkpoint", "torch.load without weights_only=True", r"weights_only", _LOAD.format(
        weights_only="", ret='return checkpoint["step"]')),
    Wrong("load_checkpoint", "restores everything but returns nothing", r"return the step|\bint\b", _LOAD.format(
        weights_only=", weights_only=True", ret="pass")),
]
