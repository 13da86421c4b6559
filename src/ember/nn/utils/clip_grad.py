"""Gradient clipping: by total norm (``clip_grad_norm_``) or by value (``clip_grad_value_``).

The total norm is the ``norm_type``-norm of the per-tensor norms (the same as the norm of all
gradients concatenated). Clipping multiplies every gradient by
``min(1, max_norm / (total_norm + 1e-6))`` in place, as torch does (so a NaN norm makes the
gradients NaN unless ``error_if_nonfinite``). ``foreach`` is accepted and has no effect.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..._device import CPU
from ..._tensor import Tensor, tensor
from ...autograd.grad_mode import no_grad
from ...linalg import vector_norm
from ...ops.shape import stack

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _tensors(parameters):
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def _grads(parameters):
    return [p.grad for p in _tensors(parameters) if p.grad is not None]


def _plain_cpu_arrays(tensors):
    """The float32/float64 arrays of ``tensors`` when every one is a plain dense CPU tensor
    (no subclass, no shard, writable) of one dtype, else ``None``: the case the one-pass
    2-norm and the in-place scaling serve."""
    arrays = []
    for t in tensors:
        if (type(t) is not Tensor or t._device is not CPU or getattr(t, "_spec", None) is not None
                or not t._data.flags.writeable):
            return None
        arrays.append(t._data)
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1 or dtypes.pop() not in (np.float32, np.float64):
        return None
    return arrays


def _two_norm(array):
    """``sqrt(sum(array ** 2))`` in one pass over the memory (a BLAS dot product)."""
    flat = array.reshape(-1)
    return np.sqrt(np.dot(flat, flat))


def _total_two_norm(arrays):
    """The 2-norm of the per-array 2-norms, each rounded to the arrays' dtype as torch's
    stacked norms are.

    Example::

        >>> float(_total_two_norm([np.array([3.], np.float32), np.array([4.], np.float32)]))
        5.0
    """
    norms = np.array([_two_norm(a) for a in arrays], dtype=arrays[0].dtype)
    return tensor(_two_norm(norms))


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of all ``tensors`` together (as if concatenated).

    Example::

        >>> ember.nn.utils.get_total_norm([ember.tensor([3.]), ember.tensor([4.])])
        tensor(5.)
    """
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return tensor(0.0)
    arrays = _plain_cpu_arrays(tensors) if norm_type == 2.0 else None
    if arrays is not None:
        total = _total_two_norm(arrays)
        _check_finite(total, norm_type, error_if_nonfinite)
        return total
    with no_grad():
        norms = [vector_norm(t, norm_type) for t in tensors]
        if any(getattr(t, "_spec", None) is not None for t in tensors):
            from ...distributed.tensor._api import global_norms

            norms = global_norms(tensors, norms, norm_type)
        if len(norms) == 1:
            total = norms[0]
        else:
            device = norms[0].device
            total = vector_norm(stack([n.to(device) for n in norms]), norm_type)
    _check_finite(total, norm_type, error_if_nonfinite)
    return total


def _check_finite(total, norm_type, error_if_nonfinite):
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))``.

    Example::

        >>> w = ember.nn.Parameter(ember.ones(2)); w.grad = ember.tensor([3., 4.])
        >>> ember.nn.utils.clip_grads_with_norm_([w], 1.0, ember.tensor(5.))
        >>> w.grad
        tensor([0.6000, 0.8000])
    """
    grads = _grads(parameters)
    if len(grads) == 0:
        return
    max_norm = float(max_norm)
    with no_grad():
        coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        arrays = _plain_cpu_arrays(grads) if total_norm.device == CPU else None
        if arrays is None:
            for g in grads:
                g.mul_(coef.to(g.device))
            return
        _scale_in_place(grads, arrays, coef._data.astype(arrays[0].dtype))


def _scale_in_place(grads, arrays, coef):
    """``g *= coef`` for each gradient, skipping the multiply when ``coef`` is exactly 1 (the
    values would not change); every gradient's version advances as after ``mul_``."""
    for g, array in zip(grads, arrays):
        if coef != 1:
            np.multiply(array, coef, out=array)
        g._vc[0] += 1


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Clip the gradients of ``parameters`` in place so that their total norm is at most
    ``max_norm``; returns the total norm before clipping.

    Example::

        >>> w = ember.nn.Parameter(ember.ones(2)); w.grad = ember.tensor([3., 4.])
        >>> ember.nn.utils.clip_grad_norm_(w, max_norm=1.0)
        tensor(5.)
    """
    parameters = _tensors(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_` (warns, as torch does).

    Example::

        >>> w = ember.nn.Parameter(ember.ones(2)); w.grad = ember.ones(2)
        >>> _ = ember.nn.utils.clip_grad_norm_(w, 1.0)
    """

    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of ``parameters`` to ``[-clip_value, clip_value]`` in place.

    Example::

        >>> w = ember.nn.Parameter(ember.ones(2)); w.grad = ember.tensor([-3., 0.5])
        >>> ember.nn.utils.clip_grad_value_(w, 1.0)
        >>> w.grad
        tensor([-1.0000,  0.5000])
    """
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)

