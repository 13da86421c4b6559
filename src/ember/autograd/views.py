"""Autograd through in-place writes to views (torch's ``CopySlices``).

When an in-place op writes through a view ``v`` of a base ``b`` that is part of a graph,
``b``'s history changes too: ``b`` becomes "old ``b`` with ``v``'s elements replaced by the
result". :func:`rebase_view` records that as a ``CopySlices`` node on the base (gradient: the
incoming gradient with ``v``'s elements zeroed goes to old ``b``; ``v``'s elements go to the
result) and gives the view a fresh ``AsStridedBackward0`` node reading it back out of the base.

Both are expressed on the storage the base and the view share: positions in storage are
``offset + sum(index * stride)``, so any view geometry (slices, transposes, diagonals through
``as_strided``) is handled by three linear primitives on a flat buffer -- scatter into storage,
gather from storage, and zero a region -- each the adjoint of another, so that double backward
works.

Example::

    >>> x = ember.ones(2, 2, requires_grad=True)
    >>> y = x.clone()
    >>> y.view(4)[1:3].mul_(3)
    >>> y.grad_fn.name()
    'CopySlices'
"""

from __future__ import annotations

import numpy as np

from ..ops._registry import Op
from ..ops._util import scatter_add
from .graph import record

__all__ = ["rebase_view"]


def _positions(xp, geom):
    """Storage position of every element of a tensor with geometry ``(shape, strides, offset)``."""
    shape, strides, offset = geom
    idx = xp.full((1,) * len(shape), offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        step = xp.arange(n, dtype=np.int64) * s
        idx = idx + step.reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1))
    return xp.broadcast_to(idx, shape)


def _overlaps(geom):
    shape, strides, _ = geom
    return any(s == 0 and n > 1 for n, s in zip(shape, strides))


def _scatter_kernel(xp, x, *, geom, size):
    buf = xp.zeros(size, dtype=x.dtype)
    idx = _positions(xp, geom)
    if not _overlaps(geom):
        buf[idx] = x
    else:
        scatter_add(xp, buf, idx, x)
    return buf


def _gather_kernel(xp, s, *, geom):
    return s[_positions(xp, geom)]


def _mask_kernel(xp, s, *, geom):
    out = s.copy()
    out[_positions(xp, geom)] = 0
    return out


_storage_scatter = Op("_storage_scatter", _scatter_kernel, save_inputs=False,
                      meta=lambda x, *, geom, size: ((size,), x.dtype))
_storage_gather = Op("_storage_gather", _gather_kernel, save_inputs=False,
                     meta=lambda s, *, geom: (geom[0], s.dtype))
_storage_mask = Op("_storage_mask", _mask_kernel, save_inputs=False,
                   meta=lambda s, *, geom: (s.shape, s.dtype))


@_storage_scatter.defderivative
def _(ctx, grad, *, geom, size):
    return (_storage_gather(grad, geom=geom),)


@_storage_gather.defderivative
def _(ctx, grad, *, geom):
    return (_storage_scatter(grad, geom=geom, size=ctx.input_shapes[0][0]),)


@_storage_mask.defderivative
def _(ctx, grad, *, geom):
    return (_storage_mask(grad, geom=geom),)


def _never_run(xp, *arrays, **params):
    raise RuntimeError("recorded directly by rebase_view; never dispatched")


copy_slices_op = Op("copy_slices", _never_run, save_inputs=False,
                    grad_name="torch::autograd::CopySlices")
as_strided_view_op = Op("as_strided", _never_run, save_inputs=False)


@copy_slices_op.defderivative
def _(ctx, grad, *, base_geom, view_geom, size):
    flat = _storage_scatter(grad, geom=base_geom, size=size)
    need_base, need_result = ctx.needs_input_grad
    grad_base = _storage_gather(_storage_mask(flat, geom=view_geom), geom=base_geom) \
        if need_base else None
    grad_result = _storage_gather(flat, geom=view_geom) if need_result else None
    return grad_base, grad_result


@as_strided_view_op.defderivative
def _(ctx, grad, *, base_geom, view_geom, size):
    return (_storage_gather(_storage_scatter(grad, geom=view_geom, size=size), geom=base_geom),)


def _extent(geom):
    shape, strides, offset = geom
    if any(n == 0 for n in shape):
        return None
    low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return low, high


def _geometries(base, view):
    """Geometries of ``base`` and ``view`` on a flat buffer spanning both, and its size."""
    geoms = [(tuple(t._data.shape), tuple(t.stride()), t.storage_offset()) for t in (base, view)]
    extents = [e for e in map(_extent, geoms) if e is not None]
    if not extents:
        return geoms[0], geoms[1], 0
    low = min(e[0] for e in extents)
    size = max(e[1] for e in extents) - low + 1
    shifted = tuple((shape, strides, offset - low) for shape, strides, offset in geoms)
    return shifted[0], shifted[1], size


def rebase_view(view, result):
    """Record that ``result`` was written in place into ``view`` (already copied into memory).

    The view's base gets a ``CopySlices`` node (old base history + ``result``'s history), and the
    view an ``AsStridedBackward0`` node that reads it from the base. A tensor that is not a view
    is treated as a view of all of itself (used when a value that needs no grad overwrites a
    tensor that has a history: the old history then receives zero gradient).
    """
    base = view._base if view._base is not None else view
    if view._data.dtype != base._data.dtype:
        raise NotImplementedError("in-place autograd through a view with a dtype different from "
                                  "its base (such as .real or .imag) is not supported")
    base_geom, view_geom, size = _geometries(base, view)
    params = {"base_geom": base_geom, "view_geom": view_geom, "size": size}
    record(copy_slices_op, (base, result), params, base)
    if view is not base:
        record(as_strided_view_op, (base,), params, view)
