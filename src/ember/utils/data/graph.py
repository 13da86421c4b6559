"""``traverse_dps``: the graph of a DataPipe and the DataPipes it reads from.

The graph is a nested dict ``{id(dp): (dp, {id(source): (source, {...}), ...})}`` built from
the DataPipes stored in each pipe's attributes (directly or inside lists, tuples, dicts).

Example::

    >>> from ember.utils.data.datapipes.iter import IterableWrapper
    >>> source = IterableWrapper(range(3))
    >>> graph = traverse_dps(source.map(str))
    >>> [dp for dp, _ in graph.values()][0].__class__.__name__
    'MapperIterDataPipe'
"""

from __future__ import annotations

import warnings

from .datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = ["traverse", "traverse_dps"]

_DataPipes = (IterDataPipe, MapDataPipe)


def _sources(datapipe):
    """The DataPipes directly held by ``datapipe``'s attributes, in order, without repeats."""
    found, seen = [], set()

    def visit(value, depth):
        if isinstance(value, _DataPipes):
            if id(value) not in seen:
                seen.add(id(value))
                found.append(value)
        elif depth < 3 and isinstance(value, (list, tuple, set)):
            for item in value:
                visit(item, depth + 1)
        elif depth < 3 and isinstance(value, dict):
            for item in value.values():
                visit(item, depth + 1)
        elif hasattr(value, "source") and hasattr(value, "queues"):  # fork/demux buffer
            visit(value.source, depth + 1)

    for value in vars(datapipe).values():
        visit(value, 0)
    return found


def _graph(datapipe, path):
    if id(datapipe) in path:  # a cycle: stop here, as torch does
        return {}
    path = path | {id(datapipe)}
    return {id(s): (s, _graph(s, path)) for s in _sources(datapipe)}


def traverse_dps(datapipe):
    """The graph of ``datapipe`` and everything it reads from (see the module docstring).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> len(traverse_dps(IterableWrapper([1])))
        1
    """
    return {id(datapipe): (datapipe, _graph(datapipe, frozenset()))}


def traverse(datapipe, only_datapipe=None):
    """Deprecated form of :func:`traverse_dps` (torch warns the same way).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> len(traverse(IterableWrapper([1]), only_datapipe=True))
        1
    """
    message = ("`traverse` function and will be removed after 1.13. Please use "
               "`traverse_dps` instead.")
    if not only_datapipe:
        message += " And, the behavior will be changed to the equivalent of `only_datapipe=True`."
    warnings.warn(message, FutureWarning, stacklevel=2)
    return traverse_dps(datapipe)
