"""Shape operators: views that share memory (view, reshape, transpose, expand, narrow, split,
diagonal, as_strided, unfold, ...) and the ops that rearrange data into new memory (cat, stack,
flip, roll, repeat, tril, pad, ...).

A view op is declared with ``view=True``: the dispatcher then makes the result share its input's
base and version counter, so writes through either are seen by both and by autograd. View
kernels build their result with :func:`_strided` from explicit strides (in elements), computed
here exactly as torch computes them, so ``stride()``/``storage_offset()`` match torch's.

Derivatives of views that pick elements (slices, diagonals, windows, ``as_strided``) scatter the
gradient back with :data:`strided_scatter_op`, whose derivative is :data:`strided_gather_op` and
vice versa, so higher-order gradients work.
"""

from __future__ import annotations

import builtins
import itertools
import math
import warnings

import numpy as np

from .. import _dtype as dt
from .._device import META
from .._tensor import Tensor, _trace_state
from ..autograd.forward_ad import _state as _fw_state
from ..autograd.forward_ad import first_linear_jvp
from ..autograd.grad_mode import state as _grad_state
from ._operands import broadcast_shapes as _broadcast_shapes
from ._operands import varargs_or_keyword, wrap_dim
from ._registry import Op, check_inplace_autograd, defop, write_out
from ._signature import signature
from ._util import scatter_add

__all__ = ["reshape", "view_as", "reshape_as", "flatten", "unflatten", "ravel", "squeeze",
           "unsqueeze", "transpose", "swapaxes", "swapdims", "t", "permute", "movedim",
           "moveaxis", "adjoint", "expand", "expand_as", "broadcast_to", "broadcast_tensors",
           "broadcast_shapes", "narrow", "narrow_copy", "select", "unbind", "split",
           "split_with_sizes", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit", "diagonal",
           "as_strided",
           "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
           "column_stack", "flip", "fliplr", "flipud", "roll", "rot90", "repeat_interleave",
           "tile", "tril", "triu", "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d"]


# ================================================================ geometry helpers


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _array_strides(a):
    item = a.dtype.itemsize
    strides = tuple(s // item for s in a.strides)
    if a.size == 0 and not any(strides):  # as Tensor.stride(): torch's strides for fresh empties
        return _contiguous_strides(a.shape)
    return strides


def _strided(xp, a, shape, strides, offset=0, check_overlap=False):
    """A view of ``a``'s memory with ``shape``, ``strides`` and ``offset`` (in elements; the
    offset counts from ``a``'s first element and may be negative while it stays in storage).

    On NumPy the view is built over the storage root, so that ``.base`` chains back to it and
    ``storage_offset()`` keeps working; views in which several indices share one element are
    made read-only (when ``check_overlap``, for the ops that can create them; read-only inputs
    give read-only views), so that writing through them fails instead of racing.
    """
    item = a.dtype.itemsize
    byte_strides = tuple(s * item for s in strides)
    if xp is np:
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        start = offset * item
        if root is not a:
            start += a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        try:
            result = np.ndarray(shape, a.dtype, buffer=root, offset=start, strides=byte_strides)
        except (TypeError, ValueError):  # the root does not export a contiguous buffer
            flat = np.lib.stride_tricks.as_strided(a, (offset + 1,), (item,))[offset:]
            result = np.lib.stride_tricks.as_strided(flat, shape, byte_strides)
        if result.flags.writeable and (not a.flags.writeable or (
                check_overlap and _overlapping(shape, strides))):
            result.flags.writeable = False
        return result
    return xp.ndarray(shape, a.dtype, memptr=a.data + offset * item, strides=byte_strides)


def _overlapping(shape, strides):
    """Whether two indices of this geometry may address the same element."""
    extent = 0
    for size, stride in sorted(((s, st) for s, st in zip(shape, strides) if s > 1),
                               key=lambda p: p[1]):
        if stride <= extent:
            return True
        extent += (size - 1) * stride
    return False


def _dense(shape, strides):
    """Non-overlapping and without gaps (a permutation of a contiguous layout)."""
    expected = 1
    for size, stride in sorted(((s, st) for s, st in zip(shape, strides) if s != 1),
                               key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def _view_strides(oldshape, oldstride, newshape):
    """Strides that make ``newshape`` a view of (``oldshape``, ``oldstride``), or None."""
    if not oldshape:
        return (1,) * len(newshape)
    numel = math.prod(oldshape)
    if numel == 0:
        if tuple(oldshape) == tuple(newshape):
            return tuple(oldstride)
        return _contiguous_strides(newshape)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base = oldstride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1
                             and oldstride[tensor_d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base = oldstride[tensor_d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def _shape_meta(a, *, shape, **_):
    return shape, a.dtype


def _same_meta(a, **_):
    return a.shape, a.dtype


def _int(value, what="int"):
    if isinstance(value, Tensor):
        return builtins.int(value.item())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be int, not {type(value).__name__}")
    return builtins.int(value)


def infer_size(shape, numel):
    """Resolve one ``-1`` in ``shape`` against ``numel``, with torch's errors."""
    shape = tuple(_int(s, "size") for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or numel % known:
            if known == 0:
                raise RuntimeError(f"cannot reshape tensor of {numel} elements into shape "
                                   f"{list(shape)} because the unspecified dimension size -1 can "
                                   "be any value and is ambiguous")
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    if len(shape) == 1 and isinstance(shape[0], Tensor) and shape[0].ndim == 1:
        return tuple(shape[0].tolist())
    return shape


def _sizes_arg(sizes):
    if isinstance(sizes, Tensor):
        return tuple(sizes.tolist()) if sizes.ndim else (builtins.int(sizes.item()),)
    if isinstance(sizes, (int, np.integer)):
        return (builtins.int(sizes),)
    return tuple(_int(s, "size") for s in sizes)


# ================================================================ strided scatter / gather
#
# Gradients of views that pick (possibly repeated) elements. Both ops address a *contiguous*
# array of shape ``shape`` through (size, stride, offset); each is the other's derivative.


def _flat_indices(xp, size, stride, offset):
    index = xp.full((), offset, dtype=np.int64)
    for n, s in zip(size, stride):
        index = index[..., None] + xp.arange(n, dtype=np.int64) * s
    return index.reshape(-1)


_add_at = scatter_add  # ``out[index] += values``, accumulating repeated indices


@defop("strided_scatter", meta=lambda g, *, shape, **_: (shape, g.dtype), save_inputs=False,
       grad_name="AsStridedBackward0", kind="shape")
def strided_scatter_op(xp, g, *, shape, size, stride, offset):
    out = xp.zeros(shape, dtype=g.dtype)
    if not _overlapping(size, stride):
        _strided(xp, out, size, stride, offset)[...] = g
        return out
    flat = out.reshape(-1)
    _add_at(xp, flat, _flat_indices(xp, size, stride, offset), g.reshape(-1))
    return out


@defop("strided_gather", meta=lambda a, *, size, **_: (size, a.dtype), save_inputs=False,
       grad_name="AsStridedBackward1", kind="shape")
def strided_gather_op(xp, a, *, size, stride, offset):
    a = xp.ascontiguousarray(a)
    return _strided(xp, a, size, stride, offset).copy()


@strided_scatter_op.defderivative
def _strided_scatter_derivative(ctx, grad, *, shape, size, stride, offset):
    return (strided_gather_op(grad, size=size, stride=stride, offset=offset),)


@strided_gather_op.defderivative
def _strided_gather_derivative(ctx, grad, *, size, stride, offset):
    return (strided_scatter_op(grad, shape=ctx._input_meta[0][0], size=size, stride=stride,
                               offset=offset),)


# ================================================================ reshaping views


def _alias_op(name, grad_name):
    """A view with new shape and strides holding the same elements in the same order."""
    def kernel(xp, a, *, shape, strides):
        if a.size:  # fast path: NumPy's own view when it has torch's strides
            result = a.reshape(shape)
            item = a.dtype.itemsize
            if result.strides == tuple(s * item for s in strides) and (
                    xp.may_share_memory(result, a)):
                return result
        return _strided(xp, a, shape, strides)

    op = Op(name, kernel, meta=_shape_meta, save_inputs=False, view=True, grad_name=grad_name,
            kind="view")

    @op.defderivative
    def _(ctx, grad, *, shape, strides):
        return (reshape(grad, ctx._input_meta[0][0]),)

    @op.defjvp
    def _(p, t, y, /, *, shape, strides):
        # the same elements in the same order, so the tangent (whose strides may differ from
        # the primal's) is reshaped rather than viewed with the primal's strides
        return t[0].reshape(shape)
    return op


view_op = _alias_op("view", "ViewBackward0")
squeeze_op = _alias_op("squeeze", "SqueezeBackward1")
unsqueeze_op = _alias_op("unsqueeze", "UnsqueezeBackward0")
alias_op = _alias_op("alias", "AliasBackward0")

_VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one "
               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")


def _alias(input):
    return alias_op(input, shape=input._data.shape, strides=input.stride())


def _view(self, *shape, dtype=None, size=None):
    """A view with a new shape over the same memory, or a reinterpretation as ``dtype``.

    Refuses (RuntimeError, as torch) when the strides don't allow the shape without a copy.

    Example::

        >>> ember.arange(6).view(2, 3)
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    if dtype is not None and not shape:
        return _view_dtype(self, dt.to_dtype(dtype))
    shape = _shape_args(shape if size is None else varargs_or_keyword("view", shape, size))
    if len(shape) == 1 and isinstance(shape[0], dt.dtype):
        return _view_dtype(self, shape[0])
    shape = infer_size(shape, self._data.size)
    strides = _view_strides(self._data.shape, self.stride(), shape)
    if strides is None:
        raise RuntimeError(_VIEW_ERROR)
    return view_op(self, shape=shape, strides=strides)


@defop("view_dtype", meta=lambda a, *, dtype, shape: (shape, dtype), save_inputs=False,
       view=True, kind="view")
def view_dtype_op(xp, a, *, dtype, shape):
    if a.ndim == 0:
        return a.reshape(1).view(dtype.np).reshape(())
    return a.view(dtype.np)


view_dtype_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
view_dtype_op.opt_out("derivative", "reinterpreting the bits has no gradient")


def _view_dtype(self, dtype):
    old, new = self._data.dtype.itemsize, dtype.itemsize
    shape = self._data.shape
    if old != new:
        if self.ndim == 0:
            raise RuntimeError("self.dim() cannot be 0 to view " + _type_label(self) + " as " +
                               _type_label(dtype) + " (different element sizes)")
        if self.stride(-1) != 1:
            raise RuntimeError("self.stride(-1) must be 1 to view " + _type_label(self) +
                               " as " + _type_label(dtype) + " (different element sizes), but "
                               f"got {self.stride(-1)}")
        if old < new:
            ratio = new // old
            if shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view "
                                   f"{_type_label(self)} as {_type_label(dtype)} (different "
                                   f"element sizes), but got {shape[-1]}")
            if self.storage_offset() % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to view "
                                   f"{_type_label(self)} as {_type_label(dtype)} (different "
                                   f"element sizes), but got {self.storage_offset()}")
            for i, s in enumerate(self.stride()[:-1]):
                if s % ratio:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} to view "
                                       f"{_type_label(self)} as {_type_label(dtype)} (different "
                                       f"element sizes), but got {s}")
            shape = shape[:-1] + (shape[-1] // ratio,)
        else:
            shape = shape[:-1] + (shape[-1] * (old // new),)
    return view_dtype_op(self, dtype=dtype, shape=shape)


def _type_label(x):
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
             "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
             "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
    d = x.dtype if isinstance(x, Tensor) else x
    return names.get(d.name, d.name)


def reshape(input, *shapes, shape=None):
    """The same data with a new shape: a view when the strides allow, else a copy.

    Example::

        >>> ember.reshape(ember.arange(4), (2, -1))
        tensor([[0, 1],
                [2, 3]])
    """
    shape = _shape_args(shapes if shape is None else
                        varargs_or_keyword("reshape", shapes, shape, "shape"))
    shape = infer_size(shape, input._data.size)
    strides = _view_strides(input._data.shape, input.stride(), shape)
    if strides is None:
        input = input.contiguous()
        strides = _contiguous_strides(shape)
    return view_op(input, shape=shape, strides=strides)


def view_as(input, other):
    """``input.view(other.size())``.

    Example::

        >>> ember.arange(4).view_as(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return _view(input, other._data.shape)


def reshape_as(input, other):
    """``input.reshape(other.size())``.

    Example::

        >>> ember.arange(4).reshape_as(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return reshape(input, other._data.shape)


def ravel(input):
    """The elements as a 1-D tensor (a view when possible).

    Example::

        >>> ember.ravel(ember.zeros(2, 3)).shape
        ember.Size([6])
    """
    return reshape(input, (-1,))


@signature('flatten(Tensor input, int start_dim=0, int end_dim=-1) -> Tensor')
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one (a view when possible).

    Example::

        >>> ember.zeros(2, 3, 4).flatten(1).shape
        ember.Size([2, 12])
    """
    ndim = input._data.ndim
    if ndim == 0:
        return reshape(input, (1,))
    start, end = wrap_dim(start_dim, ndim), wrap_dim(end_dim, ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input._data.shape
    new = shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:]
    return reshape(input, new)


def unflatten(input, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one of them may be -1).

    Example::

        >>> ember.zeros(2, 6).unflatten(1, (2, 3)).shape
        ember.Size([2, 2, 3])
    """
    ndim = input._data.ndim
    dim = wrap_dim(dim, ndim)
    sizes = _sizes_arg(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    size = input._data.shape[dim] if ndim else 1
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or size % known:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to "
                               f"the size of dim {dim} ({size}) in the input tensor")
        sizes = tuple(size // known if s == -1 else s for s in sizes)
    elif known != size:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({size}) in the input tensor")
    shape = input._data.shape
    return _view(input, shape[:dim] + sizes + shape[dim + 1:])


def squeeze(input, dim=None):
    """A view without size-1 dimensions (all of them, or only those in ``dim``).

    Example::

        >>> ember.zeros(1, 3, 1).squeeze().shape
        ember.Size([3])
    """
    shape = input._data.shape
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {wrap_dim(_int(d, "dim"), len(shape)) for d in dims}
        dims = {d for d in dims if len(shape) and shape[d] == 1}
    strides = input.stride()
    keep = [i for i in range(len(shape)) if i not in dims]
    return squeeze_op(input, shape=tuple(shape[i] for i in keep),
                      strides=tuple(strides[i] for i in keep))


@signature('unsqueeze(Tensor input, int dim) -> Tensor')
def unsqueeze(input, dim):
    """A view with a new size-1 dimension at ``dim``.

    Example::

        >>> ember.zeros(3).unsqueeze(0).shape
        ember.Size([1, 3])
    """
    shape = input._data.shape
    dim = wrap_dim(_int(dim, "dim"), len(shape) + 1)
    strides = input.stride()
    new_stride = 1 if dim >= len(shape) else shape[dim] * strides[dim]
    return unsqueeze_op(input, shape=shape[:dim] + (1,) + shape[dim:],
                        strides=strides[:dim] + (new_stride,) + strides[dim:])


# ================================================================ transpose / permute


@defop("permute", meta=lambda a, *, dims: (tuple(a.shape[d] for d in dims), a.dtype),
       save_inputs=False, view=True, kind="view")
def permute_op(xp, a, *, dims):
    if a.size:
        return xp.transpose(a, dims)
    strides = _array_strides(a)  # keep torch's strides on empty tensors too
    return _strided(xp, a, tuple(a.shape[d] for d in dims), tuple(strides[d] for d in dims))


@permute_op.defderivative
def _permute_derivative(ctx, grad, *, dims):
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return (permute_op(grad, dims=tuple(inverse)),)


permute_op.defjvp(first_linear_jvp(permute_op))


def permute(input, *dim_args, dims=None):
    """A view with the dimensions reordered.

    Example::

        >>> ember.zeros(2, 3, 4).permute(2, 0, 1).shape
        ember.Size([4, 2, 3])
    """
    dims = _shape_args(dim_args if dims is None else
                      varargs_or_keyword("permute", dim_args, dims, "dims"))
    ndim = input._data.ndim
    if len(dims) != ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(_int(d, "dim"), ndim) for d in dims)
    if len(set(dims)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return permute_op(input, dims=dims)


@signature('transpose(Tensor input, int dim0, int dim1) -> Tensor')
def transpose(input, dim0, dim1):
    """A view with ``dim0`` and ``dim1`` swapped.

    Example::

        >>> ember.zeros(2, 3).transpose(0, 1).shape
        ember.Size([3, 2])
    """
    ndim = input._data.ndim
    if ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return _alias(input)
    dim0, dim1 = wrap_dim(_int(dim0, "dim"), ndim), wrap_dim(_int(dim1, "dim"), ndim)
    dims = list(range(ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return permute_op(input, dims=tuple(dims))


swapdims = transpose


def swapaxes(input, axis0, axis1):
    """:func:`transpose` under NumPy's names (``axis0``, ``axis1``), as torch's.

    Example::

        >>> ember.swapaxes(ember.zeros(2, 3), axis0=0, axis1=1).shape
        ember.Size([3, 2])
    """
    return transpose(input, axis0, axis1)


def t(input):
    """Transpose a tensor of at most 2 dims (0-D and 1-D tensors come back as they are).

    Example::

        >>> ember.tensor([[1, 2]]).t()
        tensor([[1],
                [2]])
    """
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return transpose(input, 0, 1) if input._data.ndim == 2 else _alias(input)


def adjoint(input):
    """The conjugate transpose of the last two dims (a view for real tensors).

    Example::

        >>> ember.adjoint(ember.zeros(2, 3)).shape
        ember.Size([3, 2])
    """
    if input._data.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input._data.ndim}-D tensor.")
    result = transpose(input, -2, -1)
    return result.conj() if input.dtype.is_complex else result


def _T(self):
    ndim = self._data.ndim
    if ndim != 2:
        if ndim > 2:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                          "shape is deprecated and it will throw an error in a future release. "
                          "Consider `x.mT` to transpose batches of matrices or `x.permute(*torch."
                          "arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                          UserWarning, stacklevel=2)
        if ndim < 2:
            return _alias(self)
    return permute_op(self, dims=tuple(reversed(range(ndim))))


def _mT(self):
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self._data.ndim}-D tensor.")
    return transpose(self, -2, -1)


def _H(self):
    if self._data.ndim > 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self._data.ndim}-D tensor.")
    if self._data.ndim < 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self._data.ndim}-D tensor.")
    result = transpose(self, 0, 1)
    return result.conj() if self.dtype.is_complex else result


def _mH(self):
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self._data.ndim}-D tensor.")
    result = transpose(self, -2, -1)
    return result.conj() if self.dtype.is_complex else result


def _dim_list(dims, ndim, name):
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    return [wrap_dim(_int(d, "dim"), ndim) for d in dims]


def movedim(input, source, destination):
    """Move dims ``source`` to positions ``destination`` (a view); the others keep their order.

    Example::

        >>> ember.zeros(2, 3, 4).movedim(0, -1).shape
        ember.Size([3, 4, 2])
    """
    ndim = input._data.ndim
    raw_src = [source] if isinstance(source, (int, np.integer)) else list(source)
    raw_dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    if len(raw_src) != len(raw_dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({raw_src} dims)"
                           f" should contain the same number of dims as destination ({raw_dst} "
                           "dims)")
    src = _dim_list(raw_src, ndim, "source")
    dst = _dim_list(raw_dst, ndim, "destination")
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({raw_src})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({raw_dst})")
    if ndim == 0:
        return _alias(input)
    order = [None] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(ndim) if i not in set(src))
    order = [next(rest) if o is None else o for o in order]
    return permute_op(input, dims=tuple(order))


moveaxis = movedim


# ================================================================ expand / broadcast


@defop("expand", meta=_shape_meta, save_inputs=False, view=True, kind="view")
def expand_op(xp, a, *, shape, strides):
    return _strided(xp, a, shape, strides, check_overlap=True)


@expand_op.defderivative
def _expand_derivative(ctx, grad, *, shape, strides):
    return (grad.sum_to_size(ctx._input_meta[0][0]),)


def expand(input, *sizes, size=None):
    """A view that repeats size-1 dims (``-1`` keeps a size) without copying.

    Example::

        >>> ember.tensor([[1], [2]]).expand(2, 3)
        tensor([[1, 1, 1],
                [2, 2, 2]])
    """
    if size is not None:
        sizes = varargs_or_keyword("expand", sizes, size)
    sizes = tuple(_int(s, "size") for s in _shape_args(sizes))
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand({input.type()}{{{list(shape)}}}, size={list(sizes)}): the "
                           f"number of sizes provided ({len(sizes)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    old_strides = input.stride()
    lead = len(sizes) - len(shape)
    result, strides = [0] * len(sizes), [0] * len(sizes)
    for i in range(len(sizes) - 1, -1, -1):
        size = sizes[i]
        d = i - lead
        if d >= 0:
            current, stride = shape[d], old_strides[d]
            if size == -1:
                size = current
            elif current != size:
                if current != 1:
                    raise RuntimeError(
                        f"The expanded size of the tensor ({size}) must match the existing size "
                        f"({current}) at non-singleton dimension {i}.  Target sizes: "
                        f"{list(sizes)}.  Tensor sizes: {list(shape)}")
                stride = 0
        else:
            if size < 0:
                raise RuntimeError(f"The expanded size of the tensor ({size}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            stride = result[i + 1] * strides[i + 1] if i + 1 < len(sizes) else 1
            if size != 1:
                stride = 0
        result[i], strides[i] = size, stride
    result = tuple(result)
    if result == shape:
        return _alias(input)
    return expand_op(input, shape=result, strides=tuple(strides))


def expand_as(input, other):
    """``input.expand(other.size())``.

    Example::

        >>> ember.tensor([1, 2]).expand_as(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return expand(input, other._data.shape)


def broadcast_to(input, size):
    """``input.expand(size)``.

    Example::

        >>> ember.broadcast_to(ember.tensor([1, 2]), (2, 2))
        tensor([[1, 2],
                [1, 2]])
    """
    return expand(input, tuple(size))


def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common broadcast shape.

    Example::

        >>> a, b = ember.broadcast_tensors(ember.zeros(2, 1), ember.zeros(3))
        >>> a.shape, b.shape
        (ember.Size([2, 3]), ember.Size([2, 3]))
    """
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    shape = _broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


# ================================================================ slicing views


def _key_geometry(shape, strides, key):
    """Shape, strides and offset of ``a[key]`` (``key``: per leading dim an int or a
    normalised ``(start, stop, step)``), computed as torch does, even for empty slices."""
    size, stride, offset = [], [], 0
    for d, k in enumerate(key):
        if isinstance(k, tuple):
            start, stop, step = k
            if start is None:
                size.append(shape[d])
                stride.append(strides[d])
                continue
            size.append(builtins.max(0, -(-(stop - start) // step)))
            stride.append(strides[d] * step)
            offset += start * strides[d]
        else:
            offset += k * strides[d]
    rest = len(key)
    return tuple(size) + tuple(shape[rest:]), tuple(stride) + tuple(strides[rest:]), offset


def _key_kernel(xp, a, *, key):
    result = a[tuple(slice(*k) if isinstance(k, tuple) else k for k in key) + (Ellipsis,)]
    if result.size:  # NumPy's slicing has torch's strides and offset when not empty
        return result
    size, stride, offset = _key_geometry(a.shape, _array_strides(a), key)
    return _strided(xp, a, size, stride, offset)


def _key_meta(a, *, key):
    return _key_geometry(a.shape, _contiguous_strides(a.shape), key)[0], a.dtype


slice_op = Op("slice", _key_kernel, meta=_key_meta, save_inputs=False, view=True, kind="view")
select_op = Op("select", _key_kernel, meta=_key_meta, save_inputs=False, view=True,
               grad_name="SelectBackward0", kind="view")


@defop("slice_backward", meta=lambda g, *, shape, key: (shape, g.dtype), save_inputs=False,
       kind="shape")
def slice_backward_op(xp, g, *, shape, key):
    out = xp.zeros(shape, dtype=g.dtype)
    size, stride, offset = _key_geometry(shape, _contiguous_strides(shape), key)
    _strided(xp, out, size, stride, offset)[...] = g
    return out


def _key_derivative(ctx, grad, *, key):
    return (slice_backward_op(grad, shape=ctx._input_meta[0][0], key=key),)


slice_op.defderivative(_key_derivative)
select_op.defderivative(_key_derivative)


@slice_backward_op.defderivative
def _slice_backward_derivative(ctx, grad, *, shape, key):
    return (slice_op(grad, key=key),)


def _slice(input, dim, start, stop, step=1):
    key = ((None, None, None),) * dim + ((start, stop, step),)
    return slice_op(input, key=key)


def narrow(input, dim, start, length):
    """A view of ``length`` elements of dim ``dim`` from ``start`` (which may be negative).

    Example::

        >>> ember.arange(6).narrow(0, 2, 3)
        tensor([2, 3, 4])
    """
    if input._data.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(_int(dim, "dim"), input._data.ndim)
    start, length = _int(start, "start"), _int(length, "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    size = input._data.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but "
                         f"got {start})")
    if start < 0:
        start += size
    if start > size - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return _slice(input, dim, start, start + length)


def narrow_copy(input, dim, start, length, *, out=None):
    """A contiguous copy of ``length`` elements of dim ``dim`` from ``start`` (as
    :func:`narrow`, but in new memory).

    Example::

        >>> ember.arange(6).view(2, 3).narrow_copy(1, 1, 2)
        tensor([[1, 2],
                [4, 5]])
    """
    from .creation import clone_op

    if isinstance(dim, int) and 0 < input._data.ndim <= dim:
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.")
    return write_out(clone_op(narrow(input, dim, start, length), memory_format="contiguous"),
                     out, "narrow_copy")


@signature('select(Tensor input, int dim, SymInt index) -> Tensor')
def select(input, dim, index):
    """A view of the slice at ``index`` of dim ``dim``, without that dim.

    Example::

        >>> ember.arange(6).view(2, 3).select(1, -1)
        tensor([2, 5])
    """
    ndim = input._data.ndim
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(_int(dim, "dim"), ndim)
    index = _int(index, "index")
    size = input._data.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {dim}")
    if index < 0:
        index += size
    return select_op(input, key=((None, None, None),) * dim + (index,))


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


@split_op.defderivative
def _split_derivative(ctx, *grads, dim, sizes):
    return (cat(list(grads), dim),)


def _unbind_meta(a, *, dim):
    return ((a.shape[:dim] + a.shape[dim + 1:], a.dtype),) * a.shape[dim]


@defop("unbind", meta=_unbind_meta, save_inputs=False, view=True, multi_output=True, kind="view")
def unbind_op(xp, a, *, dim):
    lead = ((None, None, None),) * dim
    return tuple(_key_kernel(xp, a, key=lead + (i,)) for i in range(a.shape[dim]))


@unbind_op.defderivative
def _unbind_derivative(ctx, *grads, dim):
    return (stack(list(grads), dim),)


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


def hsplit(input, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 for 1-D tensors), sections must divide evenly.

    Example::

        >>> [p.shape for p in ember.zeros(2, 4).hsplit(2)]
        [ember.Size([2, 2]), ember.Size([2, 2])]
    """
    dim = 1 if input._data.ndim > 1 else 0
    return _directional_split(input, indices_or_sections, dim, "hsplit", 1)


def vsplit(input, indices_or_sections):
    """``tensor_split`` along dim 0 of a tensor with at least 2 dims.

    Example::

        >>> [p.shape for p in ember.zeros(4, 2).vsplit(2)]
        [ember.Size([2, 2]), ember.Size([2, 2])]
    """
    return _directional_split(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    """``tensor_split`` along dim 2 of a tensor with at least 3 dims.

    Example::

        >>> [p.shape for p in ember.zeros(1, 2, 4).dsplit(2)]
        [ember.Size([1, 2, 2]), ember.Size([1, 2, 2])]
    """
    return _directional_split(input, indices_or_sections, 2, "dsplit", 3)


# ================================================================ diagonal / unfold / as_strided


def _diagonal_geometry(shape, strides, offset, dim1, dim2):
    n1, n2 = shape[dim1], shape[dim2]
    if offset >= 0:
        length = builtins.max(builtins.min(n1, n2 - offset), 0)
        start = offset * strides[dim2] if length else 0
    else:
        length = builtins.max(builtins.min(n1 + offset, n2), 0)
        start = -offset * strides[dim1] if length else 0
    keep = [i for i in range(len(shape)) if i not in (dim1, dim2)]
    size = tuple(shape[i] for i in keep) + (length,)
    stride = tuple(strides[i] for i in keep) + (strides[dim1] + strides[dim2],)
    return size, stride, start


@defop("diagonal", meta=lambda a, *, offset, dim1, dim2: (
    _diagonal_geometry(a.shape, _contiguous_strides(a.shape), offset, dim1, dim2)[0], a.dtype),
    save_inputs=False, view=True, kind="view")
def diagonal_op(xp, a, *, offset, dim1, dim2):
    size, stride, start = _diagonal_geometry(a.shape, _array_strides(a), offset, dim1, dim2)
    return _strided(xp, a, size, stride, start)


@diagonal_op.defderivative
def _diagonal_derivative(ctx, grad, *, offset, dim1, dim2):
    shape = ctx._input_meta[0][0]
    size, stride, start = _diagonal_geometry(shape, _contiguous_strides(shape), offset, dim1,
                                             dim2)
    return (strided_scatter_op(grad, shape=shape, size=size, stride=stride, offset=start),)


@signature('diagonal(Tensor input, int offset=0, int dim1=0, int dim2=1) -> Tensor')
def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal of dims ``dim1``/``dim2`` (above it for ``offset > 0``), as the
    last dim.

    Example::

        >>> ember.arange(9).view(3, 3).diagonal(1)
        tensor([1, 5])
    """
    ndim = input._data.ndim
    if ndim < 2:
        wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    d1, d2 = wrap_dim(_int(dim1, "dim1"), ndim), wrap_dim(_int(dim2, "dim2"), ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diagonal_op(input, offset=_int(offset, "offset"), dim1=d1, dim2=d2)


def _unfold_geometry(shape, strides, dim, size, step):
    if not shape:
        return (size,), (1,)
    new_shape = list(shape) + [size]
    new_strides = list(strides) + [strides[dim]]
    new_shape[dim] = (shape[dim] - size) // step + 1
    new_strides[dim] = step * strides[dim]
    return tuple(new_shape), tuple(new_strides)


@defop("unfold", meta=lambda a, *, dimension, size, step: (
    _unfold_geometry(a.shape, _contiguous_strides(a.shape), dimension, size, step)[0], a.dtype),
    save_inputs=False, view=True, kind="view")
def unfold_op(xp, a, *, dimension, size, step):
    shape, strides = _unfold_geometry(a.shape, _array_strides(a), dimension, size, step)
    return _strided(xp, a, shape, strides, check_overlap=True)


unfold_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@unfold_op.defderivative
def _unfold_derivative(ctx, grad, *, dimension, size, step):
    shape = ctx._input_meta[0][0]
    out_shape, strides = _unfold_geometry(shape, _contiguous_strides(shape), dimension, size,
                                          step)
    return (strided_scatter_op(grad, shape=shape, size=out_shape, stride=strides, offset=0),)


def _unfold(self, dimension, size, step):
    """A view of all windows of ``size`` elements along ``dimension``, ``step`` apart, as a new
    last dim.

    Example::

        >>> ember.arange(5).unfold(0, 2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    ndim = self._data.ndim
    dimension = wrap_dim(_int(dimension, "dimension"), ndim)
    size, step = _int(size, "size"), _int(step, "step")
    max_size = self._data.shape[dimension] if ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {dimension} is {max_size} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return unfold_op(self, dimension=dimension, size=size, step=step)


@defop("as_strided", meta=lambda a, *, size, **_: (size, a.dtype), save_inputs=False,
       view=True, kind="view")
def as_strided_op(xp, a, *, size, stride, offset, in_geometry):
    return _strided(xp, a, size, stride, offset - in_geometry[2], check_overlap=True)


as_strided_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@as_strided_op.defderivative
def _as_strided_derivative(ctx, grad, *, size, stride, offset, in_geometry):
    in_shape, in_stride, in_offset = in_geometry
    lo = builtins.min(offset, in_offset)
    extent = builtins.max(_extent(size, stride, offset), _extent(in_shape, in_stride, in_offset))
    length = builtins.max(extent - lo, 0)
    storage = strided_scatter_op(grad, shape=(length,), size=size, stride=stride,
                                 offset=offset - lo)
    if _overlapping(in_shape, in_stride):
        from .creation import ones

        count = strided_scatter_op(ones(in_shape, dtype=grad.dtype, device=grad.device),
                                   shape=(length,), size=in_shape, stride=in_stride,
                                   offset=in_offset - lo)
        storage = storage / (count + (count == 0))
    return (strided_gather_op(storage, size=in_shape, stride=in_stride,
                              offset=in_offset - lo),)


def _extent(shape, strides, offset):
    if any(s == 0 for s in shape):
        return offset
    return offset + builtins.sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def as_strided(input, size, stride, storage_offset=None):
    """A view with any ``size``, ``stride`` and ``storage_offset`` (counted from the start of
    the tensor's storage, as torch does; default: the tensor's own offset).

    Example::

        >>> ember.arange(6).as_strided((2, 2), (1, 2))
        tensor([[0, 2],
                [1, 3]])
    """
    size = tuple(_int(s, "size") for s in size)
    stride = tuple(_int(s, "stride") for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{list(size)}")
    own_offset = input.storage_offset()
    offset = own_offset if storage_offset is None else _int(storage_offset, "storage_offset")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if input._device is not META:
        item = input._data.dtype.itemsize
        available = input.untyped_storage().nbytes()
        needed = _extent(size, stride, offset) * item if all(size) else 0
        if needed > available:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                               f"offset {offset}, and itemsize {item} requiring a storage size "
                               f"of {needed} are out of bounds for storage of size {available}")
    geometry = (input._data.shape, input.stride(), own_offset)
    return as_strided_op(input, size=size, stride=stride, offset=offset, in_geometry=geometry)


# ================================================================ cat / stack


def _cat_meta(*arrays, dim):
    shape = list(arrays[0].shape)
    shape[dim] = builtins.sum(a.shape[dim] for a in arrays)
    return tuple(shape), arrays[0].dtype


@defop("cat", meta=_cat_meta, save_inputs=False, kind="shape")
def cat_op(xp, *arrays, dim):
    return xp.concatenate(arrays, axis=dim)


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


# ================================================================ flip / roll / rot90


@defop("flip", meta=_same_meta, save_inputs=False, kind="shape")
def flip_op(xp, a, *, dims):
    flipped = xp.flip(a, dims) if dims else a
    dense = _dense(a.shape, _array_strides(a)) if a.size else True
    return flipped.copy(order="K" if dense else "C")


@flip_op.defderivative
def _flip_derivative(ctx, grad, *, dims):
    return (flip_op(grad, dims=dims),)


flip_op.defjvp(first_linear_jvp(flip_op))


def _unique_dims(dims, ndim, name):
    dims = _dim_list(dims, ndim, name)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return tuple(dims)


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


def fliplr(input):
    """Reverse dim 1 (needs at least 2 dims).

    Example::

        >>> ember.fliplr(ember.tensor([[1, 2]]))
        tensor([[2, 1]])
    """
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip_op(input, dims=(1,))


def flipud(input):
    """Reverse dim 0 (needs at least 1 dim).

    Example::

        >>> ember.flipud(ember.tensor([1, 2]))
        tensor([2, 1])
    """
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip_op(input, dims=(0,))


@defop("roll", meta=_same_meta, save_inputs=False, kind="shape")
def roll_op(xp, a, *, shifts, dims):
    return xp.ascontiguousarray(xp.roll(a, shifts, dims))


roll_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@roll_op.defderivative
def _roll_derivative(ctx, grad, *, shifts, dims):
    return (roll_op(grad, shifts=tuple(-s for s in shifts), dims=dims),)


roll_op.defjvp(first_linear_jvp(roll_op))


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
    dims = tuple(_dim_list(dims, input._data.ndim, "dims"))
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    return roll_op(input, shifts=shifts, dims=dims)


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
    from .creation import clone_op

    return clone_op(input, memory_format="contiguous")


# ================================================================ repeat / tile / repeat_interleave


@defop("repeat", meta=lambda a, *, repeats: (
    tuple(r * s for r, s in zip(repeats, (1,) * (len(repeats) - a.ndim) + tuple(a.shape))),
    a.dtype), save_inputs=False, kind="shape")
def repeat_op(xp, a, *, repeats):
    a = a.reshape((1,) * (len(repeats) - a.ndim) + a.shape)
    return xp.tile(a, repeats)


repeat_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


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


def _repeat_interleave_meta(a, *, repeats, dim):
    shape = list(a.shape)
    shape[dim] = builtins.sum(repeats) if len(repeats) != 1 else shape[dim] * repeats[0]
    return tuple(shape), a.dtype


@defop("repeat_interleave", meta=_repeat_interleave_meta, save_inputs=False, kind="shape")
def repeat_interleave_op(xp, a, *, repeats, dim):
    count = repeats[0] if len(repeats) == 1 else list(repeats)
    return xp.repeat(a, count, axis=dim)


repeat_interleave_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@defop("segment_sum", meta=lambda g, *, repeats, dim, size: (
    g.shape[:dim] + (size,) + g.shape[dim + 1:], g.dtype), save_inputs=False,
    grad_name="RepeatInterleaveBackward0", kind="shape")
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


segment_sum_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@repeat_interleave_op.defderivative
def _repeat_interleave_derivative(ctx, grad, *, repeats, dim):
    size = ctx._input_meta[0][0][dim]
    return (segment_sum_op(grad, repeats=repeats, dim=dim, size=size),)


repeat_interleave_op.defjvp(first_linear_jvp(repeat_interleave_op))


@segment_sum_op.defderivative
def _segment_sum_derivative(ctx, grad, *, repeats, dim, size):
    return (repeat_interleave_op(grad, repeats=repeats, dim=dim),)


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
        from .creation import arange

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
tril_op.defderivative(lambda ctx, grad, *, diagonal: (tril_op(grad, diagonal=diagonal),))
triu_op.defderivative(lambda ctx, grad, *, diagonal: (triu_op(grad, diagonal=diagonal),))
tril_op.defjvp(first_linear_jvp(tril_op))
triu_op.defjvp(first_linear_jvp(triu_op))


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


# ================================================================ meshgrid


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


# ================================================================ pad (ember.nn.functional.pad)


def _pad_constant_meta(a, *, pad, value):
    return _padded_shape(a.shape, pad), a.dtype


def _padded_shape(shape, pad):
    shape = list(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        shape[d] += pad[2 * i] + pad[2 * i + 1]
    return tuple(shape)


@defop("constant_pad_nd", meta=_pad_constant_meta, save_inputs=False, kind="shape")
def pad_constant_op(xp, a, *, pad, value):
    out = xp.full(_padded_shape(a.shape, pad), value, dtype=a.dtype)
    src, dst = [slice(None)] * a.ndim, [slice(None)] * a.ndim
    for i in range(len(pad) // 2):
        d = a.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        lo, hi = builtins.max(-left, 0), a.shape[d] - builtins.max(-right, 0)
        if hi <= lo:
            return out
        src[d] = slice(lo, hi)
        start = builtins.max(left, 0)
        dst[d] = slice(start, start + hi - lo)
    out[tuple(dst)] = a[tuple(src)]
    return out


pad_constant_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@pad_constant_op.defderivative
def _pad_constant_derivative(ctx, grad, *, pad, value):
    return (pad_constant_op(grad, pad=tuple(-p for p in pad), value=0),)


@pad_constant_op.defjvp
def _pad_constant_jvp(p, t, y, /, **params):
    """Linear in the input once the fill value is 0."""
    if "value" in params:
        params = dict(params, value=0)
    return pad_constant_op(t[0], *p[1:], **params)


def _pad_gather_meta(a, *, indices):
    shape = list(a.shape)
    for d, index in indices:
        shape[d] = len(index)
    return tuple(shape), a.dtype


@defop("pad_gather", meta=_pad_gather_meta, save_inputs=False, grad_name="PadBackward0",
       kind="shape")
def pad_gather_op(xp, a, *, indices):
    for d, index in indices:
        a = xp.take(a, xp.asarray(index, dtype=np.int64), axis=d)
    return a


pad_gather_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@defop("pad_scatter", meta=lambda g, *, shape, indices: (shape, g.dtype), save_inputs=False,
       grad_name="PadBackwardBackward0", kind="shape")
def pad_scatter_op(xp, g, *, shape, indices):
    for d, index in reversed(indices):
        moved = xp.moveaxis(g, d, 0)
        out = xp.zeros((shape[d],) + moved.shape[1:], dtype=g.dtype)
        _add_at(xp, out, xp.asarray(index, dtype=np.int64), moved)
        g = xp.moveaxis(out, 0, d)
    return xp.ascontiguousarray(g)


pad_scatter_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@pad_gather_op.defderivative
def _pad_gather_derivative(ctx, grad, *, indices):
    return (pad_scatter_op(grad, shape=ctx._input_meta[0][0], indices=indices),)


pad_gather_op.defjvp(first_linear_jvp(pad_gather_op))


@pad_scatter_op.defderivative
def _pad_scatter_derivative(ctx, grad, *, shape, indices):
    return (pad_gather_op(grad, indices=indices),)


def _pad_index(mode, n, left, right):
    if mode == "circular":
        crop = builtins.max(-left, 0)
        kept = n - crop - builtins.max(-right, 0)
        index = np.arange(-builtins.max(left, 0), kept + builtins.max(right, 0)) % kept + crop
        return tuple(index.tolist())
    index = np.arange(-left, n + right)
    if mode == "reflect":
        index = np.abs(index)
        index = np.where(index >= n, 2 * (n - 1) - index, index)
    else:
        index = np.clip(index, 0, n - 1)
    return tuple(index.tolist())


_PAD_FUNCTIONS = {"reflect": "reflection_pad", "replicate": "replication_pad",
                  "circular": "circular_pad"}


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, ...)``.

    ``mode`` is ``'constant'`` (fill with ``value``, default 0; negative pads crop),
    ``'reflect'`` (mirror without the edge), ``'replicate'`` (repeat the edge) or
    ``'circular'`` (wrap around). The non-constant modes pad 1 to 3 dims of a tensor with one
    or two more dims (batch and channel), as torch.

    Example::

        >>> pad(ember.tensor([[1., 2.]]), (1, 1), mode="replicate")
        tensor([[1., 1., 2., 2.]])
    """
    pad = tuple(_int(p, "pad") for p in pad)
    ndim = input._data.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{ndim}")
    if mode == "constant":
        shape = input._data.shape
        for i in range(len(pad) // 2):
            d = ndim - 1 - i
            new = shape[d] + pad[2 * i] + pad[2 * i + 1]
            if new < 0:
                raise RuntimeError(f"The input size {shape[d]}, plus negative padding "
                                   f"{pad[2 * i]} and {pad[2 * i + 1]} resulted in a negative "
                                   f"output size, which is invalid. Check dimension {d} of your "
                                   "input.")
        fill = 0 if value is None else value
        if input.dtype.is_complex is False and isinstance(fill, complex):
            raise RuntimeError("value cannot be converted to type without overflow")
        return pad_constant_op(input, pad=pad, value=fill)
    if mode not in _PAD_FUNCTIONS:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    k = len(pad) // 2
    if k not in (1, 2, 3) or ndim not in (k + 1, k + 2):
        raise NotImplementedError("Only 2D, 3D, 4D, 5D padding with non-constant padding are "
                                  "supported for now")
    shape = input._data.shape
    indices = []
    for i in range(k):
        d = ndim - 1 - i
        left, right, n = pad[2 * i], pad[2 * i + 1], shape[d]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({left}, {right}) at dimension"
                               f" {d} of input {list(shape)}")
        if mode == "circular" and (left > n or right > n or n - builtins.max(-left, 0)
                                   - builtins.max(-right, 0) <= 0):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n == 0 or n + left + right <= 0:
            raise RuntimeError(f"{_PAD_FUNCTIONS[mode]}{k}d(): input tensor of size "
                               f"{list(shape)} or padding ({left}, {right}) gives an empty "
                               "output")
        indices.append((d, _pad_index(mode, n, left, right)))
    return pad_gather_op(input, indices=tuple(indices))


# ================================================================ Tensor methods


for _name in ("reshape", "view_as", "reshape_as", "flatten", "unflatten", "ravel", "squeeze",
              "unsqueeze", "transpose", "swapaxes", "swapdims", "t", "permute", "movedim",
              "moveaxis", "adjoint", "expand", "expand_as", "broadcast_to", "narrow", "select",
              "unbind", "split", "split_with_sizes", "chunk", "tensor_split", "hsplit", "vsplit",
              "dsplit", "diagonal", "as_strided", "flip", "fliplr", "flipud", "roll", "rot90",
              "repeat_interleave", "tile", "tril", "triu"):
    setattr(Tensor, _name, globals()[_name])
Tensor.narrow_copy = narrow_copy


def _split_method(self, split_size, dim=0):
    """``ember.split(self, split_size, dim)``: the method names its argument ``split_size``
    (a size or a list of sizes), as torch's.

    Example::

        >>> [p.tolist() for p in ember.arange(4).split(split_size=3)]
        [[0, 1, 2], [3]]
    """
    return split(self, split_size, dim)


Tensor.split = _split_method


def _inplace_view(view_fn):
    """``x.t_()``-style methods: ``x`` itself takes the geometry of ``view_fn(x, ...)`` (same
    memory, new shape/strides, version bumped); autograd records the view's node on ``x``."""
    def method(self, *args, **kwargs):
        check_inplace_autograd(self)
        view = view_fn(self, *args, **kwargs)
        self._data = view._data
        node = view.grad_fn  # read while the view is current (the bump below would age it)
        self._vc[0] += 1
        if node is not None:
            self.grad_fn, self._output_nr = node, view._output_nr
        fw = getattr(view, "_fw_grad", None)
        if fw is not None:
            self._fw_grad = fw
        return self
    method.__name__ = view_fn.__name__ + "_"
    method.__doc__ = (f"In-place version of :meth:`Tensor.{view_fn.__name__}`: this tensor's "
                      f"shape and strides change, its memory stays.\n\n    Example::\n\n"
                      f"        >>> x = ember.zeros(2, 3); x.t_().shape\n"
                      f"        ember.Size([3, 2])\n")
    return method


Tensor.squeeze_ = _inplace_view(squeeze)
Tensor.unsqueeze_ = _inplace_view(unsqueeze)
Tensor.transpose_ = _inplace_view(transpose)
Tensor.swapdims_ = _inplace_view(transpose)
Tensor.swapaxes_ = _inplace_view(swapaxes)
Tensor.t_ = _inplace_view(t)
Tensor.as_strided_ = _inplace_view(as_strided)
Tensor.view = _view
Tensor.unfold = _unfold
Tensor.repeat = _repeat
Tensor.T = property(_T)
Tensor.mT = property(_mT)
Tensor.H = property(_H)
Tensor.mH = property(_mH)


def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to, without making any tensor.

    Example::

        >>> ember.broadcast_shapes((2, 1), (3,))
        ember.Size([2, 3])
    """
    from .._tensor import Size

    result = []
    for index, shape in enumerate(shapes):
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if len(shape) > len(result):
            result = [1] * (len(shape) - len(result)) + result
        for offset, size in enumerate(reversed(shape), start=1):
            current = result[-offset]
            if size == current or size == 1:
                continue
            if current == 1:
                result[-offset] = size
                continue
            raise RuntimeError(
                f"Attempting to broadcast a dimension of length {size} at {-offset}! Mismatching "
                f"argument at index {index} had {shape}; but expected shape should be "
                f"broadcastable to {result}")
    return Size(result)


# ================================================================ toplevel-helper section:
# the *_copy forms of view ops (the view, then a contiguous copy of it) and unsafe_split /
# unsafe_chunk (split views without the multi-output guard on in-place changes)

_COPY_FORMS = []


def _copy_form(name, view_name, view_fn, doc_example):
    """``name``: ``view_fn`` followed by a contiguous copy of its result(s), with ``out=``
    for single results."""
    def copy_fn(input, *args, out=None, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        view = view_fn(input, *args, **kwargs)
        if isinstance(view, (tuple, list)):
            return tuple(_contiguous_copy(v) for v in view)
        return write_out(_contiguous_copy(view), out, name)
    copy_fn.__name__ = copy_fn.__qualname__ = name
    copy_fn.__doc__ = f"""The result of ``{view_name}`` as a new contiguous tensor (sharing no
    memory with ``input``).

    Example::

        >>> {doc_example}
    """
    _COPY_FORMS.append(name)
    return copy_fn


def _contiguous_copy(t):
    from .creation import clone_op

    return clone_op(t, memory_format="contiguous")


def _expand_view(input, size, *, implicit=False):
    return expand(input, size)


def _slice_view(input, dim=0, start=None, end=None, step=1):
    key = [builtins.slice(None)] * input.ndim
    key[wrap_dim(dim, input.ndim)] = builtins.slice(start, end, step)
    return input[tuple(key)]


def _view_as_real(input):
    from .pointwise import view_as_real

    return view_as_real(input)


def _view_as_complex(input):
    from .pointwise import view_as_complex

    return view_as_complex(input)


for _name, _view_name, _fn, _example in (
        ("view_copy", "view", lambda input, size: input.view(size),
         "ember.view_copy(ember.arange(4), (2, 2)).shape\n        ember.Size([2, 2])"),
        ("permute_copy", "permute", lambda input, dims: permute(input, dims),
         "ember.permute_copy(ember.zeros(2, 3), (1, 0)).stride()\n        (2, 1)"),
        ("expand_copy", "expand", _expand_view,
         "ember.expand_copy(ember.tensor([1, 2]), (2, 2)).stride()\n        (2, 1)"),
        ("squeeze_copy", "squeeze", lambda input, dim=None: squeeze(input, dim),
         "ember.squeeze_copy(ember.zeros(1, 2)).shape\n        ember.Size([2])"),
        ("unsqueeze_copy", "unsqueeze", unsqueeze,
         "ember.unsqueeze_copy(ember.zeros(2), 0).shape\n        ember.Size([1, 2])"),
        ("t_copy", "t", t, "ember.t_copy(ember.zeros(2, 3)).stride()\n        (2, 1)"),
        ("transpose_copy", "transpose", transpose,
         "ember.transpose_copy(ember.zeros(2, 3), 0, 1).stride()\n        (2, 1)"),
        ("diagonal_copy", "diagonal", diagonal,
         "ember.diagonal_copy(ember.eye(2))\n        tensor([1., 1.])"),
        ("select_copy", "select", select,
         "ember.select_copy(ember.arange(4).view(2, 2), 1, 0)\n        tensor([0, 2])"),
        ("slice_copy", "input[start:end:step] along dim", _slice_view,
         "ember.slice_copy(ember.arange(5), 0, 1, 4, 2)\n        tensor([1, 3])"),
        ("split_copy", "split", split,
         "ember.split_copy(ember.arange(3), 2)\n        (tensor([0, 1]), tensor([2]))"),
        ("split_with_sizes_copy", "split_with_sizes", split_with_sizes,
         "ember.split_with_sizes_copy(ember.arange(3), [1, 2])\n"
         "        (tensor([0]), tensor([1, 2]))"),
        ("unbind_copy", "unbind", unbind,
         "ember.unbind_copy(ember.arange(2))\n        (tensor(0), tensor(1))"),
        ("unfold_copy", "unfold",
         lambda input, dimension, size, step: input.unfold(dimension, size, step),
         "ember.unfold_copy(ember.arange(4), 0, 2, 2)\n        tensor([[0, 1],\n"
         "                [2, 3]])"),
        ("alias_copy", "alias", lambda input: input.view_as(input),
         "ember.alias_copy(ember.ones(2))\n        tensor([1., 1.])"),
        ("detach_copy", "detach", lambda input: input.detach(),
         "ember.detach_copy(ember.ones(1, requires_grad=True)).requires_grad\n        False"),
        ("as_strided_copy", "as_strided", as_strided,
         "ember.as_strided_copy(ember.arange(4), (2,), (2,))\n        tensor([0, 2])"),
        ("view_as_real_copy", "view_as_real", _view_as_real,
         "ember.view_as_real_copy(ember.tensor([1+2j]))\n        tensor([[1., 2.]])"),
        ("view_as_complex_copy", "view_as_complex", _view_as_complex,
         "ember.view_as_complex_copy(ember.tensor([[1., 2.]]))\n"
         "        tensor([1.+2.j])")):
    globals()[_name] = _copy_form(_name, _view_name, _fn, _example)
__all__ += _COPY_FORMS


def _unguarded(views):
    """Split views that in-place operations may change (torch's ``unsafe_*`` forms drop the
    multi-output guard; the caller promises not to write through several of them)."""
    for v in views:
        if v._base is not None:
            v._vmeta = 0
    return views


def unsafe_split(input, split_size, dim=0):
    """:func:`split` whose results may be changed in place even while autograd records.

    Example::

        >>> ember.unsafe_split(ember.arange(5), 2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    return _unguarded(split(input, split_size, dim))


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """:func:`split_with_sizes` whose results may be changed in place.

    Example::

        >>> ember.unsafe_split_with_sizes(ember.arange(5), [2, 3])
        (tensor([0, 1]), tensor([2, 3, 4]))
    """
    return _unguarded(split_with_sizes(input, split_sizes, dim))


def unsafe_chunk(input, chunks, dim=0):
    """:func:`chunk` whose results may be changed in place.

    Example::

        >>> ember.unsafe_chunk(ember.arange(5), 2)
        (tensor([0, 1, 2]), tensor([3, 4]))
    """
    return _unguarded(chunk(input, chunks, dim))


__all__ += ["unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk"]
Tensor.unsafe_split = unsafe_split
Tensor.unsafe_split_with_sizes = unsafe_split_with_sizes
Tensor.unsafe_chunk = unsafe_chunk
del _name, _view_name, _fn, _example
