"""Counting and binning: bincount, histc, histogram, searchsorted,
bucketize."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ... import _dtype as dt
from ... import return_types
from ..._device import META
from ..._tensor import Tensor
from .._methods import tensor_method
from .._registry import defop, write_out
from .._signature import signature, type_name
from .._util import host_values
from .._vmap_rules import batching
from ._common import _check_tensor, _quiet, _type_name, _write_out_tuple
from .sorting import _data_dependent_meta

__all__ = ["bincount", "histc", "histogram", "searchsorted", "bucketize"]


# ---------------------------------------------------------------- bincount, histc, histogram


@defop("bincount", meta=_data_dependent_meta("bincount"), kind="other",
       opt_outs={"onnx": "ONNX has no operator for it"})
def bincount_op(xp, a, *weights, minlength, out_dtype):
    size = builtins.max(host_values(xp, a.max())[0] + 1 if a.size else 0, minlength)
    if weights:
        w = weights[0].astype(np.float64)
        return xp.bincount(a, weights=w, minlength=size).astype(out_dtype)
    return xp.bincount(a, minlength=size).astype(np.int64)


bincount_op.opt_out("batch", "each element's result is as long as its largest value + 1; "
                         "torch's vmap runs it element by element too")
bincount_op.opt_out("derivative", "torch does not differentiate bincount")


@tensor_method
@signature("bincount(Tensor input, Tensor? weights=None, SymInt minlength=0) -> Tensor")
def bincount(input, weights=None, minlength=0):
    """Count the occurrences of each value in a 1-D non-negative integer tensor (summing
    ``weights`` instead of ones when given).

    Example::

        >>> ember.bincount(ember.tensor([0, 2, 2]))
        tensor([1, 0, 2])
    """
    if input._data.dtype.kind not in "iub":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input._data.ndim != 1 or (input._device is not META and input._data.size
                                 and bool((input._data < 0).any())):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return bincount_op(input, minlength=int(minlength), out_dtype=np.dtype(np.int64))
    if weights._data.ndim != 1 or weights._data.shape[0] != input._data.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dtype = np.dtype(np.float32) if weights._data.dtype == np.float32 else \
        np.dtype(np.float64)
    return bincount_op(input, weights.detach(), minlength=int(minlength), out_dtype=out_dtype)


def _check_finite_range(low, high, what):
    """torch's error for bins over a range with an infinite or nan end (given, or the data's)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"{what} [{low:g}, {high:g}] is not finite")


def _histogram_range(xp, a, low, high):
    if low == high and a.size:
        low, high = host_values(xp, a.min(), a.max())  # data-dependent bins: one sync
        low, high = float(low), float(high)
    _check_finite_range(low, high, "torch.histc: range of")
    if low == high:
        low, high = low - 1, high + 1
    return low, high


@defop("histc", meta=lambda a, *, bins, low, high: ((bins,), a.dtype), kind="other",
       opt_outs={"onnx": "ONNX has no operator for it"})
def histc_op(xp, a, *, bins, low, high):
    flat = a.reshape(-1)
    low, high = _histogram_range(xp, flat, low, high)
    # torch's histc bins by division, each step rounded in the input's dtype (its edges are
    # never returned, so it skips histogram's check against them).
    first, last = xp.asarray(low, a.dtype), xp.asarray(high, a.dtype)
    with _quiet(xp):
        values = flat[(flat >= first) & (flat <= last)]
        scaled = (values - first) * xp.asarray(bins, a.dtype) / (last - first)
    index = xp.minimum(scaled.astype(np.int64), bins - 1)
    return xp.bincount(index, minlength=bins).astype(a.dtype)


histc_op.opt_out("batch", "without min and max the bins span each element's own range; "
                      "torch's vmap runs it element by element too")
histc_op.opt_out("derivative", "torch does not differentiate histc")


def bin_positions(xp, edges, values):
    """``(kept, bins)``: which ``values`` fall within ``[edges[0], edges[-1]]`` (nan does
    not), and the bin of each kept one, found as torch's histogram kernels find it.

    A value goes to the last edge at or below it, by C++'s ``upper_bound`` (a binary search
    whose answer on unsorted edges, which torch accepts, is torch's too); the last edge
    belongs to the last bin.

    Example::

        >>> kept, bins = bin_positions(np, np.array([0., 1., 2.]), np.array([-1., 1., 2.]))
        >>> kept, bins
        (array([False,  True,  True]), array([1, 1]))
    """
    kept = (values >= edges[0]) & (values <= edges[-1])
    targets = values[kept]
    n = edges.shape[0]
    if bool((edges[1:] >= edges[:-1]).all()):  # sorted: the library's search finds the same
        return kept, xp.minimum(xp.searchsorted(edges, targets, side="right") - 1, n - 2)
    first = xp.zeros(targets.shape, np.int64)
    count = xp.full(targets.shape, n, np.int64)
    for _ in range(n.bit_length()):  # each round halves the range still searched
        step = count // 2
        probe = first + step
        right = (count > 0) & ~(targets < edges[xp.minimum(probe, n - 1)])
        first = xp.where(right, probe + 1, first)
        count = xp.where(right, count - step - 1, step)
    return kept, xp.minimum(first - 1, n - 2)


@tensor_method
@signature("histc(Tensor input, int bins=100, Scalar min=0, Scalar max=0, *,"
           " Tensor? out=None) -> Tensor")
def histc(input, bins=100, min=0, max=0, *, out=None):
    """A histogram with ``bins`` equal bins between ``min`` and ``max`` (the data's range when
    both are 0); elements outside are ignored.

    Example::

        >>> ember.histc(ember.tensor([1., 2., 1.]), bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.])
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0, but got " + str(bins) + " for dim 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    if math.isinf(min) or math.isinf(max) or math.isnan(min) or math.isnan(max):
        raise RuntimeError(f"torch.histc: range of [{min}, {max}] is not finite")
    return write_out(histc_op(input, bins=int(bins), low=float(min), high=float(max)), out,
                     "histc")


def _histogram_meta(a, *weight, bins, low, high, density, edges):
    n = bins if edges is None else len(edges) - 1
    return ((n,), a.dtype), ((n + 1,), a.dtype)


@defop("histogram", meta=_histogram_meta, multi_output=True, kind="other",
       opt_outs={"onnx": "ONNX has no operator for it"})
def histogram_op(xp, a, *weight, bins, low, high, density, edges):
    flat = a.reshape(-1)
    if edges is None:
        if low is None:  # the data's range; torch's [0, 1] without data
            low, high = host_values(xp, flat.min(), flat.max()) if flat.size else (0.0, 1.0)
            low, high = float(low), float(high)
        _check_finite_range(low, high, "torch.histogramdd: dimension 0's range")
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges_array = xp.linspace(low, high, bins + 1).astype(a.dtype)
    else:
        edges_array = xp.asarray(edges, dtype=a.dtype)
    n = edges_array.shape[0] - 1
    keep, index = bin_positions(xp, edges_array, flat)
    w = weight[0].reshape(-1)[keep].astype(np.float64) if weight else None
    hist = xp.bincount(index, weights=w, minlength=n).astype(np.float64)
    if density:
        with _quiet(xp):
            hist = hist / (hist.sum() * xp.diff(edges_array.astype(np.float64)))
    return hist.astype(a.dtype), edges_array


histogram_op.opt_out("batch", "the bins may come from each element's own range; torch's "
                          "vmap runs it element by element too")
histogram_op.opt_out("derivative", "torch does not differentiate histogram")


@tensor_method
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """A histogram of ``input``: ``(hist, bin_edges)``; ``bins`` is a count of equal bins
    (100 by default, as torch's, over ``range`` or the data's range) or a 1-D tensor of
    increasing edges.

    Example::

        >>> ember.histogram(ember.tensor([1., 2., 1.]), bins=2).hist
        tensor([2., 1.])
    """
    _check_tensor(input, "histogram")
    if not isinstance(bins, Tensor) and (type(bins) is bool or not isinstance(
            bins, (int, np.integer))):  # torch's two overloads: a bin count or bin edges
        raise TypeError(f"histogram() received an invalid combination of arguments - got "
                        f"(Tensor, {type_name(bins)}), but expected one of:\n"
                        f" * (Tensor input, Tensor bins, *, tuple of floats range = None, "
                        f"Tensor weight = None, bool density = False)\n"
                        f" * (Tensor input, int bins = 100, *, tuple of floats range = None, "
                        f"Tensor weight = None, bool density = False)\n")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    edges = None
    low = high = None
    if isinstance(bins, Tensor):
        edges = tuple(bins.to(input.dtype).tolist())
        if len(edges) < 2:
            raise RuntimeError("torch.histogram(): bins tensor should have at least 1 dimension "
                               "and 2 elements")
        bins = len(edges) - 1
    elif bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if range is not None:
        low, high = float(range[0]), float(range[1])
        if low > high:
            raise ValueError(f"torch.histogram(): min should not exceed max, but got min {low} "
                             f"max {high}")
    args = (input,) if weight is None else (input, weight.detach())
    result = return_types.histogram(*histogram_op(*args, bins=int(bins), low=low, high=high,
                                                  density=builtins.bool(density), edges=edges))
    return _write_out_tuple(result, out, "histogram")


# ---------------------------------------------------------------- searchsorted, bucketize


def _searchsorted_meta(seq, values, *sorter, right, out_int32, scalar):
    return values.shape, np.dtype(np.int32 if out_int32 else np.int64)


@defop("searchsorted", meta=_searchsorted_meta, kind="other",
       opt_outs={"onnx": "ONNX has no operator for it"})
def searchsorted_op(xp, seq, values, *sorter, right, out_int32, scalar):
    side = "right" if right else "left"
    if sorter:
        seq = xp.take_along_axis(seq, sorter[0], axis=-1)
    if seq.dtype.kind == "f" and builtins.bool(xp.isnan(seq).any()):
        result = _torch_binary_search(xp, seq, values, right)
    elif seq.ndim == 1:
        result = xp.searchsorted(seq, values, side=side)
    else:
        # Batched: rank every value against the boundaries of its own row. Joint ranks keep
        # the order; rows are separated by adding row * (number of ranks).
        rows = math.prod(seq.shape[:-1])
        flat_seq = seq.reshape(rows, seq.shape[-1])  # explicit sizes: rows may be 0
        flat_values = values.reshape(rows, values.shape[-1])
        joined = xp.concatenate([flat_seq.reshape(-1), flat_values.reshape(-1)])
        _, ranks = xp.unique(joined, return_inverse=True)
        ranks = ranks.reshape(-1)
        span = builtins.max(joined.size, 1)  # > every rank, known without a sync
        offsets = xp.arange(rows)[:, None] * span
        seq_keys = ranks[:flat_seq.size].reshape(flat_seq.shape) + offsets
        value_keys = ranks[flat_seq.size:].reshape(flat_values.shape) + offsets
        found = xp.searchsorted(seq_keys.reshape(-1), value_keys.reshape(-1), side=side)
        found = found.reshape(flat_values.shape) - xp.arange(rows)[:, None] * flat_seq.shape[1]
        result = found.reshape(values.shape)
    return xp.asarray(result).astype(np.int32 if out_int32 else np.int64, copy=False)


def _torch_binary_search(xp, seq, values, right):
    """torch's binary search, run a step at a time for every value at once. It differs from
    ``searchsorted`` when the boundaries hold NaN (sorted last, as ``sort`` puts them): every
    comparison with NaN is false, so torch's search steps right past a NaN boundary, where
    NumPy orders NaN above every number."""
    n = seq.shape[-1]
    rows = math.prod(seq.shape[:-1])
    flat_seq = seq.reshape(rows, n)
    flat_values = values.reshape(rows, -1) if seq.ndim > 1 else values.reshape(1, -1)
    row = xp.arange(rows)[:, None]
    start = xp.zeros(flat_values.shape, np.int64)
    end = xp.full(flat_values.shape, n, np.int64)
    for _ in range(builtins.max(n, 1).bit_length()):  # each step halves every interval
        active = start < end
        mid = start + (end - start) // 2
        boundary = flat_seq[row, xp.minimum(mid, n - 1)]
        below = ~(boundary > flat_values) if right else ~(boundary >= flat_values)
        start = xp.where(active & below, mid + 1, start)
        end = xp.where(active & ~below, mid, end)
    return start.reshape(values.shape)


searchsorted_op.defbatch(batching.searchsorted)
searchsorted_op.opt_out("derivative", "an index result has no gradient")


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Indices where ``input``'s values would be inserted into ``sorted_sequence`` (along its
    last dim) to keep it sorted.

    Example::

        >>> ember.searchsorted(ember.tensor([1, 3, 5]), ember.tensor([3, 6]))
        tensor([1, 3])
    """
    _check_tensor(sorted_sequence, "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    if scalar:
        from ..creation import full

        input = full((), input, dtype=dt.result_type(sorted_sequence, input),
                     device=sorted_sequence._device)
    seq = sorted_sequence
    if seq._data.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if seq._data.ndim > 1 and (input._data.ndim != seq._data.ndim
                               or input._data.shape[:-1] != seq._data.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq._data.shape)} and "
                           f"input value tensor {list(input._data.shape)}")
    if seq.dtype is not input.dtype:
        common = dt.promote_types(seq.dtype, input.dtype)
        seq, input = seq.to(common), input.to(common)
    args = (seq, input)
    if sorter is not None:
        if sorter._data.shape != sorted_sequence._data.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq._data.shape)}and got "
                               f"sorter tensor {list(sorter._data.shape)}")
        if sorter.dtype is not dt.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {_type_name(sorter.dtype)}")
        args += (sorter,)
    result = searchsorted_op(*args, right=builtins.bool(right),
                             out_int32=builtins.bool(out_int32), scalar=scalar)
    return write_out(result, out, "searchsorted")


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each element given 1-D increasing ``boundaries``: ``i`` such that
    ``boundaries[i-1] < x <= boundaries[i]`` (``<=``/``<`` swapped with ``right=True``).

    Example::

        >>> ember.bucketize(ember.tensor([1, 4, 6]), ember.tensor([1, 3, 5]))
        tensor([0, 2, 3])
    """
    _check_tensor(boundaries, "bucketize")
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)
