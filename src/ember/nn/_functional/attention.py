"""nn.functional: attention (scaled dot-product attention, multi-head attention forward).

Both are composites of ember ops (so gradients and double backward come from the primitives)
around one dedicated primitive, ``_safe_softmax``: a softmax over the last dim whose fully
masked rows (every logit ``-inf``) give zeros instead of NaN, with a zero gradient there, as
torch's math attention does. The heavy lifting is two batched matmuls (BLAS). On NumPy
arrays without dropout, scaled dot-product attention is instead one fused op with a one-kernel
first-order backward (see "fused attention on the CPU" below).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor, _trace_state
from ...autograd import forward_ad as _forward_ad
from ...autograd import grad_mode
from ...ops._precision import in_float32, is_half
from ...ops._registry import Op, _short_name, autocast_policy, first_order_backward
from ...ops.pointwise import _check_dtype
from ...ops.shape import cat, pad
from ..attention import _backends as _sdpa_backends
from ..attention.bias import CausalBias
from .dropout import dropout
from .linear import linear
from .softmax import softmax

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_LOW = dt.LOW_PRECISION
_F32 = np.dtype(np.float32)

# torch's C++ names of scalar types, as its attention error messages print them
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _cpp(d):
    return _CPP_NAMES.get(d.name, d.name)


# ---------------------------------------------------------------- safe softmax primitive


def _safe_softmax_kernel(xp, a):
    dtype = a.dtype
    if dtype in _LOW:
        a = a.astype(_F32)
    if a.size == 0:
        return xp.empty(a.shape, dtype)
    m = a.max(axis=-1, keepdims=True)
    # a row of -inf has max -inf: shift it by 0 so exp gives 0, not NaN
    m = xp.where(m == -xp.inf, xp.asarray(0, dtype=m.dtype), m)
    with np.errstate(invalid="ignore", over="ignore"):
        e = xp.exp(a - m)
        s = e.sum(axis=-1, keepdims=True)
        s = xp.where(s == 0, xp.asarray(1, dtype=s.dtype), s)
        e /= s
    return e.astype(dtype, copy=False)


def _safe_softmax_meta(a):
    return a.shape, a.dtype


_safe_softmax_op = Op("_safe_softmax", _safe_softmax_kernel, meta=_safe_softmax_meta,
                      save_inputs=False, save_output=True, kind="nn")


@_safe_softmax_op.defonnx
def _safe_softmax_onnx(ctx, x):
    # a row that is all -inf (fully masked) gives zeros, not NaN
    dtype = ctx.out_dtype()
    row_max = ctx.reduce("ReduceMax", x, [len(ctx.in_dims(0)) - 1], True)
    masked = ctx.op("Equal", row_max, ctx.scalar(-math.inf, dtype))
    return ctx.op("Where", masked, ctx.scalar(0, dtype), ctx.op("Softmax", x, axis=-1))


@_safe_softmax_op.defbatch
def _safe_softmax_batch(xp, step, arrays, batched, batch_size):
    """vmap: the batch dim is the first and the softmax runs over the last, so the kernel
    applies to the batched array as it is."""
    return step.op.kernel(xp, arrays[0])


@_safe_softmax_op.defderivative
def _safe_softmax_derivative(ctx, grad):
    y = ctx.output
    gy = grad * y
    return (gy - y * gy.sum(-1, keepdim=True),)


# ---------------------------------------------------------------- scaled dot-product attention


def _check_tensor(x, arg, position=None):
    if not isinstance(x, Tensor):
        where = f" (position {position})" if position else ""
        raise TypeError(f"scaled_dot_product_attention(): argument '{arg}'{where} must be "
                        f"Tensor, not {type(x).__name__}")


def _sdpa_checks(query, key, value, attn_mask, dropout_p, is_causal):
    _check_tensor(query, "query", 1)
    _check_tensor(key, "key", 2)
    _check_tensor(value, "value", 3)
    if attn_mask is not None:
        _check_tensor(attn_mask, "attn_mask")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {query.dim()} key.dim: {key.dim()} and "
                           f"value.dim: {value.dim()} instead.")
    qd = query.dtype
    if key.dtype is not qd or value.dtype is not qd:
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_cpp(qd)} key.dtype: {_cpp(key.dtype)} and "
                           f"value.dtype: {_cpp(value.dtype)} instead.")
    if attn_mask is not None:
        md = attn_mask.dtype
        if md is not dt.bool and md is not dt.float32 and md is not qd:
            raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {_cpp(md)} and  query.dtype: "
                               f"{_cpp(qd)} instead.")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
    if dropout_p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if qd.is_complex:
        _check_dtype("softmax_lastdim_kernel_impl", qd, "c")
    if not qd.is_floating_point:
        raise RuntimeError(f"expected scalar type Float but found {_short_name(qd)}")


@autocast_policy("lower")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dims.

    ``attn_mask`` is a bool mask (True = may attend) or a float bias added to the scores,
    broadcast to ``(..., L, S)``; ``is_causal`` applies the lower-triangular mask (top-left
    aligned); ``scale`` defaults to ``1 / sqrt(E)``; ``dropout_p`` drops attention weights
    (always, as torch does); ``enable_gqa`` repeats key/value heads (dim -3) to match the
    query's. Rows where every position is masked give zeros.

    Example::

        >>> q = k = v = ember.randn(2, 4, 5, 8)
        >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).shape
        ember.Size([2, 4, 5, 8])
    """
    if isinstance(attn_mask, CausalBias):
        attn_mask = attn_mask._materialize(query.device)
    _sdpa_checks(query, key, value, attn_mask, dropout_p, is_causal)
    _sdpa_backends.check_cpu_kernel(query, key, value, attn_mask, dropout_p, enable_gqa)
    head_dim = query.shape[-1]
    scale_factor = (1.0 / math.sqrt(head_dim) if head_dim else math.inf) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk != hq or hv != hq:
            if hq % hk or hq % hv:
                raise RuntimeError("Number of heads in key and value must divide the number of "
                                   "heads in ")
            if hk != hq:
                key = key.repeat_interleave(hq // hk, dim=-3)
            if hv != hq:
                value = value.repeat_interleave(hq // hv, dim=-3)
    if is_half(query):  # torch's CPU kernels compute it in float32 and round once
        return in_float32(_attention, query, key, value, attn_mask, dropout_p=dropout_p,
                          is_causal=is_causal, scale=scale_factor)
    return _attention(query, key, value, attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                      scale=scale_factor)


def _attention(query, key, value, attn_mask, *, dropout_p, is_causal, scale):
    """``softmax(query @ key^T * scale + mask) @ value``, with the mask of ``is_causal`` or
    ``attn_mask`` (bool: True may attend; float: added) and dropout on the weights."""
    if dropout_p == 0.0 and _fused_applies(query, key, value, attn_mask):
        masks = () if attn_mask is None else (attn_mask,)
        return _sdpa_fused_op(query, key, value, *masks, scale=scale, causal=is_causal)[0]
    return _attention_composite(query, key, value, attn_mask, dropout_p=dropout_p,
                                is_causal=is_causal, scale=scale)


def _attention_composite(query, key, value, attn_mask, *, dropout_p, is_causal, scale):
    """:func:`_attention` as ember ops (matmuls, masking, ``_safe_softmax``, dropout)."""
    scores = (query * scale).matmul(key.transpose(-2, -1))
    if is_causal:
        allowed = query.new_ones((query.shape[-2], key.shape[-2]), dtype=dt.bool).tril()
        scores = scores.masked_fill(allowed.logical_not(), float("-inf"))
    elif attn_mask is not None:
        if attn_mask.dtype is dt.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask.to(query.dtype)
    weights = _safe_softmax_op(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, p=dropout_p)
    return weights.matmul(value)


# ---------------------------------------------------------------- fused attention on the CPU
#
# Without dropout, attention on NumPy float32/float64 arrays is one op: the kernel masks the
# scores in place and keeps the probabilities for a first-order backward that is also one
# kernel. Traces (jit, vmap) and forward-mode AD see the composite ops above instead, and a
# create_graph backward differentiates a replay of the composite.

_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _fused_applies(query, key, value, attn_mask):
    """Whether :data:`_sdpa_fused_op` computes this call: 4-D NumPy arrays (torch's fused CPU
    kernel takes 4-D inputs only) of one float32/float64 dtype with the same batch dims, a mask
    that needs no gradient and does not broadcast the scores to a larger shape, and nothing
    recording the composite ops."""
    tracer = _trace_state.tracer
    if (tracer is not None and not getattr(tracer, "whole_kernels", False)) \
            or _forward_ad._state.level is not None:
        return False
    if query._device._xp is not np or query._data.dtype not in _FUSED_DTYPES:
        return False
    if key._data.dtype != query._data.dtype or value._data.dtype != query._data.dtype:
        return False
    if query.dim() != 4 or key.shape[-2] == 0:  # no key: the softmax has an empty row
        return False
    if key.shape[-1] != query.shape[-1] or value.shape[-2] != key.shape[-2]:
        return False  # the composite raises torch's error
    batch = query.shape[:-2]
    if key.shape[:-2] != batch or value.shape[:-2] != batch:
        return False
    if attn_mask is None:
        return True
    if attn_mask.requires_grad or attn_mask._device is not query._device:
        return False
    scores = (*batch, query.shape[-2], key.shape[-2])
    try:
        return np.broadcast_shapes(tuple(attn_mask.shape), scores) == scores
    except ValueError:
        return False  # the composite raises torch's error


def _masked_scores(xp, q, k, masks, scale, causal):
    """``(q * scale) @ k^T`` with the causal or given mask applied in place, and the shift
    that every row may share (see :func:`_shared_shift`) or None; a causal mask with a
    shared shift comes back with the shift already subtracted (the shift returned is
    :data:`_SHIFTED`)."""
    s = xp.matmul(q * scale, _transposed(xp, k))
    float_mask = bool(masks) and not causal and masks[0].dtype != bool
    # masking out scores only narrows each row, so the span may be taken before it
    shift = None if float_mask else _shared_shift(xp, s)
    if causal and shift is not None:
        # every score is finite (their span is): one pass subtracts the shift and adds -inf
        # above the diagonal, half the time of the masked write below and a pass fewer
        s -= shift - _causal_bias(xp, s.shape[-2], s.shape[-1], s.dtype)
        shift = _SHIFTED
    elif causal:  # (an infinite score plus -inf would be NaN: the masked ones are written)
        xp.copyto(s, -xp.inf, where=~xp.tri(s.shape[-2], s.shape[-1], dtype=bool))
    elif masks:
        mask = masks[0]
        if mask.dtype == bool:
            xp.copyto(s, -xp.inf, where=~mask)
        else:
            s += mask.astype(s.dtype, copy=False)
            shift = _shared_shift(xp, s)
    return s, shift


_SHIFTED = object()  # the shift of scores that come shifted already


def _causal_bias(xp, rows, cols, dtype):
    """0 on and below the diagonal of a (rows, cols) matrix, -inf above it: torch's top-left
    aligned causal mask as a bias."""
    return xp.where(xp.tri(rows, cols, dtype=bool), xp.asarray(0, dtype),
                    xp.asarray(-xp.inf, dtype))


def _shared_shift(xp, s):
    """The largest score, where every score lies within ``log(keys)`` of it, else None.

    Subtracting that one value instead of each row's maximum leaves no exponential to
    underflow and rounds the shifted scores by at most half an ulp of ``log(keys)``; a
    whole-array max and min cost a fraction of the row maxima of short rows.
    """
    if s.size == 0:
        return None
    top = s.max()
    if top - s.min() < math.log(max(s.shape[-1], 2)):
        return top
    return None


def _transposed(xp, a):
    """``a``'s last two dims swapped, contiguous: a stack of short matrices multiplies faster
    than with a strided operand."""
    return xp.ascontiguousarray(xp.swapaxes(a, -1, -2))


def _row_max(xp, s):
    """The maximum over the last dim (kept), by halving the rows: a whole-array reduction
    along short rows was 6x slower than these few element-wise passes."""
    m = s
    while m.shape[-1] > 1:
        half = m.shape[-1] // 2
        folded = xp.maximum(m[..., :half], m[..., half:2 * half])
        if m.shape[-1] % 2:
            xp.maximum(folded[..., :1], m[..., 2 * half:], out=folded[..., :1])
        m = folded
    return m


def _row_sum(xp, s):
    """The sum over the last dim (kept), as a product with a vector of ones: BLAS sums the
    short rows of attention scores 7x faster than NumPy's reduction along them."""
    return xp.matmul(s, xp.ones(s.shape[-1], s.dtype))[..., None]


def _softmax_rows_(xp, s, shift=None):
    """Softmax over the last dim in place, less ``shift`` (one value for all rows) or each
    row's maximum before the exponentials; fully masked rows (all ``-inf``) become zeros."""
    if shift is None:
        shift = _row_max(xp, s)
        shift[shift == -xp.inf] = 0  # such a row's exponentials are all 0, not NaN
    if shift is not _SHIFTED:
        s -= shift
    xp.exp(s, out=s)
    total = _row_sum(xp, s)
    total[total == 0] = 1
    s /= total
    return s


def _sdpa_fused_kernel(xp, q, k, v, *masks, scale, causal):
    with np.errstate(invalid="ignore", over="ignore"):
        p = _softmax_rows_(xp, *_masked_scores(xp, q, k, masks, scale, causal))
    out = _empty_in_order_of(xp, q, (*q.shape[:-1], v.shape[-1]), q.dtype)
    return xp.matmul(p, v, out=out), p


def _empty_in_order_of(xp, like, shape, dtype):
    """An empty array of ``shape`` whose dims lie in memory in the order of ``like``'s (by
    decreasing stride), as torch's CPU flash attention lays out its output after its query:
    heads split from a (batch, tokens, heads * dim) projection give an output whose heads
    merge back with a view, not a copy."""
    order = sorted(range(like.ndim), key=lambda d: -like.strides[d])
    back = sorted(range(like.ndim), key=order.__getitem__)  # the inverse permutation
    return xp.empty(tuple(shape[d] for d in order), dtype).transpose(back)


def _sdpa_fused_meta(q, k, v, *masks, scale, causal):
    batch = q.shape[:-2]
    return (((*batch, q.shape[-2], v.shape[-1]), q.dtype),
            ((*batch, q.shape[-2], k.shape[-2]), q.dtype))


_sdpa_fused_op = Op("_scaled_dot_product_attention_fused", _sdpa_fused_kernel,
                    meta=_sdpa_fused_meta, save_inputs=True, save_output=True,
                    multi_output=True, differentiable_outputs=(0,), kind="nn",
                    grad_name="ScaledDotProductFlashAttentionForCpuBackward0")
_sdpa_fused_op.opt_out("jvp", "forward-mode AD runs the composite ops (the op is not used "
                              "while a forward-mode level is active)")
_sdpa_fused_op.opt_out("batch", "vmap traces the composite ops (the op is not used while a "
                                "trace records)")
_sdpa_fused_op.opt_out("onnx", "not used while a trace records: an export sees the composite "
                               "attention's ops")


def _sdpa_backward_kernel(xp, g, q, k, v, p, *, scale):
    """dq, dk, dv from the output gradient ``g`` and the saved probabilities ``p``:
    dP = g v^T, dS = p dP - p rowsum(p dP), dq = dS k scale, dk = dS^T (q scale), dv = p^T g
    (the composite's backward operations in its order, so that traces, which run the
    composite, give the same values). The square ``p`` and ``dS`` are multiplied transposed as
    strided views: BLAS takes them as transposed operands, the same values 2x faster than
    copying them first (16 x 4 heads of 64 x 64: 229 -> 112 us), while the narrow ``v`` is
    faster copied."""
    dv = xp.matmul(xp.swapaxes(p, -1, -2), g)
    ds = xp.matmul(g, _transposed(xp, v))
    ds *= p
    ds -= p * _row_sum(xp, ds)
    dq = xp.matmul(ds, k)
    dq *= scale
    return dq, xp.matmul(xp.swapaxes(ds, -1, -2), q * scale), dv


_sdpa_backward_op = Op("_scaled_dot_product_attention_fused_backward", _sdpa_backward_kernel,
                       meta=lambda g, q, k, v, p, *, scale: ((q.shape, q.dtype),
                                                             (k.shape, k.dtype),
                                                             (v.shape, v.dtype)),
                       save_inputs=False, multi_output=True, kind="nn",
                       opt_outs=first_order_backward("the composite attention"))


@_sdpa_fused_op.defderivative
def _sdpa_fused_derivative(ctx, g_out, g_p, *, scale, causal):
    q, k, v, *masks = ctx.inputs
    unused = (None,) * len(masks)
    if g_out is None:
        return (None, None, None, *unused)
    if not grad_mode.state.enabled and _forward_ad._state.level is None:
        p = ctx.output[1]
        return (*_sdpa_backward_op(g_out, q, k, v, p, scale=scale), *unused)
    # create_graph: differentiate a replay of the composite, so that the gradient is itself
    # differentiable in the inputs
    from ...autograd import grad as _grad

    wanted = [t for t in (q, k, v) if t.requires_grad]
    out = _attention_composite(q, k, v, masks[0] if masks else None, dropout_p=0.0,
                               is_causal=causal, scale=scale)
    found = iter(_grad(out, wanted, g_out, create_graph=True, allow_unused=True))
    return (*(next(found) if t.requires_grad else None for t in (q, k, v)), *unused)


# ---------------------------------------------------------------- multi-head attention


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched; torch's AssertionErrors for bad ranks."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     "instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask as a float one (``-inf`` where True); float masks pass unchanged."""
    if mask is None:
        return None
    if mask.dtype is not dt.bool and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype is not other_type:

        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=2)
    if mask.dtype is dt.bool:
        mask = mask.new_zeros(mask.shape, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _in_projection_packed(q, k, v, w, b=None):
    """Project q, k, v with the packed (3E, E) weight: one GEMM for self-attention."""
    E = q.shape[-1]
    if k is v:
        if q is k:
            proj = linear(q, w, b).unflatten(-1, (3, E)).movedim(-2, 0)
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, 2 * E])
        b_q, b_kv = (None, None) if b is None else b.split([E, 2 * E])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, E)).movedim(-2, 0)
        return linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.shape[-1], k.shape[-1], v.shape[-1]
    checks = ((w_q, (Eq, Eq), "query"), (w_k, (Eq, Ek), "key"), (w_v, (Eq, Ev), "value"))
    for w, shape, name in checks:
        if tuple(w.shape) != shape:
            raise AssertionError(f"expecting {name} weights shape of {shape}, but got "
                                 f"{tuple(w.shape)}")
    for bias, name in ((b_q, "query"), (b_k, "key"), (b_v, "value")):
        if bias is not None and tuple(bias.shape) != (Eq,):
            raise AssertionError(f"expecting {name} bias shape of {(Eq,)}, but got "
                                 f"{tuple(bias.shape)}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """The forward pass of :class:`~ember.nn.MultiheadAttention` as a function.

    Inputs are sequence-first: query ``(L, N, E)`` (or unbatched ``(L, E)``), key/value
    ``(S, N, E)``. Returns ``(attn_output, attn_weights)``; the weights are ``None`` unless
    ``need_weights`` (averaged over heads when ``average_attn_weights``).

    Example::

        >>> E, H = 8, 2
        >>> x = ember.randn(5, 3, E)
        >>> w, b = ember.randn(3 * E, E), ember.zeros(3 * E)
        >>> out, attn = F.multi_head_attention_forward(
        ...     x, x, x, E, H, w, b, None, None, False, 0.0, ember.randn(E, E), None)
        >>> out.shape, attn.shape
        (ember.Size([5, 3, 8]), ember.Size([3, 5, 5]))
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint replaces the mask: SDPA applies the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for w, name in ((q_proj_weight, "q"), (k_proj_weight, "k"), (v_proj_weight, "v")):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     "is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight,
                                 v_proj_weight, b_q, b_k, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # (len, N, E) -> (N * heads, len, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, "static_k", bsz, num_heads, head_dim)
    v = _heads(v, static_v, "static_v", bsz, num_heads, head_dim)
    if add_zero_attn:
        zeros = k.new_zeros((bsz * num_heads, 1, head_dim))
        k = cat([k, zeros], dim=1)
        v = cat([v, zeros.to(v.dtype)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = (key_padding_mask.view(bsz, 1, 1, src_len)
                            .expand(-1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        q_scaled = q * math.sqrt(1.0 / float(q.shape[-1]))
        if attn_mask is not None:
            weights = attn_mask.baddbmm(q_scaled, k.transpose(-2, -1))
        else:
            weights = q_scaled.bmm(k.transpose(-2, -1))
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = weights.bmm(v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.shape[1])
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.shape[1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _heads(x, static, name, bsz, num_heads, head_dim):
    """``(len, N, E)`` -> ``(N * heads, len, head_dim)``, or the given static tensor."""
    if static is None:
        return x.reshape(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.shape[0] != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got "
                             f"{static.shape[0]}")
    if static.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got "
                             f"{static.shape[2]}")
    return static
