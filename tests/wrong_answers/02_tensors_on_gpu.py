"""Exercise 2, tensors on the GPU: typical wrong answers."""
from tests.wrong_answers import Wrong

WRONG = [
    Wrong("pick_device", "returns 'cuda' without the GPU's index", r"index|cuda:<|'cuda:0'|cuda:0", """
def pick_device(cuda_count, mps_available, local_rank=0):
    if cuda_count > 0:
        if not 0 <= local_rank < cuda_count:
            raise ValueError("no such GPU")
        return "cuda"
    return "mps" if mps_available else "cpu"
"""),
    Wrong("pick_device", "never checks that GPU local_rank exists", r"ValueError", """
def pick_device(cuda_count, mps_available, local_rank=0):
    if cuda_count > 0:
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"
"""),
    Wrong("pick_device", "checks only local_rank >= cuda_count, so a negative rank gets a GPU", r"negative|GPU -1|local_rank=-1", """
def pick_device(cuda_count, mps_available, local_rank=0):
    if cuda_count > 0:
        if local_rank >= cuda_count:
            raise ValueError(f"there are only {cuda_count} GPUs")
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"
"""),
    Wrong("allocated_bytes", "rounds the total up once, not each tensor", r"(each|every) tensor|own blocks", """
def allocated_bytes(tensors):
    total = sum(math.prod(shape) * dtype.itemsize for shape, dtype in tensors)
    return math.ceil(total / 512) * 512
"""),
    Wrong("allocated_bytes", "adds a block even to sizes that are whole blocks already", r"multiple of 512|already|whole", """
def allocated_bytes(tensors):
    total = 0
    for shape, dtype in tensors:
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes:
            total += (nbytes // 512 + 1) * 512
    return total
"""),
    Wrong("allocated_bytes", "4 bytes per element whatever the dtype", r"itemsize|bytes per element|dtype", """
def allocated_bytes(tensors):
    total = 0
    for shape, dtype in tensors:
        nbytes = math.prod(shape) * 4
        total += math.ceil(nbytes / 512) * 512
    return total
"""),
    Wrong("to_copies", "ignores copy=True", r"copy=True", """
def to_copies(source_device, source_dtype, target_device=None, target_dtype=None, copy=False, current_cuda=0):
    def full(device):
        return f"cuda:{current_cuda}" if device == "cuda" else device
    target = full(source_device) if target_device is None else full(target_device)
    return target != full(source_device) or (target_dtype is not None and target_dtype != source_dtype)
"""),
    Wrong("to_copies", "compares device names as written, so 'cuda' and 'cuda:0' differ", r"current", """
def to_copies(source_device, source_dtype, target_device=None, target_dtype=None, copy=False, current_cuda=0):
    if copy:
        return True
    if target_device is not None and target_device != source_device:
        return True
    return target_dtype is not None and target_dtype != source_dtype
"""),
    Wrong("copy_gb_per_s", "does not synchronize after each timed copy", r"synchroni[sz]e", """
def copy_gb_per_s(copy, nbytes, synchronize, clock=time.perf_counter, warmup=2, repeats=5):
    for _ in range(warmup):
        copy()
    synchronize()
    seconds = []
    for _ in range(repeats):
        start = clock()
        copy()
        seconds.append(clock() - start)
    return nbytes / statistics.median(seconds) / 1e9
"""),
    Wrong("copy_gb_per_s", "GiB/s (2**30) instead of GB/s", r"1e9|2\*\*30|GB = 10", """
def copy_gb_per_s(copy, nbytes, synchronize, clock=time.perf_counter, warmup=2, repeats=5):
    for _ in range(warmup):
        copy()
    synchronize()
    seconds = []
    for _ in range(repeats):
        start = clock()
        copy()
        synchronize()
        seconds.append(clock() - start)
    return nbytes / statistics.median(seconds) / 2**30
"""),
    Wrong("copy_gb_per_s", "the mean of the times instead of the median", r"median", """
def copy_gb_per_s(copy, nbytes, synchronize, clock=time.perf_counter, warmup=2, repeats=5):
    for _ in range(warmup):
        copy()
    synchronize()
    seconds = []
    for _ in range(repeats):
        start = clock()
        copy()
        synchronize()
        seconds.append(clock() - start)
    return nbytes / statistics.mean(seconds) / 1e9
"""),
    # issue #50: the order the task announces (CUDA, then mps, then the CPU)
    Wrong("pick_device", "prefers mps over CUDA", r"CUDA (GPU )?(comes )?(first|before)|before mps|order", """
def pick_device(cuda_count, mps_available, local_rank=0):
    if mps_available:
        return "mps"
    if cuda_count > 0:
        if not 0 <= local_rank < cuda_count:
            raise ValueError(f"no GPU {local_rank}")
        return f"cuda:{local_rank}"
    return "cpu"
"""),
    Wrong("copy_seconds", 'milliseconds where seconds were asked', r"milliseconds", """
copy_seconds = 4 * 2**30 / 25e9 * 1000
"""),
    Wrong("copy_seconds", '4 GiB taken as 4 GB', r"GiB", """
copy_seconds = 4e9 / 25e9
"""),
    Wrong("copy_seconds", 'the bandwidth read as bits per second', r"gigabits", """
copy_seconds = 4 * 2**30 * 8 / 25e9
"""),
]
