"""``SequenceWrapper``: a sequence as a MapDataPipe."""

from __future__ import annotations

import copy
import warnings

from ..datapipe import MapDataPipe

__all__ = ["SequenceWrapperMapDataPipe"]


class SequenceWrapperMapDataPipe(MapDataPipe):
    """Index into ``sequence`` (a deep copy of it, unless ``deepcopy=False``).

    Example::

        >>> SequenceWrapperMapDataPipe("abc")[1]
        'b'
    """

    def __init__(self, sequence, deepcopy=True):
        self.sequence = sequence
        if deepcopy:
            try:
                self.sequence = copy.deepcopy(sequence)
            except TypeError:
                warnings.warn("The input sequence can not be deepcopied, please be aware of "
                              "in-place modification would affect source data", stacklevel=2)

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self):
        return len(self.sequence)
