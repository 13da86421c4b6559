"""``map`` on a MapDataPipe."""

from __future__ import annotations

from .._decorator import functional_datapipe
from ..datapipe import MapDataPipe

__all__ = ["MapperMapDataPipe", "default_fn"]


def default_fn(data):
    """The identity: a Mapper's default function."""
    return data


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    """``fn(datapipe[index])`` for each index.

    Example::

        >>> from ember.utils.data.datapipes.map import SequenceWrapper
        >>> SequenceWrapper([1, 2]).map(lambda x: x * 3)[1]
        6
    """

    def __init__(self, datapipe, fn=default_fn):
        self.datapipe = datapipe
        self.fn = fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])

    def __len__(self):
        return len(self.datapipe)
