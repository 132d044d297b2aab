"""Exercise 3, strides and views: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_SLICE = '''
def slice_metadata(shape, strides, storage_offset, dim, start, stop, step):
{body}
    new_shape = tuple(shape[:dim]) + (size,) + tuple(shape[dim + 1:])
    new_strides = tuple(strides[:dim]) + (strides[dim] * step,) + tuple(strides[dim + 1:])
    return new_shape, new_strides, storage_offset + first * strides[dim]
'''
_WINDOWS = '''
def sliding_windows(x, width):
    n = x.shape[0]
    return x.as_strided({size}, {strides}, x.storage_offset())
'''

WRONG = [
    Wrong("storage_index", "adds the strides without multiplying them by the index", r"index times|each index", """
def storage_index(index, strides, storage_offset):
    return storage_offset + sum(stride for i, stride in zip(index, strides) if i)
"""),
    Wrong("storage_index", "multiplies the offset in as if it were another stride", r"offset", """
def storage_index(index, strides, storage_offset):
    position = 0
    for i, stride in zip(index, strides):
        position += i * stride
    return position * max(storage_offset, 1)
"""),
    Wrong("row_major_strides", "builds the strides from the last dimension and never reverses them",
          r"dimensions after it|last dimension", """
def row_major_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(strides)
"""),
    Wrong("row_major_strides", "returns a torch.Size, not a plain tuple", r"plain tuple|tuple of ints", """
def row_major_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return torch.Size(reversed(strides))
"""),
    Wrong("is_contiguous", "returns 1 or 0 instead of True or False", r"\bbool\b", """
def is_contiguous(shape, strides):
    if 0 in shape:
        return 1
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return 0
        expected *= size
    return 1
"""),
    Wrong("is_contiguous", "checks only that the last stride is 1", r"gaps|between rows", """
def is_contiguous(shape, strides):
    return len(strides) == 0 or 0 in shape or strides[-1] == 1 or shape[-1] == 1
"""),
    Wrong("slice_metadata", "a negative start is not counted from the end", r"negative start|from the end", _SLICE.format(
        body='''    begin = 0 if start is None else min(start, shape[dim])
    end = shape[dim] if stop is None else min(stop, shape[dim])
    size = max(0, -(-(end - begin) // step))
    first = begin''')),
    Wrong("slice_metadata", "the step's stride kept, the start's offset forgotten", r"starts? at|storage index", """
def slice_metadata(shape, strides, storage_offset, dim, start, stop, step):
    picked = range(shape[dim])[start:stop:step]
    new_shape = tuple(shape[:dim]) + (len(picked),) + tuple(shape[dim + 1:])
    new_strides = tuple(strides[:dim]) + (strides[dim] * step,) + tuple(strides[dim + 1:])
    return new_shape, new_strides, storage_offset
"""),
    Wrong("sliding_windows", "one window too few: len(x) - width rows", r"fits|every start|one row per", _WINDOWS.format(
        size="(n - width, width)", strides="(x.stride(0), x.stride(0))")),
    Wrong("sliding_windows", "the window steps one storage element at a time, not x's stride",
          r"both dimensions|neighbours|apart", _WINDOWS.format(size="(n - width + 1, width)", strides="(x.stride(0), 1)")),
    Wrong("can_view", "any shape with the same number of elements can be viewed", r"chunks?", """
def can_view(shape, strides, new_shape):
    return math.prod(shape) == math.prod(new_shape)
"""),
]
