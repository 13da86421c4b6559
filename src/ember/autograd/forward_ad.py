"""Forward-mode automatic differentiation: dual tensors carry a tangent through each op.

Inside a :class:`dual_level`, :func:`make_dual` attaches a tangent to a tensor; every op whose
input has a tangent computes its output's tangent with the op's ``jvp`` rule (``Op.jvp``), and
:func:`unpack_dual` reads it back. Rules are written with ember ops, so tangents are themselves
differentiable by reverse mode. One level at a time, as in torch.

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
    _install_rules()
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


def _tangent(t):
    fw = getattr(t, "_fw_grad", None)
    if fw is None or fw[0] != _state.level:
        return None
    return fw[1]


def _set_tangent(t, tangent):
    t._fw_grad = (_state.level, tangent)


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


# ---------------------------------------------------------------- propagation


def propagate(op, inputs, params, results):
    """Compute the tangent of ``op``'s results from its inputs' tangents (dispatcher hook)."""
    if _state.busy:
        return
    tangents = [_tangent(t) for t in inputs]
    if all(t is None for t in tangents):
        return
    rule = op.jvp
    if rule is None and op.view and all(t is None for t in tangents[1:]):
        rule = _view_rule(op)
    if rule is None:
        raise NotImplementedError(f"Trying to use forward AD with {op.name} that does not "
                                  "support it because it has not been implemented yet.")
    _state.busy = True
    try:
        out = rule(inputs, tangents, results, **params)
        if op.multi_output:
            for r, t in zip(results, out):
                if t is not None:
                    _set_tangent(r, _fit(t, r))
        elif out is not None:
            _set_tangent(results, _fit(out, results))
    finally:
        _state.busy = False


def _fit(tangent, result):
    if tangent._data.shape != result._data.shape:
        tangent = tangent.expand(result._data.shape)
    if tangent._data.dtype != result._data.dtype:
        tangent = tangent.to(result.dtype)
    return tangent


def _total(*terms):
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def _add_rule(p, t, y, alpha=1):
    ta, tb = t
    return _total(ta, None if tb is None else (tb if alpha == 1 else tb * alpha))


def _sub_rule(p, t, y, alpha=1):
    ta, tb = t
    return _total(ta, None if tb is None else (-tb if alpha == 1 else tb * -alpha))


def _mul_rule(p, t, y):
    (a, b), (ta, tb) = p, t
    return _total(None if ta is None else ta * b, None if tb is None else a * tb)


def _div_rule(p, t, y):
    b, (ta, tb) = p[1], t
    return _total(None if ta is None else ta / b, None if tb is None else -tb * y / b)


def _pow_rule(p, t, y):
    from ..ops.pointwise import where

    (a, b), (ta, tb) = p, t
    da = None if ta is None else where(b == 0, 0.0, ta * b * a ** (b - 1))
    db = None if tb is None else tb * y * where((a == 0) & (b >= 0), 0.0, a.log())
    return _total(da, db)


def _unary(derivative):
    def rule(p, t, y):
        return derivative(p[0], y, t[0])
    return rule


def _linear(op):
    """The rule of an op that is linear in its first tensor input: the op on the tangent."""
    def rule(p, t, y, **params):
        return op(t[0], *p[1:], **params)
    return rule


_ORDER_KEEPING_VIEWS = {"view", "squeeze", "unsqueeze", "alias", "reshape"}


def _view_rule(op):
    """A view is linear in its input: the same view of the tangent. Views given by explicit
    strides (view, squeeze, unsqueeze, alias) keep the element order, so the tangent, whose
    strides may differ from the primal's, is reshaped instead."""
    def rule(p, t, y, **params):
        if op.name in _ORDER_KEEPING_VIEWS:
            return t[0].reshape(params["shape"])
        return op(t[0], *p[1:], **params)
    return rule


def _where_rule(p, t, y):
    from ..ops.pointwise import where

    (c, a, b), (_, ta, tb) = p, t
    if ta is None:
        ta = a.new_zeros(())
    if tb is None:
        tb = b.new_zeros(())
    return where(c, ta, tb)


def _matmul_rule(p, t, y, **params):
    from ..ops import linalg

    (a, b), (ta, tb) = p, t
    return _total(None if ta is None else linalg.matmul(ta, b),
                  None if tb is None else linalg.matmul(a, tb))


_installed = set()


def _install_rules():
    """Give the ops that exist their jvp rule (done once per op, when forward AD is first used)."""
    from ..ops import creation, linalg, pointwise, reduce

    rules = []
    for module, name, rule in [
            (pointwise, "add_op", _add_rule), (pointwise, "sub_op", _sub_rule),
            (pointwise, "mul_op", _mul_rule),
            (pointwise, "div_op", _div_rule), (pointwise, "neg_op", None),
            (pointwise, "pow_op", _pow_rule), (pointwise, "where_op", _where_rule),
            (pointwise, "conj_op", None), (reduce, "sum_op", None), (reduce, "mean_op", None),
            (creation, "clone_op", None), (creation, "to_copy_op", None)]:
        op = getattr(module, name, None)
        if op is not None:
            rules.append((op, rule or _linear(op)))
    unary = {
        "exp": lambda x, y, g: g * y,
        "log": lambda x, y, g: g / x,
        "sin": lambda x, y, g: g * x.cos(),
        "cos": lambda x, y, g: -g * x.sin(),
        "tanh": lambda x, y, g: g * (1 - y * y),
        "sqrt": lambda x, y, g: g / (2 * y),
        "abs": lambda x, y, g: g * x.sgn(),
    }
    for name, derivative in unary.items():
        fn = getattr(pointwise, name, None)
        if fn is not None and hasattr(fn, "op"):
            rules.append((fn.op, _unary(derivative)))
    for name in ("matmul_op", "mm_op", "bmm_op", "mv_op", "dot_op"):
        op = getattr(linalg, name, None)
        if op is not None:
            rules.append((op, _matmul_rule))
    for op, rule in rules:
        if op not in _installed and getattr(op, "jvp", None) is None:
            op.jvp = rule
            _installed.add(op)


def _is_dual(t):
    return isinstance(t, Tensor) and _tangent(t) is not None
