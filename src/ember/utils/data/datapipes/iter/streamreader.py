"""``read_from_stream``: ``(name, chunk)`` pairs from ``(name, stream)`` pairs."""

from __future__ import annotations

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe

__all__ = ["StreamReaderIterDataPipe"]


@functional_datapipe("read_from_stream")
class StreamReaderIterDataPipe(IterDataPipe):
    """Read each stream whole, or in chunks of ``chunk`` bytes/characters, then close it.

    Example::

        >>> import io
        >>> list(StreamReaderIterDataPipe([("f", io.StringIO("abc"))], chunk=2))
        [('f', 'ab'), ('f', 'c')]
    """

    def __init__(self, datapipe, chunk=None):
        self.datapipe = datapipe
        self.chunk = chunk

    def __iter__(self):
        for name, stream in self.datapipe:
            while True:
                data = stream.read(self.chunk) if self.chunk is not None else stream.read()
                if not data:
                    stream.close()
                    break
                yield name, data
