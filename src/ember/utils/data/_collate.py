"""``default_collate`` and ``default_convert``: samples -> batches, as torch does them."""

from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor, as_tensor, strided, tensor
from ...autograd.forward_ad import _state as _fw_state

__all__ = ["default_collate", "default_convert"]

_NP_STRING_KINDS = "SaUO"


def default_convert(data):
    """Turn NumPy arrays (and arrays inside containers) into tensors; leave the rest.

    Example::

        >>> default_convert(np.array([1, 2]))
        tensor([1, 2])
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if data.dtype.kind in _NP_STRING_KINDS else as_tensor(data)
    if isinstance(data, np.generic):
        return data if data.dtype.kind in _NP_STRING_KINDS else as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _stack(tensors):
    """``stack(tensors, 0)``; samples of one shape, dtype and CPU device that record no
    autograd (the usual batch) are copied into the batch with one NumPy call."""
    first = tensors[0]
    data = first._data
    device = first._device
    if device.type == "cpu" and _fw_state.level is None:
        shape, dtype = data.shape, data.dtype
        arrays = []
        for t in tensors:
            a = t._data
            if (type(t) is not Tensor or t._rg or t._device is not device or a.shape != shape
                    or a.dtype != dtype):
                break
            arrays.append(a)
        else:
            if data.ndim:  # concatenate then split off the batch dim: the fastest NumPy copy
                out = np.concatenate(arrays).reshape((len(arrays),) + shape)
            else:
                out = np.array(arrays, dtype=dtype)
            return Tensor._make(out, device)
    from ...ops.shape import stack

    return stack(tensors, 0)


def default_collate(batch):
    """Stack a list of samples into a batch, recursing into dicts, tuples and lists.

    Tensors and NumPy arrays are stacked along a new first dimension, Python floats become a
    float64 tensor, ints an int64 tensor, strings stay a list, containers are collated field by
    field.

    Example::

        >>> default_collate([(1, 2.0), (3, 4.0)])
        [tensor([1, 3]), tensor([2., 4.], dtype=ember.float64)]
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        if elem.layout is not strided:
            raise RuntimeError("Batches of sparse tensors are not currently supported by the "
                               "default collate_fn; please provide a custom collate_fn to "
                               "handle them appropriately.")
        return _stack(batch)
    if isinstance(elem, np.ndarray) or (isinstance(elem, np.generic)
                                        and not isinstance(elem, np.str_)):
        if elem.dtype.kind in _NP_STRING_KINDS:
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, "
                            f"numbers, dicts or lists; found {elem.dtype}")
        if isinstance(elem, np.generic):
            return tensor(np.array(batch))
        return _stack([as_tensor(b) for b in batch])
    if isinstance(elem, bool):
        return tensor(batch, dtype=dt.bool)
    if isinstance(elem, float):
        return tensor(batch, dtype=dt.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, numbers.Number):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return type(elem)([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")
