"""Views that reshape or reorder: view, reshape, flatten, unflatten, squeeze, unsqueeze,
transpose, permute, movedim, adjoint, expand, broadcast_to, broadcast_tensors,
broadcast_shapes."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from ...autograd.forward_ad import first_linear_jvp
from .._methods import tensor_method
from .._onnx_rules import unfolded
from .._operands import broadcast_shapes as _broadcast_shapes
from .._operands import varargs_or_keyword, wrap_dim
from .._registry import Op, defop
from .._signature import signature
from .._vmap_rules import batching
from ._geometry import (
    _array_strides,
    _contiguous_strides,
    _inplace_view,
    _int,
    _shape_args,
    _shape_meta,
    _sizes_arg,
    _strided,
    _view_strides,
    infer_size,
)

__all__ = ["reshape", "view_as", "reshape_as", "flatten", "unflatten", "ravel", "squeeze",
           "unsqueeze", "transpose", "swapaxes", "swapdims", "t", "permute", "movedim", "moveaxis",
           "adjoint", "expand", "expand_as", "broadcast_to", "broadcast_tensors",
           "broadcast_shapes"]


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


def _reshape_onnx(ctx, x, shape, strides=None):
    return ctx.reshape(x, ctx.in_dims(0), ctx.out_dims())


view_op.defonnx(_reshape_onnx)
squeeze_op.defonnx(_reshape_onnx)
unsqueeze_op.defonnx(_reshape_onnx)
alias_op.defonnx(lambda ctx, x, **params: ctx.op("Identity", x))
alias_op.defbatch(batching.reshape_view)
squeeze_op.defbatch(batching.reshape_view)
unsqueeze_op.defbatch(batching.reshape_view)
view_op.defbatch(batching.reshape_view)

_VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one "
               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")


def _alias(input):
    return alias_op(input, shape=input._data.shape, strides=input.stride())


@tensor_method("view")
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
       view=True, kind="view", opt_outs={"onnx": "a bit reinterpretation: ONNX has no bitcast"})
def view_dtype_op(xp, a, *, dtype, shape):
    if a.ndim == 0:
        return a.reshape(1).view(dtype.np).reshape(())
    return a.view(dtype.np)


view_dtype_op.defbatch(batching.view_dtype)
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


@tensor_method
@signature("reshape(Tensor input, SymInt[] shapes, *, SymInt[]? shape=None) -> Tensor")
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


@tensor_method
@signature("view_as(Tensor input, Tensor other) -> Tensor")
def view_as(input, other):
    """``input.view(other.size())``.

    Example::

        >>> ember.arange(4).view_as(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return _view(input, other._data.shape)


@tensor_method
@signature("reshape_as(Tensor input, Tensor other) -> Tensor")
def reshape_as(input, other):
    """``input.reshape(other.size())``.

    Example::

        >>> ember.arange(4).reshape_as(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return reshape(input, other._data.shape)


@tensor_method
@signature("ravel(Tensor input) -> Tensor")
def ravel(input):
    """The elements as a 1-D tensor (a view when possible).

    Example::

        >>> ember.ravel(ember.zeros(2, 3)).shape
        ember.Size([6])
    """
    return reshape(input, (-1,))


@tensor_method
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


@tensor_method
@signature("unflatten(Tensor input, int dim, SymInt[] sizes) -> Tensor")
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


@tensor_method
@signature("squeeze(Tensor input, PyObject? dim=None) -> Tensor", overloaded=True)
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


tensor_method(_inplace_view(squeeze), "squeeze_")


@tensor_method
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


tensor_method(_inplace_view(unsqueeze), "unsqueeze_")


# ================================================================ transpose / permute


@defop("permute", meta=lambda a, *, dims: (tuple(a.shape[d] for d in dims), a.dtype),
       save_inputs=False, view=True, kind="view")
def permute_op(xp, a, *, dims):
    if a.size:
        return xp.transpose(a, dims)
    strides = _array_strides(a)  # keep torch's strides on empty tensors too
    return _strided(xp, a, tuple(a.shape[d] for d in dims), tuple(strides[d] for d in dims))


@permute_op.defonnx
def _permute_onnx(ctx, x, dims):
    ndim = len(ctx.in_dims(0))
    perm = [d % ndim for d in dims]
    if perm == list(range(ndim)):
        return ctx.op("Identity", x)
    return ctx.op("Transpose", x, perm=perm)


permute_op.defbatch(batching.permute)


@permute_op.defderivative
def _permute_derivative(ctx, grad, *, dims):
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return (permute_op(grad, dims=tuple(inverse)),)


permute_op.defjvp(first_linear_jvp(permute_op))


@tensor_method
@signature("permute(Tensor input, int[] dim_args, *, int[]? dims=None) -> Tensor")
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


@tensor_method
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
    if type(dim0) is int and type(dim1) is int and -ndim <= dim0 < ndim and -ndim <= dim1 < ndim:
        dim0, dim1 = dim0 % ndim, dim1 % ndim  # the common call (t(), mH), checked inline
    else:
        dim0, dim1 = wrap_dim(_int(dim0, "dim"), ndim), wrap_dim(_int(dim1, "dim"), ndim)
    dims = list(range(ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return permute_op(input, dims=tuple(dims))


tensor_method(_inplace_view(transpose), "transpose_")
tensor_method(_inplace_view(transpose), "swapdims_")
swapdims = tensor_method(transpose, "swapdims")


@tensor_method
def swapaxes(input, axis0, axis1):
    """:func:`transpose` under NumPy's names (``axis0``, ``axis1``), as torch's.

    Example::

        >>> ember.swapaxes(ember.zeros(2, 3), axis0=0, axis1=1).shape
        ember.Size([3, 2])
    """
    return transpose(input, axis0, axis1)


tensor_method(_inplace_view(swapaxes), "swapaxes_")


@tensor_method
@signature("t(Tensor input) -> Tensor")
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


tensor_method(_inplace_view(t), "t_")


@tensor_method
@signature("adjoint(Tensor input) -> Tensor")
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


tensor_method(property(_T), "T")


def _mT(self):
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self._data.ndim}-D tensor.")
    return transpose(self, -2, -1)


tensor_method(property(_mT), "mT")


def _H(self):
    if self._data.ndim > 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self._data.ndim}-D tensor.")
    if self._data.ndim < 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self._data.ndim}-D tensor.")
    result = transpose(self, 0, 1)
    return result.conj() if self.dtype.is_complex else result


tensor_method(property(_H), "H")


def _mH(self):
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self._data.ndim}-D tensor.")
    result = transpose(self, -2, -1)
    return result.conj() if self.dtype.is_complex else result


tensor_method(property(_mH), "mH")


def _dim_list(dims, ndim, name):
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    return [wrap_dim(_int(d, "dim"), ndim) for d in dims]


@tensor_method
@signature("movedim(Tensor input, int[] source, int[] destination) -> Tensor",
           overloaded="all")
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


moveaxis = tensor_method(movedim, "moveaxis")


# ================================================================ expand / broadcast


@defop("expand", meta=_shape_meta, save_inputs=False, view=True, kind="view")
def expand_op(xp, a, *, shape, strides):
    return _strided(xp, a, shape, strides, check_overlap=True)


@expand_op.defonnx
@unfolded  # the runtime broadcasts: the file keeps the small input
def _expand_onnx(ctx, x, shape, strides=None):
    in_dims, out_dims = ctx.in_dims(0), ctx.out_dims()
    offset = len(out_dims) - len(in_dims)
    # 1 keeps the input's size (ONNX's Expand broadcasts), so only new sizes are spelled out
    target = [1 if i >= offset and in_dims[i - offset] == d else d
              for i, d in enumerate(out_dims)]
    return ctx.op("Expand", x, ctx.shape_tensor(target))


expand_op.defbatch(batching.expand)


@expand_op.defderivative
def _expand_derivative(ctx, grad, *, shape, strides):
    return (grad.sum_to_size(ctx._input_meta[0][0]),)


@tensor_method
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


@tensor_method
@signature("expand_as(Tensor input, Tensor other) -> Tensor")
def expand_as(input, other):
    """``input.expand(other.size())``.

    Example::

        >>> ember.tensor([1, 2]).expand_as(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return expand(input, other._data.shape)


@tensor_method
@signature("broadcast_to(Tensor input, SymInt[] size) -> Tensor")
def broadcast_to(input, size):
    """``input.expand(size)``.

    Example::

        >>> ember.broadcast_to(ember.tensor([1, 2]), (2, 2))
        tensor([[1, 2],
                [1, 2]])
    """
    return expand(input, tuple(size))


@signature("broadcast_tensors(Tensor[] tensors) -> Tensor[]")
def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common broadcast shape.

    Example::

        >>> a, b = ember.broadcast_tensors(ember.zeros(2, 1), ember.zeros(3))
        >>> a.shape, b.shape
        (ember.Size([2, 3]), ember.Size([2, 3]))
    """
    shape = _broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to, without making any tensor.

    Example::

        >>> ember.broadcast_shapes((2, 1), (3,))
        ember.Size([2, 3])
    """
    from ..._tensor import Size

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
