"""Exercise 3, strides and views: typical wrong answers."""
from tests.wrong_answers import Wrong

WRONG = [
    Wrong("storage_index", "forgets the storage offset", r"offset", """
def storage_index(index, strides, storage_offset):
    return sum(i * s for i, s in zip(index, strides))
"""),
    Wrong("storage_index", "pairs each index with the wrong dimension's stride", r"own dimension|its own|swap|transpose", """
def storage_index(index, strides, storage_offset):
    return storage_offset + sum(i * s for i, s in zip(index, reversed(strides)))
"""),
    Wrong("row_major_strides", "a size-0 dimension counts as 0 in the product", r"size-0|size 0|0 dimension", """
def row_major_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))
"""),
    Wrong("row_major_strides", "returns a list", r"tuple", """
def row_major_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= max(size, 1)
    return strides
"""),
    Wrong("row_major_strides", "includes a dimension's own size in its stride", r"after it|dimensions after|later dim|last dimension has stride 1", """
def row_major_strides(shape):
    return tuple(math.prod(max(s, 1) for s in shape[d:]) for d in range(len(shape)))
"""),
    Wrong("is_contiguous", "checks the stride of size-1 dimensions too", r"size-1", """
def is_contiguous(shape, strides):
    if 0 in shape:
        return True
    return tuple(strides) == row_major_strides(shape)
"""),
    Wrong("is_contiguous", "forgets that a tensor with no elements is contiguous", r"no elements|empty|size-0|size 0", """
def is_contiguous(shape, strides):
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True
"""),
    Wrong("slice_metadata", "no clamping: stop past the end counts indices that do not exist", r"clamp", """
def slice_metadata(shape, strides, storage_offset, dim, start, stop, step):
    size = shape[dim]
    start = 0 if start is None else (start + size if start < 0 else start)
    stop = size if stop is None else (stop + size if stop < 0 else stop)
    count = max(0, (stop - start + step - 1) // step)
    new_shape = shape[:dim] + (count,) + shape[dim + 1:]
    new_strides = strides[:dim] + (strides[dim] * step,) + strides[dim + 1:]
    return new_shape, new_strides, storage_offset + start * strides[dim]
"""),
    Wrong("slice_metadata", "keeps the stride of the sliced dimension instead of multiplying it by step", r"step", """
def slice_metadata(shape, strides, storage_offset, dim, start, stop, step):
    picked = range(shape[dim])[start:stop:step]
    new_shape = shape[:dim] + (len(picked),) + shape[dim + 1:]
    return new_shape, strides, storage_offset + picked.start * strides[dim]
"""),
    Wrong("slice_metadata", "starts from storage offset 0 instead of the input's offset", r"input's (storage )?offset|offset of the input|add it to|storage offset", """
def slice_metadata(shape, strides, storage_offset, dim, start, stop, step):
    picked = range(shape[dim])[start:stop:step]
    new_shape = shape[:dim] + (len(picked),) + shape[dim + 1:]
    new_strides = strides[:dim] + (strides[dim] * step,) + strides[dim + 1:]
    return new_shape, new_strides, picked.start * strides[dim]
"""),
    Wrong("sliding_windows", "strides (1, 1), as if x were contiguous", r"stride", """
def sliding_windows(x, width):
    n = x.shape[0]
    return x.as_strided((n - width + 1, width), (1, 1), x.storage_offset())
"""),
    Wrong("sliding_windows", "storage offset 0, as if as_strided counted from the start of x", r"offset", """
def sliding_windows(x, width):
    n = x.shape[0]
    return x.as_strided((n - width + 1, width), (x.stride(0), x.stride(0)), 0)
"""),
    Wrong("sliding_windows", "stacks copies of the windows", r"view|as_strided|copy", """
def sliding_windows(x, width):
    return torch.stack([x[i:i + width] for i in range(x.shape[0] - width + 1)])
"""),
    Wrong("can_view", "does not skip size-1 dimensions when grouping chunks", r"size-1", """
def can_view(shape, strides, new_shape):
    if 0 in shape:
        return True
    chunks, numel, follows = [], 1, None
    for size, stride in zip(reversed(shape), reversed(strides)):
        if follows is not None and stride != follows:
            chunks.append(numel)
            numel = 1
        numel *= size
        follows = stride * size
    chunks.append(numel)
    sizes = [s for s in reversed(new_shape) if s != 1]
    position = 0
    for chunk in chunks:
        product = 1
        while product < chunk and position < len(sizes):
            product *= sizes[position]
            position += 1
        if product != chunk:
            return False
    return position == len(sizes)
"""),
    Wrong("can_view", "only contiguous tensors can be viewed", r"split|chunk", """
def can_view(shape, strides, new_shape):
    return is_contiguous(shape, strides)
"""),
    Wrong("can_view", "compares only the number of chunks with the number of new dimensions", r"chunk", """
def can_view(shape, strides, new_shape):
    if 0 in shape:
        return True
    chunks = 1
    dims = [(size, stride) for size, stride in zip(shape, strides) if size != 1]
    for (size, stride), (next_size, next_stride) in zip(dims, dims[1:]):
        if stride != next_stride * next_size:
            chunks += 1
    return len([s for s in new_shape if s != 1]) >= chunks
"""),
    Wrong("copy_mib", 'elements counted, not bytes', r"elements", """
copy_mib = 8192 * 4096 / 2**20
"""),
    Wrong("copy_mib", 'MB where MiB were asked', r"MB \(10\^6", """
copy_mib = 8192 * 4096 * 4 / 1e6
"""),
    Wrong("copy_mib", '0: takes the copy for a view', r"above 0", """
copy_mib = 0
"""),
]
