"""What every sparse layout answers alike: sizes, dtype and device (those of its ``values``),
the autograd flags, and the casts built on ``to``.

A subclass stores its ``values`` tensor in ``_vals``, its size in ``_size``, sets
``_owns_values`` when ``_vals`` is its own autograd leaf, and defines ``to``.
"""

from __future__ import annotations

import math

from .. import _dtype as dt


class SparseTensorBase:
    """The members that sparse COO and compressed tensors share."""

    __slots__ = ()

    # ------------------------------------------------------------ metadata

    @property
    def shape(self):
        return self._size

    def size(self, dim=None):
        """The size, or the size of one dim.

        Example::

            >>> ember.zeros(2, 3).to_sparse().size(1)
            3
        """
        if dim is None:
            return self._size
        return self._size[wrap_dim(dim, len(self._size))]

    def dim(self):
        """The number of dims (sparse plus dense).

        Example::

            >>> ember.zeros(2, 3).to_sparse().dim()
            2
        """
        return len(self._size)

    @property
    def ndim(self):
        return len(self._size)

    def numel(self):
        """The number of elements of the dense equivalent.

        Example::

            >>> ember.zeros(2, 3).to_sparse().numel()
            6
        """
        return math.prod(self._size)

    def __len__(self):
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def is_cuda(self):
        return self._vals.is_cuda

    @property
    def is_cpu(self):
        return self._vals.is_cpu

    # ------------------------------------------------------------ autograd

    @property
    def requires_grad(self):
        return self._vals.requires_grad

    @property
    def grad_fn(self):
        return None if self._owns_values else self._vals.grad_fn

    @property
    def is_leaf(self):
        return self._owns_values or not self._vals.requires_grad

    # ------------------------------------------------------------ casts

    def double(self):
        return self.to(dt.float64)

    def float(self):
        return self.to(dt.float32)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(device if device is not None else "cuda")


def wrap_dim(dim, ndim):
    """``dim`` counted from the front, with torch's IndexError when out of range."""
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {dim})")
    return dim % max(ndim, 1)
