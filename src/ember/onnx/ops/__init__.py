"""``torch.onnx.ops``: ONNX operators as ember functions.

:func:`rotary_embedding` and :func:`attention` compute ONNX's ``RotaryEmbedding-23`` and
``Attention-23`` with ember operators (differentiable, on any device). :func:`symbolic` and
:func:`symbolic_multi_out` stand for an arbitrary ONNX operator: run eagerly they return
zeros of the declared dtype and shape, as torch's do, through the primitive
``onnx_symbolic``, which the exporter writes as that node (its domain imported in the model);
one without tensor inputs cannot be recorded and raises ``NotImplementedError`` in an export.
"""

from __future__ import annotations

import math

from ...ops._onnx_rules import unfolded
from ...ops._registry import defop

__all__ = ["aten_decompositions", "symbolic", "symbolic_multi_out", "rotary_embedding",
           "attention"]


def aten_decompositions():
    """The decompositions torch's dynamo exporter applies for these operators: ember's
    exporter traces ember operators directly, so it needs none (an empty dict).

    Example::

        >>> ember.onnx.ops.aten_decompositions()
        {}
    """
    return {}


def _placeholder(domain_op, dtype, shape):
    from ...ops.creation import zeros
    from .. import _export

    if _export.is_in_onnx_export():
        raise NotImplementedError(
            f"torch.onnx.ops.symbolic ({domain_op}) without tensor inputs: ember's exporter "
            f"records operators by their tensor inputs; give the operator an input")
    return zeros(tuple(shape), dtype=_as_dtype(dtype))


@defop("onnx_symbolic", save_inputs=False, multi_output=True)
def _symbolic_op(xp, *inputs, domain_op, attrs, dtypes, shapes, positions, version):
    """An arbitrary ONNX operator: zeros of the declared dtypes and shapes when run; the
    exporter writes the node itself (its ``onnx`` rule below)."""
    from ... import _dtype

    return tuple(xp.zeros(tuple(shape), dtype=getattr(_dtype, name).np)
                 for name, shape in zip(dtypes, shapes))


_symbolic_op.opt_out("derivative", "a placeholder for a node the ONNX runtime runs")
_symbolic_op.opt_out("batch", "a placeholder for a node the ONNX runtime runs")


def _run_symbolic(domain_op, inputs, attrs, dtypes, shapes, version):
    """The outputs of :func:`symbolic`/:func:`symbolic_multi_out`: the recorded operator
    when it has tensor inputs, plain zeros otherwise."""
    from ...autograd import grad_mode

    if "::" not in domain_op:
        raise ValueError(f"domain_op must be 'domain::op_type', got {domain_op!r}")
    tensors = [t for t in inputs if t is not None]
    dtypes = [str(_as_dtype(d)).split(".")[-1] for d in dtypes]
    shapes = [[int(size) for size in shape] for shape in shapes]
    if not tensors:
        return [_placeholder(domain_op, d, s) for d, s in zip(dtypes, shapes)]
    positions = [i for i, t in enumerate(inputs) if t is not None]
    with grad_mode.no_grad():  # a placeholder: nothing to differentiate
        return list(_symbolic_op(*tensors, domain_op=domain_op, attrs=dict(attrs or {}),
                                 dtypes=dtypes, shapes=shapes, positions=positions,
                                 version=version))


@_symbolic_op.defonnx
@unfolded  # a placeholder for a node only the runtime runs
def _symbolic_to_onnx(ctx, *inputs, domain_op, attrs, dtypes, shapes, positions, version):
    domain, op_type = domain_op.split("::", 1)
    slots = [""] * (max(positions) + 1 if positions else 0)
    for position, name in zip(positions, inputs):
        slots[position] = name
    ctx.custom_domains[domain] = max(ctx.custom_domains.get(domain, 1), version or 1)
    outputs = [ctx.fresh(op_type) for _ in dtypes]
    ctx.nodes.append(ctx.onnx.helper.make_node(op_type, slots, outputs, name=outputs[0],
                                               domain=domain, **attrs))
    return tuple(outputs)


# ONNX's TensorProto element type codes, as ember dtype names
_ONNX_CODES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64",
               9: "bool", 10: "float16", 11: "float64", 14: "complex64", 15: "complex128",
               16: "bfloat16"}


def _as_dtype(dtype):
    """An ember dtype, or an ONNX element type code (``1`` is FLOAT), as an ember dtype."""
    if isinstance(dtype, int):
        from ... import _dtype

        if dtype not in _ONNX_CODES:
            raise ValueError(f"ONNX element type {dtype} has no ember dtype")
        return getattr(_dtype, _ONNX_CODES[dtype])
    return dtype


def symbolic(domain_op, /, inputs, attrs=None, *, dtype, shape, version=None,
             metadata_props=None):
    """An arbitrary ONNX operator ``"domain::Op"`` with one output: zeros of ``dtype`` and
    ``shape`` when run (see the module note on exporting).

    Example::

        >>> ember.onnx.ops.symbolic("custom::Op", [ember.ones(2)], dtype=ember.float32,
        ...                         shape=(2,))
        tensor([0., 0.])
    """
    return _run_symbolic(domain_op, inputs, attrs, [dtype], [shape], version)[0]


def symbolic_multi_out(domain_op, /, inputs, attrs=None, *, dtypes, shapes, version=None,
                       metadata_props=None):
    """:func:`symbolic` with several outputs (a list of zeros tensors).

    Example::

        >>> [t.shape for t in ember.onnx.ops.symbolic_multi_out(
        ...     "custom::Op", [], dtypes=[ember.float32] * 2, shapes=[(1,), (2,)])]
        [ember.Size([1]), ember.Size([2])]
    """
    return _run_symbolic(domain_op, inputs, attrs, dtypes, shapes, version)


# ---------------------------------------------------------------- RotaryEmbedding-23


def _rotated(x, cos, sin, interleaved):
    """The rotation of ``x``'s last dim (pairs of neighbours, or the two halves)."""
    from ...ops.shape import cat, stack

    if interleaved:
        first, second = x[..., 0::2], x[..., 1::2]
    else:
        half = x.shape[-1] // 2
        first, second = x[..., :half], x[..., half:]
    real = cos * first - sin * second
    imaginary = sin * first + cos * second
    if interleaved:
        return stack([real, imaginary], -1).flatten(-2)
    return cat([real, imaginary], -1)


def rotary_embedding(X, cos_cache, sin_cache, position_ids=None, *, interleaved=False,
                     num_heads=0, rotary_embedding_dim=0):
    """ONNX ``RotaryEmbedding-23``: rotate the first ``rotary_embedding_dim`` features of
    each head of ``X`` ((batch, heads, seq, head) or (batch, seq, hidden) with
    ``num_heads``) by the angles whose cosines and sines the caches hold (indexed by
    ``position_ids`` when given).

    Example::

        >>> x = ember.randn(1, 2, 3, 4)
        >>> cos, sin = ember.ones(1, 3, 2), ember.zeros(1, 3, 2)
        >>> ember.equal(ember.onnx.ops.rotary_embedding(x, cos, sin), x)
        True
    """
    from ...ops.shape import cat

    shape, rank = X.shape, X.dim()
    batch, sequence = shape[0], shape[-2]
    if position_ids is not None:
        if position_ids.dim() != 2 or cos_cache.dim() != 2 or sin_cache.dim() != 2:
            raise RuntimeError("position_ids must be 2D and cos_cache/sin_cache 2D when "
                               "position_ids is provided")
    elif cos_cache.dim() != 3 or sin_cache.dim() != 3:
        raise RuntimeError(f"cos_cache/sin_cache must be 3D when position_ids is not "
                           f"provided. Received cos_cache shape {cos_cache.shape}, sin_cache "
                           f"shape {sin_cache.shape}")
    if rank == 4:
        x = X.permute(0, 2, 1, 3)  # (batch, seq, heads, head)
    elif num_heads:
        x = X.reshape(batch, sequence, num_heads, shape[2] // num_heads)
    else:
        raise RuntimeError(f"num_heads must be provided for 3D inputs. Received input tensor "
                           f"with shape {shape}")
    width = rotary_embedding_dim or x.shape[3]
    if position_ids is not None:
        cos_cache, sin_cache = cos_cache[position_ids], sin_cache[position_ids]
    cos = cos_cache[..., :width // 2].unsqueeze(2)
    sin = sin_cache[..., :width // 2].unsqueeze(2)
    out = cat([_rotated(x[..., :width], cos, sin, interleaved), x[..., width:]], -1)
    if rank == 4:
        return out.permute(0, 2, 1, 3)
    return out.reshape(shape)


# ---------------------------------------------------------------- Attention-23


def _as_heads(tensor, heads):
    """(batch, seq, heads * head) as (batch, heads, seq, head)."""
    batch, sequence, hidden = tensor.shape
    return tensor.reshape(batch, sequence, heads, hidden // heads).transpose(1, 2)


def _attention_bias(q_length, kv_length, attn_mask, is_causal, like):
    from ...ops.creation import ones, zeros

    bias = zeros(q_length, kv_length, dtype=like.dtype, device=like.device)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("Cannot use both is_causal and attn_mask")
        keep = ones(q_length, kv_length, dtype=bool, device=like.device).tril()
        bias = bias.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == like.new_ones(1, dtype=bool).dtype:
            bias = bias.masked_fill(~attn_mask, float("-inf"))
        else:
            bias = bias + attn_mask
    return bias


def attention(Q, K, V, attn_mask=None, past_key=None, past_value=None, *, is_causal=False,
              kv_num_heads=0, q_num_heads=0, qk_matmul_output_mode=0, scale=None, softcap=0.0,
              softmax_precision=None):
    """ONNX ``Attention-23``: scaled dot-product attention with grouped key/value heads, a
    key/value cache, a causal or given mask and an optional soft cap. Returns ``(output,
    present_key, present_value, qk)``, ``qk`` the scores at the stage
    ``qk_matmul_output_mode`` names (0: Q·Kᵀ, 1: plus the mask, 2: soft-capped, 3: softmax).

    Example::

        >>> q = k = v = ember.randn(1, 2, 3, 4)
        >>> out, *_ = ember.onnx.ops.attention(q, k, v)
        >>> out.shape
        ember.Size([1, 2, 3, 4])
    """
    from ...ops.shape import cat

    three_d = Q.dim() == 3
    if three_d:
        if not (q_num_heads and kv_num_heads):
            raise RuntimeError("q_num_heads and kv_num_heads must be provided for 3D inputs")
        batch, q_length = Q.shape[0], Q.shape[1]
        Q, K, V = _as_heads(Q, q_num_heads), _as_heads(K, kv_num_heads), \
            _as_heads(V, kv_num_heads)
    present_key = cat([past_key, K], 2) if past_key is not None else K.clone()
    present_value = cat([past_value, V], 2) if past_value is not None else V.clone()
    heads, kv_heads = Q.shape[1], present_key.shape[1]
    if heads % kv_heads:
        raise RuntimeError(f"q_num_heads ({heads}) must be divisible by kv_num_heads "
                           f"({kv_heads}) for GQA")
    keys, values = present_key, present_value
    if heads != kv_heads:
        keys = keys.repeat_interleave(heads // kv_heads, dim=1)
        values = values.repeat_interleave(heads // kv_heads, dim=1)
    root = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(Q.shape[3]))
    scores = (Q * root) @ (keys * root).transpose(-2, -1)
    stages = [scores]
    scores = scores + _attention_bias(Q.shape[2], keys.shape[2], attn_mask, is_causal, Q)
    stages.append(scores)
    if softcap > 0.0:
        scores = softcap * (scores / softcap).tanh()
    stages.append(scores)
    weights = scores.softmax(-1)
    stages.append(weights)
    output = weights @ values
    if three_d:
        output = output.transpose(1, 2).reshape(batch, q_length, -1)
    return output, present_key, present_value, stages[qk_matmul_output_mode]
