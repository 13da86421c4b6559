"""nn.functional: embeddings (lookup tables), bags of embeddings and one-hot encoding.

``embedding`` is one primitive op: the forward gathers rows of the weight; the derivative
scatters the output gradient back with ``index_add`` (an ember op, so double backward works),
after zeroing the rows looked up at ``padding_idx`` and, with ``scale_grad_by_freq``, dividing
each row's gradient by how often its index occurs in the batch. With ``sparse=True`` the
derivative is instead a sparse COO tensor holding one gradient row per looked-up index (the
padding ones left out), uncoalesced, as torch's. ``embedding_bag`` composes it
with ``index_add`` (sum, mean) or ``scatter_reduce`` (max) over the bag of each position.
``max_norm`` renormalises the looked-up rows of the weight in place, without grad, as torch does.
"""

from __future__ import annotations

import warnings

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import Tensor
from ...func import _batching_rules as _batching
from ...ops._registry import defop
from ...ops._signature import signature
from ...ops.creation import arange

__all__ = ["embedding", "embedding_bag", "one_hot"]

_TENSOR_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}


def _embedding_meta(weight, indices, **params):
    return tuple(indices.shape) + (weight.shape[1],), weight.dtype


@defop("embedding", meta=_embedding_meta, kind="nn")
def embedding_op(xp, weight, indices, *, padding_idx, scale_grad_by_freq, sparse=False):
    return xp.take(weight, indices, axis=0)


@embedding_op.defonnx
def _embedding_onnx(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False,
                    sparse=False):
    return ctx.op("Gather", weight, ctx.cast(indices, ctx.in_dtype(1), "int64"), axis=0)


def _row_factors(indices, num_weights, padding_idx, scale_grad_by_freq, dtype):
    """Per looked-up row gradient factor: 0 at padding_idx, 1/frequency with scaling."""
    flat = indices._data.reshape(-1)
    if indices._device is META:
        return None
    xp = indices._device.xp
    factor = xp.ones(flat.shape, dtype=dtype.np)
    if scale_grad_by_freq:
        counts = xp.bincount(flat, minlength=num_weights)
        factor = factor / counts[flat].astype(dtype.np)
    if padding_idx >= 0:
        factor = xp.where(flat == padding_idx, xp.zeros((), dtype.np), factor)
    return Tensor._make(factor.reshape(-1, 1), indices._device)


def embedding_backward(grad, indices, num_weights, padding_idx=-1, scale_grad_by_freq=False):
    """The weight gradient of :func:`embedding`: ``grad`` rows summed into their indices.

    Example::

        >>> embedding_backward(ember.ones(2, 3), ember.tensor([1, 1]), 3)
        tensor([[0., 0., 0.],
                [2., 2., 2.],
                [0., 0., 0.]])
    """
    dim = grad.shape[-1]
    rows = grad.reshape(-1, dim)
    flat = indices.reshape(-1)
    if padding_idx >= 0 or scale_grad_by_freq:
        factor = _row_factors(indices, num_weights, padding_idx, scale_grad_by_freq, grad.dtype)
        if factor is not None:
            rows = rows * factor
    return rows.new_zeros((num_weights, dim)).index_add(0, flat, rows)


def embedding_sparse_backward(grad, indices, num_weights, padding_idx=-1):
    """The weight gradient of :func:`embedding` with ``sparse=True``: a sparse COO tensor
    whose rows are the gradient rows at their indices, duplicates kept (uncoalesced), the
    rows looked up at ``padding_idx`` left out.

    Example::

        >>> embedding_sparse_backward(ember.ones(2, 3), ember.tensor([1, 1]), 3).to_dense()
        tensor([[0., 0., 0.],
                [2., 2., 2.],
                [0., 0., 0.]])
    """
    from ...sparse._coo import SparseCOOTensor

    dim = grad.shape[-1]
    rows = grad.reshape(-1, dim)
    flat = indices.reshape(-1).long()
    if padding_idx >= 0:
        kept = (flat != padding_idx).nonzero().reshape(-1)
        rows, flat = rows.index_select(0, kept), flat.index_select(0, kept)
    return SparseCOOTensor(flat.unsqueeze(0), rows, (num_weights, dim))


@embedding_op.defderivative
def _embedding_derivative(ctx, grad, *, padding_idx, scale_grad_by_freq, sparse=False):
    if not ctx.needs_input_grad[0]:
        return None, None
    indices, num_weights = ctx.inputs[1], ctx.input_shapes[0][0]
    if not sparse:
        return embedding_backward(grad, indices, num_weights, padding_idx,
                                  scale_grad_by_freq), None
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    return embedding_sparse_backward(grad, indices, num_weights, padding_idx), None


embedding_op.defbatch(_batching.embedding)


def _tensor_type(t):
    return f"ember.{_TENSOR_TYPES.get(t.dtype.name, t.dtype.name)}Tensor"


def _check_indices(indices, op, arg="indices", position=1):
    if not isinstance(indices, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(indices).__name__}")
    if indices.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 '{arg}' to have one of the "
                           f"following scalar types: Long, Int; but got {_tensor_type(indices)} "
                           f"instead (while checking arguments for {op})")


def _check_range(indices, num_weights):
    """torch's IndexError for an index outside ``[0, num_weights)`` (checked on the CPU)."""
    data = indices._data
    if num_weights == 0 and data.size:  # (torch's index_select refuses an empty weight first)
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if indices._device.type == "cpu" and data.size:
        if data.min() < 0 or data.max() >= num_weights:
            raise IndexError("index out of range in self")


def _norm_rows(xp, rows, norm_type):
    a = xp.abs(rows)
    if norm_type == float("inf"):
        return a.max(axis=1)
    if norm_type == float("-inf"):
        return a.min(axis=1)
    if norm_type == 0:
        return (a != 0).sum(axis=1).astype(rows.dtype)
    if norm_type == 1:
        return a.sum(axis=1)
    if norm_type == 2:
        return xp.sqrt((a * a).sum(axis=1))
    return (a ** norm_type).sum(axis=1) ** (1.0 / norm_type)


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place and without grad, each looked-up row whose norm exceeds max_norm."""
    if weight._device is META or indices.numel() == 0:
        return weight
    xp = weight._device.xp
    rows_idx = xp.unique(indices._data.reshape(-1))
    data = weight._data
    rows = data[rows_idx]
    if rows.dtype in dt.LOW_PRECISION:
        norms = _norm_rows(xp, rows.astype(np.float32), norm_type)
    else:
        norms = _norm_rows(xp, rows, norm_type)
    big = norms > max_norm
    if bool(big.any()):
        scale = (max_norm / (norms[big] + 1e-7)).astype(rows.dtype)
        data[rows_idx[big]] = rows[big] * scale[:, None]
        weight._vc[0] += 1
    return weight


def _padding(padding_idx, num_weights, message="Padding_idx must be within num_embeddings"):
    if padding_idx is None:
        return -1
    if padding_idx > 0:
        if padding_idx >= num_weights:
            raise AssertionError(message)
    elif padding_idx < 0:
        if padding_idx < -num_weights:
            raise AssertionError(message)
        padding_idx = num_weights + padding_idx
    return int(padding_idx)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Look up rows of ``weight`` (num_embeddings, embedding_dim) at integer ``input``.

    The row at ``padding_idx`` gets no gradient; ``max_norm`` renormalises the looked-up rows
    of ``weight`` in place; ``scale_grad_by_freq`` divides gradients by index frequency;
    ``sparse=True`` makes the weight's gradient a sparse COO tensor of the looked-up rows.

    Example::

        >>> F.embedding(ember.tensor([[0, 2]]), ember.arange(6.).reshape(3, 2))
        tensor([[[0., 1.],
                 [4., 5.]]])
    """
    if not isinstance(weight, Tensor):  # torch.embedding parses weight, then checks indices
        raise TypeError(f"embedding(): argument 'weight' (position 1) must be Tensor, not "
                        f"{type(weight).__name__}")
    _check_indices(input, "embedding")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    padding_idx = _padding(padding_idx, weight.shape[0])
    _check_range(input, weight.shape[0])
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return embedding_op(weight, input, padding_idx=padding_idx,
                        scale_grad_by_freq=bool(scale_grad_by_freq), sparse=bool(sparse))


def _bag_layout(input, offsets, include_last_offset, padding_idx):
    """Which kept positions go to which bag: (kept indices, their bags, kept mask, #bags)."""
    xp = input._device.xp
    n = input.numel()
    offs = offsets._data.astype(np.int64)
    if include_last_offset:
        if offs.shape[0] < 1:
            raise RuntimeError("include_last_offset: number of offset should be at least 1")
        nbags = offs.shape[0] - 1
    else:
        nbags = offs.shape[0]
    if offs.shape[0]:
        first, last = int(offs[0]), int(offs[-1])
        if first != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the "
                               "mini-batch has to start from position 0. However, got "
                               f"{first}")
        if last > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but "
                               f"got offsets[-1] of {last}")
        if offs.shape[0] > 1 and bool((offs[1:] < offs[:-1]).any()):
            raise RuntimeError("offsets must be non-decreasing")
    positions = xp.arange(n)
    bags = xp.searchsorted(offs[:nbags], positions, side="right") - 1
    keep = bags >= 0
    if include_last_offset and offs.shape[0]:
        keep &= positions < offs[-1]
    flat = input._data.reshape(-1)
    if padding_idx >= 0:
        keep &= flat != padding_idx
    return keep, bags, nbags


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embeddings, without materialising the lookups per bag.

    A 2-D ``input`` is a batch of equal-length bags; a 1-D ``input`` is split into bags by the
    start positions in ``offsets``. Entries equal to ``padding_idx`` are left out of their bag
    (an empty bag gives zeros). ``per_sample_weights`` scales each entry (mode ``'sum'`` only).

    Example::

        >>> w = ember.arange(6.).reshape(3, 2)
        >>> F.embedding_bag(ember.tensor([0, 1, 2]), w, ember.tensor([0, 1]), mode="sum")
        tensor([[0., 1.],
                [6., 8.]])
    """
    if not isinstance(weight, Tensor):
        raise TypeError(f"embedding_bag(): argument 'weight' (position 2) must be Tensor, not "
                        f"{type(weight).__name__}")
    if weight.dtype == dt.int64 and isinstance(input, Tensor) and input.is_floating_point():
        # torch still accepts the old order embedding_bag(weight, input, ...), with a warning
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        offsets = arange(0, input.numel(), input.shape[1], dtype=input.dtype,
                         device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    _check_indices(input, "embedding_bag")
    _check_indices(offsets, "embedding_bag", "offsets")
    num_weights, dim = weight.shape
    padding_idx = _padding(padding_idx, num_weights, "padding_idx must be within num_embeddings")
    data = input._data
    if input._device.type == "cpu" and data.size and (data.min() < 0 or
                                                      data.max() >= num_weights):
        bad = int(np.flatnonzero((data < 0) | (data >= num_weights))[0])
        raise RuntimeError(f"Index {bad} of input takes value {int(data[bad])} which is not in "
                           f"the valid range [0, {num_weights})")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                "on GitHub.")
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError(
                "Expected tensor for argument #1 'weight' to have the same type as tensor for "
                f"argument #1 'per_sample_weights'; but type {_tensor_type(weight)} does not "
                f"equal {_tensor_type(per_sample_weights)} (while checking arguments for "
                "embedding_bag)")
    if input._device is META:
        nbags = offsets.shape[0] - (1 if include_last_offset else 0)
        return weight.new_empty((nbags, dim))
    keep, bags, nbags = _bag_layout(input, offsets, include_last_offset, padding_idx)
    device = input._device
    xp = device.xp
    kept = xp.nonzero(keep)[0]
    kept_t = Tensor._make(kept, device)
    idx = Tensor._make(input._data.reshape(-1)[kept], device)
    bag = Tensor._make(bags[kept], device)
    rows = embedding_op(weight, idx, padding_idx=-1, scale_grad_by_freq=bool(scale_grad_by_freq),
                        sparse=bool(sparse))
    out = weight.new_zeros((nbags, dim))
    if mode == "max":
        return out.scatter_reduce(0, bag.unsqueeze(1).expand(-1, dim), rows, "amax",
                                  include_self=False)
    low_precision = weight.dtype in (dt.float16, dt.bfloat16)
    if low_precision:  # torch sums half-precision bags in float32, rounding once at the end
        rows, out = rows.float(), out.float()
    if per_sample_weights is not None:
        scale = per_sample_weights.index_select(0, kept_t).unsqueeze(1)
        rows = rows * (scale.float() if low_precision else scale)
    out = out.index_add(0, bag, rows)
    if mode == "mean":
        counts = xp.maximum(xp.bincount(bags[kept], minlength=nbags), 1)
        out = out / Tensor._make(counts.astype(out._data.dtype).reshape(-1, 1), device)
    return out.to(weight.dtype) if low_precision else out


def _embedding_bag_bookkeeping(input, weight, offsets, mode, padding_idx, include_last_offset):
    """The three extra results of the top-level ``torch.embedding_bag``, as torch's CPU kernel
    fills them: ``offset2bag`` (the bag of each position; left empty in 'sum' mode on its
    float32/float16/bfloat16 fast path without padding), ``bag_size`` (non-padding entries per
    bag; in 'sum' mode zeros, one per offset) and ``max_indices`` (the row chosen per bag and
    column in 'max' mode, else a copy of ``bag_size``). ``padding_idx`` comes wrapped (-1:
    none).
    """
    from ...autograd import no_grad

    device, index_dtype = input._device, input._data.dtype
    xp = device.xp
    flat = input.reshape(-1)
    keep, bags, nbags = _bag_layout(flat, offsets, include_last_offset, padding_idx)
    fast_sum = weight.dtype in (dt.float32, dt.float16, dt.bfloat16) and padding_idx < 0
    offset2bag = bags[:0] if mode == "sum" and fast_sum else bags
    if mode == "sum":
        bag_size = xp.zeros(offsets.shape[0], dtype=index_dtype)  # one per offset, as torch
    else:
        bag_size = xp.bincount(bags[keep], minlength=nbags).astype(index_dtype)
    if mode != "max":
        max_indices = bag_size.copy()
    else:
        with no_grad():
            max_indices = _max_rows(flat, weight.detach(), keep, bags, nbags)._data
    wrap = [Tensor._make(a.astype(index_dtype), device) for a in (offset2bag, bag_size,
                                                                    max_indices)]
    return tuple(wrap)


def _max_rows(flat, weight, keep, bags, nbags):
    """Per bag and column, the index whose weight is largest (the first one on ties), 0 for an
    empty bag."""
    device = flat._device
    kept = Tensor._make(device.xp.nonzero(keep)[0], device)
    count, dim = kept.shape[0], weight.shape[1]
    if count == 0:
        return flat.new_zeros((nbags, dim))
    idx = flat.index_select(0, kept).long()
    bag = Tensor._make(bags, device).index_select(0, kept)
    rows = weight.index_select(0, idx)
    bag_per_column = bag.unsqueeze(1).expand(-1, dim)
    best = weight.new_zeros((nbags, dim)).scatter_reduce(0, bag_per_column, rows, "amax",
                                                         include_self=False)
    is_best = rows == best.gather(0, bag_per_column)
    position = arange(count, device=device).unsqueeze(1).expand(-1, dim)
    candidate = position.masked_fill(is_best.logical_not(), count)
    first = position.new_full((nbags, dim), count).scatter_reduce(0, bag_per_column, candidate,
                                                                  "amin")
    chosen = idx.index_select(0, first.clamp(max=count - 1).reshape(-1)).reshape(nbags, dim)
    return chosen.masked_fill(first == count, 0)


@signature("one_hot(Tensor tensor, int num_classes=-1) -> Tensor")
def one_hot(tensor, num_classes=-1):
    """int64 one-hot vectors of the class indices in ``tensor``: shape ``(*, num_classes)``.

    ``num_classes=-1`` takes one more than the largest value.

    Example::

        >>> F.one_hot(ember.tensor([0, 2]))
        tensor([[1, 0, 0],
                [0, 0, 1]])
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    if tensor.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor._device is META:
        if num_classes == -1:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return tensor.new_empty(tuple(tensor.shape) + (num_classes,))
    data = tensor._data
    if data.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        if int(data.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(data.max()) + 1
        elif int(data.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    if num_classes < 0:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(dt.int64)

