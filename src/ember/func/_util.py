"""Helpers shared by ember.func's transforms: which tensors carry derivatives, and fresh
differentiable stand-ins that keep a forward-mode tangent.

A transform nested inside ``jvp``/``jacfwd`` sees dual tensors (tensors with a tangent at the
active forward-AD level); ``detach`` would drop that tangent, so stand-ins are made with
``view_as``, which passes it on.

Example::

    >>> x = ember.ones(2)
    >>> differentiable(x).requires_grad, carries_derivatives((x,))
    (True, False)
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd import forward_ad
from . import _pytree


def has_tangent(t):
    """True when ``t`` carries a tangent at the active forward-AD level.

    Example::

        >>> has_tangent(ember.ones(1))
        False
    """
    return forward_ad._state.level is not None and forward_ad._tangent(t) is not None


def carries_derivatives(tree):
    """True when a tensor in ``tree`` requires grad or carries a forward-AD tangent: results
    computed from it must keep their graph (and tangents) for an enclosing transform.

    Example::

        >>> carries_derivatives({"w": ember.ones(1, requires_grad=True)})
        True
    """
    for leaf in _pytree.flatten(tree)[0]:
        if isinstance(leaf, Tensor) and (leaf.requires_grad or has_tangent(leaf)):
            return True
    return False


def differentiable(t):
    """A tensor equal to ``t`` that requires grad, through which gradients (when ``t``
    requires grad) and tangents (when it has one) flow back to ``t``.

    Example::

        >>> differentiable(ember.ones(1)).requires_grad
        True
    """
    if t.requires_grad:
        return t.view_as(t)
    if has_tangent(t):
        return t.view_as(t).requires_grad_()
    return t.detach().requires_grad_()


def detach_tensors(tree):
    """``tree`` with every tensor detached (results of a transform nobody differentiates).

    Example::

        >>> detach_tensors((ember.ones(1, requires_grad=True) * 2,))[0].requires_grad
        False
    """
    leaves, spec = _pytree.flatten(tree)
    return _pytree.unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)
