"""``ember.fx.tensor_type``: gradual tensor types for annotating graphs: a
:class:`TensorType` lists the dimensions, each a size or :data:`Dyn` (unknown).

>>> TensorType((2, Dyn))
TensorType[(2, Dyn)]
>>> is_consistent(TensorType((2, Dyn)), TensorType((2, 3)))
True
"""

from __future__ import annotations

__all__ = ["Dyn", "TensorType", "is_consistent", "is_more_precise"]


class TensorType:
    """The type of a tensor with the given dimensions (``TensorType[(1, Dyn)]`` also works).

    >>> TensorType[1, 2] == TensorType((1, 2))
    True
    """

    def __init__(self, dim):
        self.__origin__ = TensorType
        self.__args__ = dim

    @property
    def dims(self):
        """The dimensions: sizes or :data:`Dyn`."""
        return self.__args__

    def __repr__(self):
        return f"TensorType[{self.dims}]"

    def __eq__(self, other):
        return isinstance(other, type(self)) and list(self.dims) == list(other.dims)

    __hash__ = None

    @staticmethod
    def __class_getitem__(*args):
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        return TensorType(tuple(args))


class _DynType:
    """The unknown type (or size): consistent with everything, less precise than anything."""

    def __init__(self):
        self.__name__ = "_DynType"

    def __eq__(self, other):
        return isinstance(other, type(self))

    __hash__ = None

    def __str__(self):
        return "Dyn"

    __repr__ = __str__


Dyn = _DynType()


def is_consistent(t1, t2):
    """Whether ``t1`` and ``t2`` can describe the same value (``Dyn`` matches anything;
    tensor types match dimension by dimension). Reflexive and symmetric, not transitive.

    >>> is_consistent(int, Dyn), is_consistent(TensorType((1, 2)), TensorType((1, 3)))
    (True, False)
    """
    if t1 == t2 or t1 == Dyn or t2 == Dyn:
        return True
    if isinstance(t1, TensorType) and isinstance(t2, TensorType):
        return len(t1.dims) == len(t2.dims) and all(
            is_consistent(a, b) for a, b in zip(t1.dims, t2.dims))
    return False


def is_more_precise(t1, t2):
    """Whether ``t1`` is at least as precise as ``t2`` (everything is more precise than
    ``Dyn``). Reflexive and transitive.

    >>> is_more_precise(TensorType((1, 2)), TensorType((1, Dyn)))
    True
    """
    if t1 == t2 or isinstance(t2, _DynType):
        return True
    if isinstance(t1, TensorType) and isinstance(t2, TensorType):
        return len(t1.dims) == len(t2.dims) and all(
            is_more_precise(a, b) for a, b in zip(t1.dims, t2.dims))
    return False
