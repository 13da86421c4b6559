"""Helpers shared by the distributions: broadcasting parameters, probabilities <-> logits."""

from __future__ import annotations

import numbers

import ember

__all__ = ["broadcast_all", "probs_to_logits", "logits_to_probs", "clamp_probs",
           "lazy_property", "sum_rightmost"]


def broadcast_all(*values):
    """Broadcast numbers and tensors to one shape (numbers take the first tensor's dtype and
    device, or the default dtype when all are numbers), as ``torch.distributions.utils``.

    Example::

        >>> a, b = broadcast_all(ember.zeros(2), 1.0)
        >>> b
        tensor([1., 1.])
    """
    ref = None
    for v in values:
        if isinstance(v, ember.Tensor):
            ref = v if ref is None else ref
        elif not isinstance(v, numbers.Number):
            raise ValueError("Input arguments must all be instances of numbers.Number, "
                             "ember.Tensor or objects implementing __torch_function__.")
    if ref is None:
        dtype = ember.get_default_dtype()
        return tuple(ember.tensor(float(v), dtype=dtype) for v in values)
    values = tuple(v if isinstance(v, ember.Tensor)
                   else ember.tensor(v, dtype=ref.dtype, device=ref.device) for v in values)
    return tuple(ember.broadcast_tensors(*values))


def clamp_probs(probs):
    """Clamp probabilities into ``[eps, 1 - eps]`` of their dtype.

    Example::

        >>> clamp_probs(ember.tensor([0.0, 1.0])).min() > 0
        tensor(True)
    """
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits of probabilities (log-odds when ``is_binary``), clamped away from 0 and 1.

    Example::

        >>> probs_to_logits(ember.tensor([0.5]), is_binary=True)
        tensor([0.])
    """
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid when ``is_binary``, else softmax over the last dim.

    Example::

        >>> logits_to_probs(ember.tensor([0.0]), is_binary=True)
        tensor([0.5000])
    """
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def sum_rightmost(value, dim):
    """Sum over the ``dim`` rightmost dims (a number passes through).

    Example::

        >>> sum_rightmost(ember.ones(2, 3), 1)
        tensor([3., 3.])
    """
    if dim == 0 or not isinstance(value, ember.Tensor):
        return value
    return value.sum(tuple(range(-dim, 0)))


class lazy_property:
    """A property computed on first access and then cached in the instance's ``__dict__``.

    Example::

        >>> class A:
        ...     @lazy_property
        ...     def x(self):
        ...         return 3
        >>> A().x
        3
    """

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with ember.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value
