"""Forward-mode automatic differentiation: dual tensors carry a tangent through each op.

Inside a :class:`dual_level`, :func:`make_dual` attaches a tangent to a tensor; every op whose
input has a tangent computes its output's tangent with the op's ``jvp`` rule (``Op.jvp``), and
:func:`unpack_dual` reads it back. Rules are written with ember ops, so tangents are themselves
differentiable by reverse mode. One level at a time, as in torch.

Complex numbers: an element-wise op's tangent map is R-linear, ``t -> alpha t + beta conj(t)``;
where no explicit rule is given it is recovered from the op's reverse derivative (its adjoint
under ``Re<a, b>``), so non-holomorphic ops (abs, angle, sgn, ...) and real <-> complex ops
(real, imag, complex, polar) work; a real output always has a real tangent.

Any other op with a reverse derivative (linear algebra, convolutions, pooling, losses) gets its
tangent by differentiating that derivative once more, on real tensors: see
:func:`transposed_jvp`.

Example::

    >>> import ember.autograd.forward_ad as fwAD
    >>> x = ember.tensor([1., 2.])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, ember.ones(2)).sin()
    ...     fwAD.unpack_dual(y).tangent      # cos(x)
    tensor([ 0.5403, -0.4161])
"""

from __future__ import annotations

import itertools
from collections import namedtuple

from .._tensor import Tensor

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]


class _State:
    level = None     # the active level (an int) or None; read by the dispatcher on every op
    busy = False     # True while a jvp rule runs (its ops must not propagate tangents)


_state = _State()
_levels = itertools.count()

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level():
    """Open a forward-AD level and return its id (nesting is not supported, as in torch)."""
    if _state.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _state.level = next(_levels)
    return _state.level


def exit_dual_level(*, level=None):
    """Close the current level; the tangents made inside it are dropped."""
    if level is None:
        level = _state.level
    if level is None or level != _state.level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    _state.level = None


class dual_level:
    """Context manager for one forward-AD level.

    Example::

        >>> with fwAD.dual_level():
        ...     dual = fwAD.make_dual(x, v)
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


# A tensor's ``_fw_grad`` is ``(level, tangent, stamp, owner)``. A view's tangent is a part of
# its *owner's*: its base's when the base has a tangent, else that of the view it was taken
# from (a dual made by make_dual is a view of a primal without one), else its own. An owner's
# stamp is a fresh number each time its tangent is set; a view keeps its owner's stamp from
# when its tangent was made, so that once the owner's tangent changed (an in-place write to it
# or through another view) the view reads its part afresh, as torch's views of the owner's
# tangent would show.
_stamps = itertools.count()


def _current(fw):
    return fw is not None and fw[0] == _state.level


def _owner(t):
    """The tensor whose tangent ``t``'s tangent is a part of: ``t`` itself for a tensor that
    is no view or a view that owns its tangent; a view without a tangent belongs to its base."""
    base = t._base
    if base is None or _current(getattr(base, "_fw_grad", None)):
        return t if base is None else base
    fw = getattr(t, "_fw_grad", None)
    if not _current(fw):
        return base
    return t if fw[3] is None else fw[3]


def _tangent(t):
    fw = getattr(t, "_fw_grad", None)
    if t._base is not None:
        owner = _owner(t)
        if owner is not t:
            owner_fw = getattr(owner, "_fw_grad", None)
            if _current(owner_fw) and (not _current(fw) or fw[2] != owner_fw[2]):
                return _tangent_from_owner(t, owner, owner_fw)
    if not _current(fw):
        return None
    return fw[1]


def _set_tangent(t, tangent, owner=None):
    """Give ``t`` its tangent; ``owner``: the tensor it is a part of, for a view taken from a
    view that owns its tangent (see above)."""
    base = t._base
    if base is not None:
        base_fw = getattr(base, "_fw_grad", None)
        if _current(base_fw):
            t._fw_grad = (_state.level, tangent, base_fw[2], None)
            return
        if owner is not None and owner is not t:
            t._fw_grad = (_state.level, tangent, owner._fw_grad[2], owner)
            return
    t._fw_grad = (_state.level, tangent, next(_stamps), None)


def _tangent_from_owner(view, owner, owner_fw):
    """The view's elements of its owner's tangent (kept as the view's tangent until the
    owner's changes again); the view's own tangent where the two dtypes differ beyond
    real/complex."""
    from . import views

    busy, _state.busy = _state.busy, True
    try:
        try:
            params = views._params(owner, view)
        except NotImplementedError:
            fw = getattr(view, "_fw_grad", None)
            return fw[1] if _current(fw) else None
        flat = views._to_storage(owner_fw[1], params["base_geom"], params["size"],
                                 params["base_c"])
        tangent = views._from_storage(flat, params["view_geom"], params["view_c"])
    finally:
        _state.busy = busy
    _set_tangent(view, tangent, owner)
    return tangent


def _alias(tensor):
    """A differentiable view of ``tensor`` that carries no tangent."""
    busy, _state.busy = _state.busy, True
    try:
        return tensor.view_as(tensor)
    finally:
        _state.busy = busy


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient.

    Example::

        >>> with fwAD.dual_level():
        ...     d = fwAD.make_dual(ember.tensor([1.]), ember.tensor([2.]))
    """
    if level is None:
        level = _state.level
    if level is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if level != _state.level:
        raise RuntimeError("Trying to create a dual Tensor for a forward AD level that does "
                           "not exist.")
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.dtype.is_floating_point or tangent.dtype.is_complex):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if tangent.dtype is not tensor.dtype:
        raise RuntimeError(f"Expected tangent to have the same dtype as primal, but got "
                           f"{tangent.dtype} and {tensor.dtype}")
    if tangent._device != tensor._device:
        raise RuntimeError("Expected tangent to be on the same device as primal")
    dual = _alias(tensor)
    _set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)``: a view without the tangent, and the tangent (None if none).

    Example::

        >>> with fwAD.dual_level():
        ...     p, t = fwAD.unpack_dual(fwAD.make_dual(x, v))
    """
    if level is None:
        level = _state.level
    if level is None or level != _state.level:
        return UnpackedDualTensor(tensor, None)
    tangent = _tangent(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor), tangent)


# ---------------------------------------------------------------- in-place writes


def write_tangent(target, result):
    """Update tangents after ``result`` (a tensor, or None for a constant such as a fill
    value) was written in place into ``target``.

    As in torch, the written elements take ``result``'s tangent (zero when it has none), and
    when ``target``'s tangent is part of another's (a view of a base), that tangent changes at
    the view's elements too, so that ``y = x.clone(); y[1:].copy_(src)`` carries ``src``'s
    tangent into ``y``.

    Example::

        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(ember.zeros(3), ember.ones(3))
        ...     _ = x[1:].fill_(2.)
        ...     fwAD.unpack_dual(x).tangent
        tensor([1., 0., 0.])
    """
    new = None if result is None else _tangent(result)
    owner = _owner(target)
    if new is None and _tangent(target) is None and _tangent(owner) is None:
        return
    busy, _state.busy = _state.busy, True
    try:
        new = target.new_zeros(target._data.shape) if new is None else _fit_into(new, target)
        if owner is target:
            _set_tangent(target, new)
            return
        _write_through_view(owner, target, new)
    finally:
        _state.busy = busy


def _fit_into(tangent, target):
    """``tangent`` broadcast to ``target``'s shape and cast to its dtype."""
    if _is_complex(tangent) and not _is_complex(target):
        tangent = tangent.real
    return _fit(tangent, target)


def _write_through_view(owner, view, tangent):
    """The owner's tangent with the view's elements replaced by ``tangent`` (on the storage
    both share, as autograd's CopySlices does), and the view's tangent read back from it."""
    from . import views

    try:
        params = views._params(owner, view)
    except NotImplementedError:  # a view of another dtype: its own tangent only
        _set_tangent(view, tangent)
        return
    owner_geom, view_geom, size = params["base_geom"], params["view_geom"], params["size"]
    old = _tangent(owner)
    old = owner.new_zeros(owner._data.shape) if old is None else old
    kept = views._storage_mask(views._to_storage(old, owner_geom, size, params["base_c"]),
                               geom=view_geom)
    flat = kept + views._to_storage(tangent, view_geom, size, params["view_c"])
    _set_tangent(owner, views._from_storage(flat, owner_geom, params["base_c"]))
    _set_tangent(view, views._from_storage(flat, view_geom, params["view_c"]), owner)


def is_dual(t):
    """Whether ``t`` carries a tangent at the current forward-AD level.

    Example::

        >>> fwAD.is_dual(ember.ones(2))
        False
    """
    return _state.level is not None and isinstance(t, Tensor) and _tangent(t) is not None


# ---------------------------------------------------------------- propagation


def propagate(op, inputs, params, results):
    """Compute the tangent of ``op``'s results from its inputs' tangents (dispatcher hook)."""
    if _state.busy:
        return
    tangents = [_tangent(t) for t in inputs]
    if all(t is None for t in tangents):
        return
    rule = op.jvp
    if rule is None and not _differentiable_result(results):
        return  # integer/bool results carry no tangent (comparisons, argmax, ...), as in torch
    if rule is None and "jvp" in op.opt_outs:
        raise NotImplementedError(f"Trying to use forward AD with {op.name} that does not "
                                  "support it because it has not been implemented yet.")
    if rule is None:
        rule = derived_rule(op)
    if rule is None and op.view and all(t is None for t in tangents[1:]):
        rule = _view_rule(op)
    if rule is None and op.derivative is not None and _all_real(inputs, results):
        rule = transposed_jvp(op)
    if rule is None:
        raise NotImplementedError(f"Trying to use forward AD with {op.name} that does not "
                                  "support it because it has not been implemented yet.")
    _state.busy = True
    try:
        out = rule(inputs, tangents, results, **params)
        # a view's tangent is part of its input's owner's
        owner = _owner(inputs[0]) if op.view and tangents[0] is not None else None
        if op.multi_output:
            for i, (r, t) in enumerate(zip(results, out)):
                if t is not None:
                    _set_tangent(r, _fit(t, r), owner)
                    _share_with_saved_output(r, i)
        elif out is not None:
            _set_tangent(results, _fit(out, results), owner)
            _share_with_saved_output(results, 0)
    finally:
        _state.busy = False


def _share_with_saved_output(result, index):
    """Give the alias of ``result`` saved for its backward the same tangent, so that a
    backward pass run inside this level (forward-over-reverse: ``jacfwd(jacrev(f))``)
    differentiates the saved output too."""
    saved = getattr(result._grad_fn, "_saved_out", None)
    if saved and index < len(saved) and saved[index]._data is result._data:
        saved[index]._fw_grad = result._fw_grad


def _all_real(inputs, results):
    arrays = list(inputs) + list(results if isinstance(results, tuple) else (results,))
    return not any(t._data.dtype.kind == "c" for t in arrays)


def transposed_jvp(op):
    """The rule of any op with a reverse derivative (real tensors): the "double vjp" trick.

    The derivative computes ``u = J^T v`` and is linear in ``v``, so ``<J^T v, t> = <v, J t>``
    and the gradient of that number with respect to ``v`` is the tangent ``J t``. Derivatives
    are written with ember ops, so this runs reverse mode over them once; costlier than a
    dedicated rule, exact all the same (linear algebra, convolutions, pooling, ...).

    Example::

        >>> zeta_op.defjvp(transposed_jvp(zeta_op))   # instead of the element-wise rule
    """
    def rule(p, t, y, /, **params):
        from . import grad as reverse_grad
        from .grad_mode import enable_grad

        results = y if op.multi_output else (y,)
        differentiable = (op.differentiable_outputs if op.multi_output and
                          op.differentiable_outputs is not None else range(len(results)))
        with enable_grad():
            # the probes' values do not matter (the derivative is linear in them), but they
            # must not be zeros: some derivatives skip the terms of an all-zero gradient
            probes = [r.new_zeros(r._data.shape) for r in results]
            wrt = []
            for k in differentiable:
                if results[k]._data.dtype.kind == "f":
                    probes[k] = results[k].new_ones(results[k]._data.shape).requires_grad_()
                    wrt.append(k)
            needs = tuple(ti is not None for ti in t)
            try:
                grads = op.derivative(_ctx(p, y, needs), *probes, **params)
            except RuntimeError as error:  # an op whose derivative itself is missing (zeta)
                if "not implemented" not in str(error):
                    raise
                raise NotImplementedError(f"Trying to use forward AD with {op.name} that does "
                                          "not support it because it has not been implemented "
                                          "yet.") from error
            grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
            pairing = add_tangents(*((g * _fit(ti, g)).sum() for g, ti in zip(grads, t)
                               if g is not None and ti is not None))
            if pairing is None or not wrt:
                return None
            tangents = reverse_grad(pairing, [probes[k] for k in wrt], create_graph=True,
                                    allow_unused=True)
        out = [None] * len(results)
        for k, tangent in zip(wrt, tangents):
            out[k] = tangent if tangent is not None else results[k].new_zeros(())
        return tuple(out) if op.multi_output else out[0]
    return rule


def _differentiable_result(results):
    if isinstance(results, tuple):
        return any(_differentiable_result(r) for r in results)
    return results._data.dtype.kind in "fc" or results._data.dtype.name == "bfloat16"


def _fit(tangent, result):
    if tangent._data.shape != result._data.shape:
        tangent = tangent.expand(result._data.shape)
    if tangent._data.dtype != result._data.dtype:
        tangent = tangent.to(result.dtype)
    return tangent


def add_tangents(*terms):
    """The sum of the tangents that are not None (None when all are).

    Example::

        >>> add_tangents(None, ember.ones(2))
        tensor([1., 1.])
    """
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


# ---------------------------------------------------------------- rules for ops to pick
#
# Each op owns its forward-mode rule (``Op.jvp``), registered next to it with ``op.defjvp``;
# the factories below make the common ones (``sum_op.defjvp(reduction_jvp(sum_op))``). An op
# without one gets the rule that follows from what it is (:func:`derived_rule`, then the view
# rule and the transposed derivative in :func:`propagate`), or declines with
# ``op.opt_out("jvp", reason)``.


_derived = {}  # op -> the element-wise rule made for it from its kind (made once)


def derived_rule(op):
    """The forward-mode rule that follows from ``op``'s kind, or None: a pointwise op with a
    derivative (one output, not a view) has the element-wise rule :func:`elementwise_jvp`.

    Example::

        >>> derived_rule(ember.ops.pointwise.floor_divide_op) is not None
        True
    """
    rule = _derived.get(op)
    if rule is None and op.pointwise and op.derivative is not None and not op.view \
            and not op.multi_output:
        rule = _derived[op] = elementwise_jvp(op)
    return rule


def linear_jvp(op):
    """The rule of an op that is linear in its first tensor input: the op on the tangent.

    Example::

        >>> neg_op.defjvp(linear_jvp(neg_op))
    """
    def rule(p, t, y, /, **params):
        return op(t[0], *p[1:], **params)
    return rule


def _view_rule(op):
    """A view is linear in its input: the same view of the tangent (views given by explicit
    strides, which the tangent may not share, have their own rule: ``shape._alias_op``)."""
    def rule(p, t, y, /, **params):
        return op(t[0], *p[1:], **params)
    return rule


class _Ctx:
    """What a reverse-mode derivative reads from its :class:`Node`, built from the primals."""

    __slots__ = ("inputs", "output", "needs_input_grad", "_input_meta")

    def __init__(self, inputs, output, needs, meta):
        self.inputs, self.output, self.needs_input_grad, self._input_meta = (inputs, output,
                                                                             needs, meta)

    @property
    def input_shapes(self):
        return tuple(m[0] for m in self._input_meta)

    @property
    def input_dtypes(self):
        from .. import _dtype as dt

        return tuple(dt.from_numpy_dtype(m[1]) for m in self._input_meta)


def _ctx(p, y, needs):
    return _Ctx(tuple(p), y, needs, tuple((q._data.shape, q._data.dtype, q._device) for q in p))


def _real_only(op, p, y):
    if any(q._data.dtype.kind == "c" for q in p) or any(
            r._data.dtype.kind == "c" for r in (y if isinstance(y, tuple) else (y,))):
        raise NotImplementedError(f"Trying to use forward AD with {op.name} on complex tensors, "
                                  "which is not implemented yet.")


def _is_complex(t):
    return t._data.dtype.kind == "c"


def _wirtinger_tangent(d1, dj, x, tx, y_complex):
    """The tangent of one element-wise, R-linear map from its reverse-mode responses.

    The tangent map is ``t -> alpha * t + beta * conj(t)``; the reverse rule is its adjoint
    under ``Re<a, b>``, ``v -> conj(alpha) * v + beta * conj(v)``, so its responses to
    ``v = 1`` (``d1``) and ``v = 1j`` (``dj``, complex outputs only) give
    ``conj(alpha) = (d1 - 1j * dj) / 2`` and ``beta = (d1 + 1j * dj) / 2``. A real input has a
    real tangent (``alpha + beta = d1 + 1j * dj`` with the real parts of the responses); a real
    output has a real tangent, ``Re(conj(d1) * t)``.
    """
    if not _is_complex(x):
        if d1 is not None and _is_complex(d1):
            d1 = d1.real
        if not y_complex:
            return None if d1 is None else d1 * tx
        if dj is not None and _is_complex(dj):
            dj = dj.real
        return add_tangents(None if d1 is None else d1 * tx, None if dj is None else dj * tx * 1j)
    if not y_complex:
        return None if d1 is None else (d1.conj() * tx).real
    if d1 is None and dj is None:
        return None
    d1 = 0 if d1 is None else d1
    dj = 0 if dj is None else dj * 1j
    return ((d1 - dj) / 2).conj() * tx + ((d1 + dj) / 2) * tx.conj()


def _responses(op, p, y, needs, params, shape=None):
    """The reverse derivative of ``op`` applied to a gradient of ones and, for a complex
    output, of ``1j``: one pair per input (None where not needed)."""
    ctx = _ctx(p, y, needs)
    ones = y.new_ones(y._data.shape if shape is None else shape)

    def call(grad):
        grads = op.derivative(ctx, grad, **params)
        return tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)

    d1 = call(ones)
    dj = call(ones * 1j) if _is_complex(y) else (None,) * len(p)
    return d1, dj


def elementwise_jvp(op):
    """An elementwise op on real inputs has a diagonal Jacobian, so its tangent is its
    reverse-mode derivative applied to the tangent (summed over the inputs with tangents).
    With complex inputs or outputs, a holomorphic op's derivative is applied to the conjugated
    tangent and conjugated back; any other op gets its R-linear tangent map from the
    derivative's responses to 1 and 1j (:func:`_wirtinger_tangent`).

    Example::

        >>> complex_op.defjvp(elementwise_jvp(complex_op))
    """
    holomorphic = op.holomorphic

    def rule(p, t, y, /, **params):
        y_complex = _is_complex(y)
        any_complex = y_complex or any(_is_complex(q) for q in p)
        if any_complex and not (holomorphic and y_complex and all(_is_complex(q) for q in p)):
            return _generic_complex(op, p, t, y, params)
        total = None
        n = len(p)
        shape = y._data.shape
        for i, ti in enumerate(t):
            if ti is None:
                continue
            if ti._data.shape != shape:
                ti = ti.expand(shape)
            if any_complex:
                ti = ti.conj()
            grads = op.derivative(_ctx(p, y, tuple(j == i for j in range(n))), ti, **params)
            if not isinstance(grads, (tuple, list)):
                grads = (grads,)
            total = add_tangents(total, grads[i])
        return total.conj() if any_complex and total is not None else total
    return rule


def _generic_complex(op, p, t, y, params):
    needs = tuple(ti is not None for ti in t)
    d1, dj = _responses(op, p, y, needs, params)
    shape = y._data.shape
    total = None
    for i, ti in enumerate(t):
        if ti is None:
            continue
        if ti._data.shape != shape:
            ti = ti.expand(shape)
        total = add_tangents(total, _wirtinger_tangent(d1[i], dj[i], p[i], ti, _is_complex(y)))
    return total


def reduction_jvp(op):
    """A reduction where each input element feeds one output element: the tangent is the sum,
    over each reduced group, of the tangent times the partial derivative (the reverse-mode
    derivative of a gradient of ones). With complex numbers, the per-element map is R-linear
    (:func:`_wirtinger_tangent`) and summed the same way.

    Example::

        >>> sum_op.defjvp(reduction_jvp(sum_op))
    """
    def rule(p, t, y, /, **params):
        x, tx = p[0], t[0]
        needs = (True,) + (False,) * (len(p) - 1)
        if _is_complex(x) or _is_complex(y):
            d1, dj = _responses(op, p, y, needs, params)
            prod = _wirtinger_tangent(d1[0], dj[0], x, tx, _is_complex(y))
        else:
            ones = y.new_ones(y._data.shape)
            prod = tx * op.derivative(_ctx(p, y, needs), ones, **params)[0]
        dims = params.get("dims")
        if dims is None:
            dims = tuple(range(x._data.ndim))
        if not dims:
            return prod
        return prod.sum(dims, keepdim=params.get("keepdim", False))
    return rule


def select_jvp(p, t, y, /, *, dim, keepdim=True, **params):
    """Ops returning (values, indices) of elements picked along ``dim`` (max/min over a dim,
    sort, topk, kthvalue, median, mode, cummax/cummin): the tangent at the same indices.

    Example::

        >>> sort_op.defjvp(select_jvp)
    """
    tx = t[0]
    if tx._data.ndim == 0:
        return tx, None
    idx = y[1] if keepdim else y[1].unsqueeze(dim)
    value = tx.gather(dim, idx)
    return (value if keepdim else value.squeeze(dim)), None


def symmetric_jvp(op):
    """An op whose Jacobian is symmetric (softmax): the tangent is the derivative applied to it.

    Example::

        >>> softmax_op.defjvp(symmetric_jvp(softmax_op))
    """
    def rule(p, t, y, /, **params):
        _real_only(op, p, y)
        return op.derivative(_ctx(p, y, (True,)), t[0], **params)[0]
    return rule


def first_linear_jvp(op):
    """Linear in its first input, the other inputs are indices (no tangent).

    Example::

        >>> gather_op.defjvp(first_linear_jvp(gather_op))
    """
    lin = linear_jvp(op)

    def rule(p, t, y, /, **params):
        if any(tq is not None for tq in t[1:]):
            raise NotImplementedError(f"forward AD of {op.name} w.r.t. its index argument")
        return lin(p, t, y, **params)
    return rule


def _is_dual(t):
    return isinstance(t, Tensor) and _tangent(t) is not None
