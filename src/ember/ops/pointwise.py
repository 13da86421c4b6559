"""Pointwise operators: arithmetic, comparisons, logic and elementwise math.

Each operator is one :class:`~ember.ops._registry.Op` (kernel on the array module ``xp``,
meta rule, derivative written with ember operators) plus its public function, its in-place
``name_`` method and, where Python has one, its operator dunder. Unary math ops are declared in
the table ``UNARY`` at the bottom; the rest are written out.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._operands import binary_operands, broadcast_meta, float_operand, promote_operands
from ._registry import Op, defop, inplace, write_out

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg",
           "negative", "pow", "where", "eq", "ne", "lt", "le", "gt", "ge", "greater",
           "greater_equal", "less", "less_equal", "not_equal", "maximum", "minimum", "conj",
           "real", "imag", "clamp", "clip"]

_same_shape_meta = broadcast_meta()
_bool_meta = broadcast_meta(np.dtype(np.bool_))


def _method(name, fn):
    """Attach ``fn`` to Tensor as method ``name``."""
    setattr(Tensor, name, fn)


# ---------------------------------------------------------------- add / sub


@defop("add", meta=_same_shape_meta, save_inputs=False)
def add_op(xp, a, b, *, alpha=1):
    return xp.add(a, b) if alpha == 1 else xp.add(a, b * alpha)


@add_op.defderivative
def _add_derivative(ctx, grad, *, alpha=1):
    return grad, (grad if alpha == 1 else grad * _conj_scalar(alpha))


def _conj_scalar(value):
    return value.conjugate() if isinstance(value, complex) else value


def _check_alpha(input, other, alpha):
    if alpha != 1 and isinstance(alpha, float) and not (
            _is_float_like(input) or _is_float_like(other)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


def _is_float_like(x):
    if isinstance(x, Tensor):
        return x._data.dtype.kind in "fcV" or x.dtype.is_floating_point
    return isinstance(x, (float, complex))


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other``, broadcast, with torch's type promotion.

    Example::

        >>> ember.add(ember.tensor([1, 2]), ember.tensor([10, 20]), alpha=2)
        tensor([21, 42])
    """
    if alpha != 1:
        _check_alpha(input, other, alpha)
    a, b = binary_operands(input, other)
    return write_out(add_op(a, b, alpha=alpha), out, "add")


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other``, broadcast.

    Example::

        >>> ember.sub(ember.tensor([5., 6.]), 1.5)
        tensor([3.5000, 4.5000])
    """
    a, b = binary_operands(input, other)
    if a._data.dtype == np.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if alpha != 1:
        _check_alpha(input, other, alpha)
    return write_out(add_op(a, neg(b), alpha=alpha), out, "sub")


subtract = sub


# ---------------------------------------------------------------- mul / div


@defop("mul", meta=_same_shape_meta)
def mul_op(xp, a, b):
    return xp.multiply(a, b)


@mul_op.defderivative
def _mul_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return (grad * b.conj() if need_a else None), (grad * a.conj() if need_b else None)


def mul(input, other, *, out=None):
    """Elementwise product, broadcast.

    Example::

        >>> ember.mul(ember.tensor([1., 2.]), 3)
        tensor([3., 6.])
    """
    a, b = binary_operands(input, other)
    return write_out(mul_op(a, b), out, "mul")


multiply = mul


@defop("div", meta=_same_shape_meta)
def div_op(xp, a, b):
    return xp.true_divide(a, b)


@div_op.defderivative
def _div_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    grad_a = grad / b.conj() if need_a else None
    grad_b = -grad * (a / b / b).conj() if need_b else None
    return grad_a, grad_b


@defop("div_floor", meta=_same_shape_meta, grad_name="DivBackward1")
def div_floor_op(xp, a, b):
    if a.dtype.kind in "iu":
        _check_integer_divisor(xp, b)
        return xp.floor_divide(a, b)
    return xp.floor(xp.true_divide(a, b))


@defop("div_trunc", meta=_same_shape_meta, grad_name="DivBackward2")
def div_trunc_op(xp, a, b):
    if a.dtype.kind in "iu":
        _check_integer_divisor(xp, b)
        quotient = xp.floor_divide(a, b)
        remainder = a - quotient * b
        fix = (remainder != 0) & ((remainder < 0) != (b < 0))
        return quotient + fix.astype(a.dtype)
    return xp.trunc(xp.true_divide(a, b))


def _check_integer_divisor(xp, b):
    if xp is np and b.size and not np.all(b):
        raise RuntimeError("ZeroDivisionError")


@div_floor_op.defderivative
def _rounded_div_derivative(ctx, grad):
    return grad * 0, grad * 0


div_trunc_op.defderivative(_rounded_div_derivative)


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
    a, b = binary_operands(input, other)
    op = div_floor_op if rounding_mode == "floor" else div_trunc_op
    return write_out(op(a, b), out, "div")


divide = div


def true_divide(dividend, divisor, *, out=None):
    """Same as :func:`div` with no rounding.

    Example::

        >>> ember.true_divide(ember.tensor([1, 2]), 2)
        tensor([0.5000, 1.0000])
    """
    return div(dividend, divisor, out=out)


# ---------------------------------------------------------------- neg, conj, real, imag


@defop("neg", meta=_same_shape_meta, save_inputs=False)
def neg_op(xp, a):
    return xp.negative(a)


@neg_op.defderivative
def _neg_derivative(ctx, grad):
    return (-grad,)


def neg(input, *, out=None):
    """``-input``.

    Example::

        >>> ember.neg(ember.tensor([1, -2]))
        tensor([-1,  2])
    """
    if input._data.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    return write_out(neg_op(input), out, "neg")


negative = neg


@defop("conj_physical", meta=_same_shape_meta, save_inputs=False, grad_name="ConjBackward0")
def conj_op(xp, a):
    return xp.conj(a)


@conj_op.defderivative
def _conj_derivative(ctx, grad):
    return (grad.conj(),)


def conj(input):
    """The complex conjugate (the input itself for real tensors).

    Example::

        >>> ember.conj(ember.tensor([1 + 2j]))
        tensor([1.-2.j])
    """
    if input._data.dtype.kind != "c":
        return input
    return conj_op(input)


@defop("real", meta=lambda a: (a.shape, dt.from_numpy_dtype(a.dtype).to_real()),
       save_inputs=False, view=True)
def real_op(xp, a):
    return a.real


@real_op.defderivative
def _real_derivative(ctx, grad):
    return (grad.to(dt.from_numpy_dtype(ctx._input_meta[0][1])),)


@defop("imag", meta=lambda a: (a.shape, dt.from_numpy_dtype(a.dtype).to_real()),
       save_inputs=False, view=True)
def imag_op(xp, a):
    return a.imag


@imag_op.defderivative
def _imag_derivative(ctx, grad):
    return (grad * 1j,)


def real(input):
    """The real part, a view for complex tensors (the input itself for real ones).

    Example::

        >>> ember.real(ember.tensor([1 + 2j]))
        tensor([1.])
    """
    return real_op(input) if input._data.dtype.kind == "c" else input


def imag(input):
    """The imaginary part of a complex tensor, as a view.

    Example::

        >>> ember.imag(ember.tensor([1 + 2j]))
        tensor([2.])
    """
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return imag_op(input)


# ---------------------------------------------------------------- pow


@defop("pow", meta=_same_shape_meta, grad_name="PowBackward1")
def pow_op(xp, a, b):
    if a.dtype.kind in "iu" and xp is np and b.size and (b < 0).any():
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return xp.power(a, b)


@pow_op.defderivative
def _pow_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    grad_a = grad_b = None
    if need_a:
        grad_a = grad * (b * a ** (b - 1)).conj()
        grad_a = where(b == 0, 0.0, grad_a)
    if need_b:
        result = a ** b
        grad_b = grad * (result * where((a == 0) & (b >= 0), 0.0, a.log())).conj()
    return grad_a, grad_b


def pow(input, exponent, *, out=None):
    """``input ** exponent``, elementwise; either may be a Python number.

    Example::

        >>> ember.pow(ember.tensor([1., 2., 3.]), 2)
        tensor([1., 4., 9.])
    """
    a, b = binary_operands(input, exponent)
    return write_out(pow_op(a, b), out, "pow")


# ---------------------------------------------------------------- comparisons


def _comparison(name, ufunc):
    op = Op(name, lambda xp, a, b: getattr(xp, ufunc)(a, b), meta=_bool_meta)

    def compare(input, other, *, out=None):
        a, b = binary_operands(input, other)
        return write_out(op(a, b), out, name)

    compare.__name__ = compare.__qualname__ = name
    symbol = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
    compare.__doc__ = f"""``input {symbol} other`` elementwise, as a bool tensor.

    Example::

        >>> ember.{name}(ember.tensor([1, 2, 3]), 2)
        tensor({[bool(eval(f"{v} {symbol} 2")) for v in (1, 2, 3)]})
    """
    return compare


eq = _comparison("eq", "equal")
ne = _comparison("ne", "not_equal")
lt = _comparison("lt", "less")
le = _comparison("le", "less_equal")
gt = _comparison("gt", "greater")
ge = _comparison("ge", "greater_equal")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


# ---------------------------------------------------------------- where, maximum, minimum


@defop("where", meta=lambda c, a, b: (np.broadcast_shapes(c.shape, a.shape, b.shape), a.dtype),
       grad_name="WhereBackward0")
def where_op(xp, condition, a, b):
    return xp.where(condition, a, b)


@where_op.defderivative
def _where_derivative(ctx, grad):
    condition = ctx.inputs[0]
    zero = grad.new_zeros(())
    return None, where(condition, grad, zero), where(condition, zero, grad)


def where(condition, input=None, other=None, *, out=None):
    """Pick from ``input`` where ``condition`` holds, else from ``other`` (broadcast).

    With only ``condition``, the same as ``nonzero(condition, as_tuple=True)``.

    Example::

        >>> ember.where(ember.tensor([True, False]), 1.0, ember.tensor([5., 6.]))
        tensor([1., 6.])
    """
    if input is None and other is None:
        from .index import nonzero

        return nonzero(condition, as_tuple=True)
    if condition._data.dtype != np.bool_:
        if condition._data.dtype != np.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {condition.dtype.name.capitalize()}")
        condition = condition.to(dt.bool)
    tensors, _ = promote_operands(input, other)
    a, b = tensors
    from ._operands import broadcast_shapes

    broadcast_shapes(condition._data.shape, a._data.shape, b._data.shape)
    if condition._device is not a._device and condition._data.ndim == 0:
        condition = condition.to(a._device)
    return write_out(where_op(condition, a, b), out, "where")


def _select_derivative(pick_first):
    def derivative(ctx, grad):
        a, b = ctx.inputs
        first = pick_first(a, b)
        tie = a == b
        half = grad / 2
        grad_a = where(tie, half, where(first, grad, 0.0))
        grad_b = where(tie, half, where(first, 0.0, grad))
        return grad_a, grad_b
    return derivative


maximum_op = Op("maximum", lambda xp, a, b: xp.maximum(a, b), meta=_same_shape_meta)
maximum_op.defderivative(_select_derivative(lambda a, b: a > b))
minimum_op = Op("minimum", lambda xp, a, b: xp.minimum(a, b), meta=_same_shape_meta)
minimum_op.defderivative(_select_derivative(lambda a, b: a < b))


def maximum(input, other, *, out=None):
    """The elementwise maximum (NaN propagates).

    Example::

        >>> ember.maximum(ember.tensor([1, 5]), ember.tensor([3, 2]))
        tensor([3, 5])
    """
    if not isinstance(other, Tensor):
        raise TypeError("maximum(): argument 'other' must be Tensor")
    a, b = binary_operands(input, other)
    return write_out(maximum_op(a, b), out, "maximum")


def minimum(input, other, *, out=None):
    """The elementwise minimum (NaN propagates).

    Example::

        >>> ember.minimum(ember.tensor([1, 5]), ember.tensor([3, 2]))
        tensor([1, 2])
    """
    if not isinstance(other, Tensor):
        raise TypeError("minimum(): argument 'other' must be Tensor")
    a, b = binary_operands(input, other)
    return write_out(minimum_op(a, b), out, "minimum")


# ---------------------------------------------------------------- clamp


def clamp(input, min=None, max=None, *, out=None):
    """Limit every element to ``[min, max]``; either bound may be a number or a tensor.

    Example::

        >>> ember.clamp(ember.tensor([-2., 0.5, 3.]), min=0, max=1)
        tensor([0.0000, 0.5000, 1.0000])
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    result = input
    if min is not None:
        bound = min
        result = where(result < bound, bound, result) if not _is_nan_bound(min) else \
            _full_nan(result)
    if max is not None:
        bound = max
        result = where(result > bound, bound, result) if not _is_nan_bound(max) else \
            _full_nan(result)
    if result is input:
        result = input.clone()
    dtype = dt.result_type(input, *(b for b in (min, max) if b is not None))
    if result.dtype is not dtype:
        result = result.to(dtype)
    return write_out(result, out, "clamp")


def _is_nan_bound(value):
    return isinstance(value, float) and value != value


def _full_nan(like):
    return like * float("nan")


clip = clamp


# ---------------------------------------------------------------- unary math (table-driven)


def unary(name, kernel, derivative=None, *, to_float=True, save="input", doc, example):
    """Declare a unary pointwise op and its public function, method and in-place method.

    ``kernel(xp, a)`` computes it; ``derivative(x, y, grad)`` returns the input's gradient from
    the input ``x``, the output ``y`` (whichever ``save`` names; the other is None) and the
    output's gradient. ``to_float`` promotes integer inputs to the default float dtype.
    """
    op = Op(name, lambda xp, a: kernel(xp, a), meta=_same_shape_meta,
            save_inputs=save in ("input", "both"), save_output=save in ("output", "both"))
    if derivative is not None:
        def op_derivative(ctx, grad):
            x = ctx.inputs[0] if op.save_inputs else None
            y = ctx.output if op.save_output else None
            return (derivative(x, y, grad),)
        op.defderivative(op_derivative)

    def fn(input, *, out=None):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return write_out(op(float_operand(input) if to_float else input), out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{doc}

    Example::

        >>> {example}
    """
    fn.op = op
    globals()[name] = fn
    __all__.append(name)
    _method(name, fn)
    _method(name + "_", _inplace_method(fn))
    return fn


def _inplace_method(fn):
    def method(self, *args, **kwargs):
        return inplace(fn, self, *args, **kwargs)
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place version of :func:`{fn.__name__}`."
    return method


unary("exp", lambda xp, a: xp.exp(a), lambda x, y, g: g * y.conj(), save="output",
      doc="``e ** input``, elementwise.",
      example="ember.exp(ember.tensor([0., 1.]))\n        tensor([1.0000, 2.7183])")
unary("log", lambda xp, a: xp.log(a), lambda x, y, g: g / x.conj(),
      doc="The natural logarithm, elementwise.",
      example="ember.log(ember.tensor([1., 2.]))\n        tensor([0.0000, 0.6931])")
unary("sqrt", lambda xp, a: xp.sqrt(a), lambda x, y, g: g / (2 * y.conj()), save="output",
      doc="The square root, elementwise.",
      example="ember.sqrt(ember.tensor([4., 9.]))\n        tensor([2., 3.])")
unary("sin", lambda xp, a: xp.sin(a), lambda x, y, g: g * x.cos().conj(),
      doc="The sine, elementwise.",
      example="ember.sin(ember.tensor([0.]))\n        tensor([0.])")
unary("cos", lambda xp, a: xp.cos(a), lambda x, y, g: -g * x.sin().conj(),
      doc="The cosine, elementwise.",
      example="ember.cos(ember.tensor([0.]))\n        tensor([1.])")
unary("tanh", lambda xp, a: xp.tanh(a), lambda x, y, g: g * (1 - y * y).conj(), save="output",
      doc="The hyperbolic tangent, elementwise.",
      example="ember.tanh(ember.tensor([0.]))\n        tensor([0.])")
unary("abs", lambda xp, a: xp.abs(a), lambda x, y, g: g * x.sgn(), to_float=False,
      doc="The absolute value, elementwise.",
      example="ember.abs(ember.tensor([-1, 2]))\n        tensor([1, 2])")


def _sgn_kernel(xp, a):
    if a.dtype.kind != "c":
        return xp.sign(a)
    magnitude = xp.abs(a)
    return xp.where(magnitude == 0, 0, a / xp.where(magnitude == 0, 1, magnitude))


unary("sgn", _sgn_kernel, lambda x, y, g: g * 0, to_float=False,
      doc="The sign for real inputs, ``x / |x|`` for complex ones.",
      example="ember.sgn(ember.tensor([-2., 0., 3.]))\n        tensor([-1.,  0.,  1.])")


# ---------------------------------------------------------------- methods and dunders


def _rsub(self, other):
    return sub(other, self)


def _rdiv(self, other):
    return div(other, self)


def _rpow(self, other):
    return pow(other, self)


for _name in ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
              "neg", "negative", "pow", "eq", "ne", "lt", "le", "gt", "ge", "greater",
              "greater_equal", "less", "less_equal", "not_equal", "maximum", "minimum",
              "conj", "clamp", "clip"):
    _method(_name, globals()[_name])
for _name in ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
              "neg", "negative", "pow", "clamp", "clip"):
    _method(_name + "_", _inplace_method(globals()[_name]))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _method(_name + "_", _inplace_method(globals()[_name]))

Tensor.real = property(real)
Tensor.imag = property(imag)
Tensor.where = lambda self, condition, other: where(condition, self, other)
Tensor.__add__ = Tensor.__radd__ = add
Tensor.__iadd__ = Tensor.add_
Tensor.__sub__ = sub
Tensor.__rsub__ = _rsub
Tensor.__isub__ = Tensor.sub_
Tensor.__mul__ = Tensor.__rmul__ = mul
Tensor.__imul__ = Tensor.mul_
Tensor.__truediv__ = div
Tensor.__rtruediv__ = _rdiv
Tensor.__itruediv__ = Tensor.div_
Tensor.__pow__ = pow
Tensor.__rpow__ = _rpow
Tensor.__ipow__ = Tensor.pow_
Tensor.__neg__ = neg
Tensor.__pos__ = lambda self: self
Tensor.__eq__ = eq
Tensor.__ne__ = ne
Tensor.__lt__ = lt
Tensor.__le__ = le
Tensor.__gt__ = gt
Tensor.__ge__ = ge
Tensor.__hash__ = object.__hash__
