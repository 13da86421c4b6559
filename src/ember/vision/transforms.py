"""Image transforms, as ``torchvision.transforms`` (without PIL).

An image is either an ember Tensor laid out ``(..., C, H, W)`` or a NumPy array laid out
``(H, W, C)`` or ``(H, W)`` (what the datasets here return in place of PIL images).
:class:`ToTensor` turns the second kind into the first. Geometric transforms (crops, flips,
resizing) take both; :class:`Normalize` and :class:`ConvertImageDtype` take tensors. Random
transforms draw from ember's default generator, so ``ember.manual_seed`` makes them
reproducible.

Example::

    >>> from ember.vision import transforms as T
    >>> pipeline = T.Compose([T.ToTensor(), T.RandomCrop(28, padding=2),
    ...                       T.Normalize((0.1307,), (0.3081,))])
    >>> pipeline(np.zeros((28, 28), np.uint8)).shape
    ember.Size([1, 28, 28])
"""

from __future__ import annotations

import enum
import numbers

import numpy as np

import ember

from .._tensor import Tensor

__all__ = ["Compose", "ToTensor", "Normalize", "RandomCrop", "RandomHorizontalFlip",
           "RandomVerticalFlip", "Resize", "CenterCrop", "Lambda", "ConvertImageDtype",
           "InterpolationMode", "convert_image_dtype"]


class InterpolationMode(enum.Enum):
    """How :class:`Resize` samples, as torchvision's (the names of ``F.interpolate``'s modes)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


# ---------------------------------------------------------------- helpers on images


def _is_image(img):
    return isinstance(img, (Tensor, np.ndarray))


def _check_image(img):
    if not _is_image(img):
        raise TypeError(f"img should be an ember Tensor or a NumPy ndarray. Got {type(img)}")
    if img.ndim < 2:
        raise TypeError(f"img should have at least 2 dimensions. Got {img.ndim}")


def _size(img):
    """``(height, width)`` of a tensor ``(..., H, W)`` or an array ``(H, W[, C])``."""
    _check_image(img)
    if isinstance(img, Tensor):
        return int(img.shape[-2]), int(img.shape[-1])
    return int(img.shape[0]), int(img.shape[1])


def _crop(img, top, left, height, width):
    """The ``height`` x ``width`` window at ``(top, left)``; zeros where it leaves the image."""
    h, w = _size(img)
    if top < 0 or left < 0 or top + height > h or left + width > w:
        pad = (max(-left, 0), max(-top, 0), max(left + width - w, 0), max(top + height - h, 0))
        img = _pad(img, pad, fill=0, padding_mode="constant")
        top, left = top + pad[1], left + pad[0]
    if isinstance(img, Tensor):
        return img[..., top:top + height, left:left + width]
    return img[top:top + height, left:left + width]


_NP_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect",
                 "symmetric": "symmetric"}


def _pad(img, padding, fill=0, padding_mode="constant"):
    """Pad by ``(left, top, right, bottom)``."""
    left, top, right, bottom = padding
    if padding_mode not in _NP_PAD_MODES:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if isinstance(img, np.ndarray):
        widths = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
        kwargs = {"constant_values": fill} if padding_mode == "constant" else {}
        return np.pad(img, widths, mode=_NP_PAD_MODES[padding_mode], **kwargs)
    if padding_mode == "constant":
        return ember.nn.functional.pad(img, (left, right, top, bottom), mode="constant",
                                       value=fill)
    # the other modes index the edges (the same rule as NumPy's, vectorised as a gather)
    h, w = _size(img)
    rows = _pad_index(h, top, bottom, padding_mode)
    cols = _pad_index(w, left, right, padding_mode)
    rows = ember.tensor(rows, device=img.device)
    cols = ember.tensor(cols, device=img.device)
    return img.index_select(-2, rows).index_select(-1, cols)


def _pad_index(n, before, after, mode):
    """Source index of every padded position along one axis (NumPy's pad rule)."""
    return np.pad(np.arange(n), (before, after), mode=_NP_PAD_MODES[mode])


def _hflip(img):
    if isinstance(img, Tensor):
        return img.flip(-1)
    return img[:, ::-1].copy()


def _vflip(img):
    if isinstance(img, Tensor):
        return img.flip(-2)
    return img[::-1].copy()


def _setup_size(size, error_msg):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return int(size[0]), int(size[0])
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise ValueError(error_msg)
    return int(size[0]), int(size[1])


def _random_int(high):
    """A draw from ``[0, high)`` with ember's default generator."""
    return int(ember.randint(0, high, (1,)).item())


def _format(name, **fields):
    inner = ", ".join(f"{k}={v}" for k, v in fields.items())
    return f"{name}({inner})"


# ---------------------------------------------------------------- transforms


class Compose:
    """Apply ``transforms`` one after the other.

    Example::

        >>> T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.5,))])(np.zeros((2, 2), np.uint8))
        tensor([[[-1., -1.],
                 [-1., -1.]]])
    """

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        lines = [self.__class__.__name__ + "("]
        lines += [f"    {t}" for t in self.transforms]
        return "\n".join(lines) + "\n)"


class ToTensor:
    """An ``(H, W, C)`` or ``(H, W)`` NumPy image as a ``(C, H, W)`` tensor.

    ``uint8`` images are scaled to float in ``[0, 1]`` (default dtype); other dtypes keep
    their values and dtype, as torchvision's ``ToTensor`` does.

    Example::

        >>> T.ToTensor()(np.full((1, 2, 3), 255, np.uint8)).shape
        ember.Size([3, 1, 2])
    """

    def __call__(self, pic):
        if not isinstance(pic, np.ndarray):
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic[:, :, None]
        chw = np.ascontiguousarray(pic.transpose(2, 0, 1))
        if chw.dtype == np.uint8:
            dtype = ember.get_default_dtype()
            return ember.from_numpy(chw).to(dtype).div_(255)
        return ember.from_numpy(chw)

    def __repr__(self):
        return "ToTensor()"


class Normalize:
    """``(x - mean[c]) / std[c]`` per channel of a float tensor ``(..., C, H, W)``.

    Example::

        >>> T.Normalize((0.5,), (0.25,))(ember.ones(1, 1, 2))
        tensor([[[2., 2.]]])
    """

    def __init__(self, mean, std, inplace=False):
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def __call__(self, tensor):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
        if not tensor.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.ndim < 3:
            raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got "
                             f"tensor.size() = {tuple(tensor.shape)}")
        mean = ember.as_tensor(self.mean, dtype=tensor.dtype, device=tensor.device)
        std = ember.as_tensor(self.std, dtype=tensor.dtype, device=tensor.device)
        if bool((std == 0).any()):
            raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, "
                             "leading to division by zero.")
        if mean.ndim == 1:
            mean = mean.view(-1, 1, 1)
        if std.ndim == 1:
            std = std.view(-1, 1, 1)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        return (tensor - mean) / std

    def __repr__(self):
        return _format(self.__class__.__name__, mean=self.mean, std=self.std)


class RandomCrop:
    """A random ``size`` window, after optional ``padding`` (int, 2 or 4 numbers).

    ``pad_if_needed`` pads images smaller than ``size``; ``fill`` and ``padding_mode``
    (``constant``, ``edge``, ``reflect``, ``symmetric``) say how.

    Example::

        >>> T.RandomCrop(8, padding=1)(ember.rand(1, 8, 8)).shape
        ember.Size([1, 8, 8])
    """

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        if padding is not None and not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
            raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a "
                             f"{len(padding)} element tuple")
        if padding_mode not in _NP_PAD_MODES:
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @staticmethod
    def get_params(img, output_size):
        """``(top, left, height, width)`` of a random crop of ``output_size``."""
        h, w = _size(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size "
                             f"{(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        return _random_int(h - th + 1), _random_int(w - tw + 1), th, tw

    def _padding_ltrb(self):
        p = self.padding
        if isinstance(p, numbers.Number):
            return (int(p),) * 4
        if len(p) == 1:
            return (int(p[0]),) * 4
        if len(p) == 2:
            return int(p[0]), int(p[1]), int(p[0]), int(p[1])
        return tuple(int(v) for v in p)

    def __call__(self, img):
        _check_image(img)
        if self.padding is not None:
            img = _pad(img, self._padding_ltrb(), self.fill, self.padding_mode)
        h, w = _size(img)
        th, tw = self.size
        if self.pad_if_needed and w < tw:
            img = _pad(img, (tw - w, 0, tw - w, 0), self.fill, self.padding_mode)
        if self.pad_if_needed and h < th:
            img = _pad(img, (0, th - h, 0, th - h), self.fill, self.padding_mode)
        top, left, height, width = self.get_params(img, self.size)
        return _crop(img, top, left, height, width)

    def __repr__(self):
        return _format(self.__class__.__name__, size=self.size, padding=self.padding)


class RandomHorizontalFlip:
    """Mirror left-right with probability ``p``.

    Example::

        >>> T.RandomHorizontalFlip(p=1.0)(ember.tensor([[[1., 2.]]]))
        tensor([[[2., 1.]]])
    """

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        _check_image(img)
        if ember.rand(1).item() < self.p:
            return _hflip(img)
        return img

    def __repr__(self):
        return _format(self.__class__.__name__, p=self.p)


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror top-bottom with probability ``p``.

    Example::

        >>> T.RandomVerticalFlip(p=1.0)(ember.tensor([[[1.], [2.]]]))
        tensor([[[2.],
                 [1.]]])
    """

    def __call__(self, img):
        _check_image(img)
        if ember.rand(1).item() < self.p:
            return _vflip(img)
        return img


def _resized_size(h, w, size, max_size):
    if isinstance(size, numbers.Number) or len(size) == 1:
        requested = int(size if isinstance(size, numbers.Number) else size[0])
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = requested, int(requested * long / short)
        if max_size is not None:
            if max_size <= requested:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                                 f"requested size for the smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        return (new_long, new_short) if w <= h else (new_short, new_long)
    if max_size is not None:
        raise ValueError("max_size should only be passed if size specifies the length of the "
                         "smaller edge, i.e. size should be an int or a sequence of length 1")
    return int(size[0]), int(size[1])


_NEAREST_MODES = ("nearest", "nearest-exact")


def _resize(img, out_h, out_w, mode):
    """Resize through ``F.interpolate``: the image's leading dims become its batch."""
    h, w = _size(img)
    if (h, w) == (out_h, out_w):
        return img
    if isinstance(img, np.ndarray):  # (H, W[, C]) -> (C, H, W) and back
        chw = np.ascontiguousarray(np.moveaxis(img.reshape(h, w, -1), 2, 0))
        out = _resize(ember.from_numpy(chw), out_h, out_w, mode).numpy()
        out = np.moveaxis(out, 0, 2)
        return np.ascontiguousarray(out if img.ndim == 3 else out[:, :, 0])
    lead = tuple(img.shape[:-2])
    x = img.reshape(-1, 1, h, w)
    to_float = mode.value not in _NEAREST_MODES and not img.is_floating_point()
    if to_float:  # interpolate integers in float32 and round back, as torchvision
        x = x.to(ember.float32)
    kwargs = {} if mode.value in _NEAREST_MODES else {"align_corners": False}
    y = ember.nn.functional.interpolate(x, size=(out_h, out_w), mode=mode.value, **kwargs)
    if to_float:
        info = ember.iinfo(img.dtype)
        y = y.round().clamp(info.min, info.max).to(img.dtype)
    return y.reshape(*lead, out_h, out_w)


class Resize:
    """Resize to ``size``: ``(h, w)``, or an int to match the smaller edge (keeping aspect).

    ``interpolation`` is an :class:`InterpolationMode` (or its name): ``BILINEAR`` (default),
    ``BICUBIC``, ``NEAREST`` or ``NEAREST_EXACT``, computed by ``F.interpolate`` (with
    ``align_corners=False``). Integer images are interpolated in float32, then rounded and
    clamped back. Tensors ``(..., H, W)`` and arrays ``(H, W[, C])`` are accepted. ember does not
    antialias when it shrinks an image: ``antialias`` is accepted for torchvision's signature
    and ignored (torchvision's default ``antialias=True`` smooths before shrinking).

    Example::

        >>> T.Resize((4, 4))(ember.rand(1, 8, 8)).shape
        ember.Size([1, 4, 4])
    """

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        if not isinstance(size, (numbers.Number, tuple, list)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, (tuple, list)) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        if isinstance(interpolation, str):
            interpolation = InterpolationMode(interpolation)
        if not isinstance(interpolation, InterpolationMode):
            raise TypeError("Argument interpolation should be of type InterpolationMode")
        self.size = size
        self.interpolation = interpolation
        self.max_size = max_size
        self.antialias = antialias

    def __call__(self, img):
        h, w = _size(img)
        out_h, out_w = _resized_size(h, w, self.size, self.max_size)
        return _resize(img, out_h, out_w, self.interpolation)

    def __repr__(self):
        return _format(self.__class__.__name__, size=self.size,
                       interpolation=self.interpolation.value, max_size=self.max_size,
                       antialias=self.antialias)


class CenterCrop:
    """The central ``size`` window; images smaller than ``size`` are zero-padded first.

    Example::

        >>> T.CenterCrop(2)(ember.arange(16.).view(1, 4, 4))
        tensor([[[ 5.,  6.],
                 [ 9., 10.]]])
    """

    def __init__(self, size):
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def __call__(self, img):
        h, w = _size(img)
        th, tw = self.size
        if th > h or tw > w:
            pad = ((tw - w) // 2 if tw > w else 0, (th - h) // 2 if th > h else 0,
                   (tw - w + 1) // 2 if tw > w else 0, (th - h + 1) // 2 if th > h else 0)
            img = _pad(img, pad, fill=0)
            h, w = _size(img)
            if (h, w) == (th, tw):
                return img
        top = int(round((h - th) / 2.0))
        left = int(round((w - tw) / 2.0))
        return _crop(img, top, left, th, tw)

    def __repr__(self):
        return _format(self.__class__.__name__, size=self.size)


class Lambda:
    """Apply a user function.

    Example::

        >>> T.Lambda(lambda x: x * 2)(ember.ones(1))
        tensor([2.])
    """

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


def _max_value(dtype):
    if dtype.is_floating_point:
        return 1.0
    return ember.iinfo(dtype).max


def convert_image_dtype(image, dtype=ember.float32):
    """Convert an image tensor to ``dtype``, rescaling values (ints span ``[0, max]``, floats
    ``[0, 1]``), as torchvision's ``convert_image_dtype``.

    Example::

        >>> convert_image_dtype(ember.tensor([255], dtype=ember.uint8))
        tensor([1.])
    """
    if not isinstance(image, Tensor):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64)) or \
                (image.dtype == ember.float64 and dtype == ember.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed "
                               "safely.")
        eps = 1e-3
        return image.mul(_max_value(dtype) + 1.0 - eps).to(dtype)
    input_max = _max_value(image.dtype)
    if dtype.is_floating_point:
        return image.to(dtype) / input_max
    output_max = _max_value(dtype)
    if input_max > output_max:
        factor = (input_max + 1) // (output_max + 1)
        return ember.div(image, factor, rounding_mode="floor").to(dtype)
    factor = (output_max + 1) // (input_max + 1)
    return image.to(dtype) * factor


class ConvertImageDtype:
    """Convert a tensor image to ``dtype`` and rescale its values accordingly.

    Example::

        >>> T.ConvertImageDtype(ember.uint8)(ember.tensor([1.0]))
        tensor([255], dtype=ember.uint8)
    """

    def __init__(self, dtype):
        self.dtype = dtype

    def __call__(self, image):
        return convert_image_dtype(image, self.dtype)

    def __repr__(self):
        return _format(self.__class__.__name__, dtype=self.dtype)

