"""``concat`` and ``zip`` on MapDataPipes."""

from __future__ import annotations

from .._decorator import functional_datapipe
from ..datapipe import MapDataPipe

__all__ = ["ConcaterMapDataPipe", "ZipperMapDataPipe"]


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    """The items of each pipe in turn, indexed as one sequence.

    Example::

        >>> from ember.utils.data.datapipes.map import SequenceWrapper
        >>> SequenceWrapper([1]).concat(SequenceWrapper([2, 3]))[2]
        3
    """

    def __init__(self, *datapipes):
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `MapDataPipe`")
        if not all(hasattr(dp, "__len__") for dp in datapipes):
            raise TypeError("Expected all inputs to be `Sized`")
        self.datapipes = datapipes

    def __getitem__(self, index):
        offset = index
        for dp in self.datapipes:
            if offset < len(dp):
                return dp[offset]
            offset -= len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    """Tuples of the items at the same index of each pipe (length of the shortest).

    Example::

        >>> from ember.utils.data.datapipes.map import SequenceWrapper
        >>> SequenceWrapper([1, 2]).zip(SequenceWrapper("ab"))[1]
        (2, 'b')
    """

    def __init__(self, *datapipes):
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `MapDataPipe`")
        if not all(hasattr(dp, "__len__") for dp in datapipes):
            raise TypeError("Expected all inputs to be `Sized`")
        self.datapipes = datapipes

    def __getitem__(self, index):
        items = []
        for dp in self.datapipes:
            try:
                items.append(dp[index])
            except IndexError as e:
                raise IndexError(f"Index {index} is out of range for one of the input "
                                 f"MapDataPipes {dp}.") from e
        return tuple(items)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)
