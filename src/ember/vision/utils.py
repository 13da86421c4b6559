"""Image utilities, as ``torchvision.utils``: tile images into a grid, save one as a PNG.

Example::

    >>> from ember.vision.utils import make_grid, save_image
    >>> make_grid(ember.rand(6, 1, 8, 8), nrow=3).shape
    ember.Size([3, 22, 32])
    >>> save_image(ember.rand(6, 1, 8, 8), "digits.png", nrow=3)
"""

from __future__ import annotations

import math
import os

import ember

from .._tensor import Tensor

__all__ = ["make_grid", "save_image"]


def _normalize(tensor, value_range, scale_each):
    """Map ``value_range`` (default: the min and max, per image if ``scale_each``) to [0, 1]."""
    if value_range is not None and not isinstance(value_range, tuple):
        raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are "
                        "numbers")
    if value_range is not None:
        low, high = value_range
        return (tensor.clamp(low, high) - low) / max(high - low, 1e-5)
    if scale_each:
        dims = tuple(range(1, tensor.ndim))
        low = tensor.amin(dim=dims, keepdim=True)
        high = tensor.amax(dim=dims, keepdim=True)
        return (tensor - low) / (high - low).clamp(min=1e-5)
    low, high = float(tensor.min()), float(tensor.max())
    return (tensor - low) / max(high - low, 1e-5)


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
              pad_value=0.0):
    """Tile a batch of images ``(B, C, H, W)`` (or a list of ``(C, H, W)``) into one image.

    Images fill rows of ``nrow``, separated and surrounded by ``padding`` pixels of
    ``pad_value``. One-channel images become three-channel (grey). ``normalize`` maps
    ``value_range`` (default: the data's min and max, per image if ``scale_each``) to [0, 1].
    A batch of one image is returned without padding.

    Example::

        >>> make_grid(ember.zeros(3, 3, 4, 4), nrow=2, padding=1).shape
        ember.Size([3, 11, 11])
    """
    if isinstance(tensor, (list, tuple)):
        for t in tensor:
            if not isinstance(t, Tensor):
                raise TypeError(f"tensor or list of tensors expected, got a list containing "
                                f"{type(t)}")
        tensor = ember.stack(list(tensor), dim=0)
    elif not isinstance(tensor, Tensor):
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if tensor.ndim == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.ndim == 3:
        if tensor.shape[0] == 1:
            tensor = tensor.expand(3, -1, -1)
        tensor = tensor.unsqueeze(0)
    if tensor.ndim != 4:
        raise ValueError(f"make_grid expects 2, 3 or 4 dimensions, got {tensor.ndim}")
    if tensor.shape[1] == 1:
        tensor = tensor.expand(-1, 3, -1, -1)
    if normalize:
        tensor = _normalize(tensor, value_range, scale_each)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0).clone()
    n, c, h, w = tensor.shape
    cols = min(nrow, n)
    rows = int(math.ceil(n / cols))
    # every image gets `padding` rows above and columns left of it, then one more strip of
    # padding closes the grid on the right and at the bottom
    cells = ember.full((rows * cols, c, h + padding, w + padding), pad_value,
                       dtype=tensor.dtype, device=tensor.device)
    cells[:n, :, padding:, padding:] = tensor
    grid = cells.view(rows, cols, c, h + padding, w + padding).permute(2, 0, 3, 1, 4)
    grid = grid.reshape(c, rows * (h + padding), cols * (w + padding))
    return ember.nn.functional.pad(grid, (0, padding, 0, padding), value=pad_value)


def save_image(tensor, fp, format=None, **kwargs):
    """Save a tensor image (or a batch, tiled by :func:`make_grid` with ``kwargs``) to ``fp``.

    Values in ``[0, 1]`` map to 0..255; the file type follows ``format`` or the file name's
    extension (PNG through matplotlib).

    Example::

        >>> save_image(ember.rand(16, 3, 8, 8), "samples.png", nrow=4, normalize=True)
    """
    try:
        from matplotlib import image as mpimg
    except ImportError as error:
        raise RuntimeError("save_image needs matplotlib (pip install matplotlib)") from error
    with ember.no_grad():
        grid = make_grid(tensor.detach() if isinstance(tensor, Tensor) else tensor, **kwargs)
        array = (grid * 255 + 0.5).clamp(0, 255).permute(1, 2, 0).to("cpu", ember.uint8)
    array = array.numpy()
    if isinstance(fp, (str, os.PathLike)) and format is None and \
            not os.path.splitext(os.fspath(fp))[1]:
        format = "png"
    if array.shape[2] == 1:
        mpimg.imsave(fp, array[:, :, 0], format=format, cmap="gray", vmin=0, vmax=255)
    else:
        mpimg.imsave(fp, array, format=format)
