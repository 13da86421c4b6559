"""Unary math, declared from tables with :func:`unary`: exponentials and logarithms,
trigonometric and hyperbolic functions, sigmoid, erf and the gamma family, sign and rounding,
reciprocal/square, nan_to_num, the isnan-style classifiers, angle, sinc, relu, abs, logit."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from .._fusion import BOOL_RESULT, COMPOSITE_KERNEL, OTHER_DTYPE, SCIPY_KERNEL, Fusion, decline
from .._methods import tensor_method
from .._registry import inplace, write_out
from .._util import scalar
from ._declare import (
    _F32,
    _LOW,
    _check_tensor,
    _inplace_method,
    _special,
    _zeros_like,
    declarers,
    unary_op,
    unary_operand,
)
from .arithmetic import pow
from .comparison import where

__all__ = ["logit", "polygamma", "mvlgamma", "round", "nan_to_num", "square"]
unary, binary, _alias = declarers(globals())


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# why the ops without an ONNX form (``Op.defonnx``) have none
_SPECIAL = {"onnx": "ONNX has no operator for this special function"}
_NOT_MAPPED = {"onnx": "not mapped yet (composable from ONNX operators)"}
_COMPLEX = {"onnx": "a complex-number op: ONNX export handles real dtypes only"}


# First-order derivatives written into ``out`` with NumPy ufuncs (``fast=`` of :func:`unary`),
# with the same roundings as the ember expressions next to them: the two paths agree bit for bit.


def _exp_backward(x, y, g, out):
    np.multiply(g, y, out=out)


def _log_backward(x, y, g, out):
    np.divide(g, x, out=out)


def _sin_backward(x, y, g, out):
    np.cos(x, out=out)
    np.multiply(g, out, out=out)


def _cos_backward(x, y, g, out):
    np.sin(x, out=out)
    np.multiply(g, out, out=out)
    np.negative(out, out=out)


def _tanh_backward(x, y, g, out):
    np.multiply(y, y, out=out)
    np.subtract(1, out, out=out)
    np.multiply(g, out, out=out)


def _sigmoid_backward(x, y, g, out):
    np.subtract(1, y, out=out)
    np.multiply(y, out, out=out)
    np.multiply(g, out, out=out)


def _relu_backward(x, y, g, out):
    np.copyto(out, g)
    out[y <= 0] = 0


# Fused steps (``Fusion``, ``ops/_fusion.py``) that are not one ufunc, and the gradients of one
# step on the device's arrays (``Fusion.grad``; every array returned is new, except ``g``).


def _scaled(xp, factor, g):
    """``factor * g`` into ``factor`` (a new array the caller owns)."""
    return xp.multiply(factor, g, out=factor)


def _sigmoid_step(xp, args, out):
    """``1 / (1 + exp(-x))`` in the buffer (torch's formula; the sigmoid kernel on NumPy)."""
    out = xp.negative(args[0], out=out)
    xp.exp(out, out=out)
    xp.add(out, 1, out=out)
    return xp.reciprocal(out, out=out)


def _rsqrt_step(xp, args, out):
    out = xp.sqrt(args[0], out=out)
    return xp.reciprocal(out, out=out)


def _relu_step(xp, args, out):
    return xp.maximum(args[0], args[0].dtype.type(0), out=out)


def _exp_step_grad(xp, g, args, out, wants):
    return (g * out,)


def _log_step_grad(xp, g, args, out, wants):
    return (g / args[0],)


def _sin_step_grad(xp, g, args, out, wants):
    return (_scaled(xp, xp.cos(args[0]), g),)


def _cos_step_grad(xp, g, args, out, wants):
    d = xp.sin(args[0])
    xp.negative(d, out=d)
    return (_scaled(xp, d, g),)


def _tanh_step_grad(xp, g, args, out, wants):
    d = out * out
    xp.subtract(1, d, out=d)
    return (_scaled(xp, d, g),)


def _sqrt_step_grad(xp, g, args, out, wants):
    d = out * 2
    return (xp.divide(g, d, out=d),)


def _rsqrt_step_grad(xp, g, args, out, wants):
    d = out * out
    xp.multiply(d, out, out=d)
    xp.multiply(d, -0.5, out=d)
    return (_scaled(xp, d, g),)


def _sigmoid_step_grad(xp, g, args, out, wants):
    d = 1 - out
    xp.multiply(d, out, out=d)
    return (_scaled(xp, d, g),)


def _reciprocal_step_grad(xp, g, args, out, wants):
    d = out * out
    xp.negative(d, out=d)
    return (_scaled(xp, d, g),)


def _abs_step_grad(xp, g, args, out, wants):
    return (_scaled(xp, xp.sign(args[0]), g),)


def _relu_step_grad(xp, g, args, out, wants):
    return (g * (args[0] > 0),)


# relu's rule, shared with ``nn.functional.relu``'s op (``_relu``), whose kernel is the same
_RELU_FUSION = Fusion(_relu_step, grad=_relu_step_grad)

unary("exp", lambda xp, a: xp.exp(a), lambda x, y, g: g * y.conj(), save="output",
      fuse=Fusion("exp", grad=_exp_step_grad),
      fast=_exp_backward,
      doc="``e ** input``, elementwise.",
      example="ember.exp(ember.tensor([0., 1.]))\n        tensor([1.0000, 2.7183])",
      jvp=lambda x, y, t: t * y, autocast={"cuda": "fp32"}, onnx="Exp")


def _exp2_onnx(ctx, x):
    (x,) = ctx.operands(x)
    return ctx.op("Pow", ctx.scalar(2, ctx.out_dtype()), x)


unary("exp2", lambda xp, a: xp.exp2(a) if a.dtype.kind != "c" else xp.exp(a * _LN2),
      lambda x, y, g: g * (y * _LN2).conj(), save="output", fuse="exp2",
      doc="``2 ** input``, elementwise.",
      example="ember.exp2(ember.tensor([0., 3.]))\n        tensor([1., 8.])",
      holomorphic=True, onnx=_exp2_onnx)


def _expm1_onnx(ctx, x):
    (x,) = ctx.operands(x)
    return ctx.op("Sub", ctx.op("Exp", x), ctx.scalar(1, ctx.out_dtype()))


unary("expm1", lambda xp, a: xp.expm1(a), lambda x, y, g: g * (y + 1).conj(), save="output",
      fuse="expm1",
      doc="``exp(input) - 1``, accurate near zero.",
      example="ember.expm1(ember.tensor([0., 1.]))\n        tensor([0.0000, 1.7183])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx=_expm1_onnx)
unary("log", lambda xp, a: xp.log(a), lambda x, y, g: g / x.conj(), fast=_log_backward,
      fuse=Fusion("log", grad=_log_step_grad),
      doc="The natural logarithm, elementwise.",
      example="ember.log(ember.tensor([1., 2.]))\n        tensor([0.0000, 0.6931])",
      jvp=lambda x, y, t: t / x, autocast={"cuda": "fp32"}, onnx="Log")


def _log_base_onnx(base):
    """The ONNX form of the base-``base`` logarithm: ``Log(x) / log(base)``."""
    def mapping(ctx, x):
        (x,) = ctx.operands(x)
        return ctx.op("Div", ctx.op("Log", x), ctx.scalar(math.log(base), ctx.out_dtype()))
    return mapping


unary("log2", lambda xp, a: xp.log2(a), lambda x, y, g: g / (x * _LN2).conj(),
      fuse="log2",
      doc="The base-2 logarithm, elementwise.",
      example="ember.log2(ember.tensor([1., 8.]))\n        tensor([0., 3.])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx=_log_base_onnx(2))
unary("log10", lambda xp, a: xp.log10(a), lambda x, y, g: g / (x * _LN10).conj(),
      fuse="log10",
      doc="The base-10 logarithm, elementwise.",
      example="ember.log10(ember.tensor([1., 100.]))\n        tensor([0., 2.])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx=_log_base_onnx(10))


def _log1p_onnx(ctx, x):
    (x,) = ctx.operands(x)
    return ctx.op("Log", ctx.op("Add", x, ctx.scalar(1, ctx.out_dtype())))


unary("log1p", lambda xp, a: xp.log1p(a), lambda x, y, g: g / (x + 1).conj(),
      fuse="log1p",
      doc="``log(1 + input)``, accurate near zero.",
      example="ember.log1p(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx=_log1p_onnx)
unary("sqrt", lambda xp, a: xp.sqrt(a), lambda x, y, g: g / (2 * y.conj()), save="output",
      fuse=Fusion("sqrt", grad=_sqrt_step_grad),
      doc="The square root, elementwise.",
      example="ember.sqrt(ember.tensor([4., 9.]))\n        tensor([2., 3.])",
      jvp=lambda x, y, t: t / (2 * y), onnx="Sqrt")


def _rsqrt_kernel(xp, a):
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.reciprocal(xp.sqrt(a))


def _rsqrt_onnx(ctx, x):
    return ctx.op("Reciprocal", ctx.op("Sqrt", *ctx.operands(x)))


unary("rsqrt", _rsqrt_kernel, lambda x, y, g: g * (-0.5 * y ** 3).conj(), save="output",
      fuse=Fusion(_rsqrt_step, grad=_rsqrt_step_grad),
      doc="``1 / sqrt(input)``, elementwise.",
      example="ember.rsqrt(ember.tensor([4.]))\n        tensor([0.5000])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx=_rsqrt_onnx)
unary("sin", lambda xp, a: xp.sin(a), lambda x, y, g: g * x.cos().conj(), fast=_sin_backward,
      fuse=Fusion("sin", grad=_sin_step_grad),
      doc="The sine, elementwise.",
      example="ember.sin(ember.tensor([0.]))\n        tensor([0.])",
      jvp=lambda x, y, t: t * x.cos(), onnx="Sin")
unary("cos", lambda xp, a: xp.cos(a), lambda x, y, g: -g * x.sin().conj(), fast=_cos_backward,
      fuse=Fusion("cos", grad=_cos_step_grad),
      doc="The cosine, elementwise.",
      example="ember.cos(ember.tensor([0.]))\n        tensor([1.])",
      jvp=lambda x, y, t: -t * x.sin(), onnx="Cos")
unary("tan", lambda xp, a: xp.tan(a), lambda x, y, g: g * (1 + y * y).conj(), save="output",
      fuse="tan",
      doc="The tangent, elementwise.",
      example="ember.tan(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx="Tan")
unary("asin", lambda xp, a: xp.arcsin(a), lambda x, y, g: g * (1 - x * x).rsqrt().conj(),
      fuse="arcsin",
      doc="The inverse sine, elementwise.",
      example="ember.asin(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx="Asin")
unary("acos", lambda xp, a: xp.arccos(a), lambda x, y, g: -g * (1 - x * x).rsqrt().conj(),
      fuse="arccos",
      doc="The inverse cosine, elementwise.",
      example="ember.acos(ember.tensor([1.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx="Acos")
unary("atan", lambda xp, a: xp.arctan(a), lambda x, y, g: g / (x * x + 1).conj(),
      fuse="arctan",
      doc="The inverse tangent, elementwise.",
      example="ember.atan(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, onnx="Atan")
unary("sinh", lambda xp, a: xp.sinh(a), lambda x, y, g: g * x.cosh().conj(),
      fuse="sinh",
      doc="The hyperbolic sine, elementwise.",
      example="ember.sinh(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx="Sinh")
unary("cosh", lambda xp, a: xp.cosh(a), lambda x, y, g: g * x.sinh().conj(),
      fuse="cosh",
      doc="The hyperbolic cosine, elementwise.",
      example="ember.cosh(ember.tensor([0.]))\n        tensor([1.])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx="Cosh")
unary("tanh", lambda xp, a: xp.tanh(a), lambda x, y, g: g * (1 - y * y).conj(), save="output",
      fuse=Fusion("tanh", grad=_tanh_step_grad),
      fast=_tanh_backward,
      doc="The hyperbolic tangent, elementwise.",
      example="ember.tanh(ember.tensor([0.]))\n        tensor([0.])",
      jvp=lambda x, y, t: t * (1 - y * y), onnx="Tanh")
unary("asinh", lambda xp, a: xp.arcsinh(a), lambda x, y, g: g * (x * x + 1).rsqrt().conj(),
      fuse="arcsinh",
      doc="The inverse hyperbolic sine, elementwise.",
      example="ember.asinh(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, onnx="Asinh")
unary("acosh", lambda xp, a: xp.arccosh(a), lambda x, y, g: g * (x * x - 1).rsqrt().conj(),
      fuse="arccosh",
      doc="The inverse hyperbolic cosine, elementwise.",
      example="ember.acosh(ember.tensor([1.]))\n        tensor([0.])",
      holomorphic=True, onnx="Acosh")
unary("atanh", lambda xp, a: xp.arctanh(a), lambda x, y, g: g / (1 - x * x).conj(),
      fuse="arctanh",
      doc="The inverse hyperbolic tangent, elementwise.",
      example="ember.atanh(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, onnx="Atanh")
for _alias_name, _name in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                           ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
    _alias(_alias_name, _name)


_SIGMOID_BY_FORMULA = (np.dtype(np.float32), np.dtype(np.float64))


def _sigmoid_kernel(xp, a):
    if a.dtype.kind == "c":
        return 1 / (1 + xp.exp(-a))
    if xp is np and a.ndim and a.dtype in _SIGMOID_BY_FORMULA:
        # torch's formula in one buffer: SciPy's expit is a scalar loop, 3-4x slower (8K
        # float32: 43 vs 13 us), and no closer to torch (both within 2 ulps of it)
        return _sigmoid_step(xp, [a], None)
    return _special(xp).expit(a)


unary("sigmoid", _sigmoid_kernel, lambda x, y, g: g * (y * (1 - y)).conj(), save="output",
      fuse=Fusion(_sigmoid_step, grad=_sigmoid_step_grad),
      fast=_sigmoid_backward,
      doc="The logistic function ``1 / (1 + exp(-input))``.",
      example="ember.sigmoid(ember.tensor([0.]))\n        tensor([0.5000])",
      holomorphic=True, onnx="Sigmoid")


def _erf_kernel(xp, a):
    return _special(xp).erf(a)


unary("erf", _erf_kernel, lambda x, y, g: g * (2 / math.sqrt(math.pi)) * (-x * x).exp(),
      deny="c", cpu_name="erf_vml_cpu", doc="The error function, elementwise.",
      example="ember.erf(ember.tensor([0.]))\n        tensor([0.])", onnx="Erf")
unary("erfc", lambda xp, a: _special(xp).erfc(a),
      lambda x, y, g: g * (-2 / math.sqrt(math.pi)) * (-x * x).exp(),
      deny="c", cpu_name="erfc_vml_cpu", doc="The complementary error function ``1 - erf``.",
      example="ember.erfc(ember.tensor([0.]))\n        tensor([1.])", opt_outs=_SPECIAL)
unary("erfinv", lambda xp, a: _special(xp).erfinv(a),
      lambda x, y, g: g * (math.sqrt(math.pi) / 2) * (y * y).exp(), save="output",
      deny="c", cpu_name="erfinv_vml_cpu", doc="The inverse error function, elementwise.",
      example="ember.erfinv(ember.tensor([0.]))\n        tensor([0.])", autocast={"cuda": "fp32"},
      opt_outs=_SPECIAL)
def _lgamma_kernel(xp, a):
    result = _special(xp).gammaln(a)
    return xp.where(a == -np.inf, a.dtype.type(np.inf), result)


unary("lgamma", _lgamma_kernel, lambda x, y, g: g * x.digamma(),
      deny="c", cpu_name="lgamma_vml_cpu",
      doc="The log of the absolute value of the gamma function.",
      example="ember.lgamma(ember.tensor([1., 3.]))\n        tensor([0.0000, 0.6931])",
      opt_outs=_SPECIAL)
unary("digamma", lambda xp, a: _special(xp).psi(a), lambda x, y, g: g * polygamma(1, x),
      deny="c", cpu_name="digamma",
      doc="The logarithmic derivative of the gamma function.",
      example="ember.digamma(ember.tensor([1.]))\n        tensor([-0.5772])", opt_outs=_SPECIAL)
unary("i0", lambda xp, a: _special(xp).i0(a), lambda x, y, g: g * _i1(x),
      deny="c", cpu_name="i0_vml_cpu",
      doc="The modified Bessel function of the first kind, order 0.",
      example="ember.i0(ember.tensor([0.]))\n        tensor([1.])", opt_outs=_SPECIAL)


def _i1(x):
    from ...special import i1

    return i1(x)


def _polygamma_kernel(xp, a, *, n):
    special = _special(xp)
    if n == 0:
        return special.psi(a)
    if n == 1:
        # torch's reflection for x < 1/2: pi^2 / sin^2(pi x) - trigamma(1 - x)
        with np.errstate(divide="ignore", invalid="ignore"):
            sin = xp.sin(math.pi * a)
            reflected = (math.pi ** 2) / (sin * sin) - special.polygamma(1, 1 - a)
            return xp.where(a < 0.5, reflected, special.polygamma(1, a)).astype(a.dtype)
    result = special.polygamma(n, a).astype(a.dtype)
    return xp.where(a == np.inf, a.dtype.type(np.nan), result)  # torch: NaN at +inf


polygamma_op = unary_op("polygamma", _polygamma_kernel,
                        lambda x, y, g, *, n: g * polygamma(n + 1, x), opt_outs=_SPECIAL)


def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of the digamma function.

    Example::

        >>> ember.polygamma(1, ember.tensor([1.]))
        tensor([1.6449])
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, builtins.bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    cpu = {0: "digamma", 1: "trigamma"}.get(int(n), "polygamma")
    x = unary_operand(input, "polygamma", "float", "c", cpu_name=cpu)
    return write_out(polygamma_op(x, n=int(n)), out, "polygamma")


@tensor_method("polygamma")
def _polygamma_method(self, n):
    """``x.polygamma(n)``: :func:`polygamma` of order ``n`` at ``x`` (the method takes the
    order as its argument).

    Example::

        >>> ember.tensor([1.0]).polygamma(0)
        tensor([-0.5772])
    """
    return polygamma(n, self)


@tensor_method("polygamma_")
def _polygamma_(self, n):
    """``x.polygamma_(n)``: ``x.polygamma(n)`` written back into ``x``.

    Example::

        >>> ember.tensor([1.0]).polygamma_(0)
        tensor([-0.5772])
    """
    return inplace(lambda values: polygamma(n, values), self)



def _mvlgamma(input, p):
    if not isinstance(input, Tensor):
        raise TypeError(f"mvlgamma(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input._data.dtype == np.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = unary_operand(input, "mvlgamma", "float", "c", cpu_name="arange_cpu")
    result = None
    for j in range(p):
        term = (x - j / 2).lgamma() if j else x.lgamma()
        result = term if result is None else result + term
    return result + p * (p - 1) / 4 * math.log(math.pi)


@tensor_method
def mvlgamma(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension ``p``.

    Example::

        >>> ember.mvlgamma(ember.tensor([2.5]), 2)
        tensor([1.2347])
    """
    return write_out(_mvlgamma(input, p), out, "mvlgamma")


tensor_method(_inplace_method(mvlgamma), "mvlgamma_")


# ---------------------------------------------------------------- sign, rounding


def _sign_kernel(xp, a):
    if a.dtype.kind == "b":
        return a.copy()
    if a.dtype.kind == "f":
        return ((a > 0).astype(a.dtype) - (a < 0).astype(a.dtype))
    return xp.sign(a)


unary("sign", _sign_kernel, lambda x, y, g: _zeros_like(g), promote="keep", deny="c",
      errors={"c": (NotImplementedError, "Unlike NumPy, torch.sign is not intended to support "
                    "complex numbers. Please use torch.sgn instead.")},
      save="none", doc="-1, 0 or 1 by the sign of each element (0 for NaN).",
      example="ember.sign(ember.tensor([-2., 0., 3.]))\n        tensor([-1.,  0.,  1.])",
      onnx="Sign")


def _sgn_kernel(xp, a):
    if a.dtype.kind != "c":
        return _sign_kernel(xp, a)
    magnitude = xp.abs(a)
    return xp.where(magnitude == 0, 0, a / xp.where(magnitude == 0, 1, magnitude))


def _sgn_derivative(x, y, g):
    if not x.is_complex():
        return _zeros_like(g)
    magnitude = x.abs()
    result = (g - (g * y.conj()).real * y) / magnitude
    return where(magnitude == 0, 0.0, result)


unary("sgn", _sgn_kernel, _sgn_derivative, promote="keep", save="both",
      doc="The sign for real inputs, ``x / |x|`` for complex ones.",
      example="ember.sgn(ember.tensor([-2., 0., 3.]))\n        tensor([-1.,  0.,  1.])",
      opt_outs=_COMPLEX)


def _signbit_kernel(xp, a):
    if a.dtype.kind == "f" or a.dtype in _LOW:
        return xp.signbit(a)
    if a.dtype.kind == "i":
        return a < 0
    return xp.zeros(a.shape, dtype=np.bool_)


unary("signbit", _signbit_kernel, promote="keep", deny="c", out_dtype="bool", low=False,
      errors={"c": (NotImplementedError, "signbit is not implemented for complex tensors.")},
      doc="True where the sign bit is set (negative numbers and -0.0).",
      example="ember.signbit(ember.tensor([-1., 0., -0.]))\n"
              "        tensor([ True, False,  True])", opt_outs=_NOT_MAPPED)


def _rounding(fn):
    def kernel(xp, a):
        if a.dtype.kind in "iu":
            return a.copy()
        return fn(xp, a)
    return kernel


def _round_errors(name):
    return {"c": (NotImplementedError, f"{name} is not supported for complex inputs")}


unary("floor", _rounding(lambda xp, a: xp.floor(a)), lambda x, y, g: _zeros_like(g),
      fuse="floor",
      promote="keep", deny="bc", errors=_round_errors("floor"), cpu_name="floor_vml_cpu",
      save="none", doc="The largest integer not above each element.",
      example="ember.floor(ember.tensor([-1.5, 1.5]))\n        tensor([-2.,  1.])", onnx="Floor")
unary("ceil", _rounding(lambda xp, a: xp.ceil(a)), lambda x, y, g: _zeros_like(g),
      fuse="ceil",
      promote="keep", deny="bc", errors=_round_errors("ceil"), cpu_name="ceil_vml_cpu",
      save="none", doc="The smallest integer not below each element.",
      example="ember.ceil(ember.tensor([-1.5, 1.5]))\n        tensor([-1.,  2.])", onnx="Ceil")


def _trunc_onnx(ctx, x):
    if not ctx.out_is_float():
        return ctx.op("Identity", x)  # integers are whole already
    return ctx.op("Mul", ctx.op("Sign", x), ctx.op("Floor", ctx.op("Abs", x)))


unary("trunc", _rounding(lambda xp, a: xp.trunc(a)), lambda x, y, g: _zeros_like(g),
      fuse="trunc",
      promote="keep", deny="bc", errors=_round_errors("trunc"), cpu_name="trunc_vml_cpu",
      save="none", doc="Each element rounded towards zero.",
      example="ember.trunc(ember.tensor([-1.5, 1.5]))\n        tensor([-1.,  1.])",
      onnx=_trunc_onnx)
_alias("fix", "trunc")


def _frac_onnx(ctx, x):
    return ctx.op("Sub", x, _trunc_onnx(ctx, x))


unary("frac", lambda xp, a: a - xp.trunc(a), lambda x, y, g: g, promote="keep", deny="bic",
      save="none", doc="The fractional part ``input - trunc(input)``.",
      example="ember.frac(ember.tensor([-1.5, 2.25]))\n        tensor([-0.5000,  0.2500])",
      onnx=_frac_onnx)


def _round_kernel(xp, a, *, decimals=0):
    if a.dtype.kind in "iu":
        return a.copy()
    if decimals == 0:
        return xp.rint(a)
    scale = a.dtype.type(10.0 ** builtins.abs(decimals))
    if decimals > 0:
        return xp.rint(a * scale) / scale
    return xp.rint(a / scale) * scale


def _round_onnx(ctx, x, decimals=0):
    if not ctx.out_is_float():
        return ctx.op("Identity", x)  # integers are already round
    if decimals == 0:
        return ctx.op("Round", x)  # halves to even, as torch
    scale = ctx.scalar(10.0 ** builtins.abs(decimals), ctx.out_dtype())
    if decimals > 0:
        return ctx.op("Div", ctx.op("Round", ctx.op("Mul", x, scale)), scale)
    return ctx.op("Mul", ctx.op("Round", ctx.op("Div", x, scale)), scale)


round_op = unary_op("round", _round_kernel, lambda x, y, g, **params: _zeros_like(g),
                    save="none", onnx=_round_onnx)


@tensor_method
def round(input, *, decimals=0, out=None):
    """Round to the nearest integer (or to ``decimals`` digits), halves to even.

    Example::

        >>> ember.round(ember.tensor([0.5, 1.5, 2.567]), decimals=0)
        tensor([0., 2., 3.])
    """
    decimals = int(decimals)
    cpu = "round_vml_cpu" if decimals == 0 else "round_cpu"
    x = unary_operand(input, "round", "keep", "bc" if decimals == 0 else "bic", cpu_name=cpu)
    return write_out(round_op(x, decimals=decimals), out, "round")


tensor_method(_inplace_method(round), "round_")


# ---------------------------------------------------------------- more unary math

unary("reciprocal", lambda xp, a: xp.reciprocal(a), lambda x, y, g: -g * (y * y).conj(),
      fuse=Fusion("reciprocal", grad=_reciprocal_step_grad),
      save="output", doc="``1 / input``, elementwise.",
      example="ember.reciprocal(ember.tensor([2., 4.]))\n        tensor([0.5000, 0.2500])",
      holomorphic=True, autocast={"cuda": "fp32"}, onnx="Reciprocal")


@tensor_method
def square(input, *, out=None):
    """``input * input`` (``pow(input, 2)``; bool squares as int64).

    Example::

        >>> ember.square(ember.tensor([-2., 3.]))
        tensor([4., 9.])
    """
    _check_tensor(input, "square")
    if input._data.dtype == np.bool_:
        input = input.to(dt.int64)
    return pow(input, 2, out=out)


tensor_method(_inplace_method(square), "square_")


def _nan_to_num_kernel(xp, a, *, nan, posinf, neginf):
    if a.dtype.kind in "biu":
        return a.copy()
    if a.dtype.kind == "c":
        real = _nan_to_num_kernel(xp, a.real, nan=nan, posinf=posinf, neginf=neginf)
        imag = _nan_to_num_kernel(xp, a.imag, nan=nan, posinf=posinf, neginf=neginf)
        return real + 1j * imag if xp is not np else _complex(real, imag, a.dtype)
    info = dt.finfo(dt.from_numpy_dtype(a.dtype))
    values = [scalar(v, a.dtype) for v in
              (nan, info.max if posinf is None else posinf,
               info.min if neginf is None else neginf)]
    result = xp.where(xp.isnan(a), values[0], a)
    result = xp.where(a == np.inf, values[1], result)
    return xp.where(a == -np.inf, values[2], result)


def _complex(real, imag, dtype):
    out = np.empty(real.shape, dtype)
    out.real = real
    out.imag = imag
    return out


nan_to_num_op = unary_op("nan_to_num", _nan_to_num_kernel,
                         lambda x, y, g, **params: g * x.isfinite(), low=False,
                         opt_outs=_NOT_MAPPED)


@tensor_method
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """Replace NaN, +inf and -inf by ``nan``, ``posinf`` and ``neginf`` (default: 0 and the
    dtype's largest and smallest finite values).

    Example::

        >>> ember.nan_to_num(ember.tensor([float("nan"), 1.]))
        tensor([0., 1.])
    """
    _check_tensor(input, "nan_to_num")
    return write_out(nan_to_num_op(input, nan=nan, posinf=posinf, neginf=neginf), out,
                     "nan_to_num")


tensor_method(_inplace_method(nan_to_num), "nan_to_num_")


def _classify(name, real_fn, complex_fn, doc, example, deny="", errors=None, onnx=None,
              opt_outs=None):
    def kernel(xp, a):
        if a.dtype.kind == "c":
            return complex_fn(xp, a)
        if a.dtype.kind in "biu":
            return real_fn(xp, None, a)
        return real_fn(xp, a, a)
    tensor_method(unary(name, kernel, promote="keep", out_dtype="bool", low=False, deny=deny,
                        errors=errors, doc=doc, example=example, methods=False, onnx=onnx,
                        opt_outs=opt_outs), name)


def _false(xp, a):
    return xp.zeros(a.shape, dtype=np.bool_)


def _true(xp, a):
    return xp.ones(a.shape, dtype=np.bool_)


def _classifier_onnx(onnx_type):
    """IsNaN/IsInf, which read floating tensors (an integer one, cast, has neither)."""
    def mapping(ctx, x):
        if not getattr(dt, ctx.in_dtype(0)).is_floating_point:
            x = ctx.cast(x, ctx.in_dtype(0), "float32")
        return ctx.op(onnx_type, x)
    return mapping


_classify("isnan", lambda xp, f, a: xp.isnan(f) if f is not None else _false(xp, a),
          lambda xp, a: xp.isnan(a), "True where the element is NaN.",
          "ember.isnan(ember.tensor([1., float('nan')]))\n        tensor([False,  True])",
          onnx=_classifier_onnx("IsNaN"))
_classify("isinf", lambda xp, f, a: xp.isinf(f) if f is not None else _false(xp, a),
          lambda xp, a: xp.isinf(a.real) | xp.isinf(a.imag), "True where the element is +-inf.",
          "ember.isinf(ember.tensor([1., float('inf')]))\n        tensor([False,  True])",
          onnx=_classifier_onnx("IsInf"))
_classify("isposinf", lambda xp, f, a: f == np.inf if f is not None else _false(xp, a),
          None, "True where the element is +inf.",
          "ember.isposinf(ember.tensor([1., float('inf')]))\n        tensor([False,  True])",
          deny="c", errors={"c": (RuntimeError, "isposinf does not support complex inputs.")},
          opt_outs=_NOT_MAPPED)
_classify("isneginf", lambda xp, f, a: f == -np.inf if f is not None else _false(xp, a),
          None, "True where the element is -inf.",
          "ember.isneginf(ember.tensor([1., -float('inf')]))\n        tensor([False,  True])",
          deny="c", errors={"c": (RuntimeError, "isneginf does not support complex inputs.")},
          opt_outs=_NOT_MAPPED)


def _isfinite_onnx(ctx, x):
    if not getattr(dt, ctx.in_dtype(0)).is_floating_point:
        x = ctx.cast(x, ctx.in_dtype(0), "float32")  # (an integer is finite)
    return ctx.op("Not", ctx.op("Or", ctx.op("IsNaN", x), ctx.op("IsInf", x)))


_classify("isfinite", lambda xp, f, a: xp.isfinite(f) if f is not None else _true(xp, a),
          lambda xp, a: xp.isfinite(a.real) & xp.isfinite(a.imag),
          "True where the element is neither NaN nor infinite.",
          "ember.isfinite(ember.tensor([1., float('inf')]))\n        tensor([ True, False])",
          onnx=_isfinite_onnx)
_classify("isreal", lambda xp, f, a: _true(xp, a), lambda xp, a: a.imag == 0,
          "True where the element has no imaginary part.",
          "ember.isreal(ember.tensor([1 + 0j, 1j]))\n        tensor([ True, False])",
          opt_outs=_COMPLEX)


def _angle_kernel(xp, a):
    if a.dtype.kind == "c":
        return xp.angle(a).astype(a.real.dtype)
    result = xp.where(a < 0, a.dtype.type(math.pi), a.dtype.type(0))
    return xp.where(xp.isnan(a), a, result)


def _angle_derivative(x, y, g):
    if not x.is_complex():
        return _zeros_like(x)
    magnitude_sq = x.real * x.real + x.imag * x.imag
    result = g * x / magnitude_sq * 1j
    return where(magnitude_sq == 0, 0.0, result)


unary("angle", _angle_kernel, _angle_derivative, out_dtype="real",
      doc="The argument (phase) of each element, in radians (0 or pi for real inputs).",
      example="ember.angle(ember.tensor([-1., 2.]))\n        tensor([3.1416, 0.0000])",
      opt_outs=_COMPLEX)


def _scaled_onnx(factor):
    """``x * factor`` (deg2rad, rad2deg)."""
    def mapping(ctx, x):
        (x,) = ctx.operands(x)
        return ctx.op("Mul", x, ctx.scalar(factor, ctx.out_dtype()))
    return mapping


unary("deg2rad", lambda xp, a: a * a.dtype.type(math.pi / 180),
      lambda x, y, g: g * (math.pi / 180), deny="c", save="none",
      errors={"c": (RuntimeError, "deg2rad is not supported for complex tensors.")},
      doc="Degrees to radians.",
      example="ember.deg2rad(ember.tensor([180.]))\n        tensor([3.1416])",
      onnx=_scaled_onnx(math.pi / 180))
unary("rad2deg", lambda xp, a: a * a.dtype.type(180 / math.pi),
      lambda x, y, g: g * (180 / math.pi), deny="c", save="none",
      errors={"c": (RuntimeError, "rad2deg is not supported for complex tensors.")},
      doc="Radians to degrees.",
      example="ember.rad2deg(ember.tensor([3.14159265]))\n        tensor([180.])",
      onnx=_scaled_onnx(180 / math.pi))


def _sinc_kernel(xp, a):
    scaled = a * math.pi
    zero = a == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        result = xp.sin(scaled) / xp.where(zero, 1, scaled)
    return xp.where(zero, a.dtype.type(1), result)


def _sinc_derivative(x, y, g):
    scaled = x * math.pi
    squared = x * x * math.pi
    result = g * ((scaled * scaled.cos() - scaled.sin()) / squared).conj()
    return where(squared == 0, 0.0, result)


unary("sinc", _sinc_kernel, _sinc_derivative,
      doc="The normalised sinc function ``sin(pi x) / (pi x)`` (1 at 0).",
      example="ember.sinc(ember.tensor([0., 0.5]))\n        tensor([1.0000, 0.6366])",
      holomorphic=True, opt_outs=_NOT_MAPPED)


def _relu_derivative(x, y, g):
    # torch's threshold_backward: zero where the result is <= 0, so a NaN passes grad through;
    # the zeros come from y (y * 0 is 0 there) so that, as in torch, a gradient taken with
    # create_graph stays in the graph of the result (its own derivative being zero)
    return where(y <= 0, y * 0, g)


unary("relu", lambda xp, a: xp.maximum(a, a.dtype.type(0)), _relu_derivative, promote="keep",
      fuse=_RELU_FUSION,
      fast=_relu_backward,
      deny="bc", save="output", low=False,
      errors={"b": (RuntimeError, "Boolean inputs not supported for relu"),
              "c": (NotImplementedError, "clamp is not supported for complex types")},
      doc="``max(input, 0)``, elementwise.",
      example="ember.relu(ember.tensor([-1., 2.]))\n        tensor([0., 2.])", onnx="Relu")
unary("abs", lambda xp, a: xp.abs(a), lambda x, y, g: g * x.sgn(), promote="keep", deny="b",
      fuse=Fusion("absolute", grad=_abs_step_grad),
      out_dtype="real", low=False, doc="The absolute value, elementwise.",
      example="ember.abs(ember.tensor([-1, 2]))\n        tensor([1, 2])",
      jvp=lambda x, y, t: (t * x.sgn().conj()).real if x.is_complex() else t * x.sgn(), onnx="Abs")


def _abs_(self):
    if self._data.dtype.kind == "c":
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return inplace(abs, self)


tensor_method(_abs_, "abs_")
_alias("absolute", "abs")


def _logit_kernel(xp, a, *, eps=None):
    if eps is not None:
        a = xp.clip(a, a.dtype.type(eps), a.dtype.type(1 - eps)).astype(a.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = a / (1 - a)  # in the input's precision, as torch's reduced-float kernel
        if a.dtype in _LOW:
            return xp.log(ratio.astype(_F32)).astype(a.dtype)
        return xp.log(ratio)


def _logit_derivative(x, y, g, *, eps=None):
    result = g / (x * (1 - x))
    if eps is None:
        return where((x < 0) | (x > 1), float("nan"), result)
    return where((x < eps) | (x > 1 - eps), 0.0, result)


logit_op = unary_op("logit", _logit_kernel, _logit_derivative, low=False, opt_outs=_NOT_MAPPED)


@tensor_method
def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]``.

    Example::

        >>> ember.logit(ember.tensor([0.5, 0.75]))
        tensor([0.0000, 1.0986])
    """
    x = unary_operand(input, "logit", "float", "c")
    return write_out(logit_op(x, eps=None if eps is None else float(eps)), out, "logit")


tensor_method(_inplace_method(logit), "logit_")

del _alias_name, _name


# Fusion (``ops/_fusion.py``): where these ops have no step in a fused chain, and why (the
# functions unary() declared are named: they live in this module's globals)
decline(SCIPY_KERNEL, "erf", "erfc", "erfinv", "lgamma", "digamma", "i0", polygamma_op,
        namespace=globals())
decline(COMPOSITE_KERNEL, "sign", "sgn", "frac", round_op, nan_to_num_op, "deg2rad", "rad2deg",
        "sinc", logit_op, namespace=globals())
decline(OTHER_DTYPE, "angle", namespace=globals())
decline(BOOL_RESULT, "signbit", "isnan", "isinf", "isposinf", "isneginf", "isfinite", "isreal",
        namespace=globals())
