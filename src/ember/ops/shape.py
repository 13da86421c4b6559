"""Shape operators: views that share memory (view, reshape, transpose, expand, ...) and the
ops that rearrange data into new memory (cat, stack, flip, ...).

A view op is declared with ``view=True``: the dispatcher then makes the result share its input's
base and version counter, so writes through either are seen by both and by autograd.
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ._operands import wrap_dim
from ._registry import defop

__all__ = ["reshape", "transpose", "swapaxes", "swapdims", "permute", "unsqueeze",
           "squeeze", "t", "flatten", "broadcast_to"]


def infer_size(shape, numel):
    """Resolve one ``-1`` in ``shape`` against ``numel``, with torch's errors."""
    shape = tuple(int(s) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return shape


# ---------------------------------------------------------------- view / reshape


@defop("view", meta=lambda a, *, shape: (shape, a.dtype), save_inputs=False, view=True)
def view_op(xp, a, *, shape):
    result = a.reshape(shape)
    if result.size and not xp.may_share_memory(result, a):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return result


@view_op.defderivative
def _view_derivative(ctx, grad, *, shape):
    return (grad.reshape(ctx._input_meta[0][0]),)


def _view(self, *shape):
    """A view with a new shape over the same memory; refuses when strides don't allow it.

    Example::

        >>> ember.arange(6).view(2, 3)
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    shape = _shape_args(shape)
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        return self.to(shape[0]) if self.dtype.itemsize == shape[0].itemsize else \
            _view_dtype(self, shape[0])
    return view_op(self, shape=infer_size(shape, self._data.size))


def _view_dtype(self, dtype):
    raise RuntimeError(f"view(dtype): cannot reinterpret {self.dtype} as {dtype} with a "
                       "different element size yet")


def _is_viewable(input, shape):
    """Whether ``input`` can take ``shape`` without copying (meta tensors always can)."""
    array = input._data
    if input._device.type == "meta" or array.size == 0:
        return True
    return input._device.xp.may_share_memory(array.reshape(shape), array)


def reshape(input, *shape):
    """The same data with a new shape: a view when the strides allow, else a copy.

    Example::

        >>> ember.reshape(ember.arange(4), (2, -1))
        tensor([[0, 1],
                [2, 3]])
    """
    shape = infer_size(_shape_args(shape), input._data.size)
    if input._data.shape == shape or _is_viewable(input, shape):
        return view_op(input, shape=shape)
    return view_op(input.contiguous(), shape=shape)


def view_as(input, other):
    """``input.view(other.shape)``."""
    return _view(input, other._data.shape)


def reshape_as(input, other):
    """``input.reshape(other.shape)``."""
    return reshape(input, other._data.shape)


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
    shape = input._data.shape
    new = shape[:start] + (int(np.prod(shape[start:end + 1], dtype=np.int64)),) + shape[end + 1:]
    return reshape(input, new)


# ---------------------------------------------------------------- transpose / permute


@defop("permute", meta=lambda a, *, dims: (tuple(a.shape[d] for d in dims), a.dtype),
       save_inputs=False, view=True)
def permute_op(xp, a, *, dims):
    return xp.transpose(a, dims)


@permute_op.defderivative
def _permute_derivative(ctx, grad, *, dims):
    return (grad.permute(tuple(np.argsort(dims).tolist())),)


def permute(input, *dims):
    """A view with the dimensions reordered.

    Example::

        >>> ember.zeros(2, 3, 4).permute(2, 0, 1).shape
        ember.Size([4, 2, 3])
    """
    dims = _shape_args(dims)
    ndim = input._data.ndim
    if len(dims) != ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(dims)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return permute_op(input, dims=dims)


def transpose(input, dim0, dim1):
    """A view with ``dim0`` and ``dim1`` swapped.

    Example::

        >>> ember.zeros(2, 3).transpose(0, 1).shape
        ember.Size([3, 2])
    """
    ndim = input._data.ndim
    if ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return view_op(input, shape=())
    dim0, dim1 = wrap_dim(dim0, ndim), wrap_dim(dim1, ndim)
    dims = list(range(ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return permute_op(input, dims=tuple(dims))


swapaxes = swapdims = transpose


def t(input):
    """Transpose a tensor of at most 2 dims.

    Example::

        >>> ember.tensor([[1, 2]]).t()
        tensor([[1],
                [2]])
    """
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return transpose(input, 0, 1) if input._data.ndim == 2 else view_op(input,
                                                                          shape=input._data.shape)


# ---------------------------------------------------------------- unsqueeze / squeeze / expand


def unsqueeze(input, dim):
    """A view with a new size-1 dimension at ``dim``.

    Example::

        >>> ember.zeros(3).unsqueeze(0).shape
        ember.Size([1, 3])
    """
    dim = wrap_dim(dim, input._data.ndim + 1)
    shape = input._data.shape
    return view_op(input, shape=shape[:dim] + (1,) + shape[dim:])


def squeeze(input, dim=None):
    """A view without size-1 dimensions (all, or only those in ``dim``).

    Example::

        >>> ember.zeros(1, 3, 1).squeeze().shape
        ember.Size([3])
    """
    shape = input._data.shape
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {wrap_dim(d, len(shape)) for d in dims}
        dims = {d for d in dims if len(shape) and shape[d] == 1}
    return view_op(input, shape=tuple(s for i, s in enumerate(shape) if i not in dims))


@defop("expand", meta=lambda a, *, shape: (shape, a.dtype), save_inputs=False, view=True)
def expand_op(xp, a, *, shape):
    return xp.broadcast_to(a, shape)


@expand_op.defderivative
def _expand_derivative(ctx, grad, *, shape):
    return (grad.sum_to_size(ctx._input_meta[0][0]),)


def expand(input, *sizes):
    """A view that repeats size-1 dims (``-1`` keeps a size) without copying.

    Example::

        >>> ember.tensor([[1], [2]]).expand(2, 3)
        tensor([[1, 1, 1],
                [2, 2, 2]])
    """
    sizes = tuple(int(s) for s in _shape_args(sizes))
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand({input.type()}{{{list(shape)}}}, size={list(sizes)}): the "
                           f"number of sizes provided ({len(sizes)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    result = []
    for i, size in enumerate(sizes):
        if i < lead:
            if size < 0:
                raise RuntimeError(f"The expanded size of the tensor ({size}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            result.append(size)
            continue
        current = shape[i - lead]
        if size == -1:
            size = current
        elif current != size and current != 1:
            raise RuntimeError(f"The expanded size of the tensor ({size}) must match the existing "
                               f"size ({current}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(shape)}")
        result.append(size)
    result = tuple(result)
    if result == shape:
        return view_op(input, shape=shape)
    return expand_op(input, shape=result)


def expand_as(input, other):
    """``input.expand(other.shape)``."""
    return expand(input, other._data.shape)


def broadcast_to(input, size):
    """``input.expand(size)``.

    Example::

        >>> ember.broadcast_to(ember.tensor([1, 2]), (2, 2))
        tensor([[1, 2],
                [1, 2]])
    """
    return expand(input, size)


for _name in ("reshape", "view_as", "reshape_as", "flatten", "permute", "transpose", "swapaxes",
              "swapdims", "t", "unsqueeze", "squeeze", "expand", "expand_as", "broadcast_to"):
    setattr(Tensor, _name, globals()[_name])
Tensor.view = _view
Tensor.T = property(lambda self: permute_op(self, dims=tuple(reversed(range(self.ndim)))))
Tensor.mT = property(lambda self: transpose(self, -2, -1))
Tensor.H = property(lambda self: transpose(self, 0, 1).conj() if self.ndim == 2 else self.conj())
Tensor.mH = property(lambda self: transpose(self, -2, -1).conj())
__all__ += ["view_as", "reshape_as", "expand", "expand_as"]
