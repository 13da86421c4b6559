"""What the indexing families share: index range checks (one host sync), ``ufunc.at``
accumulation on the array module, the keys and shapes of scatters along a dim."""

from __future__ import annotations

import numpy as np

from .._util import host_values

_INDEX_INT = (np.dtype(np.int64), np.dtype(np.int32))
_SHORT = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _short(t):
    return _SHORT[t.dtype.name]


# ---------------------------------------------------------------- kernel helpers


def _check_range(xp, idx, size, dim, message, exc=RuntimeError, negative=False):
    """Raise ``exc(message)`` naming the first index outside ``[0, size)`` (or ``[-size,
    size)`` with ``negative``). On webgpu the check runs at the next host read instead of
    waiting for the device now (``defer_range_check``, as CUDA's device-side checks)."""
    if idx.size == 0:
        return
    low = -size if negative else 0
    defer = None if xp is np else getattr(xp, "defer_range_check", None)
    if defer is not None:
        defer(idx, low, size, lambda bad: exc(message.format(index=bad, dim=dim, size=size)))
        return
    smallest, largest = host_values(xp, idx.min(), idx.max())  # one sync on the GPU
    if smallest >= low and largest < size:
        return
    bad = idx[(idx < low) | (idx >= size)].ravel()[0]
    raise exc(message.format(index=int(bad), dim=dim, size=size))


def _ufunc_at(xp, name, out, key, values):
    """``out[key] (op)= values`` with repeated indices combined (``np.<ufunc>.at``)."""
    if xp is np:
        if name == "add" and _add_rows_in_rounds(out, key, values):
            return
        getattr(np, name).at(out, key, values)
        return
    own = getattr(xp, "ufunc_at", None)
    if own is not None:  # the webgpu array module's own (ember.webgpu._xp)
        own(name, out, key, values)
        return
    import cupyx

    fast = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}
    if name in fast:
        try:
            getattr(cupyx, fast[name])(out, key, values)
            return
        except (TypeError, NotImplementedError, ValueError):
            pass
    _ufunc_at_rounds(xp, name, out, key, values)


# the most repetitions of one index for which :func:`_add_rows_in_rounds` beats ``add.at``
_MAX_ROUNDS = 32
_MIN_TERMS = 8192   # and the fewest values: below, add.at costs less than the sort


def _add_rows_in_rounds(out, key, values):
    """``np.add.at(out, (idx,), values)`` for whole rows (an embedding's or ``index_add``'s
    weight gradient) in rounds: round ``r`` adds every index's ``r``-th row with one
    fancy-indexed add (its indices are distinct), so each row of ``out`` receives its terms in
    ``add.at``'s order (the same values) while ``add.at`` walks the rows one element at a time
    (a 1024 x 128 gradient: 5-8x slower). False, untouched, where it does not apply: other
    keys, small or narrow rows, an index repeated more than :data:`_MAX_ROUNDS` times."""
    if len(key) != 1 or out.ndim < 2 or out.dtype.kind not in "fciu":
        return False
    idx = key[0]
    if not isinstance(idx, np.ndarray) or idx.ndim != 1 or idx.dtype.kind not in "iu" \
            or values.shape != idx.shape + out.shape[1:] or values.size < _MIN_TERMS \
            or values.size < 32 * idx.size:  # short rows: add.at's per-call cost is less
        return False
    idx = np.where(idx < 0, idx + out.shape[0], idx)  # -1 and n - 1 are one row
    order = np.argsort(idx, kind="stable")  # stable: a row's terms keep their order
    ordered = idx[order]
    rank = np.empty(idx.size, np.intp)   # each term's occurrence number within its row
    rank[order] = np.arange(idx.size) - np.searchsorted(ordered, ordered, side="left")
    rounds = int(rank.max()) + 1
    if rounds > _MAX_ROUNDS:
        return False
    if rounds == 1:
        out[idx] += values
        return True
    for r in range(rounds):
        chosen = np.flatnonzero(rank == r)
        out[idx[chosen]] += values[chosen]
    return True


def _ufunc_at_rounds(xp, name, out, key, values):
    """Generic ``ufunc.at`` on a GPU: rounds of duplicate-free writes (one per repetition)."""
    positions = xp.arange(out.size).reshape(out.shape)[key]
    values = xp.broadcast_to(values, positions.shape).ravel()
    positions = positions.ravel()
    order = xp.argsort(positions, kind="stable")
    positions, values = positions[order], values[order]
    if positions.size == 0:
        return
    # sorted positions: a position's first occurrence is where searchsorted puts it
    rank = xp.arange(positions.size) - xp.searchsorted(positions, positions, side="left")
    flat = out.reshape(-1)
    ufunc = getattr(xp, name)
    (rounds,) = host_values(xp, rank.max())
    for r in range(rounds + 1):
        chosen = rank == r
        where = positions[chosen]
        flat[where] = ufunc(flat[where], values[chosen])


def _along(dim, idx):
    """The key ``(:, ..., :, idx)`` that indexes ``idx`` along ``dim``."""
    return (slice(None),) * dim + (idx,)


def _scatter_key(xp, idx, dim):
    """The advanced key that sends ``idx[i, j, ...]`` along ``dim`` (gather/scatter layout)."""
    key = []
    for d, n in enumerate(idx.shape):
        if d == dim:
            key.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[d] = n
            key.append(xp.arange(n).reshape(shape))
    return tuple(key)


def _prefix(src, shape):
    """``src`` cut down to its leading ``shape`` block (scatter uses only index's extent)."""
    if src.shape == tuple(shape):
        return src
    return src[tuple(slice(0, n) for n in shape)]


def _at_least_1d(*arrays):
    return tuple(a.reshape(1) if a.ndim == 0 else a for a in arrays)


def _zeros(shape, like):
    from ..creation import zeros

    return zeros(shape, dtype=like.dtype, device=like._device)


def _same_shape_meta(a, *rest, **params):
    return a.shape, a.dtype


def _to_device(index, device):
    if index._device is not device:
        return index.to(device)
    return index
