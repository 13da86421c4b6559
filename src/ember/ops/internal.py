"""torch's private top-level operators (``torch._safe_softmax``, ``torch._chunk_cat``,
``torch._unsafe_masked_index``, ``torch.segment_reduce``...): what decompositions, compilers
and torch's own tests call, composed from ember's differentiable operators so that
gradients and forward-mode derivatives come for free. ``ember`` re-exports ``__all__``;
the operators torch reaches only through ``torch.ops.aten`` are in
:mod:`ember.ops.aten_forms`.

Example::

    >>> import ember
    >>> ember._safe_softmax(ember.tensor([[0., 0.], [-float("inf"), -float("inf")]]), 1)
    tensor([[0.5000, 0.5000],
            [0.0000, 0.0000]])
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dtype as dt
from ._registry import _short_name
from ._signature import signature

__all__ = ["_safe_softmax", "_softmax_backward_data", "_native_batch_norm_legit", "_chunk_cat",
           "_unsafe_masked_index", "_unsafe_masked_index_put_accumulate", "segment_reduce",
           "_segment_reduce"]


def _ember():
    import ember

    return ember


def _wrap_dim(dim, ndim):
    """``dim`` in ``[0, ndim)``, or torch's IndexError."""
    low, high = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not low <= dim <= high:
        raise IndexError(f"Dimension out of range (expected to be in range of [{low}, {high}], "
                         f"but got {dim})")
    return dim % builtins.max(ndim, 1)


# ---------------------------------------------------------------- softmax


def _safe_softmax(self, dim, dtype=None):
    """softmax along ``dim``, with 0 (not NaN) where every input of a row is ``-inf``: what
    attention uses for fully masked rows.

    Example::

        >>> ember._safe_softmax(ember.full((1, 2), -float("inf")), 1)
        tensor([[0., 0.]])
    """
    ember = _ember()
    masked = (self == -math.inf).all(dim, keepdim=True)
    # the masked rows go through softmax as zeros, so that their gradient is 0, not NaN
    zero = ember.zeros((), dtype=self.dtype, device=self.device)
    out = ember.softmax(ember.where(masked, zero, self), dim, dtype=dtype)
    return ember.where(masked, zero.to(out.dtype), out)


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """The gradient of ``softmax`` for ``grad_output`` given the softmax ``output``:
    ``output * (grad_output - sum(grad_output * output, dim))``. As torch's CPU kernel, the
    result keeps ``grad_output``'s dtype; ``input_dtype`` float16 with float32 gradients
    (a half-to-float softmax, which the CPU does not run) is refused.

    Example::

        >>> y = ember.softmax(ember.tensor([0., 1.]), 0)
        >>> ember._softmax_backward_data(ember.tensor([1., 0.]), y, 0, ember.float32)
        tensor([ 0.1966, -0.1966])
    """
    ember = _ember()
    if input_dtype == ember.float16 and grad_output.dtype == ember.float32:
        raise RuntimeError("expected scalar type Float but found Half")
    weighted = grad_output * output
    return weighted - output * weighted.sum(dim, keepdim=True)


# ---------------------------------------------------------------- normalisation


def _native_batch_norm_legit(input, weight, bias, running_mean, running_var, training=None,
                             momentum=None, eps=None):
    """``native_batch_norm``; also torch's ``no_stats`` overload
    ``(input, weight, bias, training, momentum, eps)``, which keeps no running statistics.

    Example::

        >>> out, mean, rstd = ember._native_batch_norm_legit(ember.ones(2, 2), None, None,
        ...                                                  True, 0.1, 1e-5)
        >>> mean
        tensor([1., 1.])
    """
    if eps is None:  # no_stats: (input, weight, bias, training, momentum, eps)
        training, momentum, eps = running_mean, running_var, training
        running_mean = running_var = None
    return _ember().native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                      momentum, eps)


# ---------------------------------------------------------------- chunking and indexing


def _chunk_cat(tensors, dim, num_chunks, *, out=None):
    """Split each tensor into ``num_chunks`` equal chunks along ``dim`` (zero-padded to a
    multiple), flatten each chunk past ``dim`` and concatenate the i-th chunks: the
    ``(leading dims, num_chunks, total)`` buffer FSDP communicates.

    Example::

        >>> ember._chunk_cat([ember.arange(4.), ember.arange(3.)], 0, 2)
        tensor([[0., 1., 0., 1.],
                [2., 3., 2., 0.]])
    """
    ember = _ember()
    dim = _chunk_cat_dim(tensors, dim, num_chunks)
    pieces = []
    for tensor in tensors:
        size = tensor.shape[dim]
        padded = -(-size // num_chunks) * num_chunks
        if padded != size:
            widths = [0, 0] * (tensor.dim() - dim - 1) + [0, padded - size]
            tensor = ember.nn.functional.pad(tensor, widths)
        pieces.append(tensor.reshape(tuple(tensor.shape[:dim]) + (num_chunks, -1)))
    return ember.cat(pieces, dim + 1, out=out)


def _chunk_cat_dim(tensors, dim, num_chunks):
    """``dim`` checked (and wrapped when all tensors have one rank), with torch's errors."""
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    if len(tensors) == 0:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    first = tensors[0]
    for tensor in tensors:
        if tensor.numel() == 0:
            raise RuntimeError("_chunk_cat expects non-empty tensor")
        if tensor.dtype != first.dtype:
            raise RuntimeError("_chunk_cat expects all input tensors with the same dtype")
        if tensor.device != first.device:
            raise RuntimeError("_chunk_cat expects all inputs tensors on the same device")
    if all(tensor.dim() == first.dim() for tensor in tensors):
        dim = _wrap_dim(dim, first.dim())
    elif dim < 0:
        raise RuntimeError("_chunk_cat expects non-negative dim when input tensors have "
                           "different ndims")
    elif any(dim >= tensor.dim() for tensor in tensors):
        raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
    if any(tensor.shape[:dim] != first.shape[:dim] for tensor in tensors):
        raise RuntimeError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all "
                           "tensors")
    return dim


def _index_key(self, indices, low):
    """aten's index list as a Python index: None means the whole dim; each index tensor is
    clamped to ``[low(size), size - 1]`` (the callers' masks hide what was out of range)."""
    for index in indices:
        if index is not None and index.dtype not in (_ember().int64, _ember().int32):
            raise RuntimeError("tensors used as indices must be long or int tensors")
    return tuple(builtins.slice(None) if index is None else
                 index.clamp(low(self.shape[d]), self.shape[d] - 1)
                 for d, index in enumerate(indices))


def _check_mask(mask):
    if mask.dtype != _ember().bool:
        raise RuntimeError("tensors used as masks must be bool tensors")


def _unsafe_masked_index(self, mask, indices, fill):
    """``self[indices]`` where ``mask`` is True, ``fill`` elsewhere; indices out of range are
    clamped first (their entries must be masked). What padding decompositions read with.

    Example::

        >>> ember._unsafe_masked_index(ember.tensor([1., 2.]), ember.tensor([True, False]),
        ...                            [ember.tensor([1, 7])], -1.)
        tensor([ 2., -1.])
    """
    _check_mask(mask)
    if self.numel() == 0:
        shape = self.new_empty(self.shape, device="meta")[_index_key(self, indices, lambda s: 0)]
        return self.new_full(shape.shape, fill)
    return self[_index_key(self, indices, lambda size: 0)].masked_fill(~mask, fill)


def _unsafe_masked_index_put_accumulate(self, mask, indices, values):
    """``self`` with ``values`` added at ``indices`` where ``mask`` is True (repeats add up);
    the gradient of :func:`_unsafe_masked_index`.

    Example::

        >>> ember._unsafe_masked_index_put_accumulate(ember.zeros(2), ember.tensor([True, False]),
        ...                                           [ember.tensor([1, 7])], ember.ones(2))
        tensor([0., 1.])
    """
    from .aten_forms import index_put
    _check_mask(mask)
    if self.numel() == 0:
        return self.clone()
    key = _index_key(self, indices, lambda size: -size)
    clamped = [None if isinstance(k, builtins.slice) else k for k in key]
    return index_put(self, clamped, values.masked_fill(~mask, 0), accumulate=True)


# ---------------------------------------------------------------- segment reductions

_SEGMENT_FILL = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}


@signature("segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, "
           "Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, "
           "Scalar? initial=None) -> Tensor")
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """Reduce consecutive segments of ``data`` along ``axis`` (``'sum'``, ``'mean'``,
    ``'prod'``, ``'max'``, ``'min'``), the segments given by their ``lengths`` or by
    ``offsets`` (their starts, then the end). An empty segment gives ``initial``, else the
    reduction's identity (NaN for mean); ``initial`` also takes part in every reduction.

    Example::

        >>> data = ember.tensor([1., 2., 3., 4., 5.])
        >>> ember.segment_reduce(data, 'max', lengths=ember.tensor([2, 0, 3]))
        tensor([2., -inf, 5.])
    """
    reduce = {"amax": "max", "amin": "min"}.get(reduce, reduce)
    if reduce not in _SEGMENT_FILL:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    axis = _wrap_dim(axis, data.dim())
    lengths = _segment_lengths(data, lengths, indices, offsets, axis, unsafe)
    if not data.is_floating_point():
        raise NotImplementedError(f'"_segment_reduce_cpu" not implemented for '
                                  f"'{_dtype_title(data.dtype)}'")
    gathered, present = _gather_segments(data, lengths, axis)
    return _reduce_segments(gathered, present, lengths, reduce, initial, axis)


_segment_reduce = segment_reduce


def _dtype_title(dtype):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(str(dtype).removeprefix("ember."), str(dtype))


def _segment_lengths(data, lengths, indices, offsets, axis, unsafe):
    """The segment lengths as a NumPy array of shape ``data.shape[:axis] + (segments,)``."""
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    given = lengths if lengths is not None else offsets
    kind = "lengths" if lengths is not None else "offsets"
    if given.dim() - 1 != axis:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"{kind} but got {axis}.")
    if not unsafe and lengths is not None and lengths.dtype.is_complex:
        # torch first checks min(lengths) >= 0, and has no complex minimum
        raise NotImplementedError(f"\"min_all\" not implemented for "
                                  f"'{_short_name(lengths.dtype)}'")
    counts = given.cpu().numpy() if lengths is not None else \
        np.diff(offsets.cpu().numpy(), axis=-1)
    if not unsafe:
        if (counts < 0).any():
            raise RuntimeError("lengths contains negative value!")
        if lengths is not None and (counts.sum(-1) != data.shape[axis]).any():
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to "
                               "sum to data.size(lengths.dim()-1) when !unsafe.")
    if given.dtype not in (dt.int32, dt.int64):  # torch's kernels take these index types only
        raise NotImplementedError(f"\"_segment_reduce_{kind}_cpu_kernel1\" not implemented "
                                  f"for '{_short_name(given.dtype)}'")
    return counts


def _gather_segments(data, lengths, axis):
    """``data``'s segments padded to one length: a tensor of shape ``data.shape[:axis] +
    (segments, longest) + data.shape[axis + 1:]`` and the mask of its real entries."""
    ember = _ember()
    longest = builtins.max(int(lengths.max(initial=0)), 1)
    starts = np.cumsum(lengths, axis=-1) - lengths
    steps = np.arange(longest)
    present = steps < lengths[..., None]
    positions = np.clip(starts[..., None] + steps, 0, builtins.max(data.shape[axis] - 1, 0))
    lead = np.indices(lengths.shape[:-1]).reshape(axis, *lengths.shape[:-1], 1, 1)
    key = tuple(ember.tensor(index, device=data.device) for index in lead) + \
        (ember.tensor(positions, device=data.device),)
    return data[key], present


def _reduce_segments(gathered, present, lengths, reduce, initial, axis):
    """Reduce the padded segments (dim ``axis + 1``), ``initial`` taking part."""
    ember = _ember()
    trailing = gathered.dim() - present.ndim
    mask = ember.tensor(present.reshape(present.shape + (1,) * trailing), device=gathered.device)
    filler = ember.full((), _SEGMENT_FILL[reduce], dtype=gathered.dtype, device=gathered.device)
    padded = ember.where(mask, gathered, filler)
    count = ember.tensor(lengths.reshape(lengths.shape + (1,) * trailing), dtype=padded.dtype,
                         device=padded.device)
    start = None if initial is None else \
        ember.full((), initial, dtype=padded.dtype, device=padded.device)
    if reduce in ("max", "min"):
        out = padded.amax(axis + 1) if reduce == "max" else padded.amin(axis + 1)
        if start is None:
            return out
        # the gradient goes to the data's extreme, never to ``initial`` (as torch's)
        beaten = out < start if reduce == "max" else out > start
        return ember.where(beaten, start, out)
    out = _fold(padded, axis + 1, reduce, start)
    if reduce != "mean":
        return out
    return out / count if start is None else ember.where(count > 0, out / count.clamp(min=1),
                                                         start)


def _fold(padded, dim, reduce, start):
    """The sum (also for mean) or product along ``dim``, starting from ``start``. Half
    precision adds or multiplies in order, rounding each step, as torch's kernel does (the
    order shows there); other dtypes reduce at once."""
    ember = _ember()
    combine = ember.mul if reduce == "prod" else ember.add
    if padded.dtype not in (ember.float16, ember.bfloat16):
        out = padded.prod(dim) if reduce == "prod" else padded.sum(dim)
        return out if start is None else combine(start, out)
    out = start if start is not None else \
        ember.full((), _SEGMENT_FILL[reduce], dtype=padded.dtype, device=padded.device)
    for term in padded.unbind(dim):
        out = combine(out, term)
    return out
