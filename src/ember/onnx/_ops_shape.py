"""ONNX mappings of shape operators: views, permutations, slicing, joining and splitting.

ember's views carry the shape they were traced with; :meth:`ExportContext.reshape` keeps
sizes that follow a dynamic axis dynamic (copied from the input, inferred, or computed).
"""

from __future__ import annotations

from ._context import INT64_MAX, INT64_MIN
from ._dims import Dim
from ._symbolic import symbolic


@symbolic("view", "squeeze", "unsqueeze")
def _view(ctx, x, shape, strides=None):
    return ctx.reshape(x, ctx.in_dims(0), ctx.out_dims())


@symbolic("permute")
def _permute(ctx, x, dims):
    ndim = len(ctx.in_dims(0))
    perm = [d % ndim for d in dims]
    if perm == list(range(ndim)):
        return ctx.op("Identity", x)
    return ctx.op("Transpose", x, perm=perm)


@symbolic("expand")
def _expand(ctx, x, shape, strides=None):
    in_dims, out_dims = ctx.in_dims(0), ctx.out_dims()
    offset = len(out_dims) - len(in_dims)
    # 1 keeps the input's size (ONNX's Expand broadcasts), so only new sizes are spelled out
    target = [1 if i >= offset and in_dims[i - offset] == d else d
              for i, d in enumerate(out_dims)]
    return ctx.op("Expand", x, ctx.shape_tensor(target))


@symbolic("cat")
def _cat(ctx, *tensors, dim):
    ndim = len(ctx.out_dims())
    parts = [ctx.cast(t, ctx.in_dtype(i), ctx.out_dtype()) for i, t in enumerate(tensors)]
    return ctx.op("Concat", *parts, axis=dim % ndim)


@symbolic("split_with_sizes")
def _split_with_sizes(ctx, x, dim, sizes):
    axis = dim % len(ctx.in_dims(0))
    if len(sizes) == 1:
        return (ctx.op("Identity", x),)
    parts = ctx.op("Split", x, ctx.shape_tensor(list(sizes)), outputs=len(sizes), axis=axis)
    return tuple(parts)


@symbolic("unbind")
def _unbind(ctx, x, dim):
    in_dims = ctx.in_dims(0)
    axis = dim % len(in_dims)
    count = in_dims[axis]
    if isinstance(count, Dim):
        ctx.fail("unbind along a dynamic axis cannot be exported (the number of results "
                 "would change)")
    if count == 1:
        return (ctx.squeeze(x, [axis]),)
    parts = ctx.op("Split", x, ctx.int64s([1] * count), outputs=count, axis=axis)
    return tuple(ctx.squeeze(p, [axis]) for p in parts)


def _index(ctx, x, items):
    """``x[items]`` for a basic index: ints, slices and None (Ellipsis already expanded)."""
    starts, ends, axes, steps = [], [], [], []
    dropped, inserted = [], []
    axis = position = 0
    for k in items:
        if k is None:
            inserted.append(position)
            position += 1
            continue
        if isinstance(k, slice):
            step = 1 if k.step is None else k.step
            if isinstance(step, Dim) or step < 1:
                ctx.fail("slices need a constant positive step")
            if not (k.start in (None, 0) and k.stop is None and step == 1):
                starts.append(0 if k.start is None else k.start)
                ends.append(INT64_MAX if k.stop is None else k.stop)
                axes.append(axis)
                steps.append(step)
            position += 1
        else:
            if isinstance(k, Dim):
                ctx.fail("an index that follows a dynamic axis cannot be exported")
            starts.append(k)
            ends.append(INT64_MAX if k == -1 else k + 1)
            axes.append(axis)
            steps.append(1)
            dropped.append(axis)
        axis += 1
    if axes:
        x = ctx.op("Slice", x, ctx.shape_tensor(starts), ctx.shape_tensor(ends),
                   ctx.int64s(axes), ctx.int64s(steps))
    if dropped:
        x = ctx.squeeze(x, dropped)
    if inserted:
        x = ctx.unsqueeze(x, inserted)
    return x if (axes or dropped or inserted) else ctx.op("Identity", x)


@symbolic("_slice")
def _numpy_key(ctx, x, key):
    key = key if isinstance(key, tuple) else (key,)
    ndim = len(ctx.in_dims(0))
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    items = []
    for k in key:
        if k is Ellipsis:
            items += [slice(None)] * (ndim - used)
            used = ndim  # a second Ellipsis stands for nothing
        elif isinstance(k, (int, slice)) or k is None:
            items.append(k)
        else:
            ctx.fail(f"indexing with {type(k).__name__} cannot be exported")
    return _index(ctx, x, items)


@symbolic("slice", "select")
def _normalised_key(ctx, x, key):
    items = [slice(*k) if isinstance(k, tuple) and k[0] is not None
             else slice(None) if isinstance(k, tuple) else k for k in key]
    return _index(ctx, x, items)


@symbolic("flip")
def _flip(ctx, x, dims):
    ndim = len(ctx.in_dims(0))
    axes = [d % ndim for d in dims]
    return ctx.op("Slice", x, ctx.int64s([-1] * len(axes)), ctx.int64s([INT64_MIN] * len(axes)),
                  ctx.int64s(axes), ctx.int64s([-1] * len(axes)))


@symbolic("repeat")
def _repeat(ctx, x, repeats):
    extra = len(repeats) - len(ctx.in_dims(0))
    if extra:
        x = ctx.unsqueeze(x, list(range(extra)))
    return ctx.op("Tile", x, ctx.shape_tensor(list(repeats)))


@symbolic("constant_pad_nd")
def _constant_pad(ctx, x, pad, value=0):
    ndim = len(ctx.in_dims(0))
    begins, ends = [0] * ndim, [0] * ndim
    for i in range(len(pad) // 2):
        begins[ndim - 1 - i], ends[ndim - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return ctx.op("Pad", x, ctx.shape_tensor(begins + ends), ctx.scalar(value, ctx.out_dtype()),
                  mode="constant")


@symbolic("tril", "triu")
def _triangle(ctx, x, diagonal=0):
    ctx.require_opset(14)  # Trilu
    upper = int(ctx.node.op.name == "triu")
    return ctx.op("Trilu", x, ctx.const(_int64(diagonal)), upper=upper)


def _int64(value):
    import numpy as np

    return np.array(value, dtype=np.int64)


@symbolic("index_select")
def _index_select(ctx, x, index, dim):
    axis = dim % max(len(ctx.in_dims(0)), 1)
    return ctx.op("Gather", x, ctx.cast(index, ctx.in_dtype(1), "int64"), axis=axis)


@symbolic("gather")
def _gather(ctx, x, index, dim):
    axis = dim % max(len(ctx.in_dims(0)), 1)
    return ctx.op("GatherElements", x, ctx.cast(index, ctx.in_dtype(1), "int64"), axis=axis)
