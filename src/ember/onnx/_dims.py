"""Sizes that follow the dynamic axes, found by tracing the model more than once.

ember's tracer records sizes as numbers (``view[shape=(2, 4)]``), so one trace cannot tell
a batch size from a constant 2. The exporter therefore traces once with the example inputs
and once more per dynamic axis name, with that axis twice as long. A size that differs
between the traces depends on the dynamic axes: it becomes a :class:`Dim`, which remembers
its value in every trace. Two sizes are the same symbolic size when their values agree in
every trace, and :func:`monomial` fits ``size = coefficient * axis ** power * ...``, the form
of flattened batch axes (``batch * 4``) or of attention scores (``seq * seq``).
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["Dim", "TraceMismatch", "merge", "monomial"]


class TraceMismatch(Exception):
    """The traces differ in more than sizes (another op, another constant)."""


class Dim:
    """A size that changes with the dynamic axes: its value in each trace (example first).

    Example::

        >>> Dim((2, 4)) == Dim((2, 4)), Dim((2, 4)).value
        (True, 2)
    """

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = tuple(values)

    @property
    def value(self):
        """The size in the trace with the example inputs."""
        return self.values[0]

    def __eq__(self, other):
        return isinstance(other, Dim) and self.values == other.values

    def __hash__(self):
        return hash(self.values)

    def __repr__(self):
        return f"Dim{self.values}"


def merge(items):
    """One structure from the parallel ``items`` of each trace: ints that differ become a
    :class:`Dim`; anything else that differs raises :class:`TraceMismatch`.

    Example::

        >>> merge([(3, 2), (3, 4)])
        (3, Dim(2, 4))
    """
    first = items[0]
    if isinstance(first, bool) or not isinstance(first, int):
        if isinstance(first, (tuple, list)):
            if any(not isinstance(i, type(first)) or len(i) != len(first) for i in items):
                raise TraceMismatch(f"{items}")
            merged = [merge([i[k] for i in items]) for k in range(len(first))]
            return type(first)(merged)
        if isinstance(first, slice):
            parts = [merge([getattr(i, a) for i in items]) for a in ("start", "stop", "step")]
            return slice(*parts)
        if isinstance(first, dict):
            if any(list(i) != list(first) for i in items):
                raise TraceMismatch(f"{items}")
            return {k: merge([i[k] for i in items]) for k in first}
        if any(type(i) is not type(first) or i != first for i in items):
            raise TraceMismatch(f"{items}")
        return first
    if any(isinstance(i, bool) or not isinstance(i, int) for i in items):
        raise TraceMismatch(f"{items}")
    if all(i == first for i in items):
        return first
    return Dim(items)


def monomial(dim, axis_sizes, growth=2):
    """``(coefficient, {axis name: power})`` with ``dim = coefficient * prod(axis ** power)``
    in every trace, or None when no such form fits.

    ``axis_sizes``: the example size of each dynamic axis name, in the order of the extra
    traces (trace ``k + 1`` multiplies axis ``k`` by ``growth``).

    Example::

        >>> monomial(Dim((6, 12)), {"batch": 2})
        (Fraction(3, 1), {'batch': 1})
    """
    base = dim.value
    if base == 0:
        return None
    powers = {}
    divisor = Fraction(1)
    for k, (name, size) in enumerate(axis_sizes.items()):
        ratio = Fraction(dim.values[k + 1], base)
        power = next((p for p in range(4) if Fraction(growth) ** p == ratio), None)
        if power is None:
            return None
        if power:
            powers[name] = power
            divisor *= Fraction(size) ** power
    return Fraction(base) / divisor, powers
