"""Decoders for ``routed_decode``: file contents to Python values, chosen by extension.

Example::

    >>> basichandlers("json", b'{"a": 1}')
    {'a': 1}
"""

from __future__ import annotations

import io
import json
import os
import pickle

from .common import StreamWrapper

__all__ = ["Decoder", "ImageHandler", "MatHandler", "audiohandler", "basichandlers",
           "extension_extract_fn", "handle_extension", "imagehandler", "mathandler",
           "videohandler"]


def basichandlers(extension, data):
    """Text, integer, JSON, pickle and ember/torch ``.pt`` files; None for anything else.

    Example::

        >>> basichandlers("cls", b"7")
        7
    """
    # torch tests these extensions by substring ("txt text transcript"); kept for equal results
    if extension in "txt text transcript":
        return data.decode("utf-8")
    if extension in ("cls", "cls2", "class", "count", "index", "inx", "id"):
        try:
            return int(data)
        except ValueError:
            return None
    if extension in "json jsn":
        return json.loads(data)
    if extension in ("pyd", "pickle"):
        return pickle.loads(data)
    if extension == "pt":
        from ....serialization import load
        return load(io.BytesIO(data))
    return None


def handle_extension(extensions, f):
    """A handler applying ``f`` to data whose key ends with the first of ``extensions``.

    Example::

        >>> handle_extension("txt", bytes.upper)("a.txt", b"x")
        b'X'
    """
    targets = extensions.lower().split()

    def handler(key, data):
        parts = key.lower().split(".")
        for target in targets:
            target = target.split(".")
            if len(target) > len(parts):
                continue
            # as torch: only the first applicable target is tried
            return f(data) if parts[-len(target):] == target else None
        return None

    return handler


_IMAGE_SPECS = {
    "l8": ("numpy", "uint8", "l"), "rgb8": ("numpy", "uint8", "rgb"),
    "rgba8": ("numpy", "uint8", "rgba"), "l": ("numpy", "float", "l"),
    "rgb": ("numpy", "float", "rgb"), "rgba": ("numpy", "float", "rgba"),
    "torchl8": ("torch", "uint8", "l"), "torchrgb8": ("torch", "uint8", "rgb"),
    "torchrgba8": ("torch", "uint8", "rgba"), "torchl": ("torch", "float", "l"),
    "torchrgb": ("torch", "float", "rgb"), "torch": ("torch", "float", "rgb"),
    "torchrgba": ("torch", "float", "rgba"), "pill": ("pil", None, "l"),
    "pil": ("pil", None, "rgb"), "pilrgb": ("pil", None, "rgb"), "pilrgba": ("pil", None, "rgba"),
}


class ImageHandler:
    """Decode image files with Pillow into a PIL image, a NumPy array or a tensor, by spec
    (``"rgb8"``, ``"torchrgb"``, ``"pil"``, ...).

    Example::

        >>> ImageHandler("rgb8")("txt", b"") is None
        True
    """

    def __init__(self, imagespec):
        if imagespec not in _IMAGE_SPECS:
            raise AssertionError(f"unknown image specification: {imagespec}")
        self.imagespec = imagespec.lower()

    def __call__(self, extension, data):
        if extension.lower() not in ("jpg", "jpeg", "png", "ppm", "pgm", "pbm", "pnm"):
            return None
        import numpy as np
        try:
            import PIL.Image
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(
                "Package `PIL` is required to be installed for default image decoder."
                "Please use `pip install Pillow` to install the package") from e
        kind, element, mode = _IMAGE_SPECS[self.imagespec]
        with io.BytesIO(data) as stream:
            image = PIL.Image.open(stream)
            image.load()
            image = image.convert(mode.upper())
        if kind == "pil":
            return image
        array = np.asarray(image)
        if kind == "numpy":
            return array if element == "uint8" else array.astype("f") / 255.0
        from .... import tensor
        chw = np.array(array.transpose(2, 0, 1))
        return tensor(chw) if element == "uint8" else tensor(chw) / 255.0


def imagehandler(imagespec):
    """An :class:`ImageHandler` for ``imagespec``.

    Example::

        >>> imagehandler("l8").imagespec
        'l8'
    """
    return ImageHandler(imagespec)


def videohandler(extension, data):
    """Video files need torchvision's video reader, which ember does not provide.

    Example::

        >>> videohandler("txt", b"") is None
        True
    """
    if extension not in ("mp4", "ogv", "mjpeg", "avi", "mov", "h264", "mpg", "webm", "wmv"):
        return None
    raise ModuleNotFoundError("Package `torchvision` is required to be installed for default "
                              "video file loader; ember has no video decoder")


def audiohandler(extension, data):
    """Audio files need torchaudio, which ember does not provide.

    Example::

        >>> audiohandler("txt", b"") is None
        True
    """
    if extension not in ("flac", "mp3", "sox", "wav", "m4a", "ogg", "wma"):
        return None
    raise ModuleNotFoundError("Package `torchaudio` is required to be installed for default "
                              "audio file loader; ember has no audio decoder")


class MatHandler:
    """Decode MATLAB ``.mat`` files with ``scipy.io.loadmat``.

    Example::

        >>> MatHandler()("txt", b"") is None  # doctest: +SKIP
        True
    """

    def __init__(self, **loadmat_kwargs):
        try:
            import scipy.io as sio
        except ImportError as e:
            raise ModuleNotFoundError("Package `scipy` is required to be installed for mat "
                                      "file.Please use `pip install scipy`to install the "
                                      "package") from e
        self.sio = sio
        self.loadmat_kwargs = loadmat_kwargs

    def __call__(self, extension, data):
        if extension != "mat":
            return None
        with io.BytesIO(data) as stream:
            return self.sio.loadmat(stream, **self.loadmat_kwargs)


def mathandler(**loadmat_kwargs):
    """A :class:`MatHandler` passing ``loadmat_kwargs`` to ``scipy.io.loadmat``."""
    return MatHandler(**loadmat_kwargs)


def extension_extract_fn(pathname):
    """The extension of ``pathname`` without its dot.

    Example::

        >>> extension_extract_fn("a/b.tar.gz")
        'gz'
    """
    extension = os.path.splitext(pathname)[1]
    return extension[1:] if extension else extension


class Decoder:
    """Decode ``(key, data)`` pairs with the first handler that returns non-None.

    Streams are read whole first; keys starting with ``_`` are decoded as UTF-8 text.

    Example::

        >>> Decoder(basichandlers)(("a.txt", b"hi"))
        {'a.txt': 'hi'}
    """

    def __init__(self, *handler, key_fn=extension_extract_fn):
        self.handlers = list(handler) if handler else []
        self.key_fn = key_fn

    def add_handler(self, *handler):
        """Put ``handler`` before the existing handlers."""
        if handler:
            self.handlers = list(handler) + self.handlers

    @staticmethod
    def _is_stream_handle(data):
        target = data.file_obj if isinstance(data, StreamWrapper) else data
        return isinstance(target, (io.BufferedIOBase, io.RawIOBase))

    def decode1(self, key, data):
        """Decode one value whose extension is ``key``."""
        if not data:
            return data
        if Decoder._is_stream_handle(data):
            stream = data
            data = b"".join(data)
            stream.close()
        for handler in self.handlers:
            result = handler(key, data)
            if result is not None:
                return result
        return data

    def decode(self, data):
        """Decode a ``(key, value)`` pair or a list of them into a dict."""
        result = {}
        if isinstance(data, tuple):
            data = [data]
        for key, value in data or ():
            if key[0] == "_" and isinstance(value, bytes):
                result[key] = value.decode("utf-8")
                continue
            result[key] = self.decode1(self.key_fn(key), value)
        return result

    def __call__(self, data):
        return self.decode(data)
