"""Exercise 3, strides and views: sums and products written as expressions, slice.indices, functional as_strided,
and view-ability as chunk boundaries contained in the new shape's boundaries."""

VARIANTS = {
    "storage_index": """
def storage_index(index: tuple[int, ...], strides: tuple[int, ...], storage_offset: int) -> int:
    '''Storage index (elements) of the element at `index`.'''
    return storage_offset + sum(i * stride for i, stride in zip(index, strides))
""",
    "row_major_strides": """
def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    '''Strides (elements) of a fresh contiguous tensor of this shape.'''
    # the stride of dim d is the number of elements of one slice of the dims after it (size 0 counts as 1)
    return tuple(math.prod(max(size, 1) for size in shape[d + 1:]) for d in range(len(shape)))
""",
    "is_contiguous": """
def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    '''True when torch would call a tensor with this shape and these strides contiguous.'''
    if math.prod(shape) == 0:
        return True
    used = [(size, stride) for size, stride in zip(shape, strides) if size != 1]
    for d, (size, stride) in enumerate(used):
        if stride != math.prod(later for later, _ in used[d + 1:]):
            return False
    return True
""",
    "slice_metadata": """
def slice_metadata(shape: tuple[int, ...], strides: tuple[int, ...], storage_offset: int, dim: int,
                   start: int | None, stop: int | None, step: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    '''(shape, strides, storage_offset) of the view that slices dimension `dim` with start:stop:step.'''
    first, end, step = slice(start, stop, step).indices(shape[dim])   # Python's clamping
    count = max(0, (end - first + step - 1) // step)
    new_shape, new_strides = list(shape), list(strides)
    new_shape[dim] = count
    new_strides[dim] = strides[dim] * step
    return tuple(new_shape), tuple(new_strides), storage_offset + first * strides[dim]
""",
    "sliding_windows": """
def sliding_windows(x: torch.Tensor, width: int) -> torch.Tensor:
    '''The (len(x) - width + 1, width) view whose row i is x[i : i + width].'''
    (length,) = x.shape
    (step,) = x.stride()
    return torch.as_strided(x, size=(length - width + 1, width), stride=(step, step), storage_offset=x.storage_offset())
""",
    "can_view": """
def can_view(shape: tuple[int, ...], strides: tuple[int, ...], new_shape: tuple[int, ...]) -> bool:
    '''True when t.view(new_shape) works for a tensor t with this shape and these strides.'''
    if math.prod(shape) == 0:
        return True
    used = [(size, stride) for size, stride in zip(shape, strides) if size != 1]
    # Number of elements from the end up to each chunk's outer edge (a chunk ends where the next dim out is not
    # laid out right after it).
    chunk_edges = set()
    elements = 1
    for d in range(len(used) - 1, -1, -1):
        size, stride = used[d]
        elements *= size
        if d == 0 or used[d - 1][1] != stride * size:
            chunk_edges.add(elements)
    # The same counts for the new shape, at every dim: a chunk must end exactly on one of them.
    new_edges = set()
    elements = 1
    for size in reversed(new_shape):
        elements *= size
        new_edges.add(elements)
    return chunk_edges <= new_edges
""",
    "copy_mib": """
copy_mib = 8192 * 4096 * 32 / 8 / 1024 / 1024
""",
}
