"""``routed_decode``: decode ``(path, stream)`` pairs by the file's extension."""

from __future__ import annotations

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.decoder import Decoder, basichandlers, extension_extract_fn

__all__ = ["RoutedDecoderIterDataPipe"]


@functional_datapipe("routed_decode")
class RoutedDecoderIterDataPipe(IterDataPipe):
    """Decode each ``(path, stream or bytes)`` with the first handler that accepts its
    extension (``key_fn`` extracts it); the basic handlers (text, json, pickle, ...) come last.

    Example::

        >>> import io
        >>> list(RoutedDecoderIterDataPipe([("a.json", io.BytesIO(b'{"k": 1}'))]))
        [('a.json', {'k': 1})]
    """

    def __init__(self, datapipe, *handlers, key_fn=extension_extract_fn):
        self.datapipe = datapipe
        if not handlers:
            handlers = (basichandlers,)
        self.decoder = Decoder(*handlers, key_fn=key_fn)

    def add_handler(self, *handler):
        self.decoder.add_handler(*handler)

    def __iter__(self):
        for data in self.datapipe:
            path = data[0]
            yield path, self.decoder(data)[path]

    def __len__(self):
        if hasattr(self.datapipe, "__len__"):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
