"""``batch`` on a MapDataPipe."""

from __future__ import annotations

from .._decorator import functional_datapipe
from ..datapipe import DataChunk, MapDataPipe

__all__ = ["BatcherMapDataPipe"]


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe):
    """Batch ``index`` holds items ``index * batch_size`` onwards (the last batch shorter unless
    ``drop_last``).

    Example::

        >>> from ember.utils.data.datapipes.map import SequenceWrapper
        >>> SequenceWrapper(range(5)).batch(2)[2]
        [4]
    """

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index):
        batch = []
        indices = range(index * self.batch_size, (index + 1) * self.batch_size)
        try:
            for i in indices:
                batch.append(self.datapipe[i])
            return self.wrapper_class(batch)
        except IndexError as e:
            if not self.drop_last and len(batch) > 0:
                return self.wrapper_class(batch)
            raise IndexError(f"Index {index} is out of bound.") from e

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
