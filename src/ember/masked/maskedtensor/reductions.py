"""Reductions of MaskedTensors: ``torch.masked``'s reduction on the data with the mask.

With no argument but the tensor the reduction runs over every element and gives a 0-dim
MaskedTensor, masked out when no element is specified. Given ``dim`` (``keepdim``, ``dtype``) it
runs along those dims; an output element is specified when any element it reduces is.

Example::

    >>> mt = masked_tensor(ember.tensor([[1., 2.], [3., 4.]]),
    ...                    ember.tensor([[True, False], [False, False]]))
    >>> mt.sum(1)
    MaskedTensor(
      [  1.0000,       --]
    )
"""

from __future__ import annotations

import ember

from ._autograd import gated
from .core import _wrap, is_masked_tensor

__all__ = []

REDUCE_NAMES = ("sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "all", "var", "std")


def _masked_all(data, dim=None, keepdim=False, mask=None):
    """``all`` with masked-out elements counting as True."""
    filled = data.masked_fill(~mask, True)
    return filled.all() if dim is None else ember.all(filled, dim, keepdim)


def _masked_function(name):
    return _masked_all if name == "all" else getattr(ember.masked, name)


def _any_along(mask, dim, keepdim):
    """Which output elements have at least one specified element along ``dim``."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in sorted(dims, reverse=True):
        mask = ember.any(mask, dim=d, keepdim=keepdim)
    return mask


def reduce_all(name, input):
    """The reduction ``name`` over every element: a 0-dim MaskedTensor."""
    data, mask = gated(input), input._masked_mask
    if name == "all":
        result = _masked_all(data, mask=mask)
    else:
        result = _masked_function(name)(data, mask=mask)
    return _wrap(result, ember.any(mask))


def reduce_dim(name, input, dim, keepdim=False, dtype=None):
    """The reduction ``name`` along ``dim``."""
    if not is_masked_tensor(input):
        raise TypeError("Input to reduce_dim must be a MaskedTensor")
    data, mask = gated(input), input._masked_mask
    if name == "all":
        result = _masked_all(data, dim=dim, keepdim=keepdim, mask=mask)
    else:
        result = _masked_function(name)(data, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return _wrap(result, _any_along(mask, dim, keepdim))


def apply_reduction(name, args, kwargs):
    """``name``'s reduction as torch's MaskedTensor runs it from a call's arguments.

    Example::

        >>> mt = masked_tensor(ember.tensor([1., 5.]), ember.tensor([True, False]))
        >>> apply_reduction("amax", (mt,), {}).get_data()
        tensor(1.)
    """
    if len(args) == 1 and not kwargs:
        return reduce_all(name, args[0])
    return reduce_dim(name, *args, **kwargs)
