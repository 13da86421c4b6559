"""Placements: how a :class:`~ember.distributed.tensor.DTensor` is laid out along one mesh
dimension: split into chunks (:class:`Shard`), copied whole (:class:`Replicate`) or held as
per-rank terms of a pending reduction (:class:`Partial`)."""

from __future__ import annotations

__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    """Base class of the placements.

    Example::

        >>> Shard(0).is_shard(), Replicate().is_replicate()
        (True, True)
    """

    def is_shard(self, dim=None):
        return False

    def is_replicate(self):
        return False

    def is_partial(self, reduce_op=None):
        return False


class Shard(Placement):
    """Split along tensor dimension ``dim`` into ``torch.chunk``-sized pieces, one per rank.

    Example::

        >>> Shard(0)
        Shard(dim=0)
    """

    def __init__(self, dim=0):
        self.dim = dim

    def is_shard(self, dim=None):
        return dim is None or dim == self.dim

    def __eq__(self, other):
        return type(other) is Shard and other.dim == self.dim

    def __hash__(self):
        return hash(("Shard", self.dim))

    def __repr__(self):
        return f"Shard(dim={self.dim})"

    def __str__(self):
        return f"S({self.dim})"


class Replicate(Placement):
    """The whole tensor on every rank.

    Example::

        >>> Replicate()
        Replicate()
    """

    def is_replicate(self):
        return True

    def __eq__(self, other):
        return type(other) is Replicate

    def __hash__(self):
        return hash("Replicate")

    def __repr__(self):
        return "Replicate()"

    def __str__(self):
        return "R"


class Partial(Placement):
    """Every rank holds one term; the tensor is their reduction (``reduce_op``: ``"sum"``,
    ``"avg"``, ``"max"``, ``"min"``).

    Example::

        >>> Partial()
        Partial(sum)
    """

    def __init__(self, reduce_op="sum"):
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op=None):
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other):
        return type(other) is Partial and other.reduce_op == self.reduce_op

    def __hash__(self):
        return hash(("Partial", self.reduce_op))

    def __repr__(self):
        return f"Partial({self.reduce_op})"

    def __str__(self):
        return f"P({self.reduce_op})"
