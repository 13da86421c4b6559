"""Array-level collectives along one process group that shard or gather one tensor dimension.

Shards follow ``torch.chunk``: with ``size`` rows over ``n`` ranks every shard has
``ceil(size / n)`` rows except the last ones, which hold what is left (possibly nothing).
Collectives need equal pieces, so shards travel padded with zeros to the full chunk.
"""

from __future__ import annotations

import numpy as np

from ..._device import CPU
from ..._tensor import Tensor


def _dist():
    from ... import distributed

    return distributed


def chunk_bounds(size, n, index):
    """The ``[start, end)`` rows of shard ``index`` when ``size`` rows are chunked ``n`` ways."""
    chunk = -(-size // n) if size else 0
    start = min(index * chunk, size)
    return start, min(start + chunk, size)


def shard_array(array, dim, n, index):
    """A contiguous copy of shard ``index`` of ``array`` along ``dim``."""
    start, end = chunk_bounds(array.shape[dim], n, index)
    return np.ascontiguousarray(np.take(array, np.arange(start, end), axis=dim))


def _padded_rows(array, rows):
    """``array`` with dimension 0 zero-padded to ``rows`` rows (contiguous)."""
    out = np.zeros((rows,) + array.shape[1:], array.dtype)
    out[:array.shape[0]] = array
    return out


def gather_array(local, dim, full_size, group):
    """Every rank's shard of ``dim`` concatenated back into the full array."""
    dist = _dist()
    n = dist.get_world_size(group)
    chunk = -(-full_size // n) if full_size else 0
    moved = np.moveaxis(local, dim, 0)
    out = np.zeros((n * chunk,) + moved.shape[1:], local.dtype)
    dist.all_gather_into_tensor(Tensor._make(out, CPU),
                                Tensor._make(_padded_rows(moved, chunk), CPU), group=group)
    return np.ascontiguousarray(np.moveaxis(out[:full_size], 0, dim))


def reduce_scatter_array(full, dim, group, op):
    """This rank's shard along ``dim`` of ``full`` reduced (``op``) over the group's ranks."""
    dist = _dist()
    n = dist.get_world_size(group)
    size = full.shape[dim]
    chunk = -(-size // n) if size else 0
    moved = np.moveaxis(full, dim, 0)
    out = np.zeros((chunk,) + moved.shape[1:], full.dtype)
    dist.reduce_scatter_tensor(Tensor._make(out, CPU),
                               Tensor._make(_padded_rows(moved, n * chunk), CPU), op=op,
                               group=group)
    start, end = chunk_bounds(size, n, dist.get_rank(group))
    return np.ascontiguousarray(np.moveaxis(out[:end - start], 0, dim))


def all_reduce_array(array, group, op):
    """``array`` reduced (``op``) over the group's ranks (a new array)."""
    out = np.ascontiguousarray(array).copy()
    _dist().all_reduce(Tensor._make(out, CPU), op=op, group=group)
    return out
