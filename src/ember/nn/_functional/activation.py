"""nn.functional: activation functions (elementwise nonlinearities, GLU, PReLU; the softmax
family is in ``softmax.py``).

Activations whose composition would be slow or unstable are :class:`~ember.ops._registry.Op`
primitives declared with :func:`~ember.ops.pointwise.unary_op` (kernel on ``xp`` in float32 for
float16/bfloat16, a meta rule, a derivative written with ember ops so double backward works);
the rest are composites of ember ops. Gradients at kinks follow torch's backward formulas
(e.g. ``relu'(0) = 0``, ``leaky_relu'(0) = negative_slope``, ``hardtanh'(min_val) = 0``).
Every ``inplace=True`` form and ``F.name_`` writes through :func:`~ember.ops._registry.inplace`.
"""

from __future__ import annotations

import math

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from ...func import _batching_rules as _batching
from ...ops._fusion import COMPOSITE_KERNEL, Fusion, decline
from ...ops._methods import tensor_method
from ...ops._operands import wrap_dim
from ...ops._registry import _short_name, autocast_policy, defop
from ...ops._registry import inplace as _inplace
from ...ops._signature import signature
from ...ops.pointwise import (
    _RELU_FUSION,
    _check_dtype,
    _low_precision,
    _special,
    unary_op,
    where,
)
from ...ops.pointwise.unary_math import _sigmoid_kernel
from . import _onednn

__all__ = ["threshold", "threshold_", "relu", "relu_", "relu6", "hardtanh", "hardtanh_",
           "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_", "elu", "elu_", "selu",
           "selu_", "celu", "celu_", "gelu", "silu", "mish", "sigmoid", "tanh", "hardsigmoid",
           "hardswish", "hardshrink", "softshrink", "tanhshrink", "softplus", "softsign",
           "logsigmoid", "glu"]

_LOW = dt.LOW_PRECISION
_F32 = np.dtype(np.float32)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _check_input(input, name, position=1):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position {position}) must be Tensor, not "
                        f"{type(input).__name__}")


def _floating(input, kernel_name, name):
    """Check ``input`` is a tensor of a real floating dtype, with torch's errors."""
    _check_input(input, name)
    _check_dtype(kernel_name, input.dtype, "bic")
    return input


def _zero(g):
    return g.new_zeros(())


def _quiet(kernel):
    """``kernel`` without NumPy's floating-point warnings (inf/nan inputs are legitimate)."""
    def run(xp, a, **params):
        if xp is np:
            with np.errstate(all="ignore"):
                return kernel(xp, a, **params)
        return kernel(xp, a, **params)
    return run


def _quiet_binary(kernel):
    """:func:`_quiet` for a kernel of two arrays."""
    def run(xp, a, b, **params):
        if xp is np:
            with np.errstate(all="ignore"):
                return kernel(xp, a, b, **params)
        return kernel(xp, a, b, **params)
    return run


def _op(name, kernel, derivative, **options):
    return unary_op(name, _quiet(kernel), derivative, **options)


# ---------------------------------------------------------------- threshold / relu / hardtanh


def _threshold_kernel(xp, a, *, threshold, value):
    return xp.where(a <= threshold, xp.asarray(value, dtype=a.dtype), a)


_threshold_op = _op("threshold", _threshold_kernel,
                         lambda x, y, g, *, threshold, value: where(x <= threshold, _zero(g), g))


@_threshold_op.defonnx
def _threshold_onnx(ctx, x, threshold, value):
    dtype = ctx.out_dtype()
    keep = ctx.op("Greater", x, ctx.scalar(threshold, dtype))
    return ctx.op("Where", keep, x, ctx.scalar(value, dtype))


def _threshold(input, threshold, value):
    _check_input(input, "threshold")
    _check_dtype("threshold_cpu", input.dtype, "bc")
    if input.dtype.category == dt._INT:
        info = np.iinfo(input.dtype.np)
        if not info.min <= value <= info.max:
            raise RuntimeError(f"value cannot be converted to type {input.dtype.np}_t without "
                               "overflow")
    return _threshold_op(input, threshold=float(threshold), value=float(value))


def threshold(input, threshold, value, inplace=False):
    """``input`` where ``input > threshold``, else ``value``.

    Example::

        >>> F.threshold(ember.tensor([-1., 0.5, 2.]), 1.0, 0.0)
        tensor([0., 0., 2.])
    """
    if inplace:
        return threshold_(input, threshold, value)
    return _threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """In-place :func:`threshold`."""
    _check_input(input, "threshold_")
    return _inplace(_threshold, input, threshold, value)


_INT_OF_SIZE = {2: np.int16, 4: np.int32, 8: np.int64}


def _same_meta(a, *rest):
    return a.shape, a.dtype


@defop("_relu_backward", meta=_same_meta, grad_name="ThresholdBackward0",
       kind="pointwise-binary")
def _relu_backward_op(xp, g, y):
    """``g`` where ``y > 0``, else 0 (NaN/inf grads included, as torch's threshold_backward).

    The mask is applied bitwise (all-ones or all-zeros integers of the grad's width), which is
    exact and much cheaper than a ``where`` with a broadcast zero.
    """
    ints = _INT_OF_SIZE[g.dtype.itemsize]
    mask = xp.asarray(y > 0).astype(ints)
    xp.negative(mask, out=mask)
    return xp.bitwise_and(g.view(ints), mask, out=mask).view(g.dtype)


_relu_backward_op.opt_out("onnx", "a backward kernel: exported models run inference")


_relu_backward_op.defbatch(_batching.same_shape)


@_relu_backward_op.defderivative
def _relu_backward_derivative(ctx, grad):
    # relu'' = 0: zeros (not None) for the output, as torch's threshold_backward gives
    return _relu_backward_op(grad, ctx.inputs[1]), grad.new_zeros(ctx.input_shapes[1])


@defop("_relu", meta=_same_meta, save_inputs=False, save_output=True, grad_name="ReluBackward0",
       kind="pointwise-unary", fuse=_RELU_FUSION)
def _relu_op(xp, a):
    return xp.maximum(a, a.dtype.type(0))


_relu_op.defonnx("Relu")


@_relu_op.defderivative
def _relu_derivative(ctx, grad):
    return (_relu_backward_op(grad, ctx.output),)


def relu(input, inplace=False):
    """``max(input, 0)``, elementwise.

    Example::

        >>> F.relu(ember.tensor([-1., 2.]))
        tensor([0., 2.])
    """
    _check_input(input, "relu")
    if inplace:
        return input.relu_()
    if input.dtype.is_floating_point:  # the dedicated op with the cheap backward
        return _relu_op(input)
    return input.relu()


def relu_(input):
    """In-place :func:`relu`."""
    _check_input(input, "relu_")
    return input.relu_()


def _hardtanh_kernel(xp, a, *, min_val, max_val):
    if a.dtype.kind in "iu":
        min_val, max_val = int(min_val), int(max_val)
    lo, hi = a.dtype.type(min_val), a.dtype.type(max_val)
    return xp.minimum(xp.maximum(a, lo), hi)


def _hardtanh_derivative(x, y, g, *, min_val, max_val):
    return where((x <= min_val) | (x >= max_val), _zero(g), g)


_hardtanh_op = _op("hardtanh", _hardtanh_kernel, _hardtanh_derivative)


@_hardtanh_op.defonnx
def _hardtanh_onnx(ctx, x, min_val=-1.0, max_val=1.0):
    dtype = ctx.out_dtype()
    return ctx.op("Clip", x, ctx.scalar(min_val, dtype), ctx.scalar(max_val, dtype))


def _hardtanh(input, min_val, max_val):
    _check_input(input, "hardtanh")
    dtype = input.dtype
    if dtype is dt.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    if dtype is dt.uint8 and int(min_val) < 0:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative lower bound.")
    return _hardtanh_op(input, min_val=min_val, max_val=max_val)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp ``input`` to ``[min_val, max_val]`` (gradient zero outside the open interval).

    Example::

        >>> F.hardtanh(ember.tensor([-2., 0.5, 2.]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if inplace:
        return hardtanh_(input, min_val, max_val)
    return _hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place :func:`hardtanh`."""
    _check_input(input, "hardtanh_")
    return _inplace(_hardtanh, input, min_val, max_val)


def relu6(input, inplace=False):
    """``min(max(input, 0), 6)``, elementwise.

    Example::

        >>> F.relu6(ember.tensor([-1., 3., 7.]))
        tensor([0., 3., 6.])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


# ---------------------------------------------------------------- leaky / parametric / randomized


def _leaky_kernel(xp, a, *, negative_slope):
    if 0 < negative_slope <= 1:  # then max(a, slope * a) picks the same side: 2 passes, not 3
        out = xp.multiply(a, negative_slope, out=xp.empty_like(a))
        return xp.maximum(a, out, out=out)
    return xp.where(a > 0, a, a * negative_slope)


_leaky_relu_op = _op(
    "leaky_relu", _leaky_kernel,
    lambda x, y, g, *, negative_slope: where(x > 0, g, g * negative_slope))


@_leaky_relu_op.defonnx
def _leaky_relu_onnx(ctx, x, negative_slope=0.01):
    return ctx.op("LeakyRelu", x, alpha=float(negative_slope))


def _leaky_relu(input, negative_slope):
    _floating(input, "leaky_relu_cpu", "leaky_relu")
    return _leaky_relu_op(input, negative_slope=float(negative_slope))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, else ``negative_slope * input``.

    Example::

        >>> F.leaky_relu(ember.tensor([-1., 2.]), 0.1)
        tensor([-0.1000,  2.0000])
    """
    if inplace:
        return leaky_relu_(input, negative_slope)
    return _leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    """In-place :func:`leaky_relu`."""
    _check_input(input, "leaky_relu_")
    return _inplace(_leaky_relu, input, negative_slope)


@signature("prelu(Tensor input, Tensor weight) -> Tensor")
@autocast_policy("lower")
def prelu(input, weight):
    """``input`` where positive, else ``weight * input``; ``weight`` has one value or one per
    channel (dim 1).

    Example::

        >>> F.prelu(ember.tensor([[-1., 2.]]), ember.tensor([0.25]))
        tensor([[-0.2500,  2.0000]])
    """
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' (position 2) must be Tensor, not "
                        f"{type(weight).__name__}")
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_short_name(input.dtype)} "
                           f"and {_short_name(weight.dtype)}")
    count = weight.numel()
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    if input.dim() == 0 and count != 1:
        raise RuntimeError("Not allow zero-dim input tensor.")
    channels = input.shape[1] if input.dim() >= 2 else 1
    if count != channels and count != 1:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {count} and channel size = {channels}.")
    _floating(input, "prelu_cpu", "prelu")  # torch's kernel, reached after the checks above
    if count == 1:
        weight = weight.reshape(())
    elif input.dim() > 2:
        weight = weight.reshape((count,) + (1,) * (input.dim() - 2))
    return where(input > 0, input, weight * input)


def _rrelu(input, lower, upper, training):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return _leaky_relu(input, (lower + upper) / 2)
    _check_input(input, "rrelu")
    _check_dtype("rrelu_with_noise_out_cpu", input.dtype, "bich" if input.dtype is dt.float16
                 else "bic")
    noise = input.detach().new_empty(input.shape).uniform_(lower, upper)
    return input * where(input.detach() > 0, 1.0, noise)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: slopes drawn from ``U(lower, upper)`` in training, their mean in
    evaluation.

    Example::

        >>> F.rrelu(ember.tensor([-1., 2.]), 0.1, 0.3)
        tensor([-0.2000,  2.0000])
    """
    if inplace:
        return rrelu_(input, lower, upper, training)
    return _rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place :func:`rrelu`."""
    _check_input(input, "rrelu_")
    return _inplace(_rrelu, input, lower, upper, training)


# ---------------------------------------------------------------- ELU family


def _elu_kernel(xp, a, *, alpha, scale, input_scale):
    negative = xp.expm1(a * input_scale) * (alpha * scale)
    return xp.where(a > 0, a * scale if scale != 1 else a, negative)


def _elu_derivative(x, y, g, *, alpha, scale, input_scale):
    return where(x <= 0, g * (x * input_scale).exp() * (alpha * scale * input_scale),
                 g * scale if scale != 1 else g)


_elu_op = _op("elu", _elu_kernel, _elu_derivative)


@_elu_op.defonnx
def _elu_onnx(ctx, x, alpha=1.0, scale=1.0, input_scale=1.0):
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


def _elu(input, alpha, scale=1.0, input_scale=1.0):
    _floating(input, "elu_cpu", "elu")
    return _elu_op(input, alpha=float(alpha), scale=float(scale), input_scale=float(input_scale))


def elu(input, alpha=1.0, inplace=False):
    """``input`` where positive, else ``alpha * (exp(input) - 1)``.

    Example::

        >>> F.elu(ember.tensor([-1., 2.]))
        tensor([-0.6321,  2.0000])
    """
    if inplace:
        return elu_(input, alpha)
    return _elu(input, alpha)


def elu_(input, alpha=1.0):
    """In-place :func:`elu`."""
    _check_input(input, "elu_")
    return _inplace(_elu, input, alpha)


def selu(input, inplace=False):
    """Scaled ELU with torch's fixed ``alpha`` and ``scale`` (self-normalising).

    Example::

        >>> F.selu(ember.tensor([-1., 2.]))
        tensor([-1.1113,  2.1014])
    """
    if inplace:
        return selu_(input)
    return _elu(input, _SELU_ALPHA, _SELU_SCALE)


def selu_(input):
    """In-place :func:`selu`."""
    _check_input(input, "selu_")
    return _inplace(_elu, input, _SELU_ALPHA, _SELU_SCALE)


def _celu(input, alpha):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu(input, alpha, 1.0, 1.0 / alpha)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Example::

        >>> F.celu(ember.tensor([-1., 2.]), alpha=2.0)
        tensor([-0.7869,  2.0000])
    """
    if inplace:
        return celu_(input, alpha)
    return _celu(input, alpha)


def celu_(input, alpha=1.0):
    """In-place :func:`celu`."""
    _check_input(input, "celu_")
    return _inplace(_celu, input, alpha)


# ---------------------------------------------------------------- smooth activations


# ln(erfcx(z) / t) as a polynomial in t = 1 / (1 + z / 2), lowest power first: a degree-9
# least-squares fit on Chebyshev nodes of t in (0, 1], made in float64 with
# scipy.special.erfcx. Evaluated in float32 it gives the normal CDF within 4e-7 (absolute;
# torch's float32 gelu is within 1.2e-6 of the exact one), its lower tail with a small relative
# error, at a quarter of the time of SciPy's erf on float32 arrays.
_ERFC_LOG_POLY = (-1.26551224, 1.00002453, 0.37407703, 0.09690357, -0.18680527, 0.28018438,
                  -1.13722881, 1.49036696, -0.8230777, 0.1710676)
_BLOCK = 1 << 16  # elements per block of a blockwise float32 kernel (its temporaries: ~L2)


def _normal_cdf_f32(xp, x):
    """``Phi(x)``, the standard normal CDF, of a 1-d float32 array.

    The tail ``Phi(-|x|) = erfc(z) / 2`` with ``z = |x| / sqrt(2)`` comes from
    ``erfc(z) = t * exp(P(t) - z * z)``; then ``Phi(x) = 1 - Phi(-x)`` for ``x >= 0``.

    Example::

        >>> _normal_cdf_f32(np, np.array([0.0], np.float32))
        array([0.5], dtype=float32)
    """
    z = xp.abs(x)
    z *= _INV_SQRT_2
    t = z * 0.5
    t += 1.0
    xp.reciprocal(t, out=t)
    tail = t * _ERFC_LOG_POLY[-1]
    for coefficient in _ERFC_LOG_POLY[-2:0:-1]:
        tail += coefficient
        tail *= t
    tail += _ERFC_LOG_POLY[0]
    z *= z
    tail -= z
    xp.exp(tail, out=tail)
    tail *= t
    tail *= 0.5
    # Phi = tail for x < 0, 1 - tail otherwise, as upper + (1 - 2 * upper) * tail with upper
    # 0 or 1 (exact both ways; a float where() costs more than all the rest together)
    upper = (x >= 0).astype(x.dtype)
    sign = upper * -2.0
    sign += 1.0
    tail *= sign
    tail += upper
    return tail


def _normal_pdf(xp, x):
    """The standard normal density ``exp(-x^2 / 2) / sqrt(2 pi)`` of a 1-d array."""
    pdf = x * x
    pdf *= -0.5
    xp.exp(pdf, out=pdf)
    pdf *= _INV_SQRT_2PI
    return pdf


def _blockwise(xp, fn, *arrays):
    """``fn(xp, *arrays)`` for same-shape float32 arrays; on the CPU block by block over the
    flattened arrays, so that the temporaries of a long chain of ops stay in cache (over
    arrays larger than the cache every NumPy op is bound by memory traffic)."""
    shape = arrays[0].shape
    flat = [a.reshape(-1) for a in arrays]  # 1-d: in-place ops on 0-d results need arrays
    if xp is np and flat[0].size > _BLOCK:
        out = np.empty(flat[0].shape, flat[0].dtype)
        for start in range(0, out.size, _BLOCK):
            block = slice(start, start + _BLOCK)
            out[block] = fn(xp, *(a[block] for a in flat))
        return out.reshape(shape)
    return fn(xp, *flat).reshape(shape)


def _onednn_gelu(xp, kernel, *arrays):
    """``kernel(*arrays)`` (oneDNN's erf GELU, bit-identical to torch's CPU kernel and ten
    times the speed of the NumPy chain) on CPU arrays when oneDNN is in use, else None."""
    if xp is np and _onednn.available():
        return kernel(*arrays)
    return None


def _gelu_f32(xp, x):
    return x * _normal_cdf_f32(xp, x)


def _gelu_grad_f32(xp, g, x):
    slope = _normal_pdf(xp, x)
    slope *= x
    slope += _normal_cdf_f32(xp, x)
    slope *= g
    return slope


def _gelu_kernel(xp, a, *, approximate):
    if approximate == "tanh":
        inner = (a + 0.044715 * a * a * a) * _SQRT_2_OVER_PI
        return 0.5 * a * (1 + xp.tanh(inner))
    if a.dtype == _F32:  # float16/bfloat16 arrive here as float32 too
        fused = _onednn_gelu(xp, _onednn.gelu, a)
        return fused if fused is not None else _blockwise(xp, _gelu_f32, a)
    return 0.5 * a * (1 + _special(xp).erf(a * _INV_SQRT_2))


def _gelu_derivative(x, y, g, *, approximate):
    return _gelu_backward_op(g, x, approximate=approximate)


_gelu_op = _op("gelu", _gelu_kernel, _gelu_derivative)


@_gelu_op.defonnx
def _gelu_onnx(ctx, x, approximate="none"):
    if ctx.opset >= 20:
        return ctx.op("Gelu", x, approximate=approximate)
    dtype = ctx.out_dtype()
    half_x = ctx.op("Mul", x, ctx.scalar(0.5, dtype))
    if approximate == "tanh":
        cube = ctx.op("Mul", ctx.op("Mul", x, x), x)
        inner = ctx.op("Add", x, ctx.op("Mul", cube, ctx.scalar(0.044715, dtype)))
        gate = ctx.op("Tanh", ctx.op("Mul", inner, ctx.scalar(_SQRT_2_OVER_PI, dtype)))
    else:
        gate = ctx.op("Erf", ctx.op("Div", x, ctx.scalar(math.sqrt(2), dtype)))
    return ctx.op("Mul", half_x, ctx.op("Add", gate, ctx.scalar(1, dtype)))


_gelu_op.defbatch(_batching.same_shape)


@defop("_gelu_backward", meta=_same_meta, grad_name="GeluBackwardBackward0",
       kind="pointwise-binary")
@_quiet_binary
@_low_precision
def _gelu_backward_op(xp, g, x, *, approximate):
    """``g * gelu'(x)``: the backward of :func:`gelu` as one kernel (a primitive of its own, as
    torch's ``gelu_backward``, so that its derivative gives double backward)."""
    if approximate == "tanh":
        x2 = x * x
        t = xp.tanh((x + 0.044715 * x2 * x) * _SQRT_2_OVER_PI)
        inner_grad = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x2)
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner_grad)
    if x.dtype == _F32:
        fused = _onednn_gelu(xp, _onednn.gelu_backward, g, x)
        return fused if fused is not None else _blockwise(xp, _gelu_grad_f32, g, x)
    cdf = 0.5 * (1 + _special(xp).erf(x * _INV_SQRT_2))
    return g * (cdf + x * (xp.exp(-0.5 * x * x) * _INV_SQRT_2PI))


_gelu_backward_op.opt_out("onnx", "a backward kernel: exported models run inference")


_gelu_backward_op.defbatch(_batching.same_shape)


def _gelu_second_derivative(x, approximate):
    """``gelu''(x)`` with ember ops (differentiable again)."""
    if approximate == "tanh":
        # with u = c (x + a x^3), t = tanh(u): gelu'' = (1 - t^2) (u' - x t u'^2 + 3 a c x^2)
        x2 = x * x
        t = ((x + 0.044715 * x2 * x) * _SQRT_2_OVER_PI).tanh()
        du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x2)
        return (1 - t * t) * (du - x * t * du * du + (3 * 0.044715 * _SQRT_2_OVER_PI) * x2)
    pdf = (-0.5 * x * x).exp() * _INV_SQRT_2PI
    return pdf * (2 - x * x)


@_gelu_backward_op.defderivative
def _gelu_backward_derivative(ctx, grad, *, approximate):
    g, x = ctx.inputs
    dg = dx = None
    if ctx.needs_input_grad[0]:
        dg = _gelu_backward_op(grad, x, approximate=approximate)
    if ctx.needs_input_grad[1]:
        dx = grad * g * _gelu_second_derivative(x, approximate)
    return dg, dx


def gelu(input, approximate="none"):
    """Gaussian error linear unit ``x * Phi(x)``; ``approximate='tanh'`` uses the tanh
    approximation.

    Example::

        >>> F.gelu(ember.tensor([-1., 1.]))
        tensor([-0.1587,  0.8413])
    """
    _floating(input, "GeluKernelImpl", "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _gelu_op(input, approximate=approximate)


def _silu_derivative(x, y, g):
    s = x.sigmoid()
    return g * (s * (1 + x * (1 - s))).conj()


_silu_op = _op("silu", lambda xp, a: a * _sigmoid_kernel(xp, a), _silu_derivative)
_silu_op.defonnx(lambda ctx, x: ctx.op("Mul", x, ctx.op("Sigmoid", x)))


def _silu(input):
    _check_input(input, "silu")
    _check_dtype("silu_cpu", input.dtype, "bi")
    return _silu_op(input)


def silu(input, inplace=False):
    """``input * sigmoid(input)`` (swish).

    Example::

        >>> F.silu(ember.tensor([-1., 1.]))
        tensor([-0.2689,  0.7311])
    """
    if inplace:
        _check_input(input, "silu")
        return _inplace(_silu, input)
    return _silu(input)


def _softplus_array(xp, a):
    return xp.logaddexp(a.dtype.type(0), a)


def _mish_derivative(x, y, g):
    t = _softplus_op(x, beta=1.0, threshold=20.0).tanh()
    return g * (t + x * x.sigmoid() * (1 - t * t))


_mish_op = _op("mish", lambda xp, a: a * xp.tanh(_softplus_array(xp, a)), _mish_derivative)
_mish_op.defonnx(lambda ctx, x: ctx.op("Mul", x, ctx.op("Tanh", ctx.op("Softplus", x))))


def _mish(input):
    _floating(input, "mish_cpu", "mish")
    return _mish_op(input)


def mish(input, inplace=False):
    """``input * tanh(softplus(input))``.

    Example::

        >>> F.mish(ember.tensor([-1., 1.]))
        tensor([-0.3034,  0.8651])
    """
    if inplace:
        _check_input(input, "mish")
        return _inplace(_mish, input)
    return _mish(input)


def sigmoid(input):
    """The logistic function ``1 / (1 + exp(-input))`` (as :func:`ember.sigmoid`).

    Example::

        >>> F.sigmoid(ember.tensor([0.]))
        tensor([0.5000])
    """
    _check_input(input, "sigmoid")
    return input.sigmoid()


def tanh(input):
    """The hyperbolic tangent (as :func:`ember.tanh`).

    Example::

        >>> F.tanh(ember.tensor([0.]))
        tensor([0.])
    """
    _check_input(input, "tanh")
    return input.tanh()


def _softplus_kernel(xp, a, *, beta, threshold):
    z = a * beta if beta != 1 else a
    soft = _softplus_array(xp, z)
    if beta != 1:
        soft = soft / beta
    return xp.where(z > threshold, a, soft)


def _softplus_derivative(x, y, g, *, beta, threshold):
    z = x * beta if beta != 1 else x
    return where(z > threshold, g, g * z.sigmoid())


_softplus_op = _op("softplus", _softplus_kernel, _softplus_derivative,
                   autocast={"cuda": "fp32"})


@_softplus_op.defonnx
def _softplus_onnx(ctx, x, beta=1.0, threshold=20.0):
    dtype = ctx.out_dtype()
    scaled = ctx.op("Mul", x, ctx.scalar(beta, dtype)) if beta != 1 else x
    smooth = ctx.op("Softplus", scaled)
    if beta != 1:
        smooth = ctx.op("Div", smooth, ctx.scalar(beta, dtype))
    linear = ctx.op("Greater", scaled, ctx.scalar(threshold, dtype))  # torch returns x there
    return ctx.op("Where", linear, x, smooth)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``.

    Example::

        >>> F.softplus(ember.tensor([0., 30.]))
        tensor([ 0.6931, 30.0000])
    """
    _floating(input, "softplus_cpu", "softplus")
    return _softplus_op(input, beta=float(beta), threshold=float(threshold))


def _log_sigmoid_kernel(xp, a):
    return xp.minimum(a, a.dtype.type(0)) - xp.log1p(xp.exp(-xp.abs(a)))


_log_sigmoid_op = _op("log_sigmoid", _log_sigmoid_kernel,
                           lambda x, y, g: g * (-x).sigmoid())
_log_sigmoid_op.defonnx(  # -softplus(-x)
    lambda ctx, x: ctx.op("Neg", ctx.op("Softplus", ctx.op("Neg", x))))


def logsigmoid(input):
    """``log(sigmoid(input))``, computed stably.

    Example::

        >>> F.logsigmoid(ember.tensor([0.]))
        tensor([-0.6931])
    """
    _floating(input, "log_sigmoid_cpu", "logsigmoid")
    return _log_sigmoid_op(input)


def _hardsigmoid_kernel(xp, a):
    return xp.minimum(xp.maximum(a + 3, a.dtype.type(0)), a.dtype.type(6)) / 6


_hardsigmoid_op = _op("hardsigmoid", _hardsigmoid_kernel,
                           lambda x, y, g: where((x > -3) & (x < 3), g / 6, _zero(g)))
_hardsigmoid_op.defonnx(lambda ctx, x: ctx.op("HardSigmoid", x, alpha=1 / 6, beta=0.5))


def _hardsigmoid(input):
    _floating(input, "hardsigmoid_cpu", "hardsigmoid")
    return _hardsigmoid_op(input)


def hardsigmoid(input, inplace=False):
    """``relu6(input + 3) / 6``.

    Example::

        >>> F.hardsigmoid(ember.tensor([-4., 0., 4.]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    if inplace:
        _check_input(input, "hardsigmoid")
        return _inplace(_hardsigmoid, input)
    return _hardsigmoid(input)


def _hardswish_derivative(x, y, g):
    return where(x <= -3, _zero(g), where(x < 3, g * (x / 3 + 0.5), g))


_hardswish_op = _op("hardswish",
                         lambda xp, a: a * _hardsigmoid_kernel(xp, a), _hardswish_derivative)


@_hardswish_op.defonnx
def _hardswish_onnx(ctx, x):
    if ctx.opset >= 14:
        return ctx.op("HardSwish", x)
    return ctx.op("Mul", x, ctx.op("HardSigmoid", x, alpha=1 / 6, beta=0.5))


def _hardswish(input):
    _floating(input, "hardswish_cpu", "hardswish")
    return _hardswish_op(input)


def hardswish(input, inplace=False):
    """``input * relu6(input + 3) / 6``.

    Example::

        >>> F.hardswish(ember.tensor([-4., 1., 4.]))
        tensor([-0.0000,  0.6667,  4.0000])
    """
    if inplace:
        _check_input(input, "hardswish")
        return _inplace(_hardswish, input)
    return _hardswish(input)


def _inside(x, lambd):
    return (x >= -lambd) & (x <= lambd)


_hardshrink_op = _op(
    "hardshrink", lambda xp, a, *, lambd: xp.where((a >= -lambd) & (a <= lambd),
                                                   a.dtype.type(0), a),
    lambda x, y, g, *, lambd: where(_inside(x, lambd), _zero(g), g))
_hardshrink_op.defonnx(  # 0 inside [-lambd, lambd], x outside
    lambda ctx, x, lambd: ctx.op("Shrink", x, lambd=float(lambd), bias=0.0))


def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, else 0.

    Example::

        >>> F.hardshrink(ember.tensor([-1., 0.2, 1.]))
        tensor([-1.,  0.,  1.])
    """
    _floating(input, "hardshrink_cpu", "hardshrink")
    return _hardshrink_op(input, lambd=float(lambd))


def _softshrink_kernel(xp, a, *, lambd):
    shrunk = a - xp.clip(a, -lambd, lambd).astype(a.dtype, copy=False)
    return shrunk


_softshrink_op = _op(
    "softshrink", _softshrink_kernel,
    lambda x, y, g, *, lambd: where(_inside(x, lambd), _zero(g), g))
_softshrink_op.defonnx(  # 0 inside [-lambd, lambd], x -+ lambd outside
    lambda ctx, x, lambd: ctx.op("Shrink", x, lambd=float(lambd), bias=float(lambd)))


def softshrink(input, lambd=0.5):
    """``input -+ lambd`` where ``|input| > lambd``, else 0.

    Example::

        >>> F.softshrink(ember.tensor([-1., 0.2, 1.]))
        tensor([-0.5000,  0.0000,  0.5000])
    """
    _floating(input, "softshrink_check", "softshrink")
    if lambd < 0:
        limit = "3.40282e+38" if input.dtype is dt.float32 else "1.79769e+308"
        raise RuntimeError(f"lambda must be in range [0, {limit}] for input dtype "
                           f"{_short_name(input.dtype)}, but found {lambd:g}")
    return _softshrink_op(input, lambd=float(lambd))


def tanhshrink(input):
    """``input - tanh(input)``.

    Example::

        >>> F.tanhshrink(ember.tensor([1.]))
        tensor([0.2384])
    """
    _check_input(input, "tanhshrink")
    if input.dtype is dt.bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return input - input.tanh()


def _softsign_kernel(xp, a):
    return a / (xp.abs(a) + 1)


def _softsign_step(xp, args, out):
    """The kernel into one buffer, in the kernel's order of operations (same rounding)."""
    out = xp.abs(args[0], out=out)
    xp.add(out, 1, out=out)
    return xp.divide(args[0], out, out=out)


_softsign_op = _op("softsign", _softsign_kernel, lambda x, y, g: g / (x.abs() + 1).square(),
                   fuse=Fusion(_softsign_step, 1), onnx="Softsign")


@signature("softsign(Tensor input) -> Tensor")
def softsign(input):
    """``input / (1 + |input|)``.

    Example::

        >>> F.softsign(ember.tensor([-1., 3.]))
        tensor([-0.5000,  0.7500])
    """
    if input.dtype.is_floating_point:
        return _softsign_op(input)
    return input / (input.abs() + 1)  # torch's composite: an int input divides to a float


@signature("glu(Tensor input, int dim=-1) -> Tensor")
def glu(input, dim=-1):
    """Gated linear unit: split ``input`` in halves ``a, b`` along ``dim``; ``a * sigmoid(b)``.

    Example::

        >>> F.glu(ember.tensor([1., 2., 0., 0.])).tolist()
        [0.5, 1.0]
    """
    _floating(input, "glu_cpu", "glu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    dim = wrap_dim(dim, input.dim())
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {size}")
    first, second = input.chunk(2, dim)
    return first * second.sigmoid()


if not hasattr(Tensor, "hardshrink"):
    tensor_method(hardshrink, "hardshrink")


# Fusion (``ops/_fusion.py``): the activations with no step in a fused chain yet (relu's is
# ``_relu``'s rule above)
decline(COMPOSITE_KERNEL, _threshold_op, _relu_backward_op, _hardtanh_op, _leaky_relu_op,
        _elu_op, _gelu_op, _gelu_backward_op, _silu_op, _mish_op, _softplus_op, _log_sigmoid_op,
        _hardsigmoid_op, _hardswish_op, _hardshrink_op, _softshrink_op)
