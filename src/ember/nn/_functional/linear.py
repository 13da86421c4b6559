"""nn.functional: linear and bilinear maps.

``linear`` is one primitive, :data:`linear_op`, as torch's ``addmm`` is: one GEMM (the bias is
its C operand on oneDNN, an in-place add on NumPy) and one graph node whose first-order
backward is one kernel (:data:`_linear_backward_op`): grad_input = g @ W, grad_weight =
g^T @ x, grad_bias = the column sums of g. Before it, ``linear`` was five ops (reshape, t,
matmul, reshape, add) and five nodes, whose backward cost more in Python than in arithmetic:
the one op took a tenth off the GPT bench step (2 layers of width 128, thread CPU time A/B,
33.7 -> 30.4 ms), most of it the bias pass and the per-node work. While a trace records (jit,
the ONNX exporter, vmap, ember.compile), ``linear`` runs the composite ops, which those passes
know (the BatchNorm folding into a matrix product, element-wise fusion of the bias add).
"""

from __future__ import annotations

import math

import numpy as np

from ..._tensor import _trace_state
from ...autograd import forward_ad as _forward_ad
from ...autograd import grad_mode
from ...autograd.forward_ad import add_tangents
from ...ops._precision import in_float32, is_half
from ...ops._registry import Op, autocast_policy, first_order_backward
from ...ops._signature import signature
from ...ops.linalg._onednn_gemm import matrix_product, sgemm

__all__ = ["linear", "bilinear"]


@signature("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor")
@autocast_policy("lower")
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``.

    Example::

        >>> F.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
        ember.Size([2, 4])
    """
    if is_half(weight):  # torch's CPU kernel computes it in float32 and rounds once
        return in_float32(_linear, input, weight, bias)
    return _linear(input, weight, bias)


def _linear(input, weight, bias):
    if _primitive_applies(input, weight, bias):
        return linear_op(input, weight) if bias is None else linear_op(input, weight, bias)
    return _linear_composite(input, weight, bias)


def _linear_composite(input, weight, bias):
    """``linear`` as ember ops: what traces record, and every case the primitive leaves
    (another weight rank, mixed dtypes, complex numbers, a broadcast bias, torch's errors)."""
    if weight.ndim != 2:  # a 1-D weight is its own transpose; t() refuses more dims, as torch's
        output = input.matmul(weight.t())
    elif input.ndim > 2:
        # one 2-D product over all leading dims: the weight gradient is then one GEMM too,
        # not a stack of per-batch products summed afterwards
        lead = input.shape[:-1]
        output = input.reshape(-1, input.shape[-1]).matmul(weight.t())
        output = output.reshape(*lead, output.shape[-1])
    else:
        output = input.matmul(weight.t())
    if bias is not None:
        output = output + bias
    return output


# ---------------------------------------------------------------- the primitive

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _primitive_applies(input, weight, bias):
    """Whether :data:`linear_op` computes this call: a 2-D weight, an input of at least one dim
    whose last matches it, float32 or float64 throughout, a bias of one value per output, one
    device, and no trace recording."""
    x, w = input._data, weight._data
    if w.ndim != 2 or x.ndim == 0 or x.shape[-1] != w.shape[1] or w.dtype not in _FLOATS \
            or x.dtype != w.dtype or input._device is not weight._device:
        return False
    if bias is not None:
        b = bias._data
        if b.shape != w.shape[:1] or b.dtype != w.dtype or bias._device is not weight._device:
            return False
    return _trace_state.tracer is None


def _rows(x):
    """``x`` as a matrix: its leading dims folded into rows (a 1-D ``x`` is one row)."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _linear_kernel(xp, x, w, b=None):
    y = xp.matmul(_rows(x), w.T)
    if b is not None:
        y += b
    return y.reshape(*x.shape[:-1], w.shape[0])


def _linear_meta(x, w, b=None):
    return (*x.shape[:-1], w.shape[0]), x.dtype


linear_op = Op("linear", _linear_kernel, meta=_linear_meta, kind="nn", autocast="lower",
               grad_name="AddmmBackward0")
linear_op.opt_out("batch", "vmap records the composite ops (F.linear runs them while any "
                           "trace records): the op never runs under vmap")
linear_op.opt_out("onnx", "an export traces the composite ops (F.linear runs them while any "
                          "trace records): the op never reaches the exporter")


@linear_op.defkernel("cpu")
def _linear_cpu_kernel(xp, x, w, b=None):
    """float32 on oneDNN's GEMM with the bias as its C operand, as torch's ``addmm``."""
    if x.dtype == np.float32:
        y = sgemm(_rows(x), w.T, bias=b)
        if y is not None:
            return y.reshape(*x.shape[:-1], w.shape[0])
    return _linear_kernel(xp, x, w, b)


@linear_op.defderivative
def _linear_derivative(ctx, grad):
    x, w = ctx.inputs[0], ctx.inputs[1]
    needs = ctx.needs_input_grad
    need_bias = len(needs) == 3 and needs[2]
    if not grad_mode.state.enabled and _forward_ad._state.level is None and \
            _trace_state.tracer is None:
        found = iter(_linear_backward_op(grad, x, w, need_input=needs[0],
                                         need_weight=needs[1], need_bias=need_bias))
        grads = [next(found) if need else None for need in (needs[0], needs[1], need_bias)]
    else:  # create_graph, forward mode, vmap: ember ops, differentiable and batched again
        g = grad.reshape(math.prod(x.shape[:-1]), w.shape[0])
        grads = [g.matmul(w).reshape(x.shape) if needs[0] else None,
                 g.t().matmul(x.reshape(g.shape[0], w.shape[1])) if needs[1] else None,
                 g.sum(0) if need_bias else None]
    return tuple(grads[:len(needs)])


@linear_op.defjvp
def _linear_jvp(p, t, y):
    """The product rule: ``linear(tx, w) + linear(x, tw) + tb``."""
    x, w = p[0], p[1]
    tx, tw = t[0], t[1]
    return add_tangents(None if tx is None else _linear(tx, w, None),
                        None if tw is None else _linear(x, tw, None),
                        t[2] if len(t) == 3 else None)


def _linear_backward_kernel(xp, g, x, w, *, need_input, need_weight, need_bias):
    """The gradients :data:`linear_op`'s inputs need, in their order: g @ w (shaped as
    ``x``), g^T @ x (a fresh matrix, which ``.grad`` takes without a copy) and g's column
    sums, as a product with a vector of ones: BLAS sums the columns of a (1024, 384) float32
    gradient 2.3x faster than NumPy's reduction (21 against 50 us; torch: 29)."""
    g = g.reshape(math.prod(x.shape[:-1]), w.shape[0])
    grads = []
    if need_input:
        grads.append(matrix_product(xp, g, w).reshape(x.shape))
    if need_weight:
        grads.append(matrix_product(xp, g.T, _rows(x)))
    if need_bias:
        grads.append(xp.matmul(xp.ones(g.shape[0], g.dtype), g))
    return tuple(grads)


def _linear_backward_meta(g, x, w, *, need_input, need_weight, need_bias):
    specs = ((x.shape, x.dtype), (w.shape, w.dtype), (w.shape[:1], w.dtype))
    return tuple(spec for spec, need in zip(specs, (need_input, need_weight, need_bias))
                 if need)


_linear_backward_op = Op("linear_backward", _linear_backward_kernel,
                         meta=_linear_backward_meta, save_inputs=False, multi_output=True,
                         kind="nn", opt_outs=first_order_backward("the composite ops"))


# ---------------------------------------------------------------- bilinear


@signature("bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor")
def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Computed as one matrix product (``input1 @ weight`` viewed as (in1, out*in2)) and a
    reduction over ``in2``.

    Example::

        >>> F.bilinear(ember.ones(2, 3), ember.ones(2, 4), ember.ones(5, 3, 4)).shape
        ember.Size([2, 5])
    """
    # torch compares the dtypes before any shape
    if not (input1.dtype == input2.dtype == weight.dtype):
        raise RuntimeError(f"All tensors must have the same dtype, got input1: "
                           f"{_short(input1.dtype)}, input2: {_short(input2.dtype)}, weight: "
                           f"{_short(weight.dtype)}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for d in range(input1.ndim - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: "
                               f"got {input1.shape[d]} and {input2.shape[d]}")
    if weight.ndim != 3:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[-{weight.ndim}, {weight.ndim - 1}], but got 2)")
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_features):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1] if bias.ndim else 1} but expected {out_features}")
    batch = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (n, in1) @ (in1, out*in2) -> (n, out, in2), then contract with input2 over in2.
    t = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    output = t.reshape(-1, out_features, in2).matmul(x2.unsqueeze(-1)).squeeze(-1)
    if bias is not None:
        output = output + bias
    return output.reshape(*batch, out_features)


_SHORT = {"float64": "double", "float32": "float", "float16": "half", "int64": "long",
          "int32": "int", "int16": "short", "int8": "char", "uint8": "unsigned char",
          "complex64": "complex float", "complex128": "complex double"}


def _short(dtype):
    return _SHORT.get(dtype.name, dtype.name)
