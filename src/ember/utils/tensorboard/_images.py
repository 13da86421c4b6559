"""Images for TensorBoard: layouts to HWC, grids of several images, PNG encoding, figures."""

from __future__ import annotations

import io
import math

import numpy as np


def convert_to_HWC(array, dataformats):
    """A NumPy image in the layout ``dataformats`` (``"CHW"``, ``"HWC"``, ``"HW"``, or with an
    ``N`` for a batch laid out as a grid) as height x width x channels, grey made RGB.

    Example::

        >>> convert_to_HWC(np.zeros((3, 4, 5)), "CHW").shape
        (4, 5, 3)
        >>> convert_to_HWC(np.zeros((4, 5)), "HW").shape
        (4, 5, 3)
    """
    if len(set(dataformats)) != len(dataformats):
        raise AssertionError("You can not use the same dimension shorthand twice. "
                             f"input_format: {dataformats}")
    if array.ndim != len(dataformats):
        raise AssertionError("size of input tensor and input format are different. "
                             f"tensor shape: {array.shape}, input_format: {dataformats}")
    layout = dataformats.upper()
    if len(layout) == 4:
        batch_nchw = array.transpose([layout.find(axis) for axis in "NCHW"])
        return make_grid(batch_nchw).transpose(1, 2, 0)
    if len(layout) == 3:
        image_hwc = array.transpose([layout.find(axis) for axis in "HWC"])
        if image_hwc.shape[2] == 1:
            image_hwc = np.concatenate([image_hwc] * 3, axis=2)
        return image_hwc
    image_hw = array.transpose([layout.find(axis) for axis in "HW"])
    return np.stack([image_hw] * 3, axis=2)


def make_grid(batch_nchw, ncols=8):
    """Tile N images (N x 1 x H x W or N x 3 x H x W) into one 3 x H' x W' image, ``ncols`` per
    row, filling the rest of the last row with zeros.

    Example::

        >>> make_grid(np.ones((10, 1, 2, 2))).shape
        (3, 4, 16)
    """
    if not isinstance(batch_nchw, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if batch_nchw.ndim == 4 and batch_nchw.shape[1] == 1:
        batch_nchw = np.concatenate([batch_nchw] * 3, axis=1)
    if batch_nchw.ndim != 4 or batch_nchw.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = batch_nchw.shape
    ncols = min(count, ncols)
    nrows = math.ceil(count / ncols)
    canvas = np.zeros((3, height * nrows, width * ncols), dtype=batch_nchw.dtype)
    for index, image in enumerate(batch_nchw):
        row, col = divmod(index, ncols)
        canvas[:, row * height:(row + 1) * height, col * width:(col + 1) * width] = image
    return canvas


def to_uint8_pixels(array):
    """Pixel values as uint8: uint8 arrays are kept, anything else is read as [0, 1] floats
    and scaled by 255; both are clipped to [0, 255].

    Example::

        >>> to_uint8_pixels(np.array([0.0, 0.5, 2.0]))
        array([  0, 127, 255], dtype=uint8)
    """
    scale = 1 if array.dtype == np.uint8 else 255
    return (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def _pillow_image_module():
    try:
        from PIL import Image
    except ImportError as missing:
        raise ImportError("add_image needs Pillow to encode images: pip install pillow"
                          ) from missing
    return Image


def encode_png(pixels_hwc, rescale=1, boxes=None, labels=None):
    """PNG bytes of an H x W x C uint8 image, with ``boxes`` (N x 4: xmin, ymin, xmax, ymax)
    drawn in red if given, then resized by ``rescale`` (Lanczos), as torch does.

    Example::

        >>> encode_png(np.zeros((2, 2, 3), np.uint8))[:4]
        b'\\x89PNG'
    """
    image_module = _pillow_image_module()
    height, width, _ = pixels_hwc.shape
    image = image_module.fromarray(pixels_hwc)
    if boxes is not None:
        for index, box in enumerate(boxes):
            _draw_box(image, box, None if labels is None else labels[index])
    size = (int(width * rescale), int(height * rescale))
    image = image.resize(size, image_module.Resampling.LANCZOS)
    with io.BytesIO() as buffer:
        image.save(buffer, format="PNG")
        return buffer.getvalue()


def _draw_box(image, box, label, color="Red", thickness=2):
    """Outline ``box`` on ``image``; a label sits in a filled strip above its bottom edge."""
    from PIL import ImageDraw, ImageFont

    left, top, right, bottom = box[0], box[1], box[2], box[3]
    draw = ImageDraw.Draw(image)
    outline = [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)]
    draw.line(outline, width=thickness, fill=color)
    if label:
        font = ImageFont.load_default()
        text_left, text_top, text_right, text_bottom = font.getbbox(label)
        text_width, text_height = text_right - text_left, text_bottom - text_top
        margin = np.ceil(0.05 * text_height)
        draw.rectangle([(left, bottom - text_height - 2 * margin), (left + text_width, bottom)],
                       fill=color)
        draw.text((left + margin, bottom - text_height - margin), label, fill="black",
                  font=font)


def video_frames(batch_btchw):
    """A batch of B videos (B x T x C x H x W) as T frames T x H' x W' x C, the videos tiled
    in a grid: B is padded with black videos to a power of two, laid out in
    2**floor(log2(B) / 2) rows. uint8 values become floats in [0, 1].

    Example::

        >>> video_frames(np.zeros((3, 5, 3, 8, 8))).shape
        (5, 8, 32, 3)
    """
    batch, frames, channels, height, width = batch_btchw.shape
    if batch_btchw.dtype == np.uint8:
        batch_btchw = np.float32(batch_btchw) / 255.0
    padded = 1 << (batch - 1).bit_length()
    if padded != batch:
        blank = np.zeros((padded - batch, frames, channels, height, width))
        batch_btchw = np.concatenate((batch_btchw, blank), axis=0)
    rows = 2 ** ((batch.bit_length() - 1) // 2)
    grid = batch_btchw.reshape(rows, padded // rows, frames, channels, height, width)
    grid = grid.transpose(2, 0, 4, 1, 5, 3)  # T, row, H, column, W, C
    return grid.reshape(frames, rows * height, padded // rows * width, channels)


def encode_gif(frames_thwc, fps):
    """An animated GIF (looping, ``fps`` frames per second) of T x H x W x C uint8 frames
    (C is 1 or 3).

    Example::

        >>> encode_gif(np.zeros((2, 4, 4, 3), np.uint8), fps=4)[:6]
        b'GIF89a'
    """
    image_module = _pillow_image_module()
    images = [image_module.fromarray(frame[:, :, 0] if frame.shape[2] == 1 else frame)
              for frame in frames_thwc]
    with io.BytesIO() as buffer:
        images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:],
                       duration=int(round(1000 / fps)), loop=0)
        return buffer.getvalue()


def figure_to_image(figures, close=True):
    """A matplotlib figure rendered as a 3 x H x W uint8 RGB array (a list of figures: an
    N x 3 x H x W array); ``close`` closes each figure afterwards.

    Example::

        >>> fig = matplotlib.pyplot.figure(figsize=(2, 1), dpi=10)
        >>> figure_to_image(fig).shape
        (3, 10, 20)
    """
    if isinstance(figures, list):
        return np.stack([_render_rgb(figure, close) for figure in figures])
    return _render_rgb(figures, close)


def _render_rgb(figure, close):
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    width, height = figure.canvas.get_width_height()
    rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)
    if close:
        plt.close(figure)
    return np.moveaxis(rgba[:, :, :3], 2, 0)
