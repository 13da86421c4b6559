"""DTensor factories (``ones``, ``zeros``, ``empty``, ``full``, ``rand``, ``randn``): the whole
tensor made on every rank with the ordinary factory, then cut to this rank's piece, so that
after one seed the pieces of the ranks form one random tensor.

Example::

    >>> dt = ember.distributed.tensor.ones(4, 3, device_mesh=mesh, placements=[Shard(0)])
    >>> dt.to_local().shape          # torch.Size([2, 3]) on 2 ranks
"""

from __future__ import annotations

from ..._tensor import Tensor
from ...ops import creation
from ...ops import random as _random
from ._api import _default_mesh, _from_replicate, _normalize, _wrap
from .placement_types import Replicate

__all__ = ["ones", "zeros", "empty", "full", "rand", "randn"]


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _distributed(whole, device_mesh, placements, requires_grad):
    mesh = device_mesh if device_mesh is not None else _default_mesh()
    placements = (Replicate(),) * mesh.ndim if placements is None else _normalize(
        placements, mesh, whole.dim())
    local = _from_replicate(whole._data, mesh, placements)
    return _wrap(Tensor._make(local, whole._device), mesh, placements, tuple(whole.shape),
                 requires_grad=requires_grad)


def ones(*size, dtype=None, layout=None, requires_grad=False, device_mesh=None,
         placements=None):
    """A DTensor of ones of global shape ``size``.

    Example::

        >>> ones(4, 3, device_mesh=mesh, placements=[Shard(0)])
    """
    return _distributed(creation.ones(*_size(size), dtype=dtype), device_mesh, placements,
                        requires_grad)


def zeros(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
          placements=None):
    """A DTensor of zeros of global shape ``size``.

    Example::

        >>> zeros(4, 3, device_mesh=mesh, placements=[Shard(0)])
    """
    return _distributed(creation.zeros(*_size(size), dtype=dtype), device_mesh, placements,
                        requires_grad)


def empty(*size, dtype=None, layout=None, requires_grad=False, device_mesh=None,
          placements=None):
    """An uninitialised DTensor of global shape ``size``.

    Example::

        >>> empty(4, 3, device_mesh=mesh, placements=[Shard(0)])
    """
    return _distributed(creation.empty(*_size(size), dtype=dtype), device_mesh, placements,
                        requires_grad)


def full(size, fill_value, *, dtype=None, layout=None, requires_grad=False, device_mesh=None,
         placements=None):
    """A DTensor of global shape ``size`` filled with ``fill_value``.

    Example::

        >>> full((4, 3), 7.0, device_mesh=mesh, placements=[Shard(0)])
    """
    return _distributed(creation.full(tuple(size), fill_value, dtype=dtype), device_mesh,
                        placements, requires_grad)


def rand(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
         placements=None):
    """A DTensor of uniform [0, 1) samples of global shape ``size``.

    Example::

        >>> rand(4, 3, device_mesh=mesh, placements=[Shard(0)])
    """
    return _distributed(_random.rand(*_size(size), dtype=dtype), device_mesh, placements,
                        requires_grad)


def randn(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
          placements=None):
    """A DTensor of standard normal samples of global shape ``size``.

    Example::

        >>> randn(4, 3, device_mesh=mesh, placements=[Shard(0)])
    """
    return _distributed(_random.randn(*_size(size), dtype=dtype), device_mesh, placements,
                        requires_grad)
