"""``ember.utils.data.datapipes.iter``: the iterable DataPipes under their short names.

Example::

    >>> from ember.utils.data.datapipes.iter import IterableWrapper, Mapper
    >>> list(Mapper(IterableWrapper([1, 2]), lambda x: x + 1))
    [2, 3]
"""

from .callable import CollatorIterDataPipe as Collator
from .callable import MapperIterDataPipe as Mapper
from .combinatorics import SamplerIterDataPipe as Sampler
from .combinatorics import ShufflerIterDataPipe as Shuffler
from .combining import ConcaterIterDataPipe as Concater
from .combining import DemultiplexerIterDataPipe as Demultiplexer
from .combining import ForkerIterDataPipe as Forker
from .combining import MultiplexerIterDataPipe as Multiplexer
from .combining import ZipperIterDataPipe as Zipper
from .filelister import FileListerIterDataPipe as FileLister
from .fileopener import FileOpenerIterDataPipe as FileOpener
from .grouping import BatcherIterDataPipe as Batcher
from .grouping import GrouperIterDataPipe as Grouper
from .grouping import UnBatcherIterDataPipe as UnBatcher
from .routeddecoder import RoutedDecoderIterDataPipe as RoutedDecoder
from .selecting import FilterIterDataPipe as Filter
from .sharding import ShardingFilterIterDataPipe as ShardingFilter
from .streamreader import StreamReaderIterDataPipe as StreamReader
from .utils import IterableWrapperIterDataPipe as IterableWrapper

__all__ = ["Batcher", "Collator", "Concater", "Demultiplexer", "FileLister", "FileOpener",
           "Filter", "Forker", "Grouper", "IterableWrapper", "Mapper", "Multiplexer",
           "RoutedDecoder", "Sampler", "ShardingFilter", "Shuffler", "StreamReader", "UnBatcher",
           "Zipper"]
