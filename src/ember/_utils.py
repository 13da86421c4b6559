"""How tensors and parameters pickle: torch's reduction, under ember's module names.

A plain ``pickle.dumps(tensor)`` writes the call torch's does,
``_rebuild_tensor_v2(_load_from_bytes(<storage as a legacy torch file>), storage_offset,
size, stride, requires_grad, OrderedDict())``, with the same arguments, the storage's bytes in
torch's own (pre-1.6) file format, and ``_rebuild_parameter(data, requires_grad,
OrderedDict())`` for a parameter. The one difference is the root of the names: the stream
says ``ember._utils._rebuild_tensor_v2`` and ``ember.storage._load_from_bytes`` where torch's
says ``torch._utils...`` and ``torch.storage...`` (why, and how each side reads the other's:
see "Saving and loading" in ``docs/migrating-from-pytorch.md``). ``ember.save`` writes torch's
names.

Example::

    >>> import pickle
    >>> pickle.loads(pickle.dumps(ember.arange(4.)[::2]))
    tensor([0., 2.])
"""

from __future__ import annotations

import collections

from . import _dtype as dt
from ._device import META
from ._tensor import Tensor


def _reduce_tensor(t):
    """``(function, arguments)`` that rebuild tensor ``t`` (``Tensor.__reduce_ex__``)."""
    state = _get_obj_state(t)
    rebuild = _reduce_plain_tensor(t)
    if type(t) is Tensor and not state:
        return rebuild
    from ._tensor import _rebuild_from_type_v2

    return _rebuild_from_type_v2, (rebuild[0], type(t), rebuild[1], state)


def _reduce_plain_tensor(t):
    if t._device is META:
        return _rebuild_meta_tensor_no_storage, (t.dtype, tuple(t.shape), t.stride(),
                                                 t.requires_grad)
    root = t._storage_root()
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        # memory that is no dense block (a NumPy view handed to from_numpy): write a copy
        t = Tensor._make(t._device.xp.ascontiguousarray(t._data), t._device).requires_grad_(
            t.requires_grad)
    return _rebuild_tensor_v2, (t._typed_storage(), t.storage_offset(), tuple(t.shape),
                                t.stride(), t.requires_grad, collections.OrderedDict())


def _reduce_parameter(param):
    """``(function, arguments)`` that rebuild a ``Parameter`` (``Parameter.__reduce_ex__``)."""
    data = Tensor._make(param._data, param._device)
    state = _get_obj_state(param)
    if not state:
        return _rebuild_parameter, (data, param.requires_grad, collections.OrderedDict())
    return _rebuild_parameter_with_state, (data, param.requires_grad, collections.OrderedDict(),
                                           state)


def _get_obj_state(obj):
    """The Python attributes set on a tensor (its ``__dict__``), as torch pickles them."""
    return dict(getattr(obj, "__dict__", None) or {})


def _set_obj_state(obj, state):
    """Set the attributes ``state`` (a dict, or torch's ``(dict, slots)`` pair) on ``obj``."""
    if isinstance(state, tuple):
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for name, value in (dict_state or {}).items():
        setattr(obj, name, value)
    for name, value in (slots_state or {}).items():
        setattr(obj, name, value)
    return obj


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    """The tensor of ``size`` and ``stride`` at ``storage_offset`` in ``storage`` (a typed
    storage), as torch's function of the same name.

    Example::

        >>> s = ember.arange(6.).storage()
        >>> ember._utils._rebuild_tensor_v2(s, 1, (2,), (2,), False, None)
        tensor([1., 3.])
    """
    from .serialization import _LoadedStorage
    from .serialization import _rebuild_tensor_v2 as rebuild

    elements = None if storage.device is META else storage._elements()
    if elements is None:
        elements = _meta_elements(storage)
    t = rebuild(_LoadedStorage(elements, storage.device), storage_offset, size, stride,
                requires_grad)
    return _apply_metadata(t, metadata)


def _meta_elements(storage):
    import numpy as np

    return np.broadcast_to(np.zeros((), storage.dtype.np), (storage.size(),))


def _apply_metadata(t, metadata):
    """torch records a lazily conjugated or negated tensor as its memory plus these flags."""
    if not metadata:
        return t
    requires_grad = t.requires_grad
    t = t.detach()
    if metadata.get("conj"):
        t = t.conj().resolve_conj()
    if metadata.get("neg"):
        t = t.neg()
    return t.requires_grad_(requires_grad) if requires_grad else t


def _rebuild_tensor(storage, storage_offset, size, stride):
    """torch's older form of :func:`_rebuild_tensor_v2` (no autograd flags)."""
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, False, None)


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    """A meta tensor (shape and dtype only): torch pickles meta tensors without a storage."""
    from .ops.creation import empty_strided

    return empty_strided(size, stride, dtype=dt.to_dtype(dtype), device="meta",
                         requires_grad=requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    """``nn.Parameter(data, requires_grad)``, as torch unpickles a parameter.

    Example::

        >>> ember._utils._rebuild_parameter(ember.ones(1), False, None).requires_grad
        False
    """
    from .nn.parameter import Parameter

    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """A parameter that carried Python attributes (``state``) when it was pickled."""
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)
