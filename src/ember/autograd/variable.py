"""``Variable``: the pre-0.4 wrapper around tensors, kept (as torch keeps it) for old code.

Since tensors carry autograd state themselves, ``Variable(t)`` is a new tensor sharing ``t``'s
memory, detached from its graph, and ``isinstance(x, Variable)`` holds for every tensor.
"""

from __future__ import annotations

import warnings

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, instance):
        from .._tensor import Tensor

        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """The legacy autograd wrapper: ``Variable(t, requires_grad=False)`` returns a tensor that
    shares ``t``'s memory, detached, with ``requires_grad`` set; ``Variable()`` an empty one.

    Example::

        >>> v = ember.autograd.Variable(ember.ones(2), requires_grad=True)
        >>> v.requires_grad, v.is_leaf, isinstance(v, ember.autograd.Variable)
        (True, True, True)
    """

    def __new__(cls, data=None, requires_grad=False, volatile=None):
        from .._tensor import Tensor
        from ..ops.creation import empty

        if volatile is not None:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():"
                          "` instead.", UserWarning, stacklevel=2)
        if data is None:
            result = empty(0)
        elif isinstance(data, Tensor):
            result = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return result.requires_grad_(bool(requires_grad))


VariableMeta = _VariableMeta  # torch's public name for the metaclass of Variable
