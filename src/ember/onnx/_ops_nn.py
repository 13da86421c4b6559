"""ONNX mappings of the neural-network primitives: activations, softmax, convolution,
pooling, embedding and the recurrent cells.

Layers that ember composes from primitives (Linear, LayerNorm, GroupNorm, BatchNorm in eval
mode, Dropout in eval mode, attention) need no mapping of their own: their primitives are
mapped one by one. The recurrent layers run one fused cell per step, so an LSTM or GRU is
exported unrolled over the traced sequence length.
"""

from __future__ import annotations

import math

from ._dims import Dim
from ._symbolic import symbolic


def _static(size):
    return size.value if isinstance(size, Dim) else size


# ---------------------------------------------------------------- activations


@symbolic("gelu")
def _gelu(ctx, x, approximate="none"):
    if ctx.opset >= 20:
        return ctx.op("Gelu", x, approximate=approximate)
    dtype = ctx.out_dtype()
    half_x = ctx.op("Mul", x, ctx.scalar(0.5, dtype))
    if approximate == "tanh":
        cube = ctx.op("Mul", ctx.op("Mul", x, x), x)
        inner = ctx.op("Add", x, ctx.op("Mul", cube, ctx.scalar(0.044715, dtype)))
        inner = ctx.op("Mul", inner, ctx.scalar(math.sqrt(2 / math.pi), dtype))
        gate = ctx.op("Tanh", inner)
    else:
        gate = ctx.op("Erf", ctx.op("Div", x, ctx.scalar(math.sqrt(2), dtype)))
    return ctx.op("Mul", half_x, ctx.op("Add", gate, ctx.scalar(1, dtype)))


@symbolic("silu")
def _silu(ctx, x):
    return ctx.op("Mul", x, ctx.op("Sigmoid", x))


@symbolic("mish")
def _mish(ctx, x):
    return ctx.op("Mul", x, ctx.op("Tanh", ctx.op("Softplus", x)))


@symbolic("log_sigmoid")
def _log_sigmoid(ctx, x):
    return ctx.op("Neg", ctx.op("Softplus", ctx.op("Neg", x)))


@symbolic("leaky_relu")
def _leaky_relu(ctx, x, negative_slope=0.01):
    return ctx.op("LeakyRelu", x, alpha=float(negative_slope))


@symbolic("elu")
def _elu(ctx, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if input_scale == 1.0:
        if scale == 1.0:
            return ctx.op("Elu", x, alpha=float(alpha))
        return ctx.op("Selu", x, alpha=float(alpha), gamma=float(scale))
    dtype = ctx.out_dtype()
    negative = ctx.op("Mul", ctx.op("Min", x, ctx.scalar(0, dtype)), ctx.scalar(input_scale, dtype))
    negative = ctx.op("Mul", ctx.op("Sub", ctx.op("Exp", negative), ctx.scalar(1, dtype)),
                      ctx.scalar(alpha, dtype))
    result = ctx.op("Add", ctx.op("Relu", x), negative)
    return ctx.op("Mul", result, ctx.scalar(scale, dtype)) if scale != 1.0 else result


@symbolic("softplus")
def _softplus(ctx, x, beta=1.0, threshold=20.0):
    dtype = ctx.out_dtype()
    scaled = ctx.op("Mul", x, ctx.scalar(beta, dtype)) if beta != 1 else x
    smooth = ctx.op("Softplus", scaled)
    if beta != 1:
        smooth = ctx.op("Div", smooth, ctx.scalar(beta, dtype))
    # above the threshold torch returns x itself
    linear = ctx.op("Greater", scaled, ctx.scalar(threshold, dtype))
    return ctx.op("Where", linear, x, smooth)


@symbolic("hardtanh")
def _hardtanh(ctx, x, min_val=-1.0, max_val=1.0):
    dtype = ctx.out_dtype()
    return ctx.op("Clip", x, ctx.scalar(min_val, dtype), ctx.scalar(max_val, dtype))


@symbolic("hardsigmoid")
def _hardsigmoid(ctx, x):
    return ctx.op("HardSigmoid", x, alpha=1 / 6, beta=0.5)


@symbolic("hardswish")
def _hardswish(ctx, x):
    if ctx.opset >= 14:
        return ctx.op("HardSwish", x)
    return ctx.op("Mul", x, ctx.op("HardSigmoid", x, alpha=1 / 6, beta=0.5))


@symbolic("threshold")
def _threshold(ctx, x, threshold, value):
    dtype = ctx.out_dtype()
    keep = ctx.op("Greater", x, ctx.scalar(threshold, dtype))
    return ctx.op("Where", keep, x, ctx.scalar(value, dtype))


@symbolic("softmax")
def _softmax(ctx, x, dim):
    return ctx.op("Softmax", x, axis=dim % max(len(ctx.in_dims(0)), 1))


@symbolic("log_softmax")
def _log_softmax(ctx, x, dim):
    return ctx.op("LogSoftmax", x, axis=dim % max(len(ctx.in_dims(0)), 1))


@symbolic("_safe_softmax")
def _safe_softmax(ctx, x):
    # attention's softmax: a row that is all -inf (fully masked) gives zeros, not NaN
    dtype = ctx.out_dtype()
    row_max = ctx.reduce("ReduceMax", x, [len(ctx.in_dims(0)) - 1], True)
    masked = ctx.op("Equal", row_max, ctx.scalar(-math.inf, dtype))
    return ctx.op("Where", masked, ctx.scalar(0, dtype), ctx.op("Softmax", x, axis=-1))


# ---------------------------------------------------------------- convolution and pooling


@symbolic("convolution")
def _convolution(ctx, x, weight, stride, padding, dilation, groups):
    kernel = [_static(s) for s in ctx.in_dims(1)[2:]]
    return ctx.op("Conv", x, weight, kernel_shape=kernel, strides=list(stride),
                  pads=[p[0] for p in padding] + [p[1] for p in padding],
                  dilations=list(dilation), group=groups)


@symbolic("convolution_input_grad")
def _conv_transpose(ctx, x, weight, shape, stride, padding, dilation, groups):
    # the transposed convolution is the gradient of a convolution with respect to its input;
    # ``shape`` is the full output size, of which ONNX needs the extra ``output_padding``
    kernel = [_static(s) for s in ctx.in_dims(1)[2:]]
    sizes = [_static(s) for s in ctx.in_dims(0)[2:]]
    out = [_static(s) for s in shape[2:]]
    extra = [o - ((i - 1) * s - p[0] - p[1] + d * (k - 1) + 1)
             for o, i, s, p, d, k in zip(out, sizes, stride, padding, dilation, kernel)]
    return ctx.op("ConvTranspose", x, weight, kernel_shape=kernel, strides=list(stride),
                  pads=[p[0] for p in padding] + [p[1] for p in padding],
                  dilations=list(dilation), group=groups,
                  output_padding=extra if any(extra) else None)


def _ceil_mode(sizes, out, kernel, stride, padding, dilation):
    """1 when the traced output sizes are those of ``ceil_mode=True``."""
    floor = [(n + 2 * p - d * (k - 1) - 1) // s + 1
             for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    return int(list(out) != floor)


@symbolic("max_pool")
def _max_pool(ctx, x, nd, kernel, stride, padding, dilation, out):
    sizes = [_static(s) for s in ctx.in_dims(0)[-nd:]]
    out = [_static(s) for s in out]
    values = ctx.op("MaxPool", x, kernel_shape=list(kernel), strides=list(stride),
                    pads=list(padding) * 2, dilations=list(dilation),
                    ceil_mode=_ceil_mode(sizes, out, kernel, stride, padding, dilation))
    return values, None  # ember's indices (a flat position per window) are not exported


@symbolic("avg_pool")
def _avg_pool(ctx, x, nd, kernel, stride, padding, out, count_include_pad,
              divisor_override=None):
    if divisor_override is not None:
        ctx.fail("avg_pool with divisor_override has no ONNX form")
    sizes = [_static(s) for s in ctx.in_dims(0)[-nd:]]
    out = [_static(s) for s in out]
    return ctx.op("AveragePool", x, kernel_shape=list(kernel), strides=list(stride),
                  pads=list(padding) * 2, count_include_pad=int(count_include_pad),
                  ceil_mode=_ceil_mode(sizes, out, kernel, stride, padding, [1] * nd))


@symbolic("adaptive_max_pool")
def _adaptive_max_pool(ctx, x, nd, out):
    if all(o == 1 for o in out):
        return ctx.op("GlobalMaxPool", x), None
    sizes = ctx.in_dims(0)[-nd:]
    if any(isinstance(s, Dim) or s % o for s, o in zip(sizes, out)):
        ctx.fail("adaptive_max_pool exports only to output size 1, or to sizes that divide "
                 "static input sizes")
    kernel = [s // o for s, o in zip(sizes, out)]
    return ctx.op("MaxPool", x, kernel_shape=kernel, strides=kernel), None


# ---------------------------------------------------------------- layer norm


def _rows(ctx, x, size):
    return ctx.op("Reshape", x, ctx.int64s([-1, size]))


@symbolic("_layer_norm_stats")
def _layer_norm_stats(ctx, x, size, eps):
    # each row of x viewed as (-1, size): its mean and 1 / sqrt(biased variance + eps)
    dtype = ctx.out_dtype()
    rows = _rows(ctx, x, size)
    mean = ctx.reduce("ReduceMean", rows, [1], False)
    centred = ctx.op("Sub", rows, ctx.unsqueeze(mean, [1]))
    variance = ctx.reduce("ReduceMean", ctx.op("Mul", centred, centred), [1], False)
    rstd = ctx.op("Reciprocal", ctx.op("Sqrt", ctx.op("Add", variance, ctx.scalar(eps, dtype))))
    return mean, rstd


@symbolic("_layer_norm")
def _layer_norm(ctx, x, weight, bias, mean, rstd, size, eps):
    normed = ctx.op("Mul", ctx.op("Sub", _rows(ctx, x, size), ctx.unsqueeze(mean, [1])),
                    ctx.unsqueeze(rstd, [1]))
    flat = ctx.int64s([-1])
    y = ctx.op("Add", ctx.op("Mul", normed, ctx.op("Reshape", weight, flat)),
               ctx.op("Reshape", bias, flat))
    return ctx.op("Reshape", y, ctx.op("Shape", x))  # back to x's shape, whatever its size


# ---------------------------------------------------------------- embedding


@symbolic("embedding")
def _embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return ctx.op("Gather", weight, ctx.cast(indices, ctx.in_dtype(1), "int64"), axis=0)


# ---------------------------------------------------------------- recurrent cells


@symbolic("_recurrent_mm")
def _recurrent_mm(ctx, h, w_t, w, b=None):
    product = ctx.op("MatMul", h, w_t)
    return product if b is None else ctx.op("Add", product, b)


@symbolic("_lstm_cell")
def _lstm_cell(ctx, xw, hw, c):
    # gates (input, forget, cell, output) = xw + hw; c' = f c + i g; h' = o tanh(c')
    gates = ctx.op("Add", xw, hw)
    i, f, g, o = ctx.op("Split", gates, ctx.int64s([_static(ctx.in_dims(2)[1])] * 4),
                        outputs=4, axis=1)
    i, f, o, g = ctx.op("Sigmoid", i), ctx.op("Sigmoid", f), ctx.op("Sigmoid", o), \
        ctx.op("Tanh", g)
    c_new = ctx.op("Add", ctx.op("Mul", f, c), ctx.op("Mul", i, g))
    h_new = ctx.op("Mul", o, ctx.op("Tanh", c_new))
    return h_new, c_new, None  # the third output is the backward pass's workspace


@symbolic("_gru_cell")
def _gru_cell(ctx, xw, hw, h, b=None):
    # r, z = sigmoid(x_rz + h_rz); n = tanh(x_n + r * h_n); h' = (h - n) z + n
    if b is not None:
        hw = ctx.op("Add", hw, b)
    hidden = _static(ctx.in_dims(2)[1])
    sizes = ctx.int64s([hidden] * 3)
    x_r, x_z, x_n = ctx.op("Split", xw, sizes, outputs=3, axis=1)
    h_r, h_z, h_n = ctx.op("Split", hw, sizes, outputs=3, axis=1)
    r = ctx.op("Sigmoid", ctx.op("Add", x_r, h_r))
    z = ctx.op("Sigmoid", ctx.op("Add", x_z, h_z))
    n = ctx.op("Tanh", ctx.op("Add", x_n, ctx.op("Mul", r, h_n)))
    return ctx.op("Add", ctx.op("Mul", ctx.op("Sub", h, n), z), n), None
