"""``ember._dynamo.utils``: ``counters`` (graphs captured, recompiles, graph breaks).

Example::

    >>> ember._dynamo.utils.counters["stats"]["unique_graphs"] >= 0
    True
"""

from __future__ import annotations

from .._inductor.state import counters

__all__ = ["counters"]
