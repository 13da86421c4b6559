"""Ops that rearrange data into new memory: flip, fliplr, flipud, roll, rot90, repeat,
tile, repeat_interleave, tril, triu."""

from __future__ import annotations

import builtins

from ... import _dtype as dt
from ..._tensor import Tensor
from ...autograd.forward_ad import first_linear_jvp
from .._methods import tensor_method
from .._onnx_rules import unfolded
from .._operands import varargs_or_keyword, wrap_dim
from .._registry import Op, defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._geometry import (
    _array_strides,
    _contiguous_strides,
    _dense,
    _int,
    _same_meta,
    _shape_args,
    _sizes_arg,
)
from .slicing import _add_at
from .views import _dim_list, reshape, transpose, view_op

__all__ = ["flip", "fliplr", "flipud", "roll", "rot90", "repeat_interleave", "tile", "tril", "triu"]


# ================================================================ flip / roll / rot90


@defop("flip", meta=_same_meta, save_inputs=False, kind="shape")
def flip_op(xp, a, *, dims):
    flipped = xp.flip(a, dims) if dims else a
    dense = _dense(a.shape, _array_strides(a)) if a.size else True
    return flipped.copy(order="K" if dense else "C")


@flip_op.defonnx
def _flip_onnx(ctx, x, dims):
    axes = ctx.axes(dims)
    backwards = ctx.int64s([-1] * len(axes))
    return ctx.op("Slice", x, backwards, ctx.int64s([ctx.INT64_MIN] * len(axes)),
                  ctx.int64s(axes), backwards)


flip_op.defbatch(batching.reduction)


@flip_op.defderivative
def _flip_derivative(ctx, grad, *, dims):
    return (flip_op(grad, dims=dims),)


flip_op.defjvp(first_linear_jvp(flip_op))


def _unique_dims(dims, ndim, name):
    dims = _dim_list(dims, ndim, name)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return tuple(dims)


@tensor_method
@signature('flip(Tensor input, int[] dims) -> Tensor')
def flip(input, dims):
    """A copy with the order of elements reversed along ``dims``.

    Example::

        >>> ember.flip(ember.tensor([[1, 2], [3, 4]]), [1])
        tensor([[2, 1],
                [4, 3]])
    """
    if input._data.ndim == 0:
        _dim_list(dims, 0, "dims")
        return flip_op(input, dims=())
    return flip_op(input, dims=_unique_dims(dims, input._data.ndim, "dims"))


@tensor_method
@signature("fliplr(Tensor input) -> Tensor")
def fliplr(input):
    """Reverse dim 1 (needs at least 2 dims).

    Example::

        >>> ember.fliplr(ember.tensor([[1, 2]]))
        tensor([[2, 1]])
    """
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip_op(input, dims=(1,))


@tensor_method
@signature("flipud(Tensor input) -> Tensor")
def flipud(input):
    """Reverse dim 0 (needs at least 1 dim).

    Example::

        >>> ember.flipud(ember.tensor([1, 2]))
        tensor([2, 1])
    """
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip_op(input, dims=(0,))


@defop("roll", meta=_same_meta, save_inputs=False, kind="shape",
       opt_outs={"onnx": "not mapped yet (two Slices and a Concat per axis)"})
def roll_op(xp, a, *, shifts, dims):
    return xp.ascontiguousarray(xp.roll(a, shifts, dims))


roll_op.defbatch(batching.reduction)


@roll_op.defderivative
def _roll_derivative(ctx, grad, *, shifts, dims):
    return (roll_op(grad, shifts=tuple(-s for s in shifts), dims=dims),)


roll_op.defjvp(first_linear_jvp(roll_op))


@tensor_method
@signature("roll(Tensor input, SymInt[1] shifts, int[1]? dims=None) -> Tensor")
def roll(input, shifts, dims=None):
    """Shift elements cyclically by ``shifts`` along ``dims`` (over the flattened tensor when
    ``dims`` is None).

    Example::

        >>> ember.roll(ember.tensor([1, 2, 3, 4]), 1)
        tensor([4, 1, 2, 3])
    """
    shifts = _sizes_arg(shifts)
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
        if len(shifts) != 1:
            raise RuntimeError(f"`shifts` required to be of size 1 when `dims` is not given, but "
                               f"got {len(shifts)}")
        flat = reshape(input, (-1,))
        return view_op(roll_op(flat, shifts=shifts, dims=(0,)), shape=input._data.shape,
                       strides=_contiguous_strides(input._data.shape))
    count = len(dims) if isinstance(dims, (tuple, list)) else 1
    if len(shifts) != count:
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{count}")
    if input._data.size == 0:  # nothing to move: torch checks no dims either
        return input.clone()
    dims = tuple(_dim_list(dims, input._data.ndim, "dims"))
    return roll_op(input, shifts=shifts, dims=dims)


@tensor_method
@signature('rot90(Tensor input, int k=1, int[] dims=[0,1]) -> Tensor')
def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the
    second).

    Example::

        >>> ember.rot90(ember.tensor([[1, 2], [3, 4]]))
        tensor([[2, 4],
                [1, 3]])
    """
    dims = list(dims)
    ndim = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {ndim}")
    d0, d1 = wrap_dim(_int(dims[0], "dim"), ndim), wrap_dim(_int(dims[1], "dim"), ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k = _int(k, "k") % 4
    if k == 1:
        return transpose(flip(input, [d1]), d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return transpose(flip(input, [d0]), d0, d1)
    from ..creation import clone_op

    return clone_op(input, memory_format="contiguous")


# ================================================================ repeat / tile / repeat_interleave


@defop("repeat", meta=lambda a, *, repeats: (
    tuple(r * s for r, s in zip(repeats, (1,) * (len(repeats) - a.ndim) + tuple(a.shape))),
    a.dtype), save_inputs=False, kind="shape")
def repeat_op(xp, a, *, repeats):
    a = a.reshape((1,) * (len(repeats) - a.ndim) + a.shape)
    return xp.tile(a, repeats)


@repeat_op.defonnx
@unfolded  # the runtime tiles: the file keeps the small input
def _repeat_onnx(ctx, x, repeats):
    extra = len(repeats) - len(ctx.in_dims(0))
    if extra:
        x = ctx.unsqueeze(x, list(range(extra)))
    return ctx.op("Tile", x, ctx.shape_tensor(list(repeats)))


repeat_op.defbatch(batching.repeat)


@repeat_op.defderivative
def _repeat_derivative(ctx, grad, *, repeats):
    in_shape = ctx._input_meta[0][0]
    padded = (1,) * (len(repeats) - len(in_shape)) + tuple(in_shape)
    interleaved = []
    for r, s in zip(repeats, padded):
        interleaved += [r, s]
    summed = reshape(grad, tuple(interleaved)).sum(tuple(range(0, 2 * len(repeats), 2)))
    return (reshape(summed, in_shape),)


repeat_op.defjvp(first_linear_jvp(repeat_op))


@tensor_method("repeat")
def _repeat(self, *sizes, repeats=None):
    """Tile the tensor ``sizes[i]`` times along each dim (a copy; new dims in front).

    Example::

        >>> ember.tensor([1, 2]).repeat(2)
        tensor([1, 2, 1, 2])
    """
    sizes = varargs_or_keyword("repeat", sizes, repeats, "repeats")
    repeats = tuple(_int(s, "repeats") for s in _shape_args(sizes))
    if len(repeats) < self._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(r < 0 for r in repeats):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(repeats)}: "
                           f"{list(repeats)}")
    return repeat_op(self, repeats=repeats)


@signature('tile(Tensor input, SymInt[] dims) -> Tensor')
def tile(input, dims):
    """Repeat ``input`` along each dim (``dims`` padded with 1s in front to ``input.dim()``).

    Example::

        >>> ember.tile(ember.tensor([[1, 2]]), (2,))
        tensor([[1, 2, 1, 2]])
    """
    dims = _sizes_arg(dims)
    dims = (1,) * (input._data.ndim - len(dims)) + dims
    return _repeat(input, dims)


@tensor_method("tile")
def _tile_method(self, *dims, **kwargs):
    """``ember.tile(self, dims)``; the method also takes the sizes as separate ints, as torch's.

    Example::

        >>> ember.ones(1, 2).tile(2, 1).shape
        ember.Size([2, 2])
    """
    return tile(self, *((dims,) if len(dims) > 1 else dims), **kwargs)



def _repeat_interleave_meta(a, *, repeats, dim):
    shape = list(a.shape)
    shape[dim] = builtins.sum(repeats) if len(repeats) != 1 else shape[dim] * repeats[0]
    return tuple(shape), a.dtype


@defop("repeat_interleave", meta=_repeat_interleave_meta, save_inputs=False, kind="shape",
       opt_outs={"onnx": "not mapped yet (composable from ONNX operators)"})
def repeat_interleave_op(xp, a, *, repeats, dim):
    count = repeats[0] if len(repeats) == 1 else list(repeats)
    return xp.repeat(a, count, axis=dim)


repeat_interleave_op.defbatch(batching.along_dim)


@defop("segment_sum", meta=lambda g, *, repeats, dim, size: (
    g.shape[:dim] + (size,) + g.shape[dim + 1:], g.dtype), save_inputs=False,
    grad_name="RepeatInterleaveBackward0", kind="shape",
       opt_outs={"onnx": "a backward kernel: exported models run inference"})
def segment_sum_op(xp, g, *, repeats, dim, size):
    moved = xp.moveaxis(g, dim, 0)
    if len(repeats) == 1:
        r = repeats[0]
        summed = moved.reshape((size, r) + moved.shape[1:]).sum(axis=1)
    else:
        summed = xp.zeros((size,) + moved.shape[1:], dtype=g.dtype)
        index = xp.repeat(xp.arange(size), list(repeats))
        _add_at(xp, summed, index, moved)
    return xp.ascontiguousarray(xp.moveaxis(summed, 0, dim)).astype(g.dtype, copy=False)


segment_sum_op.defbatch(batching.along_dim)


@repeat_interleave_op.defderivative
def _repeat_interleave_derivative(ctx, grad, *, repeats, dim):
    size = ctx._input_meta[0][0][dim]
    return (segment_sum_op(grad, repeats=repeats, dim=dim, size=size),)


repeat_interleave_op.defjvp(first_linear_jvp(repeat_interleave_op))


@segment_sum_op.defderivative
def _segment_sum_derivative(ctx, grad, *, repeats, dim, size):
    return (repeat_interleave_op(grad, repeats=repeats, dim=dim),)


@tensor_method
@signature("repeat_interleave(Tensor input, PyObject? repeats=None, int? dim=None, *, "
           "SymInt? output_size=None) -> Tensor", overloaded=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int, or a tensor with one count per element)
    along ``dim`` (over the flattened input when None). With only a tensor of counts, returns
    the indices ``0, 0, 1, ...`` repeated by those counts.

    Example::

        >>> ember.repeat_interleave(ember.tensor([1, 2]), 2)
        tensor([1, 1, 2, 2])
    """
    if repeats is None:
        counts = input
        if counts.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if counts.dtype not in (dt.int64, dt.int32):
            raise RuntimeError("repeats has to be Long or Int tensor")
        from ..creation import arange

        return repeat_interleave(arange(counts._data.size, device=counts._device), counts, 0,
                                 output_size=output_size)
    if dim is None:
        input = reshape(input, (-1,))
        dim = 0
    dim = wrap_dim(_int(dim, "dim"), input._data.ndim)
    if input._data.ndim == 0:
        input = reshape(input, (1,))
    size = input._data.shape[dim]
    if isinstance(repeats, Tensor):
        if repeats.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if repeats.dtype not in (dt.int64, dt.int32):
            raise RuntimeError("repeats has to be Long or Int tensor")
        counts = tuple(builtins.int(c) for c in repeats.reshape(-1).tolist())
        if len(counts) != 1 and len(counts) != size:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {len(counts)} and input.size({dim}) = {size}")
    else:
        counts = (_int(repeats, "repeats"),)
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    result = repeat_interleave_op(input, repeats=counts, dim=dim)
    if output_size is not None and result._data.shape[dim] != output_size:
        raise RuntimeError("allocated size does not match required size")
    return result


# ================================================================ tril / triu


def _tri_kernel(lower):
    def kernel(xp, a, *, diagonal):
        n, m = a.shape[-2:]
        mask = xp.tri(n, m, diagonal, dtype=bool)
        if not lower:
            mask = ~xp.tri(n, m, diagonal - 1, dtype=bool)
        return xp.where(mask, a, xp.zeros((), dtype=a.dtype))
    return kernel


tril_op = Op("tril", _tri_kernel(True), meta=_same_meta, save_inputs=False, kind="shape")
triu_op = Op("triu", _tri_kernel(False), meta=_same_meta, save_inputs=False, kind="shape")


def _triangle_onnx(upper):
    """tril/triu as ONNX's Trilu (opset 14)."""
    def mapping(ctx, x, diagonal=0):
        ctx.require_opset(14)
        return ctx.op("Trilu", x, ctx.scalar(diagonal, "int64"), upper=upper)
    return mapping


tril_op.defonnx(_triangle_onnx(0))
triu_op.defonnx(_triangle_onnx(1))
tril_op.defbatch(batching.trailing_dims)
triu_op.defbatch(batching.trailing_dims)
tril_op.defderivative(lambda ctx, grad, *, diagonal: (tril_op(grad, diagonal=diagonal),))
triu_op.defderivative(lambda ctx, grad, *, diagonal: (triu_op(grad, diagonal=diagonal),))
tril_op.defjvp(first_linear_jvp(tril_op))
triu_op.defjvp(first_linear_jvp(triu_op))


@tensor_method
@signature('tril(Tensor input, int diagonal=0, *, Tensor? out=None) -> Tensor')
def tril(input, diagonal=0, *, out=None):
    """The lower triangle of the last two dims (elements above ``diagonal`` set to 0).

    Example::

        >>> ember.tril(ember.ones(2, 2, dtype=ember.int64))
        tensor([[1, 0],
                [1, 1]])
    """
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return write_out(tril_op(input, diagonal=_int(diagonal, "diagonal")), out, "tril")


@tensor_method
@signature('triu(Tensor input, int diagonal=0, *, Tensor? out=None) -> Tensor')
def triu(input, diagonal=0, *, out=None):
    """The upper triangle of the last two dims (elements below ``diagonal`` set to 0).

    Example::

        >>> ember.triu(ember.ones(2, 2, dtype=ember.int64))
        tensor([[1, 1],
                [0, 1]])
    """
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return write_out(triu_op(input, diagonal=_int(diagonal, "diagonal")), out, "triu")
