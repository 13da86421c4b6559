"""``IterableWrapper``: any Python iterable as an IterDataPipe."""

from __future__ import annotations

import copy
import warnings

from ..datapipe import IterDataPipe

__all__ = ["IterableWrapperIterDataPipe"]


class IterableWrapperIterDataPipe(IterDataPipe):
    """Iterate over ``iterable`` (a deep copy of it, unless ``deepcopy=False``).

    Example::

        >>> list(IterableWrapperIterDataPipe(range(3)))
        [0, 1, 2]
    """

    def __init__(self, iterable, deepcopy=True):
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:
                warnings.warn("The input iterable can not be deepcopied, please be aware of "
                              "in-place modification would affect source data.", stacklevel=2)
        yield from source

    def __len__(self):
        return len(self.iterable)
