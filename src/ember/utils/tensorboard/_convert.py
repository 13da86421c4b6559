"""Turning what a user logs (ember tensors, NumPy arrays, Python numbers) into NumPy arrays."""

from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor


def make_np(value):
    """``value`` as a NumPy array: tensors are detached and copied to the host, a Python or
    NumPy scalar becomes a one-element array, an array is returned as it is.

    Example::

        >>> make_np(3.5)
        array([3.5])
        >>> make_np(ember.ones(2)).dtype
        dtype('float32')
    """
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    if isinstance(value, Tensor):
        return _tensor_to_numpy(value)
    raise NotImplementedError(
        f"Got {type(value)}, but numpy array or torch tensor are expected.")


def _tensor_to_numpy(tensor):
    if tensor.device.type == "meta":
        # a meta tensor has no values; torch logs a random stand-in rather than failing
        return np.random.randn(1)
    if tensor.dtype == dt.bfloat16:
        # NumPy has no bfloat16 of its own: log its values as float16, as torch does
        tensor = tensor.to(dt.float16)
    return tensor.detach().cpu().numpy()
