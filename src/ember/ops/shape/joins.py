"""Joins and splits: cat, stack and their h/v/d/column forms, split, split_with_sizes,
chunk, unbind, tensor_split, h/v/dsplit, meshgrid, atleast_1d/2d/3d."""

from __future__ import annotations

import builtins
import itertools
import warnings

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor, _trace_state
from ...autograd.forward_ad import _state as _fw_state
from ...autograd.grad_mode import state as _grad_state
from .._methods import tensor_method
from .._operands import wrap_dim
from .._registry import defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._geometry import _int, _sizes_arg
from .slicing import _key_kernel, _slice
from .views import _type_label, expand, reshape, unsqueeze

__all__ = ["unbind", "split", "split_with_sizes", "chunk", "tensor_split", "hsplit", "vsplit",
           "dsplit", "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack",
           "dstack", "column_stack", "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d"]


def _split_meta(a, *, dim, sizes):
    return tuple((a.shape[:dim] + (n,) + a.shape[dim + 1:], a.dtype) for n in sizes)


@defop("split_with_sizes", meta=_split_meta, save_inputs=False, view=True, multi_output=True,
       kind="view")
def split_op(xp, a, *, dim, sizes):
    lead = ((None, None, None),) * dim
    out, start = [], 0
    for size in sizes:
        out.append(_key_kernel(xp, a, key=lead + ((start, start + size, 1),)))
        start += size
    return tuple(out)


@split_op.defonnx
def _split_onnx(ctx, x, dim, sizes):
    if len(sizes) == 1:
        return (ctx.op("Identity", x),)
    parts = ctx.op("Split", x, ctx.shape_tensor(list(sizes)), outputs=len(sizes),
                   axis=ctx.axis(dim))
    return tuple(parts)


split_op.defbatch(batching.along_dim)


@split_op.defderivative
def _split_derivative(ctx, *grads, dim, sizes):
    return (cat(list(grads), dim),)


def _unbind_meta(a, *, dim):
    return ((a.shape[:dim] + a.shape[dim + 1:], a.dtype),) * a.shape[dim]


@defop("unbind", meta=_unbind_meta, save_inputs=False, view=True, multi_output=True, kind="view")
def unbind_op(xp, a, *, dim):
    lead = ((None, None, None),) * dim
    return tuple(_key_kernel(xp, a, key=lead + (i,)) for i in range(a.shape[dim]))


@unbind_op.defonnx
def _unbind_onnx(ctx, x, dim):
    axis = ctx.axis(dim)
    count = ctx.in_dims(0)[axis]
    if ctx.is_dynamic(count):
        ctx.fail("unbind along a dynamic axis cannot be exported (the number of results "
                 "would change)")
    if count == 1:
        return (ctx.squeeze(x, [axis]),)
    parts = ctx.op("Split", x, ctx.int64s([1] * count), outputs=count, axis=axis)
    return tuple(ctx.squeeze(p, [axis]) for p in parts)


unbind_op.defbatch(batching.along_dim)


@unbind_op.defderivative
def _unbind_derivative(ctx, *grads, dim):
    return (stack(list(grads), dim),)


@tensor_method
@signature('unbind(Tensor input, int dim=0) -> Tensor[]')
def unbind(input, dim=0):
    """The slices along ``dim`` as a tuple of views.

    Example::

        >>> ember.unbind(ember.tensor([[1, 2], [3, 4]]))
        (tensor([1, 2]), tensor([3, 4]))
    """
    if input._data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dim = wrap_dim(_int(dim, "dim"), input._data.ndim)
    return unbind_op(input, dim=dim)


@tensor_method
@signature("split_with_sizes(Tensor input, SymInt[] split_sizes, int dim=0) -> Tensor[]")
def split_with_sizes(input, split_sizes, dim=0):
    """Views of consecutive pieces of dim ``dim`` with the given sizes (which must sum to it).

    Example::

        >>> [p.tolist() for p in ember.arange(5).split_with_sizes([2, 3])]
        [[0, 1], [2, 3, 4]]
    """
    if input._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = wrap_dim(_int(dim, "dim"), input._data.ndim)
    sizes = _sizes_arg(split_sizes)
    size = input._data.shape[dim]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries,"
                           f" but got split_sizes={list(sizes)}")
    if builtins.sum(sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                           f"(input tensor's size at dimension {dim}), but got "
                           f"split_sizes={list(sizes)}")
    return split_op(input, dim=dim, sizes=sizes)


@signature("split(Tensor tensor, PyObject split_size_or_sections, int dim=0) -> Tensor[]")
def split(tensor, split_size_or_sections, dim=0):
    """Views of pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the
    given list of sizes.

    Example::

        >>> [p.tolist() for p in ember.arange(5).split(2)]
        [[0, 1], [2, 3], [4]]
    """
    if not isinstance(split_size_or_sections, (int, np.integer)) and not (
            isinstance(split_size_or_sections, Tensor) and split_size_or_sections.ndim == 0):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    split_size = _int(split_size_or_sections, "split_size")
    if tensor._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = wrap_dim(_int(dim, "dim"), tensor._data.ndim)
    size = tensor._data.shape[dim]
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got "
                           f"split_size={split_size}")
    if split_size == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {size}")
    count = builtins.max(-(-size // split_size) if split_size else 1, 1)
    sizes = [split_size] * count
    sizes[-1] = split_size - (split_size * count - size)
    return split_op(tensor, dim=dim, sizes=tuple(sizes))


@tensor_method("split")
def _split_method(self, split_size, dim=0):
    """``ember.split(self, split_size, dim)``: the method names its argument ``split_size``
    (a size or a list of sizes), as torch's.

    Example::

        >>> [p.tolist() for p in ember.arange(4).split(split_size=3)]
        [[0, 1, 2], [3]]
    """
    return split(self, split_size, dim)



@tensor_method
@signature('chunk(Tensor input, int chunks, int dim=0) -> Tensor[]')
def chunk(input, chunks, dim=0):
    """Split into ``chunks`` views of (nearly) equal size along ``dim``; may return fewer.

    Example::

        >>> [p.tolist() for p in ember.arange(5).chunk(3)]
        [[0, 1], [2, 3], [4]]
    """
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    chunks = _int(chunks, "chunks")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    dim = wrap_dim(_int(dim, "dim"), input._data.ndim)
    size = input._data.shape[dim]
    split_size = -(-size // chunks)
    if split_size == 0 and size == 0:
        return split_op(input, dim=dim, sizes=(0,) * chunks)
    return split(input, split_size, dim)


@tensor_method
@signature("tensor_split(Tensor input, PyObject indices_or_sections, int dim=0) -> Tensor[]",
           overloaded="all")
def tensor_split(input, indices_or_sections, dim=0):
    """Split into ``sections`` views of nearly equal size, or at the given indices.

    Example::

        >>> [p.tolist() for p in ember.arange(7).tensor_split([1, 5])]
        [[0], [1, 2, 3, 4], [5, 6]]
    """
    if input._data.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec._device.type != "cpu":
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be on cpu, "
                               f"but it's on {spec._device}")
        if spec.dtype is not dt.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of"
                               f" long, but got {_type_label(spec)}")
        if spec.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-"
                               f"dimensional or one-dimensional tensor, but got a tensor with "
                               f"{spec.ndim} dims")
        spec = spec.item() if spec.ndim == 0 else spec.tolist()
    dim = wrap_dim(_int(dim, "dim"), input._data.ndim)
    size = input._data.shape[dim]
    if isinstance(spec, (int, np.integer)):
        sections = builtins.int(spec)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(size, sections)
        spec = list(itertools.accumulate(small + 1 if i < extra else small
                                         for i in range(sections - 1)))
    pieces, start = [], 0
    for index in list(spec) + [size]:
        stop = _int(index, "index")
        lo = _clamp_index(start, size)
        hi = builtins.max(_clamp_index(stop, size), lo)
        pieces.append(_slice(input, dim, lo, hi))
        start = stop
    return tuple(pieces)


def _clamp_index(index, size):
    if index < 0:
        index += size
    return builtins.min(builtins.max(index, 0), size)


def _directional_split(input, indices_or_sections, dim, name, min_dims):
    if input._data.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension"
                           f"{'s' if min_dims > 1 else ''}, but got a tensor with "
                           f"{input._data.ndim} dimensions!")
    if isinstance(indices_or_sections, (int, np.integer)):
        size = input._data.shape[dim]
        sections = builtins.int(indices_or_sections)
        if sections == 0 or size % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the split_size "
                               f"{sections}!")
    return tensor_split(input, indices_or_sections, dim)


@tensor_method
@signature("hsplit(Tensor input, PyObject indices_or_sections) -> Tensor[]", overloaded="all")
def hsplit(input, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 for 1-D tensors), sections must divide evenly.

    Example::

        >>> [p.shape for p in ember.zeros(2, 4).hsplit(2)]
        [ember.Size([2, 2]), ember.Size([2, 2])]
    """
    dim = 1 if input._data.ndim > 1 else 0
    return _directional_split(input, indices_or_sections, dim, "hsplit", 1)


@tensor_method
@signature("vsplit(Tensor input, PyObject indices_or_sections) -> Tensor[]", overloaded="all")
def vsplit(input, indices_or_sections):
    """``tensor_split`` along dim 0 of a tensor with at least 2 dims.

    Example::

        >>> [p.shape for p in ember.zeros(4, 2).vsplit(2)]
        [ember.Size([2, 2]), ember.Size([2, 2])]
    """
    return _directional_split(input, indices_or_sections, 0, "vsplit", 2)


@tensor_method
@signature("dsplit(Tensor input, PyObject indices_or_sections) -> Tensor[]", overloaded="all")
def dsplit(input, indices_or_sections):
    """``tensor_split`` along dim 2 of a tensor with at least 3 dims.

    Example::

        >>> [p.shape for p in ember.zeros(1, 2, 4).dsplit(2)]
        [ember.Size([1, 2, 2]), ember.Size([1, 2, 2])]
    """
    return _directional_split(input, indices_or_sections, 2, "dsplit", 3)


# ================================================================ cat / stack


def _cat_meta(*arrays, dim):
    shape = list(arrays[0].shape)
    shape[dim] = builtins.sum(a.shape[dim] for a in arrays)
    return tuple(shape), arrays[0].dtype


@defop("cat", meta=_cat_meta, save_inputs=False, kind="shape")
def cat_op(xp, *arrays, dim):
    return xp.concatenate(arrays, axis=dim)


@cat_op.defonnx
def _cat_onnx(ctx, *tensors, dim):
    parts = [ctx.cast(t, ctx.in_dtype(i), ctx.out_dtype()) for i, t in enumerate(tensors)]
    return ctx.op("Concat", *parts, axis=dim % len(ctx.out_dims()))


cat_op.defbatch(batching.along_dim)


@cat_op.defderivative
def _cat_derivative(ctx, grad, *, dim):
    grads, start = [], 0
    for (shape, _, _), needed in zip(ctx._input_meta, ctx.needs_input_grad):
        size = shape[dim]
        grads.append(_slice(grad, dim, start, start + size) if needed else None)
        start += size
    return tuple(grads)


@cat_op.defjvp
def _cat_jvp(p, t, y, *, dim):
    return cat_op(*[q.new_zeros(q._data.shape) if tq is None else tq for q, tq in zip(p, t)],
                  dim=dim)


def _tensor_list(tensors, name):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dim ``dim`` (dtypes promote; empty 1-D tensors are
    skipped, as in torch).

    Example::

        >>> ember.cat([ember.tensor([1, 2]), ember.tensor([3.])])
        tensor([1., 2., 3.])
    """
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    dtype = dt.result_type(*tensors)
    kept = [(i, t) for i, t in enumerate(tensors) if t._data.shape != (0,)]
    if not kept:
        kept = [(0, tensors[0])]
    ref_index, ref = kept[0]
    ndim = ref._data.ndim
    dim = wrap_dim(_int(dim, "dim"), ndim)
    device = ref._device
    for i, t in kept[1:]:
        if t._device is not device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {device} and {t._device}! (when checking "
                               "argument for argument tensors in method wrapper_CPU_cat)")
        if t._data.ndim != ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ndim} and "
                               f"{t._data.ndim}")
        for d in range(ndim):
            if d != dim and t._data.shape[d] != ref._data.shape[d]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. "
                                   f"Expected size {ref._data.shape[d]} but got size "
                                   f"{t._data.shape[d]} for tensor number {i} in the list.")
    parts = [t if t.dtype is dtype else t.to(dtype) for _, t in kept]
    return write_out(cat_op(*parts, dim=dim), out, "cat")


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Join tensors of equal shape along a new dim ``dim``.

    Example::

        >>> ember.stack([ember.tensor([1, 2]), ember.tensor([3, 4])], 1)
        tensor([[1, 3],
                [2, 4]])
    """
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._data.shape)} at entry "
                               f"{i}")
    dim = wrap_dim(_int(dim, "dim"), len(shape) + 1)
    first = tensors[0]
    if (out is None and first._device._xp is not None
            and not (_grad_state.enabled and any(t._rg for t in tensors))
            and _fw_state.level is None
            and _trace_state.tracer is None  # ember.jit records
            and all(t._data.dtype == first._data.dtype and t._device is first._device
                    for t in tensors)):
        # nothing to record and nothing to promote (the DataLoader's collate): one kernel call
        return Tensor._make(first._device._xp.stack([t._data for t in tensors], dim),
                            first._device)
    return cat([unsqueeze(t, dim) for t in tensors], dim, out=out)


def _seq(tensors, name):
    return _tensor_list(tensors, name)


def hstack(tensors, *, out=None):
    """Concatenate along dim 1 (dim 0 for 1-D tensors).

    Example::

        >>> ember.hstack([ember.tensor([1]), ember.tensor([2, 3])])
        tensor([1, 2, 3])
    """
    tensors = atleast_1d(_seq(tensors, "hstack"))
    dim = 0 if tensors and tensors[0]._data.ndim == 1 else 1
    return cat(tensors, dim, out=out)


def vstack(tensors, *, out=None):
    """Concatenate along dim 0 after making every tensor at least 2-D.

    Example::

        >>> ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]])
    """
    return cat(atleast_2d(_seq(tensors, "vstack")), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Concatenate along dim 2 after making every tensor at least 3-D.

    Example::

        >>> ember.dstack([ember.tensor([1, 2]), ember.tensor([3, 4])]).shape
        ember.Size([1, 2, 2])
    """
    return cat(atleast_3d(_seq(tensors, "dstack")), 2, out=out)


def column_stack(tensors, *, out=None):
    """Stack 0-D/1-D tensors as columns (2-D tensors as they are) along dim 1.

    Example::

        >>> ember.column_stack([ember.tensor([1, 2]), ember.tensor([3, 4])])
        tensor([[1, 3],
                [2, 4]])
    """
    tensors = _seq(tensors, "column_stack")
    columns = [reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in tensors]
    return cat(columns, 1, out=out)


def _atleast(args, ndim):
    single = len(args) == 1
    items = args[0] if single and isinstance(args[0], (tuple, list)) else args
    results = []
    for t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor, but got {type(t).__name__}")
        shape = t._data.shape
        if len(shape) >= ndim:
            results.append(t)
        elif ndim == 1:
            results.append(reshape(t, (1,)))
        elif ndim == 2:
            results.append(unsqueeze(t, 0) if len(shape) == 1 else reshape(t, (1, 1)))
        elif len(shape) == 0:
            results.append(reshape(t, (1, 1, 1)))
        elif len(shape) == 1:
            results.append(unsqueeze(unsqueeze(t, 0), 2))
        else:
            results.append(unsqueeze(t, 2))
    if single and isinstance(args[0], Tensor):
        return results[0]
    return tuple(results)


def atleast_1d(*tensors):
    """Each tensor viewed with at least 1 dim (a tuple for several or a sequence).

    Example::

        >>> ember.atleast_1d(ember.tensor(1.)).shape
        ember.Size([1])
    """
    return _atleast(tensors, 1)


def atleast_2d(*tensors):
    """Each tensor viewed with at least 2 dims (new dims in front).

    Example::

        >>> ember.atleast_2d(ember.tensor([1, 2])).shape
        ember.Size([1, 2])
    """
    return _atleast(tensors, 2)


def atleast_3d(*tensors):
    """Each tensor viewed with at least 3 dims (``(n,)`` becomes ``(1, n, 1)``).

    Example::

        >>> ember.atleast_3d(ember.tensor([1, 2])).shape
        ember.Size([1, 2, 1])
    """
    return _atleast(tensors, 3)


# ================================================================ meshgrid


@signature("meshgrid(Tensor[] tensors, *, str? indexing=None) -> Tensor[]", one_list_too=True)
def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors (views; ``indexing='ij'`` by default, ``'xy'`` swaps
    the first two dims).

    Example::

        >>> x, y = ember.meshgrid(ember.tensor([1, 2]), ember.tensor([3, 4, 5]), indexing="ij")
        >>> x.shape
        ember.Size([2, 3])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t._device is not tensors[0]._device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    swap = indexing == "xy" and len(tensors) >= 2
    items = list(tensors)
    if swap:
        items[0], items[1] = items[1], items[0]
    shape = tuple(t._data.size for t in items)
    grids = []
    for i, t in enumerate(items):
        view_shape = [1] * len(items)
        view_shape[i] = -1
        grids.append(expand(reshape(t, view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)
