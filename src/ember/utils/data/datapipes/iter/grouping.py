"""``batch``, ``unbatch`` and ``groupby``."""

from __future__ import annotations

from collections import defaultdict

from .._decorator import functional_datapipe
from ..datapipe import DataChunk, IterDataPipe
from .callable import _length_of

__all__ = ["BatcherIterDataPipe", "GrouperIterDataPipe", "UnBatcherIterDataPipe"]


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    """Group consecutive items into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(IterableWrapper(range(5)).batch(2, drop_last=True))
        [[0, 1], [2, 3]]
    """

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self):
        batch = []
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self):
        n = _length_of(self.datapipe, self)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """Flatten batches ``unbatch_level`` levels deep (``-1``: all the way).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(IterableWrapper([[[0, 1], [2]], [[3]]]).unbatch(unbatch_level=2))
        [0, 1, 2, 3]
    """

    def __init__(self, datapipe, unbatch_level=1):
        self.datapipe = datapipe
        self.unbatch_level = unbatch_level

    def __iter__(self):
        for element in self.datapipe:
            yield from self._dive(element, self.unbatch_level)

    def _dive(self, element, level):
        if level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        if level == -1:
            if isinstance(element, (list, DataChunk)):
                for item in element:
                    yield from self._dive(item, -1)
            else:
                yield element
        elif level == 0:
            yield element
        elif isinstance(element, (list, DataChunk)):
            for item in element:
                yield from self._dive(item, level - 1)
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the "
                             "DataPipe")


@functional_datapipe("groupby")
class GrouperIterDataPipe(IterDataPipe):
    """Group items by ``group_key_fn`` in a buffer of ``buffer_size``; a group is emitted when
    it reaches ``group_size``, when the buffer is full (the biggest group), or at the end.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> sorted(IterableWrapper(range(6)).groupby(lambda x: x % 2))
        [[0, 2, 4], [1, 3, 5]]
    """

    def __init__(self, datapipe, group_key_fn, *, keep_key=False, buffer_size=10000,
                 group_size=None, guaranteed_group_size=None, drop_remaining=False):
        self.datapipe = datapipe
        self.group_key_fn = group_key_fn
        self.keep_key = keep_key
        self.max_buffer_size = buffer_size
        self.buffer_elements = defaultdict(list)
        self.curr_buffer_size = 0
        self.group_size = group_size
        self.guaranteed_group_size = None
        if group_size is not None and buffer_size is not None:
            if not 0 < group_size <= buffer_size:
                raise AssertionError("group_size must be > 0 and <= buffer_size")
            self.guaranteed_group_size = group_size
        if guaranteed_group_size is not None:
            if group_size is None or not 0 < guaranteed_group_size <= group_size:
                raise AssertionError("guaranteed_group_size must be > 0 and <= group_size and "
                                     "group_size must be set")
            self.guaranteed_group_size = guaranteed_group_size
        self.drop_remaining = drop_remaining
        self.wrapper_class = DataChunk

    def _remove_biggest_group(self):
        key = max(self.buffer_elements, key=lambda k: len(self.buffer_elements[k]))
        group = self.buffer_elements.pop(key)
        self.curr_buffer_size -= len(group)
        if self.guaranteed_group_size is not None and len(group) < self.guaranteed_group_size:
            if not self.drop_remaining:
                raise RuntimeError("Failed to group items", str(group))
            return None
        return group

    def _emit(self, key, group):
        result = self.wrapper_class(group)
        return (key, result) if self.keep_key else result

    def __iter__(self):
        for x in self.datapipe:
            key = self.group_key_fn(x)
            self.buffer_elements[key].append(x)
            self.curr_buffer_size += 1
            if self.group_size is not None and len(self.buffer_elements[key]) == self.group_size:
                group = self.buffer_elements.pop(key)
                self.curr_buffer_size -= len(group)
                yield self._emit(key, group)
            if self.curr_buffer_size == self.max_buffer_size:
                group = self._remove_biggest_group()
                if group is not None:
                    # torch labels this group with the current item's key
                    yield self._emit(key, group)
        for key in tuple(self.buffer_elements):
            group = self.buffer_elements.pop(key)
            self.curr_buffer_size -= len(group)
            yield self._emit(key, group)

    def reset(self):
        self.curr_buffer_size = 0
        self.buffer_elements = defaultdict(list)
