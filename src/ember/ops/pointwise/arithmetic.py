"""Arithmetic: add, sub, mul, div (true, floor, trunc), neg, positive, pow/float_power,
lerp/addcmul/addcdiv, rsub, ldexp and frexp."""

from __future__ import annotations

import builtins

import numpy as np

from ... import _dtype as dt
from ... import return_types as _return_types
from ..._tensor import Tensor
from ...autograd.forward_ad import add_tangents, linear_jvp
from .._fusion import COMPOSITE_KERNEL, OTHER_DTYPE, Fusion, decline, unit_alpha
from .._methods import tensor_method
from .._operands import (
    binary_operands,
    broadcast_shapes,
    scalar_tensor,
)
from .._registry import Op, _short_name, defop, inplace, write_out
from .._signature import signature
from .._util import scalar
from .._vmap_rules import batching
from ._declare import (
    _F32,
    _LOW,
    _check_dtype,
    _check_integer_divisor,
    _check_tensor,
    _inplace_method,
    _is_scalar,
    _low_precision,
    _not_differentiable,
    _plain_backward,
    _same_shape_meta,
    _zeros_like,
)
from .comparison import where

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg",
           "negative", "pow", "float_power", "floor_divide", "lerp", "addcmul", "addcdiv",
           "positive", "ldexp", "frexp", "rsub"]


# ---------------------------------------------------------------- add / sub

# The gradients of one fused step of the arithmetic ops (``Fusion.grad``, ``ops/_fusion.py``),
# on the device's arrays: training through a fused chain (``ember/_inductor/fusion.py``).


def _add_step_grad(xp, g, args, out, wants):
    return g, g


def _sub_step_grad(xp, g, args, out, wants):
    return g, (xp.negative(g) if wants[1] else None)


def _mul_step_grad(xp, g, args, out, wants):
    return (g * args[1] if wants[0] else None), (g * args[0] if wants[1] else None)


def _div_step_grad(xp, g, args, out, wants):
    grad_a = g / args[1]
    grad_b = None
    if wants[1]:
        grad_b = grad_a * out
        xp.negative(grad_b, out=grad_b)
    return (grad_a if wants[0] else None), grad_b


@defop("add", meta=_same_shape_meta, save_inputs=False, kind="pointwise-binary",
       fuse=Fusion("add", accepts=unit_alpha, grad=_add_step_grad))
def add_op(xp, a, b, *, alpha=1):
    if alpha == 1 and type(alpha) is int:
        return xp.add(a, b)
    return xp.add(a, b * scalar(alpha, b.dtype))


def _scaled_onnx(ctx, b, alpha):
    """``alpha * b`` in ONNX (just ``b`` when ``alpha`` is 1)."""
    if alpha == 1:
        return b
    return ctx.op("Mul", b, ctx.scalar(alpha, ctx.out_dtype()))


@add_op.defonnx
def _add_onnx(ctx, a, b, alpha=1):
    a, b = ctx.operands(a, b)
    if ctx.out_dtype() == "bool":
        return ctx.op("Or", a, b)
    return ctx.op("Add", a, _scaled_onnx(ctx, b, alpha))


@add_op.defderivative
def _add_derivative(ctx, grad, *, alpha=1):
    return grad, (grad if alpha == 1 else grad * _conj_scalar(alpha))


@add_op.defjvp
def _add_jvp(p, t, y, alpha=1):
    ta, tb = t
    return add_tangents(ta, None if tb is None else (tb if alpha == 1 else tb * alpha))


def _conj_scalar(value):
    return value.conjugate() if isinstance(value, complex) else value


def _is_bool(x):
    return isinstance(x, builtins.bool) or (isinstance(x, Tensor) and x._data.dtype == np.bool_)


def _check_alpha(input, other, alpha):
    dtype = dt.result_type(input, other)
    if isinstance(alpha, builtins.bool):
        if dtype is not dt.bool:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
        return
    if isinstance(alpha, complex) and not dtype.is_complex:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                           "number.")
    if isinstance(alpha, float) and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


@tensor_method
@signature("add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor? out=None) -> Tensor",
           numbers_as_tensors=True)
def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other``, broadcast, with torch's type promotion.

    Example::

        >>> ember.add(ember.tensor([1, 2]), ember.tensor([10, 20]), alpha=2)
        tensor([21, 42])
    """
    if type(alpha) is not int or alpha != 1:
        _check_alpha(input, other, alpha)
    elif out is None:  # the common a + b: no parameters to pass, nothing to write
        return add_op(*binary_operands(input, other))
    a, b = binary_operands(input, other)
    return write_out(add_op(a, b, alpha=alpha), out, "add")


tensor_method(_inplace_method(add), "add_")


@tensor_method
@signature("sub(Tensor input, Tensor other, *, Scalar alpha=1, Tensor? out=None) -> Tensor",
           numbers_as_tensors=True)
def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other``, broadcast.

    Example::

        >>> ember.sub(ember.tensor([5., 6.]), 1.5)
        tensor([3.5000, 4.5000])
    """
    if _is_bool(input) or _is_bool(other):
        if isinstance(input, Tensor) and isinstance(other, Tensor) and _is_bool(input) \
                and _is_bool(other):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if type(alpha) is not int or alpha != 1:
        _check_alpha(input, other, alpha)
    a, b = binary_operands(input, other)
    result = sub_op(a, b) if alpha == 1 else sub_op(a, b, alpha=alpha)
    return result if out is None else write_out(result, out, "sub")


tensor_method(_inplace_method(sub), "sub_")


subtract = tensor_method(sub, "subtract")
tensor_method(_inplace_method(sub), "subtract_")


@defop("sub", meta=_same_shape_meta, save_inputs=False, kind="pointwise-binary",
       fuse=Fusion("subtract", accepts=unit_alpha, grad=_sub_step_grad))
def sub_op(xp, a, b, *, alpha=1):
    return xp.subtract(a, b) if alpha == 1 else xp.subtract(a, b * scalar(alpha, b.dtype))


@sub_op.defonnx
def _sub_onnx(ctx, a, b, alpha=1):
    a, b = ctx.operands(a, b)
    return ctx.op("Sub", a, _scaled_onnx(ctx, b, alpha))


@sub_op.defderivative
def _sub_derivative(ctx, grad, *, alpha=1):
    return grad, (-grad if alpha == 1 else grad * -_conj_scalar(alpha))


@sub_op.defjvp
def _sub_jvp(p, t, y, alpha=1):
    ta, tb = t
    return add_tangents(ta, None if tb is None else (-tb if alpha == 1 else tb * -alpha))


# ---------------------------------------------------------------- mul / div


@defop("mul", meta=_same_shape_meta, kind="pointwise-binary",
       fuse=Fusion("multiply", grad=_mul_step_grad))
def mul_op(xp, a, b):
    return xp.multiply(a, b)


@mul_op.defonnx
def _mul_onnx(ctx, a, b):
    a, b = ctx.operands(a, b)
    if ctx.out_dtype() == "bool":
        return ctx.op("And", a, b)
    return ctx.op("Mul", a, b)


@mul_op.defderivative
def _mul_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return _mul_grad(grad, b, need_a), _mul_grad(grad, a, need_b)


def _mul_grad(grad, other, needed):
    """The gradient of one factor of a product: ``grad * conj(other)``."""
    if not needed:
        return None
    if _plain_backward(grad, other):
        xp = grad._device._xp
        return Tensor._make(xp.asarray(xp.multiply(grad._data, other._data)), grad._device)
    return grad * _conj(other)


def _conj(t):
    """``t.conj()``, skipping the call for the real dtypes (where it returns ``t``)."""
    return t if type(t) is Tensor and t._data.dtype.kind in "fiub" else t.conj()


@mul_op.defjvp
def _mul_jvp(p, t, y):
    (a, b), (ta, tb) = p, t
    return add_tangents(None if ta is None else ta * b, None if tb is None else a * tb)


@tensor_method
@signature("mul(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor",
           numbers_as_tensors=True)
def mul(input, other, *, out=None):
    """Elementwise product, broadcast.

    Example::

        >>> ember.mul(ember.tensor([1., 2.]), 3)
        tensor([3., 6.])
    """
    a, b = binary_operands(input, other)
    return write_out(mul_op(a, b), out, "mul")


tensor_method(_inplace_method(mul), "mul_")


multiply = tensor_method(mul, "multiply")
tensor_method(_inplace_method(mul), "multiply_")


@defop("div", meta=_same_shape_meta, kind="pointwise-binary",
       fuse=Fusion("true_divide", grad=_div_step_grad), onnx="Div")
def div_op(xp, a, b):
    return xp.true_divide(a, b)


@div_op.defderivative
def _div_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    grad_a = grad / b.conj() if need_a else None
    grad_b = -grad * (a / b / b).conj() if need_b else None
    return grad_a, grad_b


@div_op.defjvp
def _div_jvp(p, t, y):
    """``(ta - tb * y) / b``: torch's formula, kept in its order so that low-precision
    operands round as torch's do."""
    b, (ta, tb) = p[1], t
    if tb is None:
        return ta / b
    scaled = tb * y
    return (-scaled if ta is None else ta - scaled) / b


@_low_precision
def _floor_divide_kernel(xp, a, b):
    if a.dtype.kind in "iu":
        _check_integer_divisor(xp, b)
    return xp.floor_divide(a, b)


def _trunc_divide_kernel(xp, a, b):
    if a.dtype.kind in "iu":
        _check_integer_divisor(xp, b)
        quotient = xp.floor_divide(a, b)
        remainder = a - quotient * b
        fix = (remainder != 0) & ((a < 0) != (b < 0))
        return quotient + fix.astype(a.dtype)
    if a.dtype in _LOW:  # torch rounds the quotient to the half type before truncating
        quotient = xp.true_divide(a.astype(_F32), b.astype(_F32)).astype(a.dtype)
        return xp.trunc(quotient.astype(_F32)).astype(a.dtype)
    return xp.trunc(xp.true_divide(a, b))


div_floor_op = Op("div_floor", _floor_divide_kernel, meta=_same_shape_meta,
                  grad_name="DivBackward1", kind="pointwise-binary")
div_trunc_op = Op("div_trunc", _trunc_divide_kernel, meta=_same_shape_meta,
                  grad_name="DivBackward2", kind="pointwise-binary")


def _rounded_div_derivative(ctx, grad):
    return _zeros_like(grad), _zeros_like(grad)


div_floor_op.defderivative(_rounded_div_derivative)
div_trunc_op.defderivative(_rounded_div_derivative)
floor_divide_op = Op("floor_divide", _floor_divide_kernel, meta=_same_shape_meta,
                     kind="pointwise-binary")
floor_divide_op.defderivative(_not_differentiable("floor_divide"))


def _floor_divide_onnx(ctx, a, b):
    a, b = ctx.operands(a, b)
    quotient = ctx.op("Div", a, b)
    if ctx.out_is_float():
        return ctx.op("Floor", quotient)
    # integer Div truncates: step down where the remainder's sign differs from b's
    remainder = ctx.op("Mod", a, b, fmod=1)
    zero = ctx.scalar(0, ctx.out_dtype())
    inexact = ctx.op("Not", ctx.op("Equal", remainder, zero))
    signs_differ = ctx.op("Xor", ctx.op("Less", remainder, zero), ctx.op("Less", b, zero))
    step = ctx.cast(ctx.op("And", inexact, signs_differ), "bool", ctx.out_dtype())
    return ctx.op("Sub", quotient, step)


def _trunc_divide_onnx(ctx, a, b):
    a, b = ctx.operands(a, b)
    quotient = ctx.op("Div", a, b)
    if not ctx.out_is_float():
        return quotient  # integer Div truncates
    return ctx.op("Mul", ctx.op("Sign", quotient), ctx.op("Floor", ctx.op("Abs", quotient)))


div_floor_op.defonnx(_floor_divide_onnx)
floor_divide_op.defonnx(_floor_divide_onnx)
div_trunc_op.defonnx(_trunc_divide_onnx)


@tensor_method
@signature("div(Tensor input, Tensor other, *, str? rounding_mode=None,"
           " Tensor? out=None) -> Tensor",
           numbers_as_tensors=True, overloaded=("rounding_mode",))
def div(input, other, *, rounding_mode=None, out=None):
    """Divide elementwise: true division, or rounded with ``rounding_mode='trunc'|'floor'``.

    Integer inputs true-divide into the default float dtype, as in torch.

    Example::

        >>> ember.div(ember.tensor([7, -7]), 2, rounding_mode="floor")
        tensor([ 3, -4])
    """
    if rounding_mode is None:
        result_dtype = dt.result_type(input, other)
        if not (result_dtype.is_floating_point or result_dtype.is_complex):
            result_dtype = dt.get_default_dtype()
        a, b = binary_operands(input, other, dtype=result_dtype)
        return write_out(div_op(a, b), out, "div")
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    dtype = dt.result_type(input, other)
    _check_dtype(f"div_{rounding_mode}_cpu", dtype, "bc")
    a, b = binary_operands(input, other, dtype=dtype)
    op = div_floor_op if rounding_mode == "floor" else div_trunc_op
    return write_out(op(a, b), out, "div")


tensor_method(_inplace_method(div), "div_")


divide = tensor_method(div, "divide")
tensor_method(_inplace_method(div), "divide_")


@tensor_method
def true_divide(dividend, divisor, *, out=None):
    """Same as :func:`div` with no rounding.

    Example::

        >>> ember.true_divide(ember.tensor([1, 2]), 2)
        tensor([0.5000, 1.0000])
    """
    return div(dividend, divisor, out=out)


tensor_method(_inplace_method(true_divide), "true_divide_")


@tensor_method
def floor_divide(input, other, *, out=None):
    """Division rounded down (towards -inf), as Python's ``//``.

    Example::

        >>> ember.floor_divide(ember.tensor([7, -7]), 2)
        tensor([ 3, -4])
    """
    dtype = dt.result_type(input, other)
    _check_dtype("div_floor_cpu", dtype, "bc")
    a, b = binary_operands(input, other, dtype=dtype)
    return write_out(floor_divide_op(a, b), out, "floor_divide")


tensor_method(_inplace_method(floor_divide), "floor_divide_")


# ---------------------------------------------------------------- neg, positive

@defop("neg", meta=_same_shape_meta, save_inputs=False, kind="pointwise-unary",
       fuse=Fusion("negative", grad=lambda xp, g, args, out, wants: (xp.negative(g),)), onnx="Neg")
def neg_op(xp, a):
    return xp.negative(a)


@neg_op.defderivative
def _neg_derivative(ctx, grad):
    return (-grad,)


neg_op.defjvp(linear_jvp(neg_op))


@tensor_method
def neg(input, *, out=None):
    """``-input``.

    Example::

        >>> ember.neg(ember.tensor([1, -2]))
        tensor([-1,  2])
    """
    _check_tensor(input, "neg")
    if input._data.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    return write_out(neg_op(input), out, "neg")


tensor_method(_inplace_method(neg), "neg_")


negative = tensor_method(neg, "negative")
tensor_method(_inplace_method(neg), "negative_")


@tensor_method
def positive(input):
    """``input`` itself (``+input``); refuses bool tensors as torch does.

    Example::

        >>> ember.positive(ember.tensor([1., -2.]))
        tensor([ 1., -2.])
    """
    _check_tensor(input, "positive")
    if input._data.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# ---------------------------------------------------------------- pow, float_power


@defop("pow", meta=_same_shape_meta, grad_name="PowBackward1", kind="pointwise-binary",
       autocast={"cuda": "fp32"}, onnx="Pow")
def pow_op(xp, a, b):
    if a.dtype.kind == "i":
        negative = b < 0
        result = xp.power(a, xp.where(negative, 0, b).astype(b.dtype))
        # integer powers with a negative exponent: 1 for 1, +-1 for -1, else 0 (as torch)
        odd = (b % 2).astype(np.bool_)
        special = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
        return xp.where(negative, special.astype(a.dtype), result)
    if a.dtype == np.bool_:
        return xp.logical_or(a, xp.logical_not(b))
    if a.dtype in _LOW:
        return xp.power(a.astype(_F32), b.astype(_F32)).astype(a.dtype)
    return xp.power(a, b)


@pow_op.defderivative
def _pow_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    grad_a = grad_b = None
    if need_a:
        exponent = _host_exponent(a, b)
        if exponent == 0:  # a constant: zeros, with no graph (as torch)
            grad_a = grad.detach().new_zeros(grad.shape)
        elif exponent is not None:  # x ** 2 and friends: the exponent's value picks the formula
            grad_a = grad * (a * exponent if exponent == 2 else exponent * a ** (exponent - 1))
        else:
            grad_a = grad * (b * a ** (b - 1)).conj()
            grad_a = where(b == 0, 0.0, grad_a)
    if need_b:
        result = a ** b
        nonnegative = (b.imag == 0) & (b.real >= 0) if b.is_complex() else b >= 0
        grad_b = grad * (result * where((a == 0) & nonnegative, 0.0, a.log())).conj()
    return grad_a, grad_b


def _host_exponent(a, b):
    """The value of a 0-dim real CPU exponent that needs no gradient, for a real floating base
    (``x ** 2``, ``x.pow(0.5)``), else None: such a power's derivative is then 1-3 ops on a
    Python number instead of 6 on the exponent tensor (the same values: ``a ** 1`` is ``a``)."""
    data = b._data
    if type(data) is not np.ndarray or data.ndim or b.requires_grad \
            or data.dtype.kind != "f" or a._data.dtype.kind != "f":
        return None
    return float(data)


@pow_op.defjvp
def _pow_jvp(p, t, y):
    (a, b), (ta, tb) = p, t
    da = None if ta is None else where(b == 0, 0.0, ta * b * a ** (b - 1))
    db = None if tb is None else tb * y * where((a == 0) & (b >= 0), 0.0, a.log())
    return add_tangents(da, db)


@tensor_method
def pow(input, exponent, *, out=None):
    """``input ** exponent``, elementwise; either may be a Python number.

    Example::

        >>> ember.pow(ember.tensor([1., 2., 3.]), 2)
        tensor([1., 4., 9.])
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("pow(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dtype = dt.result_type(input, exponent)
    if isinstance(exponent, Tensor) or not isinstance(input, Tensor):
        _check_dtype("pow", dtype, "b")
    if (isinstance(exponent, (int, np.integer)) and exponent < 0
            and dtype.category <= dt._INT):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    a, b = binary_operands(input, exponent, dtype=dtype)
    return write_out(pow_op(a, b), out, "pow")


tensor_method(_inplace_method(pow), "pow_")


@tensor_method
def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in double precision (float64, or complex128).

    Example::

        >>> ember.float_power(ember.tensor([2, 3]), 2)
        tensor([4., 9.], dtype=ember.float64)
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    complex_ = any((x.dtype.is_complex if isinstance(x, Tensor) else isinstance(x, complex))
                   for x in (input, exponent))
    dtype = dt.complex128 if complex_ else dt.float64
    if out is not None and out.dtype is not dtype:
        raise RuntimeError(f"the output given to float_power has dtype {out.dtype} but the "
                           f"operation's result requires dtype {dtype}")
    a, b = binary_operands(input, exponent, dtype=dtype)
    return write_out(pow_op(a, b), out, "float_power")


@tensor_method("float_power_")
@signature("float_power_(Tensor self, Tensor exponent) -> Tensor",
           numbers_as_tensors=("exponent",))
def _float_power_(self, exponent):
    """``x.float_power_(exponent)``: :func:`float_power` written into ``x``, which must already
    have the result's dtype (float64, or complex128), as torch requires.

    Example::

        >>> ember.tensor([2.0], dtype=ember.float64).float_power_(2)
        tensor([4.], dtype=ember.float64)
    """
    complex_ = self.dtype.is_complex or (exponent.dtype.is_complex if isinstance(
        exponent, Tensor) else isinstance(exponent, complex))
    dtype = dt.complex128 if complex_ else dt.float64
    if self.dtype is not dtype:
        raise RuntimeError(f"the base given to float_power_ has dtype {_short_name(self.dtype)} "
                           f"but the operation's result requires dtype {_short_name(dtype)}")
    return inplace(float_power, self, exponent)



# ---------------------------------------------------------------- lerp, addcmul, addcdiv


def _lerp_kernel(xp, start, end, weight):
    difference = end - start
    return xp.where(xp.abs(weight) < 0.5, start + weight * difference,
                    end - difference * (1 - weight))


lerp_op = Op("lerp", _low_precision(_lerp_kernel), kind="pointwise-ternary",
             meta=lambda s, e, w: (broadcast_shapes(s.shape, e.shape, w.shape), s.dtype),
             grad_name="LerpBackward1",
             opt_outs={"onnx": "not mapped yet (composable from ONNX operators)"})


@lerp_op.defderivative
def _lerp_derivative(ctx, grad):
    start, end, weight = ctx.inputs
    need_s, need_e, need_w = ctx.needs_input_grad
    return (grad * (1 - weight).conj() if need_s else None,
            grad * weight.conj() if need_e else None,
            grad * (end - start).conj() if need_w else None)


@tensor_method
def lerp(input, end, weight, *, out=None):
    """Linear interpolation ``input + weight * (end - input)``; ``weight`` a number or tensor.

    Example::

        >>> ember.lerp(ember.tensor([0., 10.]), ember.tensor([10., 20.]), 0.5)
        tensor([ 5., 15.])
    """
    _check_tensor(input, "lerp")
    _check_tensor(end, "lerp", "end", 2)
    if input.dtype is not end.dtype:
        raise RuntimeError(f"expected dtype {_dtype_word(input.dtype)} for `end` but got dtype "
                           f"{_dtype_word(end.dtype)}")
    if isinstance(weight, Tensor):
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {_dtype_word(input.dtype)} for `weight` but got "
                               f"dtype {_dtype_word(weight.dtype)}")
        _check_dtype("lerp_kernel_tensor", input.dtype, "bi")
    else:
        if not _is_scalar(weight):
            raise TypeError(f"lerp(): argument 'weight' must be Tensor or Number, not "
                            f"{type(weight).__name__}")
        _check_dtype("lerp_kernel_scalar", input.dtype, "bi")
        weight = scalar_tensor(weight, input.dtype, input._device)
    broadcast_shapes(input._data.shape, end._data.shape, weight._data.shape)
    return write_out(lerp_op(input, end, weight), out, "lerp")


tensor_method(_inplace_method(lerp), "lerp_")


def _dtype_word(d):
    words = {"float32": "float", "float64": "double", "float16": "c10::Half",
             "bfloat16": "c10::BFloat16", "complex64": "c10::complex<float>",
             "complex128": "c10::complex<double>", "int64": "long int", "int32": "int",
             "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
             "bool": "bool"}
    return words[d.name]


def _opmath(dtype, *tensors):
    """float16/bfloat16 operands of a composite, in float32 (torch computes them so)."""
    if dtype not in (dt.float16, dt.bfloat16):
        return tensors
    return tuple(t.to(dt.float32) for t in tensors)


@tensor_method
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2``, broadcast.

    Example::

        >>> ember.addcmul(ember.tensor([1.]), ember.tensor([2.]), ember.tensor([3.]), value=2)
        tensor([13.])
    """
    for position, (arg, t) in enumerate((("input", input), ("tensor1", tensor1),
                                         ("tensor2", tensor2)), 1):
        _check_tensor(t, "addcmul", arg, position)
    dtype = dt.result_type(input, tensor1, tensor2)
    _check_dtype("addcmul_cpu_out", dtype, "b")
    input, tensor1, tensor2 = _opmath(dtype, input, tensor1, tensor2)
    product = mul(tensor1, tensor2)
    if value != 1:
        product = mul(product, value) if dtype.category > dt._INT else mul(product, int(value))
    result = add(input, product)
    if result.dtype is not dtype:
        result = result.to(dtype)
    return write_out(result, out, "addcmul")


tensor_method(_inplace_method(addcmul), "addcmul_")


@tensor_method
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2``, broadcast (floating tensors only).

    Example::

        >>> ember.addcdiv(ember.tensor([1.]), ember.tensor([6.]), ember.tensor([3.]), value=2)
        tensor([5.])
    """
    for position, (arg, t) in enumerate((("input", input), ("tensor1", tensor1),
                                         ("tensor2", tensor2)), 1):
        _check_tensor(t, "addcdiv", arg, position)
    if tensor1.dtype.category <= dt._INT and tensor2.dtype.category <= dt._INT:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future  release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float "
                           "inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    dtype = dt.result_type(input, tensor1, tensor2)
    input, tensor1, tensor2 = _opmath(dtype, input, tensor1, tensor2)
    quotient = div(tensor1, tensor2)
    if value != 1:
        quotient = mul(quotient, value)
    result = add(input, quotient)
    if result.dtype is not dtype:
        result = result.to(dtype)
    return write_out(result, out, "addcdiv")


tensor_method(_inplace_method(addcdiv), "addcdiv_")


# ---------------------------------------------------------------- rsub, ldexp, frexp


@tensor_method
def ldexp(input, other, *, out=None):
    """``input * 2 ** other``, in floating point (integer inputs give the default dtype).

    Example::

        >>> ember.ldexp(ember.tensor([1., 3.]), ember.tensor([2, -1]))
        tensor([4.0000, 1.5000])
    """
    _check_tensor(input, "ldexp")
    _check_tensor(other, "ldexp", "other", 2)
    dtype = dt.result_type(input, other)
    if dtype.category <= dt._INT:
        dtype = dt.get_default_dtype()
    elif other.dtype is dt.bool:  # torch's floating kernel has no bool exponent
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    result = input.to(dtype) * other.to(dtype).exp2()
    return write_out(result, out, "ldexp")


@tensor_method("ldexp_")
def _ldexp_(self, other):
    return inplace(ldexp, self, other)


_ldexp_.__name__, _ldexp_.__doc__ = "ldexp_", "In-place version of :func:`ldexp`."


_frexp_result = _return_types.frexp
_return_types.frexp = _frexp_result


@defop("frexp", meta=lambda a: ((a.shape, a.dtype), (a.shape, np.dtype(np.int32))),
       save_inputs=False, save_output=True, multi_output=True, differentiable_outputs=(0,),
       kind="pointwise-unary", opt_outs={"onnx": "ONNX has no operator for it"})
def frexp_op(xp, a):
    if a.dtype in _LOW:
        mantissa, exponent = xp.frexp(a.astype(_F32))
        return mantissa.astype(a.dtype), exponent.astype(np.int32)
    mantissa, exponent = xp.frexp(a)
    return mantissa, exponent.astype(np.int32)


frexp_op.defbatch(batching.pointwise)


@frexp_op.defderivative
def _frexp_derivative(ctx, grad, grad_exponent):
    exponent = ctx.output[1]
    return (grad / exponent.to(grad.dtype).exp2(),)


@tensor_method
def frexp(input, *, out=None):
    """Split ``input`` into a mantissa in ``[0.5, 1)`` (in magnitude) and an int32 exponent
    with ``input = mantissa * 2 ** exponent``; a named tuple ``(mantissa, exponent)``.

    Example::

        >>> ember.frexp(ember.tensor([8., 0.3])).exponent
        tensor([ 4, -1], dtype=ember.int32)
    """
    _check_tensor(input, "frexp")
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = frexp_op(input)
    if out is not None:
        write_out(mantissa, out[0], "frexp")
        write_out(exponent, out[1], "frexp")
        mantissa, exponent = out
    return _frexp_result(mantissa, exponent)


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``: subtraction with the operands reversed.

    Example::

        >>> ember.rsub(ember.tensor([1, 2]), 5)
        tensor([4, 3])
    """
    _check_tensor(input, "rsub")
    return sub(other, input, alpha=alpha)


# Fusion (``ops/_fusion.py``): where these ops have no step in a fused chain, and why
decline(COMPOSITE_KERNEL, div_floor_op, div_trunc_op, floor_divide_op, pow_op, lerp_op)
decline(OTHER_DTYPE, frexp_op)
