"""Tensors built from the elements of several: ``cartesian_prod``, ``combinations`` and
``block_diag``.

Example::

    >>> ember.block_diag(ember.ones(1, 1), ember.ones(1, 2))
    tensor([[1., 0., 0.],
            [0., 1., 1.]])
"""

from __future__ import annotations

import builtins
import itertools

import numpy as np

from .. import _dtype as dt
from .._tensor_functions import require_tensor as _check_tensor
from ._signature import signature

__all__ = ["cartesian_prod", "combinations", "block_diag"]


@signature("cartesian_prod(Tensor[] tensors) -> Tensor")
def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors, one row per combination (``itertools.product``
    order); one tensor is returned as it is.

    Example::

        >>> ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    if len(tensors) == 0:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    from .shape import meshgrid, stack

    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of a 1-D tensor, one per row
    (``itertools.combinations`` order; ``with_replacement``: as
    ``itertools.combinations_with_replacement``).

    Example::

        >>> ember.combinations(ember.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    _check_tensor(input, "combinations")
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if type(r) is not int:
        raise TypeError(f"combinations(): argument 'r' must be int, not {type(r).__name__}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    choose = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    flat = np.fromiter(itertools.chain.from_iterable(choose(range(input.shape[0]), r)),
                       dtype=np.int64)
    from .._tensor import tensor as _tensor

    index = _tensor(flat, device=input.device)
    return input.index_select(0, index).reshape(-1, r)


@signature("block_diag(Tensor[] tensors) -> Tensor")
def block_diag(*tensors):
    """A block-diagonal matrix from 0-, 1- and 2-D tensors (a 1-D tensor is one row), in
    their promoted dtype.

    Example::

        >>> ember.block_diag(ember.tensor([[1, 2]]), ember.tensor(3))
        tensor([[1, 2, 0],
                [0, 0, 3]])
    """
    from ..nn.functional import pad
    from .creation import zeros
    from .shape import cat

    if len(tensors) == 0:
        return zeros((1, 0))
    blocks = []
    result_dtype = None
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
        result_dtype = t.dtype if result_dtype is None else \
            dt.promote_types(result_dtype, t.dtype)
    device = tensors[0].device
    for i, t in enumerate(tensors):
        if t.device != device:
            raise RuntimeError(f"torch.block_diag: input tensors must all be on the same "
                               f"device. Input 0 is on device {device} and input {i} is on "
                               f"device {t.device}.")
    total = builtins.sum(b.shape[1] for b in blocks)
    rows = []
    left = 0
    for b in blocks:
        width = b.shape[1]
        rows.append(pad(b.to(result_dtype), (left, total - left - width)))
        left += width
    return cat(rows, 0)
