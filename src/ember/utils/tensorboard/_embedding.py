"""Files of TensorBoard's embedding projector: the vectors and labels as TSV, a sprite of
thumbnail images, and the ``projector_config.pbtxt`` that lists every embedding of a run."""

from __future__ import annotations

import io
import math
import os

import numpy as np
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._images import _pillow_image_module, make_grid


def _write_bytes(path, data):
    # tensorboard's gfile writes local paths and the remote file systems it knows (s3, ...)
    with tf.io.gfile.GFile(path, "wb") as file:
        file.write(data)


def write_vectors(matrix, save_path):
    """``tensors.tsv``: one row of ``matrix`` per line, tab-separated.

    Example::

        >>> write_vectors(np.eye(2), "runs/x/00000/default")   # "1.0\\t0.0\\n0.0\\t1.0\\n"
    """
    lines = ["\t".join(str(item.item()) for item in row) + "\n" for row in matrix]
    _write_bytes(os.path.join(save_path, "tensors.tsv"), "".join(lines).encode("utf_8"))


def write_metadata(metadata, save_path, metadata_header=None):
    """``metadata.tsv``: one label per line, or with ``metadata_header`` a header line and one
    tab-separated row of columns per point.

    Example::

        >>> write_metadata(["cat", "dog"], "runs/x/00000/default")   # "cat\\ndog\\n"
    """
    if not metadata_header:
        lines = [str(label) for label in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError(
                "len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(cell) for cell in row)
                 for row in [metadata_header] + list(metadata)]
    _write_bytes(os.path.join(save_path, "metadata.tsv"),
                 ("\n".join(lines) + "\n").encode("utf_8"))


def write_sprite(label_images, save_path):
    """``sprite.png``: the N x C x H x W images (floats in [0, 1]) tiled in a square grid of
    ceil(sqrt(N)) columns, padded with black to a square.

    Example::

        >>> write_sprite(np.ones((4, 3, 8, 8)), "runs/x/00000/default")   # a 16 x 16 PNG
    """
    columns = math.ceil(label_images.shape[0] ** 0.5)
    grid_hwc = make_grid(label_images, ncols=columns).transpose(1, 2, 0)
    side = grid_hwc.shape[1]
    square = np.zeros((side, side, 3))
    square[:grid_hwc.shape[0]] = grid_hwc
    image = _pillow_image_module().fromarray(np.uint8((square * 255).clip(0, 255)))
    with io.BytesIO() as buffer:
        image.save(buffer, format="PNG")
        _write_bytes(os.path.join(save_path, "sprite.png"), buffer.getvalue())


def embedding_info(subdir, tag, global_step, has_metadata, sprite_shape):
    """The projector's ``EmbeddingInfo`` for files written to ``subdir`` (``sprite_shape``
    is the label images' N x C x H x W, or None without a sprite).

    Example::

        >>> embedding_info("00000/default", "default", 0, False, None).tensor_name
        'default:00000'
    """
    info = EmbeddingInfo(tensor_name=f"{tag}:{str(global_step).zfill(5)}",
                         tensor_path=os.path.join(subdir, "tensors.tsv"))
    if has_metadata:
        info.metadata_path = os.path.join(subdir, "metadata.tsv")
    if sprite_shape is not None:
        info.sprite.image_path = os.path.join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([sprite_shape[3], sprite_shape[2]])
    return info


def write_projector_config(log_dir, config):
    """``projector_config.pbtxt`` in ``log_dir``: ``config`` in protobuf text format.

    Example::

        >>> write_projector_config("runs/x", ProjectorConfig())
    """
    from google.protobuf import text_format

    _write_bytes(os.path.join(log_dir, "projector_config.pbtxt"),
                 text_format.MessageToString(config).encode("utf_8"))
