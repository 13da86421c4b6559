"""``concat``, ``zip``, ``mux``, ``fork`` and ``demux``: pipes from several pipes, or several
pipes from one."""

from __future__ import annotations

import copy as copymodule
from collections import deque

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe

__all__ = ["ConcaterIterDataPipe", "DemultiplexerIterDataPipe", "ForkerIterDataPipe",
           "MultiplexerIterDataPipe", "ZipperIterDataPipe"]


def _all_lengths(pipes, owner):
    if all(hasattr(dp, "__len__") for dp in pipes):
        return [len(dp) for dp in pipes]
    raise TypeError(f"{type(owner).__name__} instance doesn't have valid length")


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """The items of each pipe in turn.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(IterableWrapper([1]).concat(IterableWrapper([2, 3])))
        [1, 2, 3]
    """

    def __init__(self, *datapipes):
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self):
        return sum(_all_lengths(self.datapipes, self))


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    """Tuples of one item from each pipe, until the shortest ends.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(IterableWrapper([1, 2]).zip(IterableWrapper("ab")))
        [(1, 'a'), (2, 'b')]
    """

    def __init__(self, *datapipes):
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for "
                            "`ZipIterDataPipe`.")
        self.datapipes = datapipes

    def __iter__(self):
        yield from zip(*self.datapipes)

    def __len__(self):
        return min(_all_lengths(self.datapipes, self))


@functional_datapipe("mux")
class MultiplexerIterDataPipe(IterDataPipe):
    """One item from each pipe in turn, stopping at the first round a pipe cannot complete.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(IterableWrapper([1, 2, 3]).mux(IterableWrapper([10, 20])))
        [1, 10, 2, 20]
    """

    def __init__(self, *datapipes):
        self.datapipes = datapipes

    def __iter__(self):
        iterators = [iter(dp) for dp in self.datapipes]
        while iterators:
            round_items = []
            for it in iterators:
                try:
                    round_items.append(next(it))
                except StopIteration:
                    return
            yield from round_items

    def __len__(self):
        return min(_all_lengths(self.datapipes, self)) * len(self.datapipes)


class _SharedBuffer:
    """One pass over ``source`` shared by ``n`` readers, holding at most ``buffer_size`` items
    that some reader has not yet consumed (``buffer_size < 0``: unlimited)."""

    def __init__(self, source, n, buffer_size, route=None, drop_none=False, copy=None):
        self.source, self.n, self.buffer_size = source, n, buffer_size
        self.route, self.drop_none, self.copy = route, drop_none, copy
        self.iterator = None
        self.queues = [deque() for _ in range(n)]
        self.exhausted = False

    def _pull(self):
        if self.iterator is None:
            self.iterator = iter(self.source)
        try:
            item = next(self.iterator)
        except StopIteration:
            self.exhausted = True
            return
        targets = range(self.n) if self.route is None else [self.route(item)]
        for target in targets:
            if target is None:
                continue
            queue = self.queues[target]
            if 0 <= self.buffer_size <= len(queue):
                raise BufferError(f"{self.kind} buffer overflow, buffer size "
                                  f"{self.buffer_size} is insufficient.")
            queue.append(self._copied(item))

    def _copied(self, item):
        if self.copy == "shallow":
            return copymodule.copy(item)
        if self.copy == "deep":
            return copymodule.deepcopy(item)
        return item

    def read(self, index):
        while True:
            if self.queues[index]:
                yield self.queues[index].popleft()
            elif self.exhausted:
                return
            else:
                self._pull()


class _Child(IterDataPipe):
    """The ``index``-th output of a fork or demux."""

    def __init__(self, shared, index):
        self.main_datapipe = shared
        self.instance_id = index

    def __iter__(self):
        shared = self.main_datapipe
        if shared.exhausted and not any(shared.queues):  # a new epoch: read the source again
            shared.iterator, shared.exhausted = None, False
        yield from shared.read(self.instance_id)

    def __len__(self):
        source = self.main_datapipe.source
        if self.main_datapipe.route is None and hasattr(source, "__len__"):
            return len(source)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("fork")
class ForkerIterDataPipe(IterDataPipe):
    """``num_instances`` pipes that each yield every item of ``datapipe`` (one pass, buffered).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> a, b = IterableWrapper(range(3)).fork(2)
        >>> list(zip(a, b))
        [(0, 0), (1, 1), (2, 2)]
    """

    def __new__(cls, datapipe, num_instances, buffer_size=1000, copy=None):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is "
                             "found")
        if num_instances == 1:
            return datapipe
        if copy not in (None, "shallow", "deep"):
            raise ValueError(f"Unknown copy method `{copy}` requested, choose one of None, "
                             "`shallow` or `deep`.")
        shared = _SharedBuffer(datapipe, num_instances, buffer_size, copy=copy)
        shared.kind = "ForkerIterDataPipe"
        return [_Child(shared, i) for i in range(num_instances)]


@functional_datapipe("demux")
class DemultiplexerIterDataPipe(IterDataPipe):
    """``num_instances`` pipes; item ``x`` goes to pipe ``classifier_fn(x)`` (None: dropped when
    ``drop_none``).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> even, odd = IterableWrapper(range(5)).demux(2, lambda x: x % 2)
        >>> list(even), list(odd)
        ([0, 2, 4], [1, 3])
    """

    def __new__(cls, datapipe, num_instances, classifier_fn, drop_none=False, buffer_size=1000):
        if num_instances < 1:
            raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is "
                             "found")

        def route(item):
            target = classifier_fn(item)
            if target is None and drop_none:
                return None
            if not isinstance(target, int) or not 0 <= target < num_instances:
                raise ValueError("Output of the classification fn should be between 0 and "
                                 f"{num_instances - 1}. {target} is returned.")
            return target

        shared = _SharedBuffer(datapipe, num_instances, buffer_size, route=route)
        shared.kind = "DemultiplexerIterDataPipe"
        return [_Child(shared, i) for i in range(num_instances)]
