"""Exercise 2, tensors on the GPU: early returns, ceiling by remainder, device names parsed, a hand-made median."""

VARIANTS = {
    "pick_device": """
def pick_device(cuda_count: int, mps_available: bool, local_rank: int = 0) -> str:
    '''The device string for process `local_rank` on a machine with `cuda_count` CUDA GPUs and maybe an Apple GPU.'''
    if cuda_count == 0:
        if mps_available:
            return "mps"
        return "cpu"
    if local_rank < 0 or local_rank >= cuda_count:
        raise ValueError(f"there is no GPU {local_rank} on a machine with {cuda_count} GPUs")
    return "cuda:" + str(local_rank)
""",
    "allocated_bytes": """
def allocated_bytes(tensors: list[tuple[tuple[int, ...], torch.dtype]]) -> int:
    '''How many bytes torch.cuda.memory_allocated() grows by when each (shape, dtype) becomes a CUDA tensor.'''
    total = 0
    for shape, dtype in tensors:
        numel = 1
        for size in shape:
            numel *= size
        nbytes = numel * dtype.itemsize
        blocks = nbytes // 512
        if nbytes % 512:
            blocks += 1          # a partly used block is still a whole block
        total += blocks * 512
    return total
""",
    "to_copies": """
def to_copies(source_device: str, source_dtype: torch.dtype, target_device: str | None = None,
              target_dtype: torch.dtype | None = None, copy: bool = False, current_cuda: int = 0) -> bool:
    '''True when x.to(target_device, target_dtype, copy=copy) copies x, False when it returns x itself.'''
    def kind_and_index(device):
        kind, _, number = device.partition(":")
        if kind == "cuda":
            return kind, int(number) if number else current_cuda
        return kind, None

    if copy:
        return True
    if target_dtype is not None and target_dtype != source_dtype:
        return True
    if target_device is None:
        return False
    return kind_and_index(target_device) != kind_and_index(source_device)
""",
    "copy_gb_per_s": """
def copy_gb_per_s(copy: Callable[[], object], nbytes: int, synchronize: Callable[[], None],
                  clock: Callable[[], float] = time.perf_counter, warmup: int = 2, repeats: int = 5) -> float:
    '''GB/s of copy() moving nbytes: warm up, synchronize, then the median of timed, synchronized calls.'''
    done = 0
    while done < warmup:
        copy()
        done += 1
    synchronize()
    times = []
    for _ in range(repeats):
        before = clock()
        copy()
        synchronize()
        after = clock()
        times.append(after - before)
    times.sort()
    middle = len(times) // 2
    median = times[middle] if len(times) % 2 == 1 else (times[middle - 1] + times[middle]) / 2
    return (nbytes / 1e9) / median
""",
    "copy_seconds": """
copy_seconds = (4 * 1024**3) / (25 * 1000**3)
""",
}
