"""Exercise 3, strides and views: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_CONTIG = '''
def is_contiguous(shape, strides):
{body}
'''
_SLICE = '''
def slice_metadata(shape, strides, storage_offset, dim, start, stop, step):
    picked = range(shape[dim])[start:stop:step]
    size, first = {size}, {first}
    new_shape = list(shape)
    new_strides = list(strides)
    new_shape[dim] = size
    new_strides[dim] = {stride}
    return {result}, {offset}
'''
_S = dict(size="len(picked)", first="picked.start", stride="strides[dim] * step",
          result="tuple(new_shape), tuple(new_strides)", offset="storage_offset + first * strides[dim]")
_WINDOWS = '''
def sliding_windows(x, width):
    n = x.shape[0]
    return x.as_strided({size}, {stride}, {offset})
'''
_W = dict(size="(n - width + 1, width)", stride="(x.stride(0), x.stride(0))", offset="x.storage_offset()")
_VIEW = '''
def can_view(shape, strides, new_shape):
    if 0 in shape:
        return True
    dims = [(size, stride) for size, stride in zip(shape, strides) if size != 1]
    chunks, size_so_far = [], 1
    for d in range(len(dims) - 1, -1, -1):
        size_so_far *= dims[d][0]
        if d == 0 or {boundary}:
            chunks.append(size_so_far)
            size_so_far = 1
    new = [s for s in new_shape if s != 1]
    for chunk in chunks:
        product = 1
        while product < chunk and new:
            product *= new.pop()
        if product != chunk:
            return False
    return not new
'''
_V_BOUNDARY = "dims[d - 1][1] != dims[d][1] * dims[d][0]"

WRONG = [
    Wrong("storage_index", "leaves out the storage offset", r"offset", """
def storage_index(index, strides, storage_offset):
    return sum(i * s for i, s in zip(index, strides))
"""),
    Wrong("storage_index", "pairs each index with the stride of the mirrored dimension", r"its own|own dimension|each index times", """
def storage_index(index, strides, storage_offset):
    return storage_offset + sum(i * s for i, s in zip(index, reversed(strides)))
"""),
    Wrong("storage_index", "adds the indices and the strides instead of multiplying them", r"times|product|multipl", """
def storage_index(index, strides, storage_offset):
    return storage_offset + sum(index) + sum(strides)
"""),
    Wrong("storage_index", "numpy's dot: a numpy integer comes back", r"plain int|int64|numpy", """
import numpy as np
def storage_index(index, strides, storage_offset):
    return storage_offset + np.dot(np.array(index, dtype=np.int64), np.array(strides, dtype=np.int64))
"""),
    Wrong("storage_index", "functools.reduce without a start value fails on a 0-dim index", r"no dimensions|0-dim|empty", """
import functools
def storage_index(index, strides, storage_offset):
    return storage_offset + functools.reduce(lambda a, b: a + b, [i * s for i, s in zip(index, strides)])
"""),
    Wrong("row_major_strides", "strides in the wrong order: 1 first", r"last dimension has stride 1|order|revers|last", """
def row_major_strides(shape):
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return tuple(strides)
"""),
    Wrong("row_major_strides", "a size-0 dimension multiplies the product by 0", r"size-0|counts as size 1", """
def row_major_strides(shape):
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
"""),
    Wrong("row_major_strides", "returns a list", r"tuple", """
def row_major_strides(shape):
    return [math.prod(max(s, 1) for s in shape[i + 1:]) for i in range(len(shape))]
"""),
    Wrong("row_major_strides", "each stride includes its own dimension's size", r"after it|dimensions after", """
def row_major_strides(shape):
    return tuple(math.prod(max(s, 1) for s in shape[i:]) for i in range(len(shape)))
"""),
    Wrong("row_major_strides", "the 0 is replaced after multiplying: max(product, 1)", r"size-0|counts as size 1|each size", """
def row_major_strides(shape):
    return tuple(max(math.prod(shape[i + 1:]), 1) for i in range(len(shape)))
"""),
    Wrong("row_major_strides", "only the next dimension's size, not the product of all later ones", r"product|all.*after|whole .* block", """
def row_major_strides(shape):
    return tuple(max(shape[i + 1], 1) if i + 1 < len(shape) else 1 for i in range(len(shape)))
"""),
    Wrong("is_contiguous", "compares with a fresh tensor's strides, size-1 dimensions included", r"size-1",
          _CONTIG.format(body='''    if 0 in shape:
        return True
    return tuple(strides) == row_major_strides(shape)''')),
    Wrong("is_contiguous", "no exception for a tensor without elements", r"no elements",
          _CONTIG.format(body='''    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True''')),
    Wrong("is_contiguous", "only checks that the strides decrease", r"fresh|row-major|gaps|values",
          _CONTIG.format(body='''    if 0 in shape:
        return True
    kept = [s for n, s in zip(shape, strides) if n != 1]
    return all(a >= b for a, b in zip(kept, kept[1:])) and (not kept or kept[-1] == 1)''')),
    Wrong("is_contiguous", "returns 1 or 0", r"bool",
          _CONTIG.format(body='''    if 0 in shape:
        return 1
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return 0
        expected *= size
    return 1''')),
    Wrong("is_contiguous", "looks for a 0 among the strides instead of the sizes", r"no elements|size is 0|some size",
          _CONTIG.format(body='''    if 0 in strides:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True''')),
    Wrong("is_contiguous", "walks from the first dimension, expecting stride 1 there", r"last dimension|from the last|stride 1|from the back",
          _CONTIG.format(body='''    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(shape, strides):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True''')),
    Wrong("slice_metadata", "the stride is not multiplied by step", r"step", _SLICE.format(**{**_S, "stride": "strides[dim]"})),
    Wrong("slice_metadata", "the offset moves by first, not first * stride", r"stride", _SLICE.format(**{**_S, "offset": "storage_offset + first"})),
    Wrong("slice_metadata", "the input's storage offset is dropped", r"input's (storage )?offset|start from", _SLICE.format(**{**_S, "offset": "first * strides[dim]"})),
    Wrong("slice_metadata", "size from (stop - start) // step, without clamping", r"clamp", _SLICE.format(**{**_S,
          "size": "(((shape[dim] if stop is None else stop) - (0 if start is None else start)) + step - 1) // step"})),
    Wrong("slice_metadata", "a negative start is used as it is", r"negative|from the end", _SLICE.format(**{**_S, "first": "0 if start is None else start"})),
    Wrong("slice_metadata", "an empty slice leaves the offset where it was", r"empty|would start|clamped", _SLICE.format(**{**_S,
          "offset": "storage_offset + (first * strides[dim] if len(picked) else 0)"})),
    Wrong("slice_metadata", "returns lists", r"tuple", _SLICE.format(**{**_S, "result": "new_shape, new_strides"})),
    Wrong("sliding_windows", "strides (1, 1), right only for a contiguous x", r"stride.{0,20}3|x's (own )?(step|stride)|strides of 1|step like x",
          _WINDOWS.format(**{**_W, "stride": "(1, 1)"})),
    Wrong("sliding_windows", "offset 0: as_strided counts from the storage's start", r"offset", _WINDOWS.format(**{**_W, "offset": "0"})),
    Wrong("sliding_windows", "one window short: n - width rows", r"fits|one row per start|n - w(idth)? \+ 1",
          _WINDOWS.format(**{**_W, "size": "(n - width, width)"})),
    Wrong("sliding_windows", "a stacked copy of slices", r"view|copy|as_strided|storage", """
def sliding_windows(x, width):
    return torch.stack([x[i:i + width] for i in range(x.shape[0] - width + 1)])
"""),
    Wrong("sliding_windows", "steps x's stride down the windows but 1 along a row", r"along a row|both dimensions",
          _WINDOWS.format(**{**_W, "stride": "(x.stride(0), 1)"})),
    Wrong("sliding_windows", "the matrix transposed: width rows", r"transpos|one row per start|rows|shape",
          _WINDOWS.format(**{**_W, "size": "(width, n - width + 1)"})),
    Wrong("can_view", "only a contiguous tensor can be viewed", r"split|chunk", """
def can_view(shape, strides, new_shape):
    return is_contiguous(shape, strides)
"""),
    Wrong("can_view", "size-1 dimensions are kept when the chunks are formed", r"size-1",
          _VIEW.format(boundary=_V_BOUNDARY).replace("if size != 1]", "]")),
    Wrong("can_view", "no exception for a tensor without elements", r"no elements",
          _VIEW.format(boundary=_V_BOUNDARY).replace("    if 0 in shape:\n        return True\n", "")),
    Wrong("can_view", "any new shape with as many elements can be viewed", r"chunk|span", """
def can_view(shape, strides, new_shape):
    return True
"""),
    Wrong("can_view", "a new chunk only where the strides stop decreasing, sizes ignored",
          r"stride\(d\)|size\(d ?\+ ?1\)|is not .* \* |gap|laid out contiguously|separate chunks",
          _VIEW.format(boundary="dims[d - 1][1] < dims[d][1]")),
    Wrong("can_view", "drops size-1 dimensions of the old shape but not of the new", r"size-1.{0,40}new|old and new|fit anywhere",
          _VIEW.format(boundary=_V_BOUNDARY).replace("if s != 1]", "]")),
    Wrong("copy_mib", "MB (10^6 bytes) instead of MiB", r"\bMB\b|10\^6", "copy_mib = 8192 * 4096 * 4 / 1e6\n"),
    Wrong("copy_mib", "the bytes per float32 element forgotten", r"4 bytes|bytes per|float32", "copy_mib = 8192 * 4096 / 2**20\n"),
    Wrong("copy_mib", "counts x and its copy", r"\bnew\b|only the copy|both|original", "copy_mib = 2 * 8192 * 4096 * 4 / 2**20\n"),
    Wrong("copy_mib", "GiB instead of MiB", r"GiB|1,?024", "copy_mib = 8192 * 4096 * 4 / 2**30\n"),
]
