"""``ember.utils.data.datapipes.map``: the map-style DataPipes under their short names.

Example::

    >>> from ember.utils.data.datapipes.map import SequenceWrapper, Mapper
    >>> Mapper(SequenceWrapper([1, 2]), lambda x: x + 1)[0]
    2
"""

from .callable import MapperMapDataPipe as Mapper
from .combinatorics import ShufflerIterDataPipe as Shuffler
from .combining import ConcaterMapDataPipe as Concater
from .combining import ZipperMapDataPipe as Zipper
from .grouping import BatcherMapDataPipe as Batcher
from .utils import SequenceWrapperMapDataPipe as SequenceWrapper

__all__ = ["Batcher", "Concater", "Mapper", "SequenceWrapper", "Shuffler", "Zipper"]
