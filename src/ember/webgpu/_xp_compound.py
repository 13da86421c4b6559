"""The webgpu array module's multi-pass functions, for :mod:`ember.webgpu._xp`.

Reductions (sum, mean, max, argmax, any...), matrix products (matmul, dot, einsum), scans
(cumsum, cumprod), gathers and scatters (take, take_along_axis, ufunc_at, the ``out[key] =
values`` of integer index arrays), joins (concatenate, stack), argsort and flip: each runs as
one or more WGSL kernels. ``_xp`` imports these at its end, so they see its pointwise
functions. Example::

    >>> x = ember.ones(2, 3, device="webgpu")
    >>> x.sum(1).cpu()
    tensor([3., 3.])
"""

from __future__ import annotations

import builtins

import numpy as np

from . import _kernels as K
from ._array import WebGPUArray
from ._xp import (
    _elementwise,
    _groups,
    _new,
    _params_for,
    _run,
    _window,
    add,
    asarray,
    ascontiguous_copy,
    astype,
    broadcast_to,
    copyto,
    expand_dims,
    fallback,
    from_host,
    full,
    getitem,
    greater,
    greater_equal,
    less,
    logical_and,
    maximum,
    minimum,
    multiply,
    not_equal,
    reshape,
    squeeze,
    subtract,
    true_divide,
    zeros,
)
from ._xp import where as where_

# ---------------------------------------------------------------- reductions


def _reduce_setup(a, axis):
    """``a`` with the reduced axes moved last and made contiguous, (rows, K), kept shape."""
    axes = tuple(range(a.ndim)) if axis is None else tuple(
        x % a.ndim for x in (axis if isinstance(axis, tuple) else (axis,)))
    kept = [d for d in range(a.ndim) if d not in axes]
    moved = a.transpose(kept + list(axes)) if a.ndim else a
    moved = moved if moved.is_c_contiguous() else ascontiguous_copy(moved)
    rows = 1
    for d in kept:
        rows *= a.shape[d]
    return moved, rows, a.size // builtins.max(rows, 1), axes


def _kept_shape(a, axes, keepdims):
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(a.shape))
    return tuple(n for d, n in enumerate(a.shape) if d not in axes)


# dtypes whose max/min run exactly as int64 (and come back in their own dtype)
_WIDENED_INTS = (np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.bool_))


def _reduction(kind, numpy_name):
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        if (kind in ("max", "min") and isinstance(a, WebGPUArray) and a.size > 0
                and not kwargs and dtype is None and out is None
                and (a.dtype == np.int64 or a.dtype in _WIDENED_INTS)):
            result = _reduce_int64(kind, astype(a, np.int64, copy=False), axis, keepdims)
            return result if a.dtype == np.int64 else astype(result, a.dtype)
        if (isinstance(a, WebGPUArray) and a.dtype == np.float16 and a.size > 0
                and not kwargs and out is None
                and (dtype is None or np.dtype(dtype) in (np.float16, np.float32))):
            # computed in float32 and rounded once, as NumPy's and torch's half kernels
            wide = reduce(astype(a, np.float32), axis=axis, keepdims=keepdims)
            return wide if dtype is not None and np.dtype(dtype) == np.float32 else \
                astype(wide, np.float16)
        if (kind in ("sum", "prod") and isinstance(a, WebGPUArray) and a.size > 0
                and not kwargs and out is None
                and a.dtype in (np.int64, np.int32, np.uint8, np.bool_)
                and (dtype is None or np.dtype(dtype) == np.int64)):  # NumPy: ints as int64
            return _reduce_int64(kind, astype(a, np.int64, copy=False), axis, keepdims)
        # a float64 accumulator asked for float32 data is served by the compensated float32
        # sum (WGSL has no f64): the result stays float32
        wide = dtype is not None and np.dtype(dtype) == np.float64 and kind in ("sum", "mean")
        usable = (isinstance(a, WebGPUArray) and a.dtype == np.float32 and a.size > 0
                  and not kwargs and (dtype is None or np.dtype(dtype) == np.float32 or wide))
        if not usable:
            call = fallback(getattr(np, numpy_name), numpy_name)
            options = {} if dtype is None else {"dtype": dtype}
            if out is not None:
                options["out"] = out
            return call(a, axis=axis, keepdims=keepdims, **options, **kwargs)
        base = "sum" if kind == "mean" else kind
        if out is None:
            split = _split_leading(a, axis, keepdims, _COMBINE[base], lambda piece: (
                sum if kind == "mean" else reduce)(piece, axis=axis, dtype=dtype,
                                                   keepdims=True))
            if split is not None:  # a mean divides the sum by the count reduced
                return true_divide(split, float(a.size // builtins.max(split.size, 1))) \
                    if kind == "mean" else split
        moved, rows, count, axes = _reduce_setup(a, axis)
        result = _reduce_moved(base, moved, rows, count, np.float32)
        if kind == "mean":
            result = true_divide(result, float(count))
        result = reshape(result, _kept_shape(a, axes, keepdims))
        if out is not None:
            copyto(out, result)
            return out
        return result
    reduce.__name__ = numpy_name
    return reduce


sum = _reduction("sum", "sum")  # noqa: A001
mean = _reduction("mean", "mean")
prod = _reduction("prod", "prod")
amax = max = _reduction("max", "amax")  # noqa: A001
amin = min = _reduction("min", "amin")  # noqa: A001


def _split_leading(a, axis, keepdims, combine, reduce_piece):
    """A reduction of ``a`` (larger than one binding) as reductions of slices of its first
    dim that fit one, their results joined by ``combine`` when the first dim is reduced, else
    concatenated; None when ``a`` needs no split or the results cannot be joined. (The slices
    keep a reduction over leading dims from needing a transposed copy of all of ``a``.)"""
    limit = a.storage.runtime.max_binding
    if a.ndim < 2 or a.storage.buffer.size <= limit or a.size == 0:
        return None
    axes = tuple(range(a.ndim)) if axis is None else tuple(
        x % a.ndim for x in (axis if isinstance(axis, tuple) else (axis,)))
    step = builtins.max(1, limit // 4 // (a.nbytes // a.shape[0]))
    if step >= a.shape[0] or (0 in axes and combine is None):
        return None
    parts = [reduce_piece(a[start:start + step]) for start in range(0, a.shape[0], step)]
    if 0 in axes:
        total = parts[0]
        for part in parts[1:]:
            total = combine(total, part)
    else:
        total = concatenate(parts, axis=0)
    return total if keepdims else squeeze(total, axes)


def _reduce_int64(kind, a, axis, keepdims):
    split = _split_leading(a, axis, keepdims, _COMBINE[kind],
                           lambda piece: _reduce_int64(kind, piece, axis, True))
    if split is not None:
        return split
    moved, rows, count, axes = _reduce_setup(a, axis)
    result = _reduce_moved(kind, moved, rows, count, np.int64)
    return reshape(result, _kept_shape(a, axes, keepdims))


# how partial results of column pieces join (argmax/argmin's cannot: their pieces' indices)
_COMBINE = {"sum": add, "prod": multiply, "max": maximum, "min": minimum}


# elements one thread reduces: longer rows are cut into pieces reduced in two rounds
# (lavapipe ends a shader loop after 65,535 iterations, and short rows keep threads busy)
_ROW_LOOP = 4096


def _reduce_moved(kind, moved, rows, count, dtype):
    """``kind`` (sum, prod, max, min, argmax, argmin) along the rows of the contiguous
    (rows, count) float32 or int64 ``moved``: a new (rows,) array of ``dtype``. Rows longer
    than ``_ROW_LOOP`` are padded with the kind's identity to pieces of equal width, each piece
    reduced by one thread, then the pieces' results; an arg-reduction takes the first piece
    holding the extreme and its index there."""
    source = K.reduce_rows(kind) if moved.dtype == np.float32 else K.reduce_rows_int64(kind)
    if count <= _ROW_LOOP:
        result = _new((rows,), dtype)
        _reduce_rows(source, result, moved, rows, count)
        return result
    table, pieces, width = _pieces(kind, moved, rows, count)
    if kind in ("argmax", "argmin"):
        best = _reduce_moved(kind[3:], table, rows * pieces, width, moved.dtype)
        local = reshape(_reduce_moved(kind, table, rows * pieces, width, np.int64),
                        (rows, pieces))
        which = _reduce_moved(kind, reshape(best, (rows, pieces)), rows, pieces, np.int64)
        picked = take_along_axis(local, reshape(which, (rows, 1)), 1)
        return add(multiply(which, width), reshape(picked, (rows,)))
    partial = _reduce_moved(kind, table, rows * pieces, width, dtype)
    return _reduce_moved(kind, reshape(partial, (rows, pieces)), rows, pieces, dtype)


def _pieces(kind, moved, rows, count):
    """``moved``'s rows as (rows * pieces, width), padded at their ends with ``kind``'s
    identity (which never wins: an arg-reduction takes the first extreme)."""
    pieces = -(-count // _ROW_LOOP)
    width = -(-count // pieces)
    table = reshape(moved if moved.is_c_contiguous() else ascontiguous_copy(moved),
                    (rows, count))
    if pieces * width != count:
        low = -np.inf if moved.dtype == np.float32 else int(np.iinfo(np.int64).min)
        high = np.inf if moved.dtype == np.float32 else int(np.iinfo(np.int64).max)
        identity = {"sum": 0, "prod": 1, "max": low, "argmax": low}.get(kind, high)
        padded = full((rows, pieces * width), identity, moved.dtype)
        copyto(getitem(padded, (slice(None), slice(0, count))), table)
        table = padded
    return reshape(table, (rows * pieces, width)), pieces, width


def _reduce_rows(source, result, moved, rows, count, width=1):
    """Run the one-thread-per-row kernel ``source`` over the (rows, count) contiguous
    ``moved`` into ``result`` (rows, ``width``: 1 for a reduction, ``count`` for a scan); an
    input or result larger than one binding (128 MiB on lavapipe) is bound in windows of
    whole rows."""
    runtime = result.storage.runtime
    if moved.offset:
        moved = ascontiguous_copy(moved)
    buffer, limit = moved.storage.buffer, runtime.max_binding
    if buffer.size <= limit and result.storage.buffer.size <= limit:
        runtime.dispatch(source, [runtime.params([rows, count]), result.storage.buffer, buffer],
                         _groups(rows))
        return
    row_bytes, out_item = count * moved.dtype.itemsize, width * result.dtype.itemsize
    step = int(np.lcm(32 // np.gcd(row_bytes, 32), 32 // np.gcd(out_item, 32)))
    chunk = limit // 2 // builtins.max(row_bytes, out_item) // step * step  # rows per window
    widest = builtins.max(row_bytes, out_item)
    if rows * widest <= limit:  # one window from the first row (a view into a big buffer)
        chunk = rows
    elif not chunk and step * widest <= limit:
        chunk = step
    if not chunk:
        raise RuntimeError(f"ember.webgpu: rows of {widest} bytes are more than one "
                           f"binding can hold ({limit} bytes) for this kernel")
    for start in range(0, rows, chunk):
        stop = builtins.min(start + chunk, rows)
        runtime.dispatch(source, [
            runtime.params([stop - start, count]),
            (result.storage.buffer, start * out_item, (stop - start) * out_item),
            (buffer, start * row_bytes, (stop - start) * row_bytes)], _groups(stop - start))


def _arg_reduction(kind):
    def arg(a, axis=None, out=None, keepdims=False):
        if not (isinstance(a, WebGPUArray) and a.size > 0 and out is None and (
                a.dtype in (np.float32, np.float16, np.int64) or a.dtype in _WIDENED_INTS)):
            return fallback(getattr(np, kind), kind)(a, axis=axis, out=out, keepdims=keepdims)
        if a.dtype == np.float16:  # exactly representable in float32
            a = astype(a, np.float32)
        elif a.dtype != np.float32:  # integers compare exactly as int64
            a = astype(a, np.int64, copy=False)
        moved, rows, count, axes = _reduce_setup(a, axis)
        result = _reduce_moved(kind, moved, rows, count, np.int64)
        if axis is None:
            axes = tuple(range(a.ndim))
        return reshape(result, _kept_shape(a, axes, keepdims) if axis is not None or keepdims
                       else ())
    arg.__name__ = kind
    return arg


argmax = _arg_reduction("argmax")
argmin = _arg_reduction("argmin")


# ---------------------------------------------------------------- matrix products


_MATMUL_K = 32768  # the longest k one thread's loop runs (lavapipe stops loops at 65,535)


def _matmul_tiles(left, right, m, n):
    """A 2-D matmul with an operand or result larger than one binding, in blocks: runs of
    rows, of columns and of ``k`` small enough that each operand's part fits a binding
    window (each halved along the dim that spreads it most until it does); a block's partial
    products over runs of ``k`` add up, and the block is copied into place."""
    limit = left.storage.runtime.max_binding
    k = left.shape[1]

    def fits(view):
        binding = _window(view)[0]
        return not isinstance(binding, tuple) or binding[2] <= limit

    def part(x, first, second):
        return getitem(x, (slice(0, first), slice(0, second)))

    rows, cols, depth = m, n, k
    while True:
        a, b = part(left, rows, depth), part(right, depth, cols)
        if not fits(a):
            spread_rows = rows * abs(left.estrides[0]) >= depth * abs(left.estrides[1])
            rows, depth = ((rows + 1) // 2, depth) if spread_rows and rows > 1 else (
                rows, (depth + 1) // 2)
        elif not fits(b):
            spread_depth = depth * abs(right.estrides[0]) >= cols * abs(right.estrides[1])
            depth, cols = ((depth + 1) // 2, cols) if spread_depth and depth > 1 else (
                depth, (cols + 1) // 2)
        elif rows * cols * 4 > limit // 2:
            rows, cols = ((rows + 1) // 2, cols) if rows >= cols else (rows, (cols + 1) // 2)
        else:
            break
        if rows == cols == depth == 1 and not (fits(part(left, 1, 1)) and
                                                fits(part(right, 1, 1))):
            raise RuntimeError("ember.webgpu: this matmul cannot be split into bindings")
    result = _new((m, n), np.float32)
    for r0 in range(0, m, rows):
        for c0 in range(0, n, cols):
            block = None
            for d0 in range(0, k, depth):
                a = getitem(left, (slice(r0, r0 + rows), slice(d0, d0 + depth)))
                b = getitem(right, (slice(d0, d0 + depth), slice(c0, c0 + cols)))
                product = _matmul_block(a, b)
                block = product if block is None else add(block, product)
            copyto(getitem(result, (slice(r0, r0 + rows), slice(c0, c0 + cols))), block)
    return result


def _matmul_batches(left, right):
    """A batched matmul (attention's scores, B x H x T x T) with an operand or result larger
    than one binding, in runs of its first batch dim small enough that each operand's part
    and the part's product fit a binding window; when one batch item alone does not, each
    item is a matmul of its own (with one batch dim fewer, down to 2-D blocks of rows,
    columns and k). Each part's product is copied into place."""
    limit = left.storage.runtime.max_binding
    count, m, n = left.shape[0], left.shape[-2], right.shape[-1]
    item_bytes = left.size // count // (left.shape[-1] * m) * m * n * 4  # one item's product

    def fits(step):
        return step * item_bytes <= limit and builtins.all(
            not isinstance(binding, tuple) or binding[2] <= limit
            for binding in (_window(x[:step])[0] for x in (left, right)))

    step = count
    while step > 1 and not fits(step):
        step = (step + 1) // 2
    result = _new(left.shape[:-1] + (n,), np.float32)
    for start in range(0, count, step):
        stop = builtins.min(start + step, count)
        if fits(step):
            part = _matmul_window(left[start:stop], right[start:stop])
        else:  # one item is too large: a matmul of its own, split further
            part = matmul(left[start], right[start])
        copyto(result[start:stop] if fits(step) else result[start], part)
    return result


def _matmul_window(a, b):
    """A batched ``a @ b`` (shapes already broadcast to one batch) with each operand bound as
    the window it reaches."""
    batch, m, k, n = a.shape[:-2], a.shape[-2], a.shape[-1], b.shape[-1]
    block = _new(batch + (m, n), np.float32)
    (bound_a, at_a), (bound_b, at_b) = _window(a), _window(b)
    pad = [0] * (4 - len(batch))
    blocks = block.size // (m * n) * ((m + 3) // 4) * ((n + 3) // 4)
    words = ([blocks, m, n, k, len(batch)] + list(batch) + [1] * (4 - len(batch))
             + [at_a] + list(a.estrides[:-2]) + pad + list(a.estrides[-2:])
             + [at_b] + list(b.estrides[:-2]) + pad + list(b.estrides[-2:]))
    runtime = block.storage.runtime
    runtime.dispatch(K.matmul(), [runtime.params(words), block.storage.buffer, bound_a,
                                  bound_b], _groups(blocks))
    return block


def _matmul_block(a, b):
    """``a @ b`` (2-D) with each operand bound as the window it reaches."""
    block = _new((a.shape[0], b.shape[1]), np.float32)
    (bound_a, at_a), (bound_b, at_b) = _window(a), _window(b)
    blocks = ((a.shape[0] + 3) // 4) * ((b.shape[1] + 3) // 4)
    words = ([blocks, a.shape[0], b.shape[1], a.shape[1], 0, 1, 1, 1, 1, at_a, 0, 0, 0, 0]
             + list(a.estrides) + [at_b, 0, 0, 0, 0] + list(b.estrides))
    runtime = block.storage.runtime
    runtime.dispatch(K.matmul(), [runtime.params(words), block.storage.buffer, bound_a,
                                  bound_b], _groups(blocks))
    return block


def matmul(a, b, out=None, **kwargs):
    """Batched float32 matmul (NumPy's rules for 1-D operands and batch broadcasting)."""
    usable = (isinstance(a, WebGPUArray) and isinstance(b, WebGPUArray) and not kwargs
              and a.dtype == np.float32 and b.dtype == np.float32 and a.ndim >= 1
              and b.ndim >= 1 and a.shape[-1] == b.shape[-2 if b.ndim > 1 else 0])
    if not usable:
        return fallback(np.matmul, "matmul")(a, b, **({"out": out} if out is not None else {}),
                                            **kwargs)
    left = expand_dims(a, 0) if a.ndim == 1 else a
    right = expand_dims(b, 1) if b.ndim == 1 else b
    batch = np.broadcast_shapes(left.shape[:-2], right.shape[:-2])
    if len(batch) > 4:
        return fallback(np.matmul, "matmul")(a, b)
    m, k, n = left.shape[-2], left.shape[-1], right.shape[-1]
    left = broadcast_to(left, batch + (m, k))
    right = broadcast_to(right, batch + (k, n))
    result = _new(batch + (m, n), np.float32)
    if result.size:
        pad = [0] * (4 - len(batch))
        blocks = result.size // (m * n) * ((m + 3) // 4) * ((n + 3) // 4)  # 4x4 outputs each
        words = ([blocks, m, n, k, len(batch)] + list(batch) + [1] * (4 - len(batch))
                 + [left.offset] + list(left.estrides[:-2]) + pad + list(left.estrides[-2:])
                 + [right.offset] + list(right.estrides[:-2]) + pad
                 + list(right.estrides[-2:]))
        if k == 0:
            result = zeros(result.shape, np.float32)
        elif k > _MATMUL_K:  # partial products over slices of k (lavapipe's loop limit)
            result = None
            for start in range(0, k, _MATMUL_K):
                part = matmul(getitem(left, (Ellipsis, slice(start, start + _MATMUL_K))),
                              getitem(right, (Ellipsis, slice(start, start + _MATMUL_K),
                                              slice(None))))
                result = part if result is None else add(result, part)
        elif builtins.any(x.storage.buffer.size > result.storage.runtime.max_binding
                          for x in (left, right, result)):
            result = _matmul_batches(left, right) if batch else _matmul_tiles(left, right, m, n)
        else:
            _run(K.matmul(), result, [left, right], words, blocks)
    if a.ndim == 1:
        result = squeeze(result, -2)
    if b.ndim == 1:
        result = squeeze(result, -1)
    if out is not None:
        copyto(out, result)
        return out
    return result


def dot(a, b, out=None):
    if isinstance(a, WebGPUArray) and isinstance(b, WebGPUArray) and a.ndim <= 2 and \
            b.ndim <= 2 and a.ndim >= 1 and b.ndim >= 1:
        return matmul(a, b, out=out)
    return fallback(np.dot, "dot")(a, b, out=out)



class _CurrentDevice:
    """``xp.cuda.Device(i)`` as a no-op context: code shared with CuPy makes its GPU current
    that way; the webgpu device has one adapter."""

    def __init__(self, index=None):
        self.id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


class cuda:  # noqa: N801 (CuPy's name)
    Device = _CurrentDevice


def ufunc_at(name, out, key, values):
    """``np.<name>.at(out, key, values)``: ``out[key] (op)= values`` with repeated indices
    combined. A kernel for ``add`` on float32/int32 with one index array per dim (gather and
    scatter's layout); atomics make repeats add up (in any order)."""
    kernel = _scatter_add(out, key, values) if name == "add" else None
    if kernel is None:
        fallback(getattr(np, name).at, f"{name}.at")(out, key, values)


def _scatter_add(out, key, values):
    """The scatter-add kernel, or None when its conditions do not hold."""
    cts = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32"}
    if out.dtype not in cts or out.ndim > K.MAX_DIMS:
        return None
    key = _full_key(out, key)
    if key is None:
        return None
    if not builtins.all(isinstance(k, WebGPUArray) and k.dtype in (np.int64, np.int32)
                        for k in key):
        return None
    if not isinstance(values, WebGPUArray):
        values = full((), values, out.dtype)
    if values.dtype != out.dtype:
        values = astype(values, out.dtype)
    shape = np.broadcast_shapes(*[k.shape for k in key], values.shape)
    if values.storage is out.storage:
        values = ascontiguous_copy(values)
    operands = [broadcast_to(values, shape)] + [broadcast_to(k, shape) for k in key]
    count = int(np.prod(shape))
    if count == 0:
        return out
    limit = out.storage.runtime.max_binding
    if out.storage.buffer.size > limit and builtins.all(
            x.storage.buffer.size <= limit for x in operands):
        _scatter_add_pieces(out, operands, cts[out.dtype])
        return out
    if builtins.any(x.storage.buffer.size > limit for x in operands):
        _scatter_add_runs(out, operands, cts[out.dtype])
        return out
    words = _params_for(shape, [(x.offset, x.estrides) for x in operands])
    words += [out.offset] + list(out.estrides) + [0] * (K.MAX_DIMS - out.ndim)
    words += list(out.shape)
    source = K.scatter_add(tuple(k.dtype.itemsize for k in key), cts[out.dtype])
    _run(source, out, operands, words, count)
    return out


def _scatter_add_runs(out, operands, ct):
    """The scatter-add of values or indices larger than one binding (a sort's gradient), in
    runs of their first dim longer than 1 small enough that each operand's part fits a
    binding window; each run adds into ``out`` (in pieces of it when it is larger too)."""
    shape, limit = operands[0].shape, out.storage.runtime.max_binding
    dim = next((d for d, n in enumerate(shape) if n > 1), 0)

    def parts(start, stop):
        key = (slice(None),) * dim + (slice(start, stop),)
        return [getitem(x, key) for x in operands]

    def fits(run):
        return builtins.all(not isinstance(w, tuple) or w[2] <= limit
                            for w in (_window(x)[0] for x in parts(0, run)))

    run = shape[dim]
    while run > 1 and not fits(run):
        run = (run + 1) // 2
    for start in range(0, shape[dim], run):
        _scatter_add_pieces(out, parts(start, start + run), ct)


def _scatter_add_pieces(out, operands, ct):
    """The scatter-add into a table larger than one binding (an embedding's gradient): into
    pieces of its first dim, each bound as its window; an index outside a piece is moved out
    of range there, so that the kernel skips it. Values and indices are bound as the windows
    they reach (a table that fits is one piece)."""
    values, first, rest = operands[0], operands[1], list(operands[2:])
    rows, runtime = out.shape[0], out.storage.runtime
    step = builtins.max(1, runtime.max_binding // 2 // builtins.max(out.nbytes // rows, 1))
    if out.storage.buffer.size <= runtime.max_binding:
        step = rows
    wrapped = where_(less(first, 0), add(first, rows), first)
    for start in range(0, rows, step):
        piece = out[start:start + step]
        bound, at = _window(piece)
        local = where_(greater_equal(wrapped, start), subtract(wrapped, start), rows)
        keys = [broadcast_to(local, values.shape)] + rest
        windows = [_window(x) for x in [values] + keys]
        words = _params_for(values.shape, [(offset, x.estrides) for (_, offset), x
                                           in zip(windows, [values] + keys)])
        words += [at] + list(piece.estrides) + [0] * (K.MAX_DIMS - piece.ndim)
        words += list(piece.shape)
        source = K.scatter_add(tuple(k.dtype.itemsize for k in keys), ct)
        runtime.dispatch(source, [runtime.params(words), bound]
                         + [binding for binding, _ in windows], _groups(values.size))


def take_along_axis(arr, indices, axis):
    """NumPy's ``take_along_axis`` (gather): a kernel for 4- and 8-byte dtypes."""
    usable = (isinstance(arr, WebGPUArray) and isinstance(indices, WebGPUArray)
              and axis is not None and arr.ndim == indices.ndim and arr.ndim <= K.MAX_DIMS
              and arr.dtype in K.COMPUTE and indices.dtype in (np.int64, np.int32))
    if not usable:
        return fallback(np.take_along_axis, "take_along_axis")(arr, indices, axis)
    if arr.dtype.itemsize < 4:  # float16, uint8, bool: gathered as words (exact both ways)
        wide = np.float32 if arr.dtype == np.float16 else np.int32
        return astype(take_along_axis(astype(arr, wide), indices, axis), arr.dtype)
    axis %= arr.ndim
    _check_indices(indices, arr.shape[axis], axis)
    flat = list(arr.shape)
    flat[axis] = 1
    shape = list(np.broadcast_shapes(tuple(flat), tuple(
        1 if d == axis else n for d, n in enumerate(indices.shape))))
    shape[axis] = indices.shape[axis]
    shape = tuple(shape)
    source_view = arr.view_of(flat, [0 if d == axis else s for d, s in
                                     enumerate(arr.estrides)], arr.offset)
    operands = [broadcast_to(source_view, shape), broadcast_to(indices, shape)]
    out = _new(shape, arr.dtype)
    if out.size == 0:
        return out
    source = K.take_along_axis(arr.dtype.itemsize, indices.dtype.itemsize)
    limit = arr.storage.runtime.max_binding
    if arr.storage.buffer.size > limit and indices.storage.buffer.size <= limit \
            and out.storage.buffer.size <= limit:
        return _gather_pieces(source, arr, indices, axis, operands, out)
    if builtins.any(x.storage.buffer.size > limit for x in (arr, indices, out)):
        return _gather_runs(source, arr, indices, axis, operands, out)
    words = _params_for(shape, [(x.offset, x.estrides) for x in operands])
    words += [arr.estrides[axis], arr.shape[axis]]
    _run(source, out, operands, words, out.size)
    return out


def _gather_runs(source, arr, indices, axis, operands, out):
    """The gather with indices or a result larger than one binding (a sort's values), in runs
    of the first other dim small enough that the run's part of ``arr``, of the indices and of
    the result each fit a binding window; each run's result is copied into place. When one
    line along ``axis`` spreads over the whole table (a gather along dim 0), the gather runs
    on copies with ``axis`` moved last."""
    dims = [d for d in range(out.ndim) if d != axis and out.shape[d] > 1]
    if not dims:  # one line along ``axis``: nothing to split (the dispatch names the limit)
        dims = [axis]
    dim, limit, runtime = dims[0], out.storage.runtime.max_binding, out.storage.runtime

    def parts(start, stop):
        key = (slice(None),) * dim + (slice(start, stop),)
        table = getitem(arr, key) if arr.shape[dim] == out.shape[dim] else arr
        return table, getitem(operands[0], key), getitem(operands[1], key)

    def fits(run):
        table, _, index = parts(0, run)
        return run * (out.nbytes // out.shape[dim]) <= limit and builtins.all(
            not isinstance(w, tuple) or w[2] <= limit
            for w in (_window(table)[0], _window(index)[0]))

    run = out.shape[dim]
    while run > 1 and not fits(run):
        run = (run + 1) // 2
    if not fits(run) and axis != out.ndim - 1 and dim != axis:
        order = [d for d in range(out.ndim) if d != axis] + [axis]
        moved = take_along_axis(ascontiguous_copy(arr.transpose(order)),
                                ascontiguous_copy(indices.transpose(order)), out.ndim - 1)
        return ascontiguous_copy(moved.transpose([order.index(d) for d in range(out.ndim)]))
    for start in range(0, out.shape[dim], run):
        table, view, index = parts(start, start + run)
        (bound, at), (bound_index, at_index) = _window(table), _window(index)
        words = _params_for(view.shape, [(view.offset - table.offset + at, view.estrides),
                                         (at_index, index.estrides)])
        words += [arr.estrides[axis], arr.shape[axis]]
        got = _new(view.shape, out.dtype)
        runtime.dispatch(source, [runtime.params(words), got.storage.buffer, bound,
                                  bound_index], _groups(got.size))
        copyto(getitem(out, (slice(None),) * dim + (slice(start, start + run),)), got)
    return out


def _gather_pieces(source, arr, indices, axis, operands, out):
    """The gather from a table larger than one binding (an embedding of 50,257 x 768 float32):
    from pieces of it along ``axis``, each bound as its window, every index picking its
    value from the piece holding it (a kernel given an index outside its piece reads a value
    the mask then drops)."""
    size, runtime = arr.shape[axis], out.storage.runtime
    step = builtins.max(1, runtime.max_binding // 2 // builtins.max(arr.nbytes // size, 1))
    wrapped = where_(less(indices, 0), add(indices, size), indices)
    for start in range(0, size, step):
        piece = getitem(arr, (slice(None),) * axis + (slice(start, start + step),))
        bound, at = _window(piece)
        local = broadcast_to(subtract(wrapped, start), operands[1].shape)
        words = _params_for(out.shape, [(at, operands[0].estrides),
                                        (local.offset, local.estrides)])
        words += [piece.estrides[axis], piece.shape[axis]]
        got = _new(out.shape, out.dtype)
        runtime.dispatch(source, [runtime.params(words), got.storage.buffer, bound,
                                  local.storage.buffer], _groups(out.size))
        inside = broadcast_to(logical_and(greater_equal(wrapped, start),
                                          less(wrapped, start + piece.shape[axis])),
                              out.shape)
        out = got if start == 0 else where_(inside, got, out)
    return out


def _truth_reduction(kind):
    """``any``/``all``: each element as 0/1 in float32, then amax/amin (no new kernel)."""
    def reduce(a, axis=None, out=None, keepdims=False, **kwargs):
        if not isinstance(a, WebGPUArray) or a.size == 0 or kwargs or a.dtype not in K.COMPUTE:
            options = {"out": out} if out is not None else {}
            return fallback(getattr(np, kind), kind)(a, axis=axis, keepdims=keepdims,
                                                     **options, **kwargs)
        ones = astype(not_equal(a, 0) if a.dtype != np.bool_ else a, np.float32)
        extreme = (amax if kind == "any" else amin)(ones, axis=axis, keepdims=keepdims)
        result = greater(extreme, 0.0)
        if out is not None:
            copyto(out, result)
            return out
        return result
    reduce.__name__ = kind
    return reduce


any = _truth_reduction("any")  # noqa: A001
all = _truth_reduction("all")  # noqa: A001


def concatenate(arrays, axis=0, out=None, dtype=None, **kwargs):
    """Pieces copied into slices of one new array (the strided-write kernel)."""
    arrays = [asarray(x) for x in arrays]
    if axis is None or kwargs or not arrays:
        return fallback(np.concatenate, "concatenate")(arrays, axis=axis, out=out, dtype=dtype,
                                                       **kwargs)
    first = arrays[0]
    axis %= builtins.max(first.ndim, 1)
    result_dtype = np.dtype(dtype) if dtype is not None else np.result_type(
        *[x.dtype for x in arrays])
    shape = list(first.shape)
    shape[axis] = builtins.sum(x.shape[axis] for x in arrays)
    result = _new(shape, result_dtype)
    start = 0
    for x in arrays:
        index = (slice(None),) * axis + (slice(start, start + x.shape[axis]),)
        copyto(getitem(result, index), x)
        start += x.shape[axis]
    if out is not None:
        copyto(out, result)
        return out
    return result


def stack(arrays, axis=0, out=None, dtype=None, **kwargs):
    arrays = [asarray(x) for x in arrays]
    if not arrays:
        return fallback(np.stack, "stack")(arrays, axis=axis)
    axis %= arrays[0].ndim + 1
    return concatenate([expand_dims(x, axis) for x in arrays], axis=axis, out=out, dtype=dtype,
                       **kwargs)


class _SciPySpecial:
    """``scipy.special`` for the kernels that ask ``ops._util.scipy_special(xp)``: ``expit``
    as a kernel, the rest on the CPU."""

    def expit(self, x, out=None):
        if isinstance(x, WebGPUArray) and x.dtype == np.float32 and out is None:
            result = _elementwise("1.0 / (1.0 + exp(-a))", [x], "f32", x.dtype)
            if result is not None:
                return result
        return fallback(_scipy_special().expit, "scipy.special.expit")(x, out=out)

    def erf(self, x, out=None):
        return self._unary("erf_(a)", "erf", x, out)

    def erfc(self, x, out=None):
        return self._unary("erfc_(a)", "erfc", x, out)

    def _unary(self, expr, name, x, out):
        if isinstance(x, WebGPUArray) and x.dtype == np.float32 and out is None:
            result = _elementwise(f"select({expr}, a, isnan_(a))", [x], "f32", x.dtype)
            if result is not None:
                return result
        return fallback(getattr(_scipy_special(), name), f"scipy.special.{name}")(x, out=out)

    def __getattr__(self, name):
        return fallback(getattr(_scipy_special(), name), f"scipy.special.{name}")


def _scipy_special():
    import scipy.special

    return scipy.special


scipy_special = _SciPySpecial()


def result_type(*arrays_and_dtypes):
    """NumPy's promotion on the operands' dtypes (no data is read)."""
    return np.result_type(*[x.dtype if isinstance(x, WebGPUArray) else x
                            for x in arrays_and_dtypes])


def take(a, indices, axis=None, out=None, mode="raise"):
    """``np.take`` (embedding lookups, index_select) through the gather kernel: ``a`` gets a
    size-1 dim per index dim, the indices a size-1 dim per other dim of ``a``, and
    :func:`take_along_axis` broadcasts them."""
    usable = (isinstance(a, WebGPUArray) and isinstance(indices, WebGPUArray)
              and axis is not None and out is None and mode == "raise"
              and a.ndim + indices.ndim <= K.MAX_DIMS + 1 and a.dtype.itemsize in (4, 8)
              and indices.dtype in (np.int64, np.int32))
    if not usable:
        return fallback(np.take, "take")(a, indices, axis=axis, out=out, mode=mode)
    axis %= a.ndim
    _check_indices(indices, a.shape[axis], axis)
    index = indices if indices.ndim else expand_dims(indices, 0)
    lead, trail = a.shape[:axis], a.shape[axis + 1:]
    source = a.view_of(lead + (1,) * (index.ndim - 1) + (a.shape[axis],) + trail,
                       a.estrides[:axis] + (0,) * (index.ndim - 1) + (a.estrides[axis],)
                       + a.estrides[axis + 1:], a.offset)
    spread = index.view_of((1,) * len(lead) + index.shape + (1,) * len(trail),
                           (0,) * len(lead) + index.estrides + (0,) * len(trail), index.offset)
    result = take_along_axis(source, spread, axis + index.ndim - 1)
    return squeeze(result, axis) if indices.ndim == 0 else result


def cumsum(a, axis=None, dtype=None, out=None):
    """Inclusive float32 sums along ``axis`` (one thread per row, compensated); integer sums
    (int32/int64 input, or an int32/int64 ``dtype`` for any integer or bool input) add
    exactly in int64, wrapping as NumPy's."""
    wide = np.dtype(dtype) if dtype is not None else (
        np.dtype(np.int64) if isinstance(a, WebGPUArray) and a.dtype in (np.int32, np.int64)
        else None)
    if (isinstance(a, WebGPUArray) and out is None and a.size > 0 and wide is not None
            and wide in (np.int32, np.int64)
            and a.dtype in (np.int64, np.int32, np.uint8, np.bool_)):
        result = _scan("cumsum", K.cumsum_rows_int64(), astype(a, np.int64, copy=False), axis,
                       np.int64, None)
        return result if wide == np.int64 else astype(result, wide)
    return _scan("cumsum", K.cumsum_rows(), a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Inclusive float32 products along ``axis`` (one thread per row)."""
    return _scan("cumprod", K.cumprod_rows(), a, axis, dtype, out)


def _scan(name, source, a, axis, dtype, out):
    if not (isinstance(a, WebGPUArray) and a.dtype in (np.float32, np.int64) and out is None
            and (dtype is None or np.dtype(dtype) == a.dtype) and a.size > 0):
        return fallback(getattr(np, name), name)(a, axis=axis, dtype=dtype, out=out)
    if axis is None:
        a, axis = reshape(a, -1), 0
    axis %= a.ndim
    order = [d for d in range(a.ndim) if d != axis] + [axis]
    moved = ascontiguous_copy(a.transpose(order))
    count = moved.shape[-1]
    rows = moved.size // count
    result = reshape(_scan_rows(name, source, reshape(moved, (rows, count)), rows, count),
                     moved.shape)
    return result.transpose([order.index(d) for d in range(a.ndim)])


def _scan_rows(name, source, moved, rows, count):
    """The inclusive scan ``source`` along the rows of the contiguous (rows, count) float32
    (or int64) ``moved``, one thread per row; rows longer than ``_MATMUL_K`` are scanned in
    pieces (padded with the identity), and each piece then joined with the scan of the
    pieces before it; so are rows larger than half a binding (the rest of the work is split
    into windows of whole rows)."""
    longest = builtins.min(_MATMUL_K, moved.storage.runtime.max_binding // 2
                           // moved.dtype.itemsize // 8 * 8)
    if count <= longest:
        result = _new((rows, count), moved.dtype)
        _reduce_rows(source, result, moved, rows, count, count)
        return result
    identity, join = (0, add) if name == "cumsum" else (1, multiply)
    pieces = -(-count // longest)
    width = (-(-count // pieces) + 7) // 8 * 8  # whole 32-byte words: rows start on windows
    table = full((rows, pieces * width), identity, moved.dtype)
    copyto(getitem(table, (slice(None), slice(0, count))), moved)
    inner = reshape(_scan_rows(name, source, reshape(table, (rows * pieces, width)),
                               rows * pieces, width), (rows, pieces, width))
    totals = ascontiguous_copy(getitem(inner, (slice(None), slice(None), width - 1)))
    before = _scan_rows(name, source, totals, rows, pieces)  # the pieces up to each one
    carried = concatenate([full((rows, 1), identity, moved.dtype),
                           getitem(before, (slice(None), slice(0, pieces - 1)))], axis=1)
    joined = join(inner, expand_dims(carried, 2))
    return ascontiguous_copy(getitem(reshape(joined, (rows, pieces * width)),
                                     (slice(None), slice(0, count))))


def _check_indices(indices, size, axis):
    """NumPy's IndexError for an index outside ``[-size, size)``, raised at the next host read
    (:func:`defer_range_check`): a kernel given such an index reads 0 or skips the write,
    never memory outside the buffer."""
    defer_range_check(indices, -size, size, lambda value: IndexError(
        f"index {value} is out of bounds for axis {axis} with size {size}"))


def defer_range_check(indices, low, size, error):
    """Check that every one of the integer ``indices`` lies in ``[low, size)`` without waiting
    for the device: their smallest and largest values are computed by kernels now and read at
    the next host read (``.item()``, ``.cpu()``, ``synchronize``), where ``error(first bad
    index)`` is raised if one is out of range (as CUDA reports its device-side checks). The
    first bad index is looked up in ``indices`` then, so an in-place change to them in between
    can change which index the message names, never whether it is raised.

    Example::

        >>> i = ember.tensor([0, 7], device="webgpu")._data
        >>> defer_range_check(i, 0, 5, lambda v: IndexError(f"index {v}"))
        >>> i.get()
        Traceback (most recent call last):
        IndexError: index 7
    """
    if indices.size == 0:
        return
    wide = astype(indices, np.int64, copy=False)
    extremes = concatenate([reshape(amin(wide), (1,)), reshape(amax(wide), (1,))])

    def check(values):
        smallest, largest = int(values[0]), int(values[1])
        if low <= smallest and largest < size:
            return
        host = indices.get()
        bad = host[(host < low) | (host >= size)].ravel()
        raise error(int(bad[0]) if bad.size else (smallest if smallest < low else largest))

    extremes.storage.runtime.defer(extremes, check)


def flip(m, axis=None):
    """A view with the flipped dims' strides negated, as NumPy's."""
    if not isinstance(m, WebGPUArray):
        return fallback(np.flip, "flip")(m, axis=axis)
    axes = range(m.ndim) if axis is None else [
        a % m.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    strides, offset = list(m.estrides), m.offset
    for a in axes:
        if m.shape[a] > 0:
            offset += (m.shape[a] - 1) * strides[a]
        strides[a] = -strides[a]
    return m.view_of(m.shape, strides, offset)


def _full_key(out, key):
    """``key`` as one index array per dim of ``out`` (gather/scatter's layout), from keys with
    a single integer array among whole slices (``out[:, idx]``), or None."""
    key = key if isinstance(key, tuple) else (key,)
    arrays = [i for i, k in enumerate(key) if isinstance(k, WebGPUArray)]
    if len(arrays) == len(key) == out.ndim:
        return key
    if len(arrays) != 1 or len(key) > out.ndim:
        return None
    if builtins.any(k != slice(None) for i, k in enumerate(key) if i != arrays[0]):
        return None
    p, index = arrays[0], key[arrays[0]]
    lead, trail = out.shape[:p], out.shape[p + 1:]
    shape = lead + index.shape + trail  # the values' shape, as NumPy lays it out
    full = []
    for d in range(out.ndim):
        if d == p:
            full.append(index.view_of((1,) * len(lead) + index.shape + (1,) * len(trail),
                                      (0,) * len(lead) + index.estrides + (0,) * len(trail),
                                      index.offset))
            continue
        position = d if d < p else d - 1 + index.ndim
        iota = from_host(np.arange(out.shape[d], dtype=np.int64))
        view_shape = [1] * len(shape)
        view_shape[position] = out.shape[d]
        full.append(reshape(iota, view_shape))
    return tuple(full)


def einsum(*operands, out=None, optimize=False, **kwargs):
    """Two-operand (or one-operand) float32 ``einsum`` as a batched matmul: indices in both
    operands and the output are the batch, in both but not the output are contracted, in one
    operand and the output are its free dims; an index in one operand only and not the output
    is summed first. Anything else (repeated indices, ellipses, more operands) falls back."""
    plan = _einsum_plan(operands) if out is None and not kwargs else None
    if plan is None:
        return fallback(np.einsum, "einsum")(*operands, out=out, optimize=optimize, **kwargs)
    return plan()


def _einsum_plan(operands):
    if not isinstance(operands[0], str) or "." in operands[0] or "->" not in operands[0]:
        return None
    inputs, output = operands[0].replace(" ", "").split("->")
    terms, arrays = inputs.split(","), list(operands[1:])
    if len(terms) != len(arrays) or len(terms) not in (1, 2) or not builtins.all(
            isinstance(a, WebGPUArray) and a.dtype == np.float32 and a.ndim == len(t)
            and len(set(t)) == len(t) for a, t in zip(arrays, terms)):
        return None
    if len(set(output)) != len(output):
        return None
    # an index only one operand has and the output lacks is summed out first
    for i, term in enumerate(terms):
        others = "".join(terms[:i] + terms[i + 1:]) + output
        alone = [d for d, c in enumerate(term) if c not in others]
        if alone:
            arrays[i] = sum(arrays[i], axis=tuple(alone))
            terms[i] = "".join(c for c in term if c in others)
    if len(terms) == 1:
        term, a = terms[0], arrays[0]
        return lambda: ascontiguous_copy(a.transpose([term.index(c) for c in output]))
    (ta, tb), (a, b) = terms, arrays
    sizes = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))
    if builtins.any(c in ta and c in tb and a.shape[ta.index(c)] != b.shape[tb.index(c)]
                    for c in sizes):
        return None
    batch = [c for c in output if c in ta and c in tb]
    left = [c for c in output if c in ta and c not in tb]
    right = [c for c in output if c in tb and c not in ta]
    contracted = [c for c in ta if c in tb and c not in output]

    def run():
        def grouped(x, term, groups):
            order = [term.index(c) for group in groups for c in group]
            shape = [int(np.prod([sizes[c] for c in group])) for group in groups]
            return reshape(x.transpose(order), shape)
        product = matmul(grouped(a, ta, [batch, left, contracted]),
                         grouped(b, tb, [batch, contracted, right]))
        unfolded = reshape(product, [sizes[c] for c in batch + left + right])
        order = [(batch + left + right).index(c) for c in output]
        return ascontiguous_copy(unfolded.transpose(order))
    return run


# the key dtype each dtype sorts as (the bitonic network compares float32 or int32 words)
_SORT_KEYS = {np.dtype(np.float32): np.dtype(np.float32), np.dtype(np.int32): np.dtype(np.int32),
              **{np.dtype(t): np.dtype(np.int32) for t in (np.uint8, np.bool_)}}


def argsort(a, axis=-1, kind=None, order=None, stable=None):
    """float32 or int32 argsort along ``axis`` by a bitonic network over rows padded to a
    power of two (ties broken by index: the stable order NumPy's ``kind="stable"`` gives, NaN
    last); uint8 and bool sort as int32 (the same order)."""
    if not (isinstance(a, WebGPUArray) and a.dtype in _SORT_KEYS and axis is not None
            and order is None and a.ndim and a.size and a.shape[axis % a.ndim] < 2**24):
        return fallback(np.argsort, "argsort")(a, axis=axis, kind=kind, order=order)
    if _SORT_KEYS[a.dtype] != a.dtype:
        a = astype(a, _SORT_KEYS[a.dtype])
    axis %= a.ndim
    perm = [d for d in range(a.ndim) if d != axis] + [axis]
    moved = a.transpose(perm)
    n = moved.shape[-1]
    rows = moved.size // n
    flat = reshape(moved, (rows, n))
    size = 1 << builtins.max(n - 1, 0).bit_length()
    chunk = builtins.max(1, moved.storage.runtime.max_binding // (size * 4))  # rows that fit
    if chunk >= rows:
        picked = _argsort_rows(flat, size)
    else:  # the padded keys are larger than one binding: sorted in runs of whole rows
        picked = _new((rows, n), np.int64)
        for start in range(0, rows, chunk):
            part = getitem(flat, (slice(start, start + chunk),))
            copyto(getitem(picked, (slice(start, start + chunk),)), _argsort_rows(part, size))
    result = reshape(picked, moved.shape)
    return ascontiguous_copy(result.transpose([perm.index(d) for d in range(a.ndim)]))


def _argsort_rows(flat, size):
    """The stable argsort (int64) of each row of the 2-D float32 or int32 ``flat``, its rows
    padded to ``size`` (a power of two) for the bitonic network."""
    rows, n = flat.shape
    keys = full((rows, size), 0, flat.dtype)
    copyto(getitem(keys, (slice(None), slice(0, n))), flat)
    # each row 0..size-1 (params word 3 is the row length)
    index = _elementwise("i32(i % P[3u])", [], "i32", np.dtype(np.int32), shape=(rows, size))
    runtime, key = keys.storage.runtime, "f32" if flat.dtype == np.float32 else "i32"
    k = 2
    while k <= size:
        j = k // 2
        while j >= 1:
            words = [rows * size, size, k, j, n]
            runtime.dispatch(K.bitonic_step(key), [runtime.constant(K.params(words)),
                                                keys.storage.buffer, index.storage.buffer],
                             _groups(rows * size))
            j //= 2
        k *= 2
    return astype(getitem(index, (slice(None), slice(0, n))), np.int64)


def _put(out, key, values):
    """``out[key] = values`` with integer index arrays, as NumPy (the last of repeated indices
    wins): pass 1 records each element's last writer with atomics, pass 2 writes. Returns
    False when this does not apply (the caller falls back)."""
    if out.dtype.itemsize not in (4, 8) or out.ndim > K.MAX_DIMS or not out.ndim:
        return False
    if not builtins.all(isinstance(k, WebGPUArray) or k == slice(None) for k in
                        (key if isinstance(key, tuple) else (key,))):
        return False
    if not builtins.all(k.dtype in (np.int64, np.int32) for k in
                        (key if isinstance(key, tuple) else (key,))
                        if isinstance(k, WebGPUArray)):
        return False
    full_key = _full_key(out, key)
    if full_key is None:
        return False
    if not isinstance(values, WebGPUArray):
        values = full((), values, out.dtype)
    elif values.dtype != out.dtype:
        values = astype(values, out.dtype)
    shape = np.broadcast_shapes(*[k.shape for k in full_key])
    if values.storage is out.storage:
        values = ascontiguous_copy(values)
    count = int(np.prod(shape))
    if count == 0:
        return True
    for k, n in zip(full_key, out.shape):
        _check_indices(k, n, 0)
    operands = [broadcast_to(values, shape)] + [broadcast_to(k, shape) for k in full_key]
    words = _params_for(shape, [(x.offset, x.estrides) for x in operands])
    words += [out.offset] + list(out.estrides) + [0] * (K.MAX_DIMS - out.ndim)
    words += list(out.shape)
    sizes = tuple(k.dtype.itemsize for k in full_key)
    winners = zeros((out.storage.nbytes // out.dtype.itemsize,), np.uint32)
    runtime = out.storage.runtime
    params = runtime.constant(K.params(words))
    keys = [x.storage.buffer for x in operands[1:]]
    runtime.dispatch(K.put_claim(sizes), [params, winners.storage.buffer] + keys,
                     _groups(count))
    runtime.dispatch(K.put_write(sizes, out.dtype.itemsize),
                     [params, out.storage.buffer, operands[0].storage.buffer] + keys
                     + [winners.storage.buffer], _groups(count))
    return True
