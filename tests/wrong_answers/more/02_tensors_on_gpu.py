"""Exercise 2, tensors on the GPU: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_COPY = '''
def copy_gb_per_s(copy, nbytes, synchronize, clock=time.perf_counter, warmup=2, repeats=5):
{body}
'''
_GOOD_TIMES = '''    for _ in range(warmup):
        copy()
    synchronize()
    seconds = []
    for _ in range(repeats):
        start = clock()
        copy()
        synchronize()
        seconds.append(clock() - start)
'''

WRONG = [
    Wrong("pick_device", "returns a torch.device, not the device string", r"\bstr\b|string", """
def pick_device(cuda_count, mps_available, local_rank=0):
    if cuda_count > 0:
        if not 0 <= local_rank < cuda_count:
            raise ValueError("no such GPU")
        return torch.device("cuda", local_rank)
    return torch.device("mps" if mps_available else "cpu")
"""),
    Wrong("pick_device", "wraps local_rank around the GPUs (modulo) instead of raising", r"should raise ValueError", """
def pick_device(cuda_count, mps_available, local_rank=0):
    if cuda_count > 0:
        return f"cuda:{local_rank % cuda_count}"
    return "mps" if mps_available else "cpu"
"""),
    Wrong("pick_device", "off by one: lets local_rank equal the number of GPUs", r"should raise ValueError", """
def pick_device(cuda_count, mps_available, local_rank=0):
    if cuda_count > 0:
        if local_rank < 0 or local_rank > cuda_count:
            raise ValueError("no such GPU")
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"
"""),
    Wrong("pick_device", "checks the rank before it knows there is a GPU, so a CPU-only machine raises",
          r"without a GPU|no CUDA GPU|only when there are CUDA GPUs", """
def pick_device(cuda_count, mps_available, local_rank=0):
    if not 0 <= local_rank < cuda_count:
        raise ValueError("no such GPU")
    return f"cuda:{local_rank}"
"""),
    Wrong("allocated_bytes", "rounds down to whole blocks instead of up", r"round(s|ed)? up", """
def allocated_bytes(tensors):
    return sum(math.prod(shape) * dtype.itemsize // 512 * 512 for shape, dtype in tensors)
"""),
    Wrong("allocated_bytes", "gives an empty tensor a block too", r"0 bytes|no elements|empty", """
def allocated_bytes(tensors):
    return sum(max(1, -(-math.prod(shape) * dtype.itemsize // 512)) * 512 for shape, dtype in tensors)
"""),
    Wrong("allocated_bytes", "rounds up with a float division, returning a float", r"\bint\b", """
def allocated_bytes(tensors):
    return sum(math.ceil(math.prod(shape) * dtype.itemsize / 512) * 512.0 for shape, dtype in tensors)
"""),
    Wrong("to_copies", "any target dtype counts as a change, even the one x has", r"already has|same dtype", """
def to_copies(source_device, source_dtype, target_device=None, target_dtype=None, copy=False, current_cuda=0):
    name = lambda d: f"cuda:{current_cuda}" if d == "cuda" else d
    target = source_device if target_device is None else target_device
    return copy or name(target) != name(source_device) or target_dtype is not None
"""),
    Wrong("to_copies", "takes 'cuda' as cuda:0 whatever the current device", r"current", """
def to_copies(source_device, source_dtype, target_device=None, target_dtype=None, copy=False, current_cuda=0):
    name = lambda d: "cuda:0" if d == "cuda" else d
    target = source_device if target_device is None else target_device
    new_dtype = target_dtype is not None and target_dtype != source_dtype
    return copy or name(target) != name(source_device) or new_dtype
"""),
    Wrong("to_copies", "no target device means a move, so .to(dtype=...) with x's dtype copies", r"no target device|stays|None", """
def to_copies(source_device, source_dtype, target_device=None, target_dtype=None, copy=False, current_cuda=0):
    name = lambda d: f"cuda:{current_cuda}" if d == "cuda" else d
    new_dtype = target_dtype is not None and target_dtype != source_dtype
    return copy or name(target_device) != name(source_device) or new_dtype
"""),
    Wrong("copy_gb_per_s", "no warm-up: the slow first copies are timed", r"warm", _COPY.format(body='''    seconds = []
    for _ in range(repeats):
        start = clock()
        copy()
        synchronize()
        seconds.append(clock() - start)
    for _ in range(warmup):
        copy()
    return nbytes / statistics.median(seconds) / 1e9''')),
    Wrong("copy_gb_per_s", "reads time.perf_counter instead of the clock it was given", r"clock", _COPY.format(body='''    for _ in range(warmup):
        copy()
    synchronize()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        copy()
        synchronize()
        seconds.append(time.perf_counter() - start)
    return nbytes / statistics.median(seconds) / 1e9''')),
    Wrong("copy_gb_per_s", "bytes per second: forgets to divide by 1e9", r"1e9|GB/s|giga", _COPY.format(
        body=_GOOD_TIMES + "    return nbytes / statistics.median(seconds)")),
    Wrong("copy_gb_per_s", "times all repeats at once: the total time, divided by the count, is the mean",
          r"each (timed )?copy|one by one|median", _COPY.format(body='''    for _ in range(warmup):
        copy()
    synchronize()
    start = clock()
    for _ in range(repeats):
        copy()
    synchronize()
    return nbytes / ((clock() - start) / repeats) / 1e9''')),
]
