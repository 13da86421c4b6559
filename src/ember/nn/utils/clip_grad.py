"""Gradient clipping: by total norm (``clip_grad_norm_``) or by value (``clip_grad_value_``).

The total norm is the ``norm_type``-norm of the per-tensor norms (the same as the norm of all
gradients concatenated). Clipping multiplies every gradient by
``min(1, max_norm / (total_norm + 1e-6))`` in place, as torch does (so a NaN norm makes the
gradients NaN unless ``error_if_nonfinite``). ``foreach`` is accepted and has no effect.
"""

from __future__ import annotations

import warnings

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
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return total


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
        for g in grads:
            g.mul_(coef.to(g.device))


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

