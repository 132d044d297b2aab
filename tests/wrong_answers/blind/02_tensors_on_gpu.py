"""Exercise 2, tensors on the GPU: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_PICK = '''
def pick_device(cuda_count, mps_available, local_rank=0):
{body}
'''
_ALLOC = '''
def allocated_bytes(tensors):
    total = 0
    for shape, dtype in tensors:
        nbytes = math.prod(shape) * {size}
        total += {rounded}
    return {result}
'''
_A = dict(size="dtype.itemsize", rounded="-(-nbytes // 512) * 512", result="total")
_TO = '''
def to_copies(source_device, source_dtype, target_device=None, target_dtype=None, copy=False, current_cuda=0):
    def name(device):
        return f"cuda:{{current_cuda}}" if device == "cuda" else device
    {body}
'''
_TO_BODY = '''if copy:
        return True
    if target_device is not None and name(target_device) != name(source_device):
        return True
    return target_dtype is not None and target_dtype != source_dtype'''
_COPY = '''
def copy_gb_per_s(copy, nbytes, synchronize, clock=time.perf_counter, warmup=2, repeats=5):
    for _ in range(warmup):
        copy()
    {after_warmup}
    times = []
    for _ in range(repeats):
        start = {clock}()
        copy()
        {after_copy}
        times.append({clock}() - start)
    return nbytes / {stat}(times) / {unit}
'''
_CP = dict(after_warmup="synchronize()", clock="clock", after_copy="synchronize()", stat="statistics.median", unit="1e9")

WRONG = [
    Wrong("pick_device", "checks the rank before looking for a CUDA GPU, so a machine without one raises",
          r"only when there are|checked only|no CUDA GPU, local_rank", _PICK.format(body='''    if local_rank < 0 or local_rank >= cuda_count:
        raise ValueError(f"no GPU {local_rank}")
    if cuda_count > 0:
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"''')),
    Wrong("pick_device", "mps before CUDA", r"order|comes first|before mps", _PICK.format(body='''    if mps_available:
        return "mps"
    if cuda_count > 0:
        if not 0 <= local_rank < cuda_count:
            raise ValueError("no such GPU")
        return f"cuda:{local_rank}"
    return "cpu"''')),
    Wrong("pick_device", "'cuda' without the GPU's index", r"index|names the GPU|cuda:<", _PICK.format(body='''    if cuda_count > 0:
        if not 0 <= local_rank < cuda_count:
            raise ValueError("no such GPU")
        return "cuda"
    return "mps" if mps_available else "cpu"''')),
    Wrong("pick_device", "no ValueError for a rank past the last GPU", r"ValueError", _PICK.format(body='''    if cuda_count > 0:
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"''')),
    Wrong("pick_device", "a negative rank is accepted", r"negative", _PICK.format(body='''    if cuda_count > 0:
        if local_rank >= cuda_count:
            raise ValueError("no such GPU")
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"''')),
    Wrong("pick_device", "off by one: local_rank == cuda_count is accepted", r"ValueError|cuda:0 and cuda:1", _PICK.format(body='''    if cuda_count > 0:
        if local_rank < 0 or local_rank > cuda_count:
            raise ValueError("no such GPU")
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"''')),
    Wrong("pick_device", "returns a torch.device, not a string", r"\bstr\b|string", _PICK.format(body='''    if cuda_count > 0:
        if not 0 <= local_rank < cuda_count:
            raise ValueError("no such GPU")
        return torch.device(f"cuda:{local_rank}")
    return torch.device("mps" if mps_available else "cpu")''')),
    Wrong("allocated_bytes", "rounds the total, not each tensor", r"each tensor|own blocks|every tensor|separately|per tensor",
          _ALLOC.format(**{**_A, "rounded": "nbytes", "result": "-(-total // 512) * 512"})),
    Wrong("allocated_bytes", "rounds down instead of up", r"round(s|ed)? up|up to", _ALLOC.format(**{**_A, "rounded": "nbytes // 512 * 512"})),
    Wrong("allocated_bytes", "a tensor with no elements still takes a block", r"no elements|0 bytes|not rounded|empty",
          _ALLOC.format(**{**_A, "rounded": "max(1, -(-nbytes // 512)) * 512"})),
    Wrong("allocated_bytes", "4 bytes for every dtype", r"itemsize|dtype|bytes per element", _ALLOC.format(**{**_A, "size": "4"})),
    Wrong("allocated_bytes", "adds a block even when the size is already a multiple of 512", r"already a multiple|multiple of 512|exact",
          _ALLOC.format(**{**_A, "rounded": "(nbytes // 512 + 1) * 512"})),
    Wrong("allocated_bytes", "rounds to 1024-byte blocks", r"512", _ALLOC.format(**{**_A, "rounded": "-(-nbytes // 1024) * 1024"})),
    Wrong("to_copies", "copy=True ignored", r"copy=True", _TO.format(body=_TO_BODY.replace("if copy:\n        return True\n    ", ""))),
    Wrong("to_copies", "compares device names as written, so 'cuda' is never 'cuda:0'", r"current device|'cuda' means|means the current",
          _TO.format(body=_TO_BODY.replace("name(target_device) != name(source_device)", "target_device != source_device"))),
    Wrong("to_copies", "a None target device counts as a move", r"no target device|None means|stays on its device|keep",
          _TO.format(body=_TO_BODY.replace("target_device is not None and ", ""))),
    Wrong("to_copies", "'cuda' always read as cuda:0, whatever current_cuda says", r"current_cuda",
          _TO.format(body=_TO_BODY).replace('f"cuda:{current_cuda}"', '"cuda:0"')),
    Wrong("to_copies", "a None target dtype counts as a change", r"already|keep|None",
          _TO.format(body=_TO_BODY.replace("target_dtype is not None and ", ""))),
    Wrong("to_copies", "only a new dtype copies; a move to another device is forgotten", r"another device|device always copies|moving",
          _TO.format(body='''if copy:
        return True
    return target_dtype is not None and target_dtype != source_dtype''')),
    Wrong("copy_gb_per_s", "no synchronize after each timed copy", r"synchronize", _COPY.format(**{**_CP, "after_copy": "pass"})),
    Wrong("copy_gb_per_s", "the mean time instead of the median", r"median|mean", _COPY.format(**{**_CP, "stat": "statistics.mean"})),
    Wrong("copy_gb_per_s", "GiB/s instead of GB/s", r"GiB|2\*\*30|10\^9", _COPY.format(**{**_CP, "unit": "2**30"})),
    Wrong("copy_gb_per_s", "the warm-up copies timed with the others", r"warm-up", """
def copy_gb_per_s(copy, nbytes, synchronize, clock=time.perf_counter, warmup=2, repeats=5):
    times = []
    for _ in range(warmup + repeats):
        start = clock()
        copy()
        synchronize()
        times.append(clock() - start)
    return nbytes / statistics.median(times) / 1e9
"""),
    Wrong("copy_gb_per_s", "no synchronize after the warm-up, so the first timed copy waits for the queued warm-ups",
          r"(synchroniz|wait)\w*.{0,80}warm-up|warm-up.{0,80}(queued|still|synchroniz|wait)", _COPY.format(**{**_CP, "after_warmup": "pass"})),
    Wrong("copy_gb_per_s", "the total of the timed copies instead of the median", r"median|sum|total", _COPY.format(**{**_CP, "stat": "sum"})),
    Wrong("copy_gb_per_s", "time.perf_counter instead of the clock it was given", r"clock", _COPY.format(**{**_CP, "clock": "time.perf_counter"})),
    Wrong("copy_seconds", "4 GB for 4 GiB", r"GiB|2\^30", "copy_seconds = 4e9 / 25e9\n"),
    Wrong("copy_seconds", "milliseconds", r"milli", "copy_seconds = 4 * 2**30 / 25e9 * 1000\n"),
    Wrong("copy_seconds", "bits where the link's rate is in bytes", r"bits?\b", "copy_seconds = 4 * 2**30 * 8 / 25e9\n"),
    Wrong("copy_seconds", "rate over size: the reciprocal", r"recipro|invert|upside|the other way|over the", "copy_seconds = 25e9 / (4 * 2**30)\n"),
]
