"""Autograd of views across in-place changes (torch's ``CopySlices`` and view regeneration).

When an in-place op writes through a view ``v`` of a base ``b`` that is part of a graph,
``b``'s history changes too: ``b`` becomes "old ``b`` with ``v``'s elements replaced by the
result". :func:`rebase_view` records that as a ``CopySlices`` node on the base (gradient: the
incoming gradient with ``v``'s elements zeroed goes to old ``b``; ``v``'s elements go to the
result) and gives the view a fresh ``AsStridedBackward0`` node reading it back out of the base.

Other views of the same base made before the write still hold their old node. As in torch,
a view remembers the version of the shared version counter at which its node was made
(``_gfv``); when its ``grad_fn`` is read (the attribute, or when it is used as an input of a
recorded op or as the root of backward) and the version has moved on, :func:`view_grad_fn`
regenerates it as an ``AsStridedBackward0`` node over the base's current history. Views
made under no_grad, or returned by an op with several view outputs (``unbind``, ``split``),
may not be rebased that way: :func:`creation_error` gives torch's error for them.

Both nodes are expressed on the storage the base and the view share: positions in storage are
``offset + sum(index * stride)``, so any view geometry (slices, transposes, diagonals through
``as_strided``) is handled by three linear primitives on a flat buffer -- scatter into storage,
gather from storage, and zero a region -- each the adjoint of another, so that double backward
works. A real view of a complex base (``.real``, ``.imag``) works on the base's storage seen as
reals: the complex tensor becomes a real one with a trailing dim of 2 (``view_as_real``).

Example::

    >>> x = ember.ones(2, 2, requires_grad=True)
    >>> y = x.clone()
    >>> y.view(4)[1:3].mul_(3)
    >>> y.grad_fn.name()
    'CopySlices'
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..ops._registry import _MULTI_OUTPUT_VIEW, _NO_GRAD_VIEW, Op
from ..ops._util import scatter_add
from ..ops._vmap_rules import batching
from .graph import _short_node_name, move_retained_grad, record

__all__ = ["rebase_view", "view_grad_fn", "creation_error"]


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
for _op in (_storage_scatter, _storage_gather, _storage_mask):
    _op.opt_out("batch", "not batched yet: it addresses a base tensor's storage through a view's "
                         "(size, stride, offset) geometry, and each element of a batch would need "
                         "its own storage")
    _op.opt_out("onnx", "the gradient of a view's storage: exported models run inference")


@_storage_scatter.defderivative
def _(ctx, grad, *, geom, size):
    return (_storage_gather(grad, geom=geom),)


@_storage_gather.defderivative
def _(ctx, grad, *, geom):
    return (_storage_scatter(grad, geom=geom, size=ctx.input_shapes[0][0]),)


@_storage_mask.defderivative
def _(ctx, grad, *, geom):
    return (_storage_mask(grad, geom=geom),)


def _as_real_kernel(xp, z):
    return xp.stack((z.real, z.imag), axis=-1)


def _as_complex_kernel(xp, r):
    out = xp.empty(r.shape[:-1], dtype=np.result_type(r.dtype, np.complex64))
    out.real = r[..., 0]
    out.imag = r[..., 1]
    return out


# A complex tensor as reals with a trailing dim of 2 and back (copies: they only carry
# gradients between a complex base and its storage seen as reals).
_as_real = Op("_as_real", _as_real_kernel, save_inputs=False,
              meta=lambda z: (z.shape + (2,), dt.from_numpy_dtype(z.dtype).to_real()))
_as_complex = Op("_as_complex", _as_complex_kernel, save_inputs=False,
                 meta=lambda r: (r.shape[:-1], dt.from_numpy_dtype(r.dtype).to_complex()))
for _op in (_as_real, _as_complex):
    _op.defbatch(batching.trailing_dims)
    _op.opt_out("onnx", "complex numbers: ONNX export handles real dtypes only")


@_as_real.defderivative
def _(ctx, grad):
    return (_as_complex(grad),)


@_as_complex.defderivative
def _(ctx, grad):
    return (_as_real(grad),)


def _to_storage(t, geom, size, as_real):
    """Scatter ``t`` (laid out as ``geom``) into a flat buffer of ``size`` elements."""
    return _storage_scatter(_as_real(t) if as_real else t, geom=geom, size=size)


def _from_storage(flat, geom, as_complex):
    """Gather a tensor laid out as ``geom`` from the flat buffer ``flat``."""
    out = _storage_gather(flat, geom=geom)
    return _as_complex(out) if as_complex else out


def _never_run(xp, *arrays, **params):
    raise RuntimeError("recorded directly by rebase_view; never dispatched")


copy_slices_op = Op("copy_slices", _never_run, save_inputs=False,
                    grad_name="torch::autograd::CopySlices")
as_strided_view_op = Op("as_strided", _never_run, save_inputs=False)
# the same node for a view that is all of its base seen with the other dtype, named as torch
# names it there (it replays the view rather than reading storage positions)
as_real_view_op = Op("view_as_real", _never_run, save_inputs=False)
as_complex_view_op = Op("view_as_complex", _never_run, save_inputs=False)
for _op in (copy_slices_op, as_strided_view_op, as_real_view_op, as_complex_view_op):
    _op.opt_out("batch", "an autograd node only: never dispatched, so vmap never sees it")
    _op.opt_out("onnx", "an autograd node only: never dispatched, so no trace records it")


@copy_slices_op.defderivative
def _(ctx, grad, *, base_geom, view_geom, size, base_c, view_c):
    flat = _to_storage(grad, base_geom, size, base_c)
    need_base, need_result = ctx.needs_input_grad
    grad_base = _from_storage(_storage_mask(flat, geom=view_geom), base_geom, base_c) \
        if need_base else None
    grad_result = _from_storage(flat, view_geom, view_c) if need_result else None
    return grad_base, grad_result


def _view_derivative(ctx, grad, *, base_geom, view_geom, size, base_c, view_c):
    return (_from_storage(_to_storage(grad, view_geom, size, view_c), base_geom, base_c),)


for _op in (as_strided_view_op, as_real_view_op, as_complex_view_op):
    _op.defderivative(_view_derivative)


def _extent(geom):
    shape, strides, offset = geom
    if any(n == 0 for n in shape):
        return None
    low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return low, high


def _geometry(t, as_real):
    """``(shape, strides, offset)`` of ``t`` in its storage, counted in elements of its dtype,
    or for a complex tensor ``as_real`` in reals (``view_as_real``: a trailing dim of 2)."""
    shape, strides, offset = tuple(t._data.shape), tuple(t.stride()), t.storage_offset()
    if as_real:
        return shape + (2,), tuple(2 * s for s in strides) + (1,), 2 * offset
    return shape, strides, offset


def _params(base, view):
    """The geometries of ``base`` and ``view`` on a flat buffer spanning both, its size, and
    which of the two is complex over a real storage unit (the other being real)."""
    base_kind, view_kind = base._data.dtype.kind, view._data.dtype.kind
    base_c = base_kind == "c" and view_kind != "c"
    view_c = view_kind == "c" and base_kind != "c"
    if base._data.dtype != view._data.dtype and not (base_c or view_c):
        raise NotImplementedError("in-place autograd through a view with a dtype different from "
                                  "its base is only supported between complex and real dtypes "
                                  "(.real, .imag)")
    geoms = [_geometry(base, base_c), _geometry(view, view_c)]
    extents = [e for e in map(_extent, geoms) if e is not None]
    if not extents:
        size = 0
    else:
        low = min(e[0] for e in extents)
        size = max(e[1] for e in extents) - low + 1
        geoms = [(shape, strides, offset - low) for shape, strides, offset in geoms]
    return {"base_geom": geoms[0], "view_geom": geoms[1], "size": size, "base_c": base_c,
            "view_c": view_c}


def _set_view_node(view, base, params):
    """Give ``view`` a fresh ``AsStridedBackward0`` node reading it out of ``base``."""
    old, old_nr = view._grad_fn, view._output_nr
    view._output_nr = 0
    op = as_strided_view_op
    if params["base_geom"] == params["view_geom"]:
        op = as_real_view_op if params["base_c"] else as_complex_view_op if params["view_c"] \
            else op
    node = record(op, (base,), params, view)
    view._gfv = view._vc[0]
    child = node.next_functions[0][0]
    if child is not None:
        # The node may be made while the node that consumes it is being recorded: its
        # sequence number must still lie between its child's and its consumer's (the engine
        # relies on a node's number exceeding its children's).
        node._seq = child._seq + 0.5
    if old is not None and getattr(view, "_retains_grad", False):
        move_retained_grad(view, old, old_nr)
    return node


def rebase_view(view, result):
    """Record that ``result`` was written in place into ``view`` (already copied into memory).

    The view's base gets a ``CopySlices`` node (old base history + ``result``'s history), and the
    view an ``AsStridedBackward0`` node that reads it from the base. A tensor that is not a view
    is treated as a view of all of itself (used when a value that needs no grad overwrites a
    tensor that has a history: the old history then receives zero gradient).
    """
    base = view._base if view._base is not None else view
    params = _params(base, view)
    old_base_fn = base._grad_fn
    record(copy_slices_op, (base, result), params, base)
    if old_base_fn is not None and getattr(base, "_retains_grad", False):
        move_retained_grad(base, old_base_fn)
    if view is not base:
        _set_view_node(view, base, params)


def view_grad_fn(view):
    """The ``grad_fn`` of a view whose base changed in place since its node was made.

    As torch: a view without a node whose base does not require grad keeps none; a view made
    under no_grad or by an op with several view outputs raises :func:`creation_error`; any
    other view gets an ``AsStridedBackward0`` node over the base's current history.

    Example::

        >>> a = ember.ones(4, requires_grad=True).clone()
        >>> v = a[:2]
        >>> a.mul_(2)
        >>> v.grad_fn.name()
        'AsStridedBackward0'
    """
    base = view._base
    if view._grad_fn is None and not base.requires_grad:
        return None
    if view._vmeta:
        raise creation_error(view, indirect=True)
    return _set_view_node(view, base, _params(base, view))


_NO_GRAD_HINT = (" Given that this use case is ambiguous and error-prone, it is forbidden. You "
                 "can clarify your code by moving both the view and the inplace either both "
                 "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                 "outside (if you want the inplace to be tracked).")
_MULTI_OUTPUT_HINT = (" This view is the output of a function that returns multiple views. Such "
                      "functions do not allow the output views to be modified inplace. You "
                      "should replace the inplace operation by an out-of-place one.")


def creation_error(view, indirect):
    """torch's error for an in-place change that autograd may not follow through ``view``
    (made under no_grad, or one of several views returned by one op): the write is through
    ``view`` itself, or ``indirect`` (through its base or another view of it)."""
    node, meta = view._grad_fn, view._vmeta
    modified = "its base or another view of its base has been" if indirect else "is being"
    if meta == _NO_GRAD_VIEW or node is None:
        prefix = "A view was created in" if node is None else (
            f"Output {view._output_nr} of {_short_node_name(node)} is a view of a view which "
            "was created in")
        message = f"{prefix} no_grad mode and {modified} modified inplace with grad mode enabled."
    else:
        message = (f"Output {view._output_nr} of {_short_node_name(node)} is a view and "
                   f"{modified} modified inplace.")
    message += _MULTI_OUTPUT_HINT if meta == _MULTI_OUTPUT_VIEW else _NO_GRAD_HINT
    return RuntimeError(message)
