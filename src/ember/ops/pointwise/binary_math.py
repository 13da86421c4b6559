"""Binary math, declared with :func:`binary`: remainder/fmod, atan2, hypot, copysign,
nextafter, logaddexp/logaddexp2, xlogy, heaviside, and the bitwise family (and/or/xor/not,
shifts, gcd, lcm)."""

from __future__ import annotations

import numpy as np

from .._fusion import COMPOSITE_KERNEL, SCIPY_KERNEL, decline
from .._methods import tensor_method
from .._operands import (
    binary_operands,
)
from .._registry import Op, write_out
from . import _declare
from ._declare import (
    _check_integer_divisor,
    _check_tensor,
    _inplace_method,
    _not_differentiable,
    _same_shape_meta,
    _zeros_like,
    declarers,
)
from .comparison import where

__all__ = ["heaviside"]
unary, binary, _alias = declarers(globals())


# why the ops below without an ONNX form (``Op.defonnx``) have none
_NOT_MAPPED = {"onnx": "not mapped yet (composable from ONNX operators)"}
_NO_ONNX = {"onnx": "ONNX has no operator for it"}


def _remainder_kernel(xp, a, b):
    if a.dtype.kind in "iu":
        _check_integer_divisor(xp, b)
    return xp.remainder(a, b)


def _fmod_kernel(xp, a, b):
    if a.dtype.kind in "iu":
        _check_integer_divisor(xp, b)
    return xp.fmod(a, b)


def _remainder_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return (grad if need_a else None,
            -grad * a.div(b, rounding_mode="floor") if need_b else None)


def _fmod_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return (grad if need_a else None,
            -grad * a.div(b, rounding_mode="trunc") if need_b else None)


def _remainder_onnx(ctx, a, b):
    a, b = ctx.operands(a, b)
    if not ctx.out_is_float():
        return ctx.op("Mod", a, b, fmod=0)  # the sign of the divisor, as Python's %
    return ctx.op("Sub", a, ctx.op("Mul", b, ctx.op("Floor", ctx.op("Div", a, b))))


remainder = binary("remainder", _remainder_kernel, _remainder_derivative, deny="bc",
                   scalar_input=True,
       doc="The remainder of ``input / other`` with the sign of ``other`` (Python's ``%``).",
       example="ember.remainder(ember.tensor([-3, 3]), 2)\n        tensor([1, 1])",
       onnx=_remainder_onnx)


def _fmod_onnx(ctx, a, b):
    return ctx.op("Mod", *ctx.operands(a, b), fmod=1)


fmod = binary("fmod", _fmod_kernel, _fmod_derivative, deny="bc",
       doc="The remainder of ``input / other`` with the sign of ``input`` (C's ``fmod``).",
       example="ember.fmod(ember.tensor([-3, 3]), 2)\n        tensor([-1,  1])", onnx=_fmod_onnx)


def _atan2_derivative(ctx, grad):
    a, b = ctx.inputs
    denominator = a * a + b * b
    need_a, need_b = ctx.needs_input_grad
    return (grad * b / denominator if need_a else None,
            grad * -a / denominator if need_b else None)


binary("atan2", lambda xp, a, b: xp.arctan2(a, b), _atan2_derivative, promote="float",
       fuse="arctan2",
       deny="c", scalar_other=False,
       doc="The angle of the point ``(other, input)``, elementwise, in ``(-pi, pi]``.",
       example="ember.atan2(ember.tensor([1.]), ember.tensor([1.]))\n        tensor([0.7854])",
       opt_outs=_NOT_MAPPED)
_alias("arctan2", "atan2")


def _hypot_derivative(ctx, grad):
    # the saved result, not a recomputed sqrt(a*a + b*b), which overflows for large inputs
    a, b = ctx.inputs
    result = ctx.output
    need_a, need_b = ctx.needs_input_grad
    return (grad * a / result if need_a else None, grad * b / result if need_b else None)


binary("hypot", lambda xp, a, b: xp.hypot(a, b), _hypot_derivative, deny="bic",
       fuse="hypot",
       scalar_other=False, save="both", doc="``sqrt(input ** 2 + other ** 2)``, elementwise.",
       example="ember.hypot(ember.tensor([3.]), ember.tensor([4.]))\n        tensor([5.])",
       opt_outs=_NOT_MAPPED)


def _copysign_derivative(ctx, grad):
    a, b = ctx.inputs
    result = copysign(a, b)
    ratio = where(a == 0, 0.0, result / a)
    return grad * ratio, (_zeros_like(b) if ctx.needs_input_grad[1] else None)


copysign = binary("copysign", lambda xp, a, b: xp.copysign(a, b), _copysign_derivative,
                  fuse="copysign",
                  promote="float",
       deny="c", doc="The magnitude of ``input`` with the sign of ``other``.",
       example="ember.copysign(ember.tensor([1., 2.]), -1.)\n        tensor([-1., -2.])",
       opt_outs=_NOT_MAPPED)
def _nextafter_derivative(ctx, grad):
    # torch's convention: the step is treated as constant, so input passes the gradient through
    b = ctx.inputs[1]
    return grad, (_zeros_like(b) if ctx.needs_input_grad[1] else None)


binary("nextafter", lambda xp, a, b: xp.nextafter(a, b), _nextafter_derivative, deny="bic",
       fuse="nextafter",
       low=False,
       scalar_other=False,
       doc="The next representable float after ``input`` towards ``other``.",
       example="ember.nextafter(ember.tensor([1.]), ember.tensor([2.])) > 1\n"
               "        tensor([True])", opt_outs=_NO_ONNX)


def _logaddexp_kernel(xp, a, b):
    if a.dtype.kind != "c":
        return xp.logaddexp(a, b)
    first = xp.where(a.real >= b.real, a, b)
    second = xp.where(a.real >= b.real, b, a)
    return first + xp.log1p(xp.exp(second - first))


def _logaddexp_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return (grad / ((b - a).exp() + 1).conj() if need_a else None,
            grad / ((a - b).exp() + 1).conj() if need_b else None)


def _logaddexp2_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return (grad / ((b - a).exp2() + 1) if need_a else None,
            grad / ((a - b).exp2() + 1) if need_b else None)


binary("logaddexp", _logaddexp_kernel, _logaddexp_derivative, deny="bi", scalar_other=False,
       fuse="logaddexp",
       doc="``log(exp(input) + exp(other))``, computed stably.",
       example="ember.logaddexp(ember.tensor([0.]), ember.tensor([0.]))\n"
               "        tensor([0.6931])", opt_outs=_NOT_MAPPED)
binary("logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b), _logaddexp2_derivative, deny="bic",
       fuse="logaddexp2",
       scalar_other=False, doc="``log2(2 ** input + 2 ** other)``, computed stably.",
       example="ember.logaddexp2(ember.tensor([0.]), ember.tensor([0.]))\n"
               "        tensor([1.])", opt_outs=_NOT_MAPPED)


def declare_x_log(name, log, shift, **declaration):
    """Declare ``name(input, other) = input * log(other + shift)`` with :func:`binary`, 0 where
    ``input`` is 0 (unless ``other`` is NaN): :func:`xlogy` (``log``, shift 0) and
    ``ember.special.xlog1py`` (``log1p``, shift 1) are this one definition. ``log`` names the
    array module's function; ``declaration`` goes to :func:`binary` (``doc``, ``example``,
    ``namespace``...).

    Example::

        >>> xlogy = declare_x_log("xlogy", "log", 0, namespace=globals(), doc=..., example=...)
    """
    def kernel(xp, a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            result = xp.where(a == 0, a.dtype.type(0), a * getattr(xp, log)(b))
        return xp.where(xp.isnan(b), b, result)

    def derivative(ctx, grad):
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad_b = None
        if need_a:
            grad_a = where((a == 0) & (b <= -shift), 0.0, fn(grad, b))
        if need_b:
            grad_b = grad * a / (b + shift if shift else b)
        return grad_a, grad_b

    fn = _declare.binary(name, kernel, derivative, promote="float", deny="c", scalar_input=True,
                         **declaration)
    return fn


xlogy = declare_x_log(
    "xlogy", "log", 0, namespace=globals(), opt_outs=_NOT_MAPPED,
    doc="``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN).",
    example="ember.xlogy(ember.tensor([0., 2.]), ember.tensor([0., 1.]))\n"
            "        tensor([0., 0.])")


def _heaviside_kernel(xp, a, b):
    return xp.where(a == 0, b, (a > 0).astype(a.dtype))


@tensor_method
def heaviside(input, values, *, out=None):
    """The Heaviside step: 0 below zero, 1 above, ``values`` at zero.

    Example::

        >>> ember.heaviside(ember.tensor([-1., 0., 2.]), ember.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    _check_tensor(input, "heaviside")
    _check_tensor(values, "heaviside", "values", 2)
    if input.dtype.is_complex or values.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    a, b = binary_operands(input, values)
    return write_out(heaviside_op(a, b), out, "heaviside")


heaviside_op = Op("heaviside", _heaviside_kernel, meta=_same_shape_meta, kind="pointwise-binary",
                  opt_outs=_NOT_MAPPED)
heaviside_op.defderivative(_not_differentiable("heaviside"))
tensor_method(_inplace_method(heaviside), "heaviside_")


# ---------------------------------------------------------------- bitwise, gcd, lcm


def _bitwise_onnx(logical, bitwise):
    """The ONNX form of a bitwise op: the logical operator on bools, the bitwise one (opset
    18) on integers."""
    def mapping(ctx, *operands):
        operands = ctx.operands(*operands)
        if ctx.out_dtype() == "bool":
            return ctx.op(logical, *operands)
        if ctx.opset < 18:
            ctx.fail(f"{bitwise} on integer tensors needs opset 18")
        return ctx.op(bitwise, *operands)
    return mapping


# name -> (NumPy ufunc, word, ONNX's logical operator, ONNX's bitwise operator)
_BITWISE = {"bitwise_and": ("bitwise_and", "AND", "And", "BitwiseAnd"),
            "bitwise_or": ("bitwise_or", "OR", "Or", "BitwiseOr"),
            "bitwise_xor": ("bitwise_xor", "XOR", "Xor", "BitwiseXor")}
for _name, (_ufunc, _word, _logical, _bitwise) in _BITWISE.items():
    binary(_name, (lambda u: lambda xp, a, b: getattr(xp, u)(a, b))(_ufunc), deny="hfc",
           low=False, scalar_input=True, onnx=_bitwise_onnx(_logical, _bitwise),
           doc=f"Elementwise bitwise {_word} of integer or bool tensors.",
           example=f"ember.{_name}(ember.tensor([12]), 10)\n        "
                   f"tensor([{getattr(np, _ufunc)(12, 10)}])")
bitwise_not = unary("bitwise_not", lambda xp, a: xp.invert(a), promote="keep", deny="hfc",
                    low=False,
      doc="Elementwise bitwise NOT of an integer or bool tensor.",
      example="ember.bitwise_not(ember.tensor([0, 5]))\n        tensor([-1, -6])",
      onnx=_bitwise_onnx("Not", "BitwiseNot"))


def _shift_kernel(left):
    def kernel(xp, a, b):
        bits = a.dtype.itemsize * 8
        out_of_range = (b < 0) | (b >= bits)
        shift = xp.where(out_of_range, 0, b).astype(a.dtype)
        if left:
            result = xp.left_shift(a, shift)
            return xp.where(out_of_range, a.dtype.type(0), result)
        result = xp.right_shift(a, shift)
        if a.dtype.kind == "u":
            return xp.where(out_of_range, a.dtype.type(0), result)
        return xp.where(out_of_range, xp.right_shift(a, a.dtype.type(bits - 1)), result)
    return kernel


bitwise_left_shift = binary("bitwise_left_shift", _shift_kernel(True), deny="bhfc",
                            cpu_name="lshift_cpu", low=False,
       scalar_input=True, doc="``input << other`` (0 when shifting by the bit width or more).",
       example="ember.bitwise_left_shift(ember.tensor([1, 3]), 2)\n        tensor([ 4, 12])",
       opt_outs=_NOT_MAPPED)
bitwise_right_shift = binary("bitwise_right_shift", _shift_kernel(False), deny="bhfc",
                             cpu_name="rshift_cpu",
       low=False, scalar_input=True, doc="``input >> other``, arithmetic for signed integers.",
       example="ember.bitwise_right_shift(ember.tensor([-8, 8]), 2)\n        tensor([-2,  2])",
       opt_outs=_NOT_MAPPED)


binary("gcd", lambda xp, a, b: xp.gcd(a, b), "none", deny="bhfc", cpu_name="gcd_cpu",
       scalar_other=False, low=False,
       doc="The greatest common divisor of ``input`` and ``other``, elementwise (integers; "
           "never negative, ``gcd(0, 0) = 0``).",
       example="ember.gcd(ember.tensor([12, -18]), ember.tensor([8, 12]))\n"
               "        tensor([4, 6])", opt_outs=_NO_ONNX)
binary("lcm", lambda xp, a, b: xp.lcm(a, b), "none", deny="bhfc", cpu_name="lcm_cpu",
       scalar_other=False, low=False,
       doc="The least common multiple of ``input`` and ``other``, elementwise (integers; "
           "never negative, 0 when either is 0; wraps on overflow as torch).",
       example="ember.lcm(ember.tensor([4, 6]), ember.tensor([6, 8]))\n"
               "        tensor([12, 24])", opt_outs=_NO_ONNX)

del _name, _ufunc, _word


# Fusion (``ops/_fusion.py``): where these ops have no step in a fused chain, and why
decline(COMPOSITE_KERNEL, remainder, fmod, heaviside_op)
decline(SCIPY_KERNEL, xlogy)
