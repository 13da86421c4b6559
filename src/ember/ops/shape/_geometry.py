"""What the shape families share: strides and offsets computed as torch computes them,
:func:`_strided` (a view from explicit strides, in elements), dim and size checks."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..._tensor import Tensor
from .._registry import check_inplace_autograd

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
