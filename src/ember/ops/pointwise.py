"""Pointwise operators: arithmetic, comparisons, logic and elementwise math.

Each operator is one :class:`~ember.ops._registry.Op` (kernel on the array module ``xp``,
meta rule, derivative written with ember operators) plus its public function, its in-place
``name_`` method and, where Python has one, its operator dunder. Unary math ops are declared
with :func:`unary` and simple binary ones with :func:`binary` (tables further down); the rest
are written out.

Dtype rules follow torch: ``promote="float"`` ops turn bool and integer inputs into the default
float dtype; ``deny`` names the dtype groups an op refuses (``b`` bool, ``i`` integers, ``h``
float16/bfloat16, ``f`` float32/float64, ``c`` complex), with torch's exception type
(``NotImplementedError`` for a missing kernel). float16 and bfloat16 are computed in float32
and rounded back, as torch's CPU kernels do.
"""

from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from .. import _dtype as dt
from .._device import META
from .._tensor import Tensor, _trace_state
from ..autograd.forward_ad import _state as _fw_state
from ..autograd.forward_ad import add_tangents, linear_jvp
from ..autograd.grad_mode import state as _grad_state
from ..profiler._recorder import state as _profiling
from ._fusion import Fusion, unit_alpha
from ._operands import (
    binary_operands,
    broadcast_meta,
    broadcast_shapes,
    float_operand,
    operator_method,
    promote_operands,
    scalar_tensor,
)
from ._registry import Op, _short_name, check_writable, defop, inplace, write_out
from ._util import scalar, scipy_special

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg",
           "negative", "pow", "where", "eq", "ne", "lt", "le", "gt", "ge", "greater",
           "greater_equal", "less", "less_equal", "not_equal", "maximum", "minimum", "conj",
           "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg",
           "real", "imag", "view_as_real", "view_as_complex", "clamp", "clip", "clamp_min",
           "clamp_max", "float_power",
           "floor_divide", "fmax", "fmin", "lerp", "addcmul", "addcdiv", "isclose", "allclose",
           "equal", "heaviside", "logit", "polygamma", "mvlgamma", "round", "nan_to_num",
           "positive", "square"]

_same_shape_meta = broadcast_meta()
_bool_meta = broadcast_meta(np.dtype(np.bool_))
_LOW = dt.LOW_PRECISION
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_REAL_FLOATS = (_F32, _F64)  # the dtypes whose derivatives may take the NumPy fast path


def _method(name, fn):
    """Attach ``fn`` to Tensor as method ``name``."""
    setattr(Tensor, name, fn)


_special = scipy_special  # ``scipy.special`` for NumPy, ``cupyx.scipy.special`` for CuPy


def _zeros_like(t):
    return t.new_zeros(t.shape)


def _is_scalar(x):
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, Tensor)


# ---------------------------------------------------------------- dtype checks

_GROUPS = {"b": lambda d: d is dt.bool, "i": lambda d: d.category == dt._INT,
           "h": lambda d: d in (dt.float16, dt.bfloat16),
           "f": lambda d: d in (dt.float32, dt.float64), "c": lambda d: d.is_complex}


def _check_dtype(name, dtype, deny, errors=None):
    """Raise torch's error when ``dtype`` is in one of the ``deny`` groups."""
    for group in deny:
        if _GROUPS[group](dtype):
            if errors and group in errors:
                kind, message = errors[group]
                raise kind(message.format(T=_short_name(dtype)))
            raise NotImplementedError(f'"{name}" not implemented for \'{_short_name(dtype)}\'')


def _check_tensor(x, name, arg="input", position=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(x).__name__}")


def _not_differentiable(name):
    def derivative(ctx, *grads, **params):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")
    return derivative


def _plain_backward(grad, saved):
    """Whether a first-order derivative may run on the NumPy arrays of ``grad`` and ``saved``
    (a saved input or output) instead of ember operators.

    It may when nothing can see the difference: grad mode is off (no ``create_graph``, so the
    gradient needs no graph of its own), no forward-mode AD, tracer or profiler watches the
    operators, and both are plain float32/float64 CPU tensors of one dtype (NumPy then
    broadcasts and rounds as the operators do).

    Example::

        >>> _plain_backward(ember.ones(2), ember.ones(2))  # grad mode is on here
        False
    """
    return (not _grad_state.enabled and _fw_state.level is None and _trace_state.tracer is None
            and _profiling.recorder is None and type(grad) is Tensor and type(saved) is Tensor
            and grad._device._xp is np and saved._device is grad._device
            and grad._data.dtype in _REAL_FLOATS and saved._data.dtype == grad._data.dtype)


def _low_precision(kernel):
    """Run ``kernel`` in float32 for float16/bfloat16 arrays and round back."""
    def run(xp, a, *rest, **params):
        if a.dtype.itemsize == 2 and a.dtype in _LOW:  # (the size test skips a call)
            dtype = a.dtype
            result = kernel(xp, a.astype(_F32), *(r.astype(_F32) for r in rest), **params)
            return result if result.dtype.kind == "b" else result.astype(dtype)
        return kernel(xp, a, *rest, **params)
    return run


def _check_integer_divisor(xp, b):
    if xp is np and b.size and not np.all(b):
        raise RuntimeError("ZeroDivisionError")


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


subtract = sub


@defop("sub", meta=_same_shape_meta, save_inputs=False, kind="pointwise-binary",
       fuse=Fusion("subtract", accepts=unit_alpha, grad=_sub_step_grad))
def sub_op(xp, a, b, *, alpha=1):
    return xp.subtract(a, b) if alpha == 1 else xp.subtract(a, b * scalar(alpha, b.dtype))


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


def mul(input, other, *, out=None):
    """Elementwise product, broadcast.

    Example::

        >>> ember.mul(ember.tensor([1., 2.]), 3)
        tensor([3., 6.])
    """
    a, b = binary_operands(input, other)
    return write_out(mul_op(a, b), out, "mul")


multiply = mul


@defop("div", meta=_same_shape_meta, kind="pointwise-binary",
       fuse=Fusion("true_divide", grad=_div_step_grad))
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


divide = div


def true_divide(dividend, divisor, *, out=None):
    """Same as :func:`div` with no rounding.

    Example::

        >>> ember.true_divide(ember.tensor([1, 2]), 2)
        tensor([0.5000, 1.0000])
    """
    return div(dividend, divisor, out=out)


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


# ---------------------------------------------------------------- neg, conj, real, imag


@defop("neg", meta=_same_shape_meta, save_inputs=False, kind="pointwise-unary",
       fuse=Fusion("negative", grad=lambda xp, g, args, out, wants: (xp.negative(g),)))
def neg_op(xp, a):
    return xp.negative(a)


@neg_op.defderivative
def _neg_derivative(ctx, grad):
    return (-grad,)


neg_op.defjvp(linear_jvp(neg_op))


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


negative = neg


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


@defop("conj_physical", meta=_same_shape_meta, save_inputs=False, grad_name="ConjBackward0",
       kind="pointwise-unary")
def conj_op(xp, a):
    return xp.conj(a)


@conj_op.defderivative
def _conj_derivative(ctx, grad):
    return (grad.conj(),)


conj_op.defjvp(linear_jvp(conj_op))


def conj(input):
    """The complex conjugate (the input itself for real tensors).

    Example::

        >>> ember.conj(ember.tensor([1 + 2j]))
        tensor([1.-2.j])
    """
    if input._data.dtype.kind != "c":
        return input
    return conj_op(input)


def conj_physical(input, *, out=None):
    """The complex conjugate as a new tensor (ember's :func:`conj` always computes it, so the
    two agree; the input itself for real tensors, or a copy into ``out``).

    Example::

        >>> ember.conj_physical(ember.tensor([1 - 1j]))
        tensor([1.+1.j])
    """
    if out is not None:
        return write_out(conj(input), out, "conj_physical")
    return conj(input)


def resolve_conj(input):
    """``input`` itself: ember never keeps a lazy conjugate bit (``is_conj()`` is always False).

    Example::

        >>> ember.resolve_conj(ember.tensor([1j])).is_conj()
        False
    """
    return input


def resolve_neg(input):
    """``input`` itself: ember never keeps a lazy negative bit (``is_neg()`` is always False).

    Example::

        >>> ember.resolve_neg(ember.tensor([1.])).is_neg()
        False
    """
    return input


def is_conj(input):
    """False: ember's :func:`conj` computes the conjugate instead of setting a conjugate bit.

    Example::

        >>> ember.is_conj(ember.tensor([1j]).conj())
        False
    """
    return False


def is_neg(input):
    """False: ember has no lazy negative bit.

    Example::

        >>> ember.is_neg(ember.tensor([1.]))
        False
    """
    return False


@defop("real", meta=lambda a: (a.shape, dt.from_numpy_dtype(a.dtype).to_real()),
       save_inputs=False, view=True, kind="pointwise-unary")
def real_op(xp, a):
    return a.real


@real_op.defderivative
def _real_derivative(ctx, grad):
    return (grad.to(dt.from_numpy_dtype(ctx._input_meta[0][1])),)


@defop("imag", meta=lambda a: (a.shape, dt.from_numpy_dtype(a.dtype).to_real()),
       save_inputs=False, view=True, kind="pointwise-unary")
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


def _view_as_real_meta(a):
    return a.shape + (2,), dt.from_numpy_dtype(a.dtype).to_real()


@defop("view_as_real", meta=_view_as_real_meta, save_inputs=False, view=True,
       grad_name="ViewAsRealBackward0", kind="view")
def view_as_real_op(xp, a):
    real = dt.from_numpy_dtype(a.dtype).to_real().np
    if xp is np:
        return a[..., None].view(real)
    parts = a.real  # a view of the real parts; the imaginary parts follow one element later
    return xp.lib.stride_tricks.as_strided(parts, a.shape + (2,),
                                           parts.strides + (parts.itemsize,))


view_as_real_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@view_as_real_op.defderivative
def _view_as_real_derivative(ctx, grad):
    return (view_as_complex(grad.contiguous()),)


def _view_as_complex_meta(a):
    return a.shape[:-1], dt.from_numpy_dtype(a.dtype).to_complex()


@defop("view_as_complex", meta=_view_as_complex_meta, save_inputs=False, view=True,
       grad_name="ViewAsComplexBackward0", kind="view")
def view_as_complex_op(xp, a):
    return a.view(dt.from_numpy_dtype(a.dtype).to_complex().np)[..., 0]


view_as_complex_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@view_as_complex_op.defderivative
def _view_as_complex_derivative(ctx, grad):
    return (view_as_real(grad),)


def view_as_real(input):
    """A real view of a complex tensor, with a last dimension of size 2 holding the real and
    imaginary parts (writes through it change ``input``).

    Example::

        >>> ember.view_as_real(ember.tensor([1 + 2j, 3 - 4j]))
        tensor([[ 1.,  2.],
                [ 3., -4.]])
    """
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return view_as_real_op(input)


def view_as_complex(input):
    """A complex view of a real tensor whose last dimension (size 2, stride 1) holds the real
    and imaginary parts.

    Example::

        >>> ember.view_as_complex(ember.tensor([[1., 2.], [3., -4.]]))
        tensor([1.-0.j, 3.-4.j])
    """
    dtype = input.dtype
    if dtype is dt.float16:
        raise RuntimeError("view_as_complex of a float16 tensor would be complex32, which ember "
                           "does not have; convert to float32 first")
    if dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {_short_name(dtype)}")
    shape, strides = input.shape, input.stride()
    if not shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return view_as_complex_op(input)


# ---------------------------------------------------------------- pow, float_power


@defop("pow", meta=_same_shape_meta, grad_name="PowBackward1", kind="pointwise-binary",
       autocast={"cuda": "fp32"})
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
        grad_a = grad * (b * a ** (b - 1)).conj()
        grad_a = where(b == 0, 0.0, grad_a)
    if need_b:
        result = a ** b
        nonnegative = (b.imag == 0) & (b.real >= 0) if b.is_complex() else b >= 0
        grad_b = grad * (result * where((a == 0) & nonnegative, 0.0, a.log())).conj()
    return grad_a, grad_b


@pow_op.defjvp
def _pow_jvp(p, t, y):
    (a, b), (ta, tb) = p, t
    da = None if ta is None else where(b == 0, 0.0, ta * b * a ** (b - 1))
    db = None if tb is None else tb * y * where((a == 0) & (b >= 0), 0.0, a.log())
    return add_tangents(da, db)


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


# ---------------------------------------------------------------- comparisons


def _comparison(name, ufunc):
    op = Op(name, lambda xp, a, b: getattr(xp, ufunc)(a, b), meta=_bool_meta,
            kind="pointwise-binary")
    op.opt_out("derivative", "a boolean result has no gradient")
    ordered = name in ("lt", "le", "gt", "ge")

    def compare(input, other, *, out=None):
        _check_tensor(input, name)
        a, b = binary_operands(input, other)
        if ordered and a._data.dtype.kind == "c":
            _check_dtype(f"{name}_cpu", a.dtype, "c")
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
       grad_name="WhereBackward0", kind="pointwise-ternary")
def where_op(xp, condition, a, b):
    return xp.where(condition, a, b)


@where_op.defderivative
def _where_derivative(ctx, grad):
    condition = ctx.inputs[0]
    zero = grad.new_zeros(())
    return None, where(condition, grad, zero), where(condition, zero, grad)


@where_op.defjvp
def _where_jvp(p, t, y):
    (c, a, b), (_, ta, tb) = p, t
    if ta is None:
        ta = a.new_zeros(())
    if tb is None:
        tb = b.new_zeros(())
    return where(c, ta, tb)


def where(condition, input=None, other=None, *, out=None):
    """Pick from ``input`` where ``condition`` holds, else from ``other`` (broadcast).

    With only ``condition``, the same as ``nonzero(condition, as_tuple=True)``.

    Example::

        >>> ember.where(ember.tensor([True, False]), 1.0, ember.tensor([5., 6.]))
        tensor([1., 6.])
    """
    _check_tensor(condition, "where", "condition")
    if input is None and other is None:
        from .index import nonzero

        return nonzero(condition, as_tuple=True)
    if condition._data.dtype != np.bool_:
        if condition._data.dtype != np.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {_short_name(condition.dtype)}")
        condition = condition.to(dt.bool)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        dtype = dt.result_type(input, other)
        input = scalar_tensor(input, dtype, condition._device)
        other = scalar_tensor(other, dtype, condition._device)
    tensors, _ = promote_operands(input, other)
    a, b = tensors
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


maximum_op = Op("maximum", lambda xp, a, b: xp.maximum(a, b), meta=_same_shape_meta,
                kind="pointwise-binary", fuse="maximum")
maximum_op.defderivative(_select_derivative(lambda a, b: a > b))
minimum_op = Op("minimum", lambda xp, a, b: xp.minimum(a, b), meta=_same_shape_meta,
                kind="pointwise-binary", fuse="minimum")
minimum_op.defderivative(_select_derivative(lambda a, b: a < b))


def _extremum(op, name):
    def fn(input, other, *, out=None):
        _check_tensor(input, name)
        _check_tensor(other, name, "other", 2)
        a, b = binary_operands(input, other)
        if a._data.dtype.kind == "c":
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        return write_out(op(a, b), out, name)
    fn.__name__ = fn.__qualname__ = name
    return fn


maximum = _extremum(maximum_op, "maximum")
maximum.__doc__ = """The elementwise maximum (NaN propagates).

    Example::

        >>> ember.maximum(ember.tensor([1, 5]), ember.tensor([3, 2]))
        tensor([3, 5])
    """
minimum = _extremum(minimum_op, "minimum")
minimum.__doc__ = """The elementwise minimum (NaN propagates).

    Example::

        >>> ember.minimum(ember.tensor([1, 5]), ember.tensor([3, 2]))
        tensor([1, 2])
    """


def _fselect_derivative(first_wins):
    def derivative(ctx, grad):
        a, b = ctx.inputs
        take_a = first_wins(a, b) | b.isnan()
        zero = grad.new_zeros(())
        return where(take_a, grad, zero), where(take_a, zero, grad)
    return derivative


fmax_op = Op("fmax", _low_precision(lambda xp, a, b: xp.fmax(a, b)), meta=_same_shape_meta,
             kind="pointwise-binary", fuse="fmax")
fmax_op.defderivative(_fselect_derivative(lambda a, b: a >= b))
fmin_op = Op("fmin", _low_precision(lambda xp, a, b: xp.fmin(a, b)), meta=_same_shape_meta,
             kind="pointwise-binary", fuse="fmin")
fmin_op.defderivative(_fselect_derivative(lambda a, b: a <= b))
fmax = _extremum(fmax_op, "fmax")
fmax.__doc__ = """The elementwise maximum, ignoring NaN (NaN only where both are NaN).

    Example::

        >>> ember.fmax(ember.tensor([1., float("nan")]), ember.tensor([3., 2.]))
        tensor([3., 2.])
    """
fmin = _extremum(fmin_op, "fmin")
fmin.__doc__ = """The elementwise minimum, ignoring NaN (NaN only where both are NaN).

    Example::

        >>> ember.fmin(ember.tensor([1., float("nan")]), ember.tensor([3., 2.]))
        tensor([1., 2.])
    """


# ---------------------------------------------------------------- clamp


def _clamp_kernel(xp, a, *bounds, has_min, has_max):
    result = a
    if has_min:
        result = xp.maximum(result, bounds[0])
    if has_max:
        result = xp.minimum(result, bounds[-1])
    if result is a:
        result = a.copy()
    return result


clamp_op = Op("clamp", _clamp_kernel, kind="pointwise-ternary",
              meta=lambda *arrays, **params: (broadcast_shapes(*(a.shape for a in arrays)),
                                              arrays[0].dtype))


@clamp_op.defderivative
def _clamp_derivative(ctx, grad, *, has_min, has_max):
    inputs = ctx.inputs
    x = inputs[0]
    zero = grad.new_zeros(())
    lo = inputs[1] if has_min else None
    hi = inputs[-1] if has_max else None
    needs = ctx.needs_input_grad
    grads = [None] * len(inputs)
    if needs[0]:
        keep = (x >= lo) if lo is not None else None
        if hi is not None:
            keep = (x <= hi) if keep is None else keep & (x <= hi)
        grads[0] = where(keep, grad, zero)
    if lo is not None and needs[1]:
        pick = x < lo
        if hi is not None:
            pick = pick & (lo < hi)
        grads[1] = where(pick, grad, zero)
    if hi is not None and needs[-1]:
        pick = x > hi
        if lo is not None:
            pick = pick | (hi < lo)
        grads[-1] = where(pick, grad, zero)
    return tuple(grads)


def clamp(input, min=None, max=None, *, out=None):
    """Limit every element to ``[min, max]``; either bound may be a number or a tensor.

    Where ``min > max`` every element becomes ``max``; a NaN bound or input gives NaN.

    Example::

        >>> ember.clamp(ember.tensor([-2., 0.5, 3.]), min=0, max=1)
        tensor([0.0000, 0.5000, 1.0000])
    """
    _check_tensor(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    bounds = [b for b in (min, max) if b is not None]
    dtype = dt.result_type(input, *bounds)
    if dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    if not all(isinstance(b, Tensor) for b in bounds):
        _check_dtype("clamp_min_scalar_cpu" if min is not None else "clamp_max_scalar_cpu",
                     dtype, "b")
    tensors, _ = promote_operands(input, *bounds, dtype=dtype)
    result = clamp_op(*tensors, has_min=min is not None, has_max=max is not None)
    return write_out(result, out, "clamp")


clip = clamp


def clamp_min(input, min, *, out=None):
    """``clamp(input, min=min)``.

    Example::

        >>> ember.clamp_min(ember.tensor([-1., 2.]), 0)
        tensor([0., 2.])
    """
    return clamp(input, min=min, out=out)


def clamp_max(input, max, *, out=None):
    """``clamp(input, max=max)``.

    Example::

        >>> ember.clamp_max(ember.tensor([-1., 2.]), 0)
        tensor([-1.,  0.])
    """
    return clamp(input, max=max, out=out)


# ---------------------------------------------------------------- unary math (table-driven)


def _unary_meta(out_dtype):
    if out_dtype == "bool":
        return _bool_meta
    if out_dtype == "real":
        return lambda a, **params: (a.shape, dt.from_numpy_dtype(a.dtype).to_real())
    return lambda a, **params: (a.shape, a.dtype)


def unary_op(name, kernel, derivative=None, *, save="input", out_dtype=None, low=True,
             grad_name=None, jvp=None, holomorphic=False, fast=None, fuse=None, autocast=None):
    """The :class:`Op` of a unary pointwise function.

    ``kernel(xp, a, **params)`` computes it (in float32 for float16/bfloat16 when ``low``);
    ``derivative(x, y, grad, **params)`` returns the input's gradient from the input ``x``,
    the output ``y`` (whichever ``save`` names; the other is None) and the output's gradient.
    ``jvp(x, y, tangent)`` (optional) is the forward-mode rule; without one it follows from the
    derivative (element-wise), which is exact for complex inputs too when ``holomorphic``.
    ``fast(x, y, grad, out)`` (optional) writes the same first-order derivative into ``out``
    with NumPy ufuncs (float32/float64 arrays of one shape): the backward uses it when
    :func:`_plain_backward` allows. ``fuse`` is the op's fusion rule (``ops/_fusion.py``),
    ``autocast`` its autocast policy (:class:`Op`).
    """
    run = _low_precision(kernel) if low else kernel
    if out_dtype is None:
        inner = run

        def run(xp, a, **params):  # NumPy/SciPy may widen (float32 -> float64): cast back
            result = inner(xp, a, **params)
            return result if result.dtype == a.dtype else result.astype(a.dtype)
    op = Op(name, run, meta=_unary_meta(out_dtype), save_inputs=save in ("input", "both"),
            save_output=save in ("output", "both"), grad_name=grad_name, kind="pointwise-unary",
            holomorphic=holomorphic, fuse=fuse, autocast=autocast)
    if out_dtype == "bool":
        op.opt_out("derivative", "a boolean result has no gradient")
    if jvp is not None:
        op.defjvp(lambda p, t, y: jvp(p[0], y, t[0]))
    if derivative == "none":
        op.defderivative(_not_differentiable(name))
    elif derivative is not None:
        def op_derivative(ctx, grad, **params):
            x = ctx.inputs[0] if op.save_inputs else None
            y = ctx.output if op.save_output else None
            saved = y if x is None else x
            if fast is not None and _plain_backward(grad, saved) and \
                    saved._data.shape == grad._data.shape:
                out = saved._device._xp.empty_like(saved._data)
                fast(None if x is None else x._data, None if y is None else y._data, grad._data,
                     out)
                return (Tensor._make(out, grad._device),)
            return (derivative(x, y, grad, **params),)
        op.defderivative(op_derivative)
    return op


def unary_operand(input, name, promote, deny, errors=None, cpu_name=None):
    """Check and promote the operand of a unary op as torch does."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if promote == "float":
        input = float_operand(input)
    if deny:
        _check_dtype(cpu_name or f"{name}_cpu", input.dtype, deny, errors)
    return input


def unary(name, kernel, derivative=None, *, promote="float", deny="", errors=None,
          cpu_name=None, save="input", out_dtype=None, low=True, doc, example, globs=None,
          methods=True, jvp=None, holomorphic=False, fast=None, fuse=None, autocast=None):
    """Declare a unary pointwise op and its public function, method and in-place method.

    ``promote="float"`` turns integer and bool inputs into the default float dtype; ``deny``
    lists the dtype groups the op refuses (see the module docstring).
    """
    op = unary_op(name, kernel, derivative, save=save, out_dtype=out_dtype, low=low, jvp=jvp,
                  holomorphic=holomorphic, fast=fast, fuse=fuse, autocast=autocast)
    if derivative is None and "f" in deny:
        op.opt_out("derivative", "integer and bool inputs only: no gradient")
    unchecked = () if "f" in deny else (_F32, _F64)  # dtypes unary_operand lets through as is

    def fn(input, *, out=None):
        if out is None and type(input) is Tensor and input._data.dtype in unchecked:
            return op(input)
        return write_out(op(unary_operand(input, name, promote, deny, errors, cpu_name)), out,
                         name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{doc}

    Example::

        >>> {example}
    """
    fn.op = op
    target = globals() if globs is None else globs
    target[name] = fn
    target["__all__"].append(name)
    if methods:
        _method(name, fn)
        _method(name + "_", _inplace_method(fn))
    return fn


def _inplace_method(fn):
    def method(self, *args, **kwargs):
        return inplace(fn, self, *args, **kwargs)
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place version of :func:`{fn.__name__}`."
    return method


def _alias(alias, name):
    globals()[alias] = globals()[name]
    __all__.append(alias)
    _method(alias, getattr(Tensor, name))
    _method(alias + "_", getattr(Tensor, name + "_"))


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


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
    """``1 / (1 + exp(-x))`` in the buffer (within rounding of the kernel's ``expit``)."""
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
      jvp=lambda x, y, t: t * y, autocast={"cuda": "fp32"})
unary("exp2", lambda xp, a: xp.exp2(a) if a.dtype.kind != "c" else xp.exp(a * _LN2),
      lambda x, y, g: g * (y * _LN2).conj(), save="output", fuse="exp2",
      doc="``2 ** input``, elementwise.",
      example="ember.exp2(ember.tensor([0., 3.]))\n        tensor([1., 8.])",
      holomorphic=True)
unary("expm1", lambda xp, a: xp.expm1(a), lambda x, y, g: g * (y + 1).conj(), save="output",
      fuse="expm1",
      doc="``exp(input) - 1``, accurate near zero.",
      example="ember.expm1(ember.tensor([0., 1.]))\n        tensor([0.0000, 1.7183])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("log", lambda xp, a: xp.log(a), lambda x, y, g: g / x.conj(), fast=_log_backward,
      fuse=Fusion("log", grad=_log_step_grad),
      doc="The natural logarithm, elementwise.",
      example="ember.log(ember.tensor([1., 2.]))\n        tensor([0.0000, 0.6931])",
      jvp=lambda x, y, t: t / x, autocast={"cuda": "fp32"})
unary("log2", lambda xp, a: xp.log2(a), lambda x, y, g: g / (x * _LN2).conj(),
      fuse="log2",
      doc="The base-2 logarithm, elementwise.",
      example="ember.log2(ember.tensor([1., 8.]))\n        tensor([0., 3.])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("log10", lambda xp, a: xp.log10(a), lambda x, y, g: g / (x * _LN10).conj(),
      fuse="log10",
      doc="The base-10 logarithm, elementwise.",
      example="ember.log10(ember.tensor([1., 100.]))\n        tensor([0., 2.])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("log1p", lambda xp, a: xp.log1p(a), lambda x, y, g: g / (x + 1).conj(),
      fuse="log1p",
      doc="``log(1 + input)``, accurate near zero.",
      example="ember.log1p(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("sqrt", lambda xp, a: xp.sqrt(a), lambda x, y, g: g / (2 * y.conj()), save="output",
      fuse=Fusion("sqrt", grad=_sqrt_step_grad),
      doc="The square root, elementwise.",
      example="ember.sqrt(ember.tensor([4., 9.]))\n        tensor([2., 3.])",
      jvp=lambda x, y, t: t / (2 * y))


def _rsqrt_kernel(xp, a):
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.reciprocal(xp.sqrt(a))


unary("rsqrt", _rsqrt_kernel, lambda x, y, g: g * (-0.5 * y ** 3).conj(), save="output",
      fuse=Fusion(_rsqrt_step, grad=_rsqrt_step_grad),
      doc="``1 / sqrt(input)``, elementwise.",
      example="ember.rsqrt(ember.tensor([4.]))\n        tensor([0.5000])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("sin", lambda xp, a: xp.sin(a), lambda x, y, g: g * x.cos().conj(), fast=_sin_backward,
      fuse=Fusion("sin", grad=_sin_step_grad),
      doc="The sine, elementwise.",
      example="ember.sin(ember.tensor([0.]))\n        tensor([0.])",
      jvp=lambda x, y, t: t * x.cos())
unary("cos", lambda xp, a: xp.cos(a), lambda x, y, g: -g * x.sin().conj(), fast=_cos_backward,
      fuse=Fusion("cos", grad=_cos_step_grad),
      doc="The cosine, elementwise.",
      example="ember.cos(ember.tensor([0.]))\n        tensor([1.])",
      jvp=lambda x, y, t: -t * x.sin())
unary("tan", lambda xp, a: xp.tan(a), lambda x, y, g: g * (1 + y * y).conj(), save="output",
      fuse="tan",
      doc="The tangent, elementwise.",
      example="ember.tan(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("asin", lambda xp, a: xp.arcsin(a), lambda x, y, g: g * (1 - x * x).rsqrt().conj(),
      fuse="arcsin",
      doc="The inverse sine, elementwise.",
      example="ember.asin(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("acos", lambda xp, a: xp.arccos(a), lambda x, y, g: -g * (1 - x * x).rsqrt().conj(),
      fuse="arccos",
      doc="The inverse cosine, elementwise.",
      example="ember.acos(ember.tensor([1.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("atan", lambda xp, a: xp.arctan(a), lambda x, y, g: g / (x * x + 1).conj(),
      fuse="arctan",
      doc="The inverse tangent, elementwise.",
      example="ember.atan(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True)
unary("sinh", lambda xp, a: xp.sinh(a), lambda x, y, g: g * x.cosh().conj(),
      fuse="sinh",
      doc="The hyperbolic sine, elementwise.",
      example="ember.sinh(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("cosh", lambda xp, a: xp.cosh(a), lambda x, y, g: g * x.sinh().conj(),
      fuse="cosh",
      doc="The hyperbolic cosine, elementwise.",
      example="ember.cosh(ember.tensor([0.]))\n        tensor([1.])",
      holomorphic=True, autocast={"cuda": "fp32"})
unary("tanh", lambda xp, a: xp.tanh(a), lambda x, y, g: g * (1 - y * y).conj(), save="output",
      fuse=Fusion("tanh", grad=_tanh_step_grad),
      fast=_tanh_backward,
      doc="The hyperbolic tangent, elementwise.",
      example="ember.tanh(ember.tensor([0.]))\n        tensor([0.])",
      jvp=lambda x, y, t: t * (1 - y * y))
unary("asinh", lambda xp, a: xp.arcsinh(a), lambda x, y, g: g * (x * x + 1).rsqrt().conj(),
      fuse="arcsinh",
      doc="The inverse hyperbolic sine, elementwise.",
      example="ember.asinh(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True)
unary("acosh", lambda xp, a: xp.arccosh(a), lambda x, y, g: g * (x * x - 1).rsqrt().conj(),
      fuse="arccosh",
      doc="The inverse hyperbolic cosine, elementwise.",
      example="ember.acosh(ember.tensor([1.]))\n        tensor([0.])",
      holomorphic=True)
unary("atanh", lambda xp, a: xp.arctanh(a), lambda x, y, g: g / (1 - x * x).conj(),
      fuse="arctanh",
      doc="The inverse hyperbolic tangent, elementwise.",
      example="ember.atanh(ember.tensor([0.]))\n        tensor([0.])",
      holomorphic=True)
for _alias_name, _name in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                           ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
    _alias(_alias_name, _name)


def _sigmoid_kernel(xp, a):
    if a.dtype.kind == "c":
        return 1 / (1 + xp.exp(-a))
    return _special(xp).expit(a)


unary("sigmoid", _sigmoid_kernel, lambda x, y, g: g * (y * (1 - y)).conj(), save="output",
      fuse=Fusion(_sigmoid_step, grad=_sigmoid_step_grad),
      fast=_sigmoid_backward,
      doc="The logistic function ``1 / (1 + exp(-input))``.",
      example="ember.sigmoid(ember.tensor([0.]))\n        tensor([0.5000])",
      holomorphic=True)


def _erf_kernel(xp, a):
    return _special(xp).erf(a)


unary("erf", _erf_kernel, lambda x, y, g: g * (2 / math.sqrt(math.pi)) * (-x * x).exp(),
      deny="c", cpu_name="erf_vml_cpu", doc="The error function, elementwise.",
      example="ember.erf(ember.tensor([0.]))\n        tensor([0.])")
unary("erfc", lambda xp, a: _special(xp).erfc(a),
      lambda x, y, g: g * (-2 / math.sqrt(math.pi)) * (-x * x).exp(),
      deny="c", cpu_name="erfc_vml_cpu", doc="The complementary error function ``1 - erf``.",
      example="ember.erfc(ember.tensor([0.]))\n        tensor([1.])")
unary("erfinv", lambda xp, a: _special(xp).erfinv(a),
      lambda x, y, g: g * (math.sqrt(math.pi) / 2) * (y * y).exp(), save="output",
      deny="c", cpu_name="erfinv_vml_cpu", doc="The inverse error function, elementwise.",
      example="ember.erfinv(ember.tensor([0.]))\n        tensor([0.])", autocast={"cuda": "fp32"})
def _lgamma_kernel(xp, a):
    result = _special(xp).gammaln(a)
    return xp.where(a == -np.inf, a.dtype.type(np.inf), result)


unary("lgamma", _lgamma_kernel, lambda x, y, g: g * x.digamma(),
      deny="c", cpu_name="lgamma_vml_cpu",
      doc="The log of the absolute value of the gamma function.",
      example="ember.lgamma(ember.tensor([1., 3.]))\n        tensor([0.0000, 0.6931])")
unary("digamma", lambda xp, a: _special(xp).psi(a), lambda x, y, g: g * polygamma(1, x),
      deny="c", cpu_name="digamma",
      doc="The logarithmic derivative of the gamma function.",
      example="ember.digamma(ember.tensor([1.]))\n        tensor([-0.5772])")
unary("i0", lambda xp, a: _special(xp).i0(a), lambda x, y, g: g * _i1(x),
      deny="c", cpu_name="i0_vml_cpu",
      doc="The modified Bessel function of the first kind, order 0.",
      example="ember.i0(ember.tensor([0.]))\n        tensor([1.])")


def _i1(x):
    from ..special import i1

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
                        lambda x, y, g, *, n: g * polygamma(n + 1, x))


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


def mvlgamma(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension ``p``.

    Example::

        >>> ember.mvlgamma(ember.tensor([2.5]), 2)
        tensor([1.2347])
    """
    return write_out(_mvlgamma(input, p), out, "mvlgamma")


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
      example="ember.sign(ember.tensor([-2., 0., 3.]))\n        tensor([-1.,  0.,  1.])")


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
      example="ember.sgn(ember.tensor([-2., 0., 3.]))\n        tensor([-1.,  0.,  1.])")


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
              "        tensor([ True, False,  True])")


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
      example="ember.floor(ember.tensor([-1.5, 1.5]))\n        tensor([-2.,  1.])")
unary("ceil", _rounding(lambda xp, a: xp.ceil(a)), lambda x, y, g: _zeros_like(g),
      fuse="ceil",
      promote="keep", deny="bc", errors=_round_errors("ceil"), cpu_name="ceil_vml_cpu",
      save="none", doc="The smallest integer not below each element.",
      example="ember.ceil(ember.tensor([-1.5, 1.5]))\n        tensor([-1.,  2.])")
unary("trunc", _rounding(lambda xp, a: xp.trunc(a)), lambda x, y, g: _zeros_like(g),
      fuse="trunc",
      promote="keep", deny="bc", errors=_round_errors("trunc"), cpu_name="trunc_vml_cpu",
      save="none", doc="Each element rounded towards zero.",
      example="ember.trunc(ember.tensor([-1.5, 1.5]))\n        tensor([-1.,  1.])")
_alias("fix", "trunc")
unary("frac", lambda xp, a: a - xp.trunc(a), lambda x, y, g: g, promote="keep", deny="bic",
      save="none", doc="The fractional part ``input - trunc(input)``.",
      example="ember.frac(ember.tensor([-1.5, 2.25]))\n        tensor([-0.5000,  0.2500])")


def _round_kernel(xp, a, *, decimals=0):
    if a.dtype.kind in "iu":
        return a.copy()
    if decimals == 0:
        return xp.rint(a)
    scale = a.dtype.type(10.0 ** builtins.abs(decimals))
    if decimals > 0:
        return xp.rint(a * scale) / scale
    return xp.rint(a / scale) * scale


round_op = unary_op("round", _round_kernel, lambda x, y, g, **params: _zeros_like(g),
                    save="none")


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


# ---------------------------------------------------------------- more unary math

unary("reciprocal", lambda xp, a: xp.reciprocal(a), lambda x, y, g: -g * (y * y).conj(),
      fuse=Fusion("reciprocal", grad=_reciprocal_step_grad),
      save="output", doc="``1 / input``, elementwise.",
      example="ember.reciprocal(ember.tensor([2., 4.]))\n        tensor([0.5000, 0.2500])",
      holomorphic=True, autocast={"cuda": "fp32"})


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
                         lambda x, y, g, **params: g * x.isfinite(), low=False)


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


def _classify(name, real_fn, complex_fn, doc, example, deny="", errors=None):
    def kernel(xp, a):
        if a.dtype.kind == "c":
            return complex_fn(xp, a)
        if a.dtype.kind in "biu":
            return real_fn(xp, None, a)
        return real_fn(xp, a, a)
    unary(name, kernel, promote="keep", out_dtype="bool", low=False, deny=deny, errors=errors,
          doc=doc, example=example, methods=False)
    _method(name, globals()[name])


def _false(xp, a):
    return xp.zeros(a.shape, dtype=np.bool_)


def _true(xp, a):
    return xp.ones(a.shape, dtype=np.bool_)


_classify("isnan", lambda xp, f, a: xp.isnan(f) if f is not None else _false(xp, a),
          lambda xp, a: xp.isnan(a), "True where the element is NaN.",
          "ember.isnan(ember.tensor([1., float('nan')]))\n        tensor([False,  True])")
_classify("isinf", lambda xp, f, a: xp.isinf(f) if f is not None else _false(xp, a),
          lambda xp, a: xp.isinf(a.real) | xp.isinf(a.imag), "True where the element is +-inf.",
          "ember.isinf(ember.tensor([1., float('inf')]))\n        tensor([False,  True])")
_classify("isposinf", lambda xp, f, a: f == np.inf if f is not None else _false(xp, a),
          None, "True where the element is +inf.",
          "ember.isposinf(ember.tensor([1., float('inf')]))\n        tensor([False,  True])",
          deny="c", errors={"c": (RuntimeError, "isposinf does not support complex inputs.")})
_classify("isneginf", lambda xp, f, a: f == -np.inf if f is not None else _false(xp, a),
          None, "True where the element is -inf.",
          "ember.isneginf(ember.tensor([1., -float('inf')]))\n        tensor([False,  True])",
          deny="c", errors={"c": (RuntimeError, "isneginf does not support complex inputs.")})
_classify("isfinite", lambda xp, f, a: xp.isfinite(f) if f is not None else _true(xp, a),
          lambda xp, a: xp.isfinite(a.real) & xp.isfinite(a.imag),
          "True where the element is neither NaN nor infinite.",
          "ember.isfinite(ember.tensor([1., float('inf')]))\n        tensor([ True, False])")
_classify("isreal", lambda xp, f, a: _true(xp, a), lambda xp, a: a.imag == 0,
          "True where the element has no imaginary part.",
          "ember.isreal(ember.tensor([1 + 0j, 1j]))\n        tensor([ True, False])")


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
      example="ember.angle(ember.tensor([-1., 2.]))\n        tensor([3.1416, 0.0000])")
unary("deg2rad", lambda xp, a: a * a.dtype.type(math.pi / 180),
      lambda x, y, g: g * (math.pi / 180), deny="c", save="none",
      errors={"c": (RuntimeError, "deg2rad is not supported for complex tensors.")},
      doc="Degrees to radians.",
      example="ember.deg2rad(ember.tensor([180.]))\n        tensor([3.1416])")
unary("rad2deg", lambda xp, a: a * a.dtype.type(180 / math.pi),
      lambda x, y, g: g * (180 / math.pi), deny="c", save="none",
      errors={"c": (RuntimeError, "rad2deg is not supported for complex tensors.")},
      doc="Radians to degrees.",
      example="ember.rad2deg(ember.tensor([3.14159265]))\n        tensor([180.])")


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
      holomorphic=True)


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
      example="ember.relu(ember.tensor([-1., 2.]))\n        tensor([0., 2.])")
unary("abs", lambda xp, a: xp.abs(a), lambda x, y, g: g * x.sgn(), promote="keep", deny="b",
      fuse=Fusion("absolute", grad=_abs_step_grad),
      out_dtype="real", low=False, doc="The absolute value, elementwise.",
      example="ember.abs(ember.tensor([-1, 2]))\n        tensor([1, 2])",
      jvp=lambda x, y, t: (t * x.sgn().conj()).real if x.is_complex() else t * x.sgn())


def _abs_(self):
    if self._data.dtype.kind == "c":
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return inplace(abs, self)


_method("abs_", _abs_)
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


logit_op = unary_op("logit", _logit_kernel, _logit_derivative, low=False)


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]``.

    Example::

        >>> ember.logit(ember.tensor([0.5, 0.75]))
        tensor([0.0000, 1.0986])
    """
    x = unary_operand(input, "logit", "float", "c")
    return write_out(logit_op(x, eps=None if eps is None else float(eps)), out, "logit")


# ---------------------------------------------------------------- binary math (table-driven)


def binary(name, kernel, derivative=None, *, promote="keep", deny="", errors=None,
           cpu_name=None, out_dtype=None, low=True, scalar_input=False, scalar_other=True,
           other_name="other", doc, example, inplace_method=True, save="input", fuse=None,
           autocast=None):
    """Declare a binary pointwise op, its public function ``name(input, other, *, out=None)``,
    its method and in-place method.

    ``derivative(ctx, grad)`` follows :meth:`Op.defderivative` (or ``"none"`` for an op torch
    does not differentiate); ``save`` says what it reads: the inputs (``ctx.inputs``), the
    output (``ctx.output``) or ``"both"``. ``promote="float"`` turns integer results into the
    default float dtype; ``scalar_input``/``scalar_other`` say where torch accepts a Python
    number. ``fuse`` is the op's fusion rule (``ops/_fusion.py``), ``autocast`` its autocast
    policy (:class:`Op`).
    """
    op = Op(name, _low_precision(kernel) if low else kernel,
            meta=_bool_meta if out_dtype == "bool" else _same_shape_meta,
            save_inputs=save in ("input", "both"), save_output=save in ("output", "both"),
            kind="pointwise-binary", fuse=fuse, autocast=autocast)
    if derivative == "none":
        op.defderivative(_not_differentiable(name))
    elif derivative is not None:
        op.defderivative(derivative)
    elif out_dtype == "bool":
        op.opt_out("derivative", "a boolean result has no gradient")
    elif "f" in deny:
        op.opt_out("derivative", "integer and bool inputs only: no gradient")

    def fn(input, other, *, out=None):
        if not scalar_input or not _is_scalar(input):
            _check_tensor(input, name)
        if not scalar_other or not _is_scalar(other):
            _check_tensor(other, name, other_name, 2)
        dtype = dt.result_type(input, other)
        if promote == "float" and dtype.category <= dt._INT:
            dtype = dt.get_default_dtype()
        if deny:
            _check_dtype(cpu_name or f"{name}_cpu", dtype, deny, errors)
        a, b = binary_operands(input, other, dtype=dtype)
        return write_out(op(a, b), out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{doc}

    Example::

        >>> {example}
    """
    fn.op = op
    globals()[name] = fn
    if name not in __all__:
        __all__.append(name)
    _method(name, fn)
    if inplace_method:
        _method(name + "_", _inplace_method(fn))
    return fn


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


remainder = binary("remainder", _remainder_kernel, _remainder_derivative, deny="bc",
                   scalar_input=True,
       doc="The remainder of ``input / other`` with the sign of ``other`` (Python's ``%``).",
       example="ember.remainder(ember.tensor([-3, 3]), 2)\n        tensor([1, 1])")
fmod = binary("fmod", _fmod_kernel, _fmod_derivative, deny="bc",
       doc="The remainder of ``input / other`` with the sign of ``input`` (C's ``fmod``).",
       example="ember.fmod(ember.tensor([-3, 3]), 2)\n        tensor([-1,  1])")


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
       example="ember.atan2(ember.tensor([1.]), ember.tensor([1.]))\n        tensor([0.7854])")
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
       example="ember.hypot(ember.tensor([3.]), ember.tensor([4.]))\n        tensor([5.])")


def _copysign_derivative(ctx, grad):
    a, b = ctx.inputs
    result = copysign(a, b)
    ratio = where(a == 0, 0.0, result / a)
    return grad * ratio, (_zeros_like(b) if ctx.needs_input_grad[1] else None)


copysign = binary("copysign", lambda xp, a, b: xp.copysign(a, b), _copysign_derivative,
                  fuse="copysign",
                  promote="float",
       deny="c", doc="The magnitude of ``input`` with the sign of ``other``.",
       example="ember.copysign(ember.tensor([1., 2.]), -1.)\n        tensor([-1., -2.])")
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
               "        tensor([True])")


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
               "        tensor([0.6931])")
binary("logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b), _logaddexp2_derivative, deny="bic",
       fuse="logaddexp2",
       scalar_other=False, doc="``log2(2 ** input + 2 ** other)``, computed stably.",
       example="ember.logaddexp2(ember.tensor([0.]), ember.tensor([0.]))\n"
               "        tensor([1.])")


def _xlogy_kernel(xp, a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        result = xp.where(a == 0, a.dtype.type(0), a * xp.log(b))
    return xp.where(xp.isnan(b), b, result)


def _xlogy_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    grad_a = grad_b = None
    if need_a:
        grad_a = where((a == 0) & (b <= 0), 0.0, xlogy(grad, b))
    if need_b:
        grad_b = grad * a / b
    return grad_a, grad_b


xlogy = binary("xlogy", _xlogy_kernel, _xlogy_derivative, promote="float", deny="c",
       scalar_input=True, doc="``input * log(other)``, 0 where ``input`` is 0 (unless "
       "``other`` is NaN).",
       example="ember.xlogy(ember.tensor([0., 2.]), ember.tensor([0., 1.]))\n"
               "        tensor([0., 0.])")


def _heaviside_kernel(xp, a, b):
    return xp.where(a == 0, b, (a > 0).astype(a.dtype))


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


heaviside_op = Op("heaviside", _heaviside_kernel, meta=_same_shape_meta, kind="pointwise-binary")
heaviside_op.defderivative(_not_differentiable("heaviside"))
_method("heaviside", heaviside)
_method("heaviside_", _inplace_method(heaviside))


# ---------------------------------------------------------------- logical and bitwise


def _logical(name, ufunc):
    def kernel(xp, a, b):
        return getattr(xp, ufunc)(a, b)
    op = Op(name, kernel, meta=_bool_meta, kind="pointwise-binary")
    op.opt_out("derivative", "a boolean result has no gradient")

    def fn(input, other, *, out=None):
        _check_tensor(input, name)
        _check_tensor(other, name, "other", 2)
        broadcast_shapes(input._data.shape, other._data.shape)
        if input._device is not other._device:
            (input, other), _ = promote_operands(input, other)
        return write_out(op(input, other), out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""Elementwise logical {name[8:].upper()} of the truth of each element (nonzero
    is true), as a bool tensor.

    Example::

        >>> ember.{name}(ember.tensor([True, False]), ember.tensor([True, True]))
        tensor({[getattr(np, ufunc)(True, True).item(), getattr(np, ufunc)(False, True).item()]})
    """
    globals()[name] = fn
    __all__.append(name)
    _method(name, fn)
    _method(name + "_", _inplace_method(fn))


_logical("logical_and", "logical_and")
_logical("logical_or", "logical_or")
_logical("logical_xor", "logical_xor")
unary("logical_not", lambda xp, a: xp.logical_not(a), promote="keep", out_dtype="bool",
      low=False, doc="Elementwise logical NOT (zero is false), as a bool tensor.",
      example="ember.logical_not(ember.tensor([0, 1]))\n        tensor([ True, False])")

_BITWISE = {"bitwise_and": ("bitwise_and", "AND"), "bitwise_or": ("bitwise_or", "OR"),
            "bitwise_xor": ("bitwise_xor", "XOR")}
for _name, (_ufunc, _word) in _BITWISE.items():
    binary(_name, (lambda u: lambda xp, a, b: getattr(xp, u)(a, b))(_ufunc), deny="hfc",
           low=False, scalar_input=True,
           doc=f"Elementwise bitwise {_word} of integer or bool tensors.",
           example=f"ember.{_name}(ember.tensor([12]), 10)\n        "
                   f"tensor([{getattr(np, _ufunc)(12, 10)}])")
bitwise_not = unary("bitwise_not", lambda xp, a: xp.invert(a), promote="keep", deny="hfc",
                    low=False,
      doc="Elementwise bitwise NOT of an integer or bool tensor.",
      example="ember.bitwise_not(ember.tensor([0, 5]))\n        tensor([-1, -6])")


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
       example="ember.bitwise_left_shift(ember.tensor([1, 3]), 2)\n        tensor([ 4, 12])")
bitwise_right_shift = binary("bitwise_right_shift", _shift_kernel(False), deny="bhfc",
                             cpu_name="rshift_cpu",
       low=False, scalar_input=True, doc="``input >> other``, arithmetic for signed integers.",
       example="ember.bitwise_right_shift(ember.tensor([-8, 8]), 2)\n        tensor([-2,  2])")


# ---------------------------------------------------------------- lerp, addcmul, addcdiv


def _lerp_kernel(xp, start, end, weight):
    difference = end - start
    return xp.where(xp.abs(weight) < 0.5, start + weight * difference,
                    end - difference * (1 - weight))


lerp_op = Op("lerp", _low_precision(_lerp_kernel), kind="pointwise-ternary",
             meta=lambda s, e, w: (broadcast_shapes(s.shape, e.shape, w.shape), s.dtype),
             grad_name="LerpBackward1")


@lerp_op.defderivative
def _lerp_derivative(ctx, grad):
    start, end, weight = ctx.inputs
    need_s, need_e, need_w = ctx.needs_input_grad
    return (grad * (1 - weight).conj() if need_s else None,
            grad * weight.conj() if need_e else None,
            grad * (end - start).conj() if need_w else None)


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


# ---------------------------------------------------------------- closeness, equality


def _isclose_kernel(xp, a, b, *, rtol, atol, equal_nan):
    close = a == b
    if equal_nan and a.dtype.kind in "fcV":
        close = close | (xp.isnan(a) & xp.isnan(b))
    if a.dtype.kind == "b" or (rtol == 0 and atol == 0):
        return close
    if a.dtype.kind in "iu":
        a = a.astype(dt.get_default_dtype().np)
        b = b.astype(a.dtype)
    elif a.dtype in _LOW:
        a, b = a.astype(_F32), b.astype(_F32)
    with np.errstate(invalid="ignore", over="ignore"):
        difference = xp.abs(a - b)
        allowed = atol + rtol * xp.abs(b)
        return close | (xp.isfinite(difference) & (difference <= allowed))


isclose_op = Op("isclose", _isclose_kernel, meta=_bool_meta, kind="pointwise-binary")
isclose_op.opt_out("derivative", "a boolean result has no gradient")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether each pair of elements is close: ``|input - other| <= atol + rtol * |other|``.

    Example::

        >>> ember.isclose(ember.tensor([1., 2.]), ember.tensor([1. + 1e-9, 2.1]))
        tensor([ True, False])
    """
    _check_tensor(input, "isclose")
    _check_tensor(other, "isclose", "other", 2)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{_short_name(input.dtype)} did not match "
                           f"{_short_name(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b = binary_operands(input, other)
    return isclose_op(a, b, rtol=float(rtol), atol=float(atol), equal_nan=bool(equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every pair of elements is close (see :func:`isclose`).

    Example::

        >>> ember.allclose(ember.tensor([1., 2.]), ember.tensor([1., 2. + 1e-7]))
        True
    """
    result = isclose(input, other, rtol, atol, equal_nan)
    if result._device is META:
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
    return builtins.bool(result._data.all())


def equal(input, other):
    """True when both tensors have the same shape and the same values.

    Example::

        >>> ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2]))
        True
    """
    _check_tensor(input, "equal")
    _check_tensor(other, "equal", "other", 2)
    if input._data.shape != other._data.shape:
        return False
    a, b = binary_operands(input, other)
    if a._device is META:
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
    return builtins.bool((a._data == b._data).all())


# ---------------------------------------------------------------- methods and dunders


def _reflected(fn):
    def method(self, other):
        return fn(other, self)
    method.__name__ = f"__r{fn.__name__}__"
    return method




def _invert(self):
    if self._data.dtype.kind not in "biu":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(self)


def _abs_dunder(self):
    return abs(self)


for _name in ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
              "neg", "negative", "pow", "eq", "ne", "lt", "le", "gt", "ge", "greater",
              "greater_equal", "less", "less_equal", "not_equal", "maximum", "minimum",
              "conj", "clamp", "clip", "clamp_min", "clamp_max", "float_power", "floor_divide",
              "fmax", "fmin", "lerp", "addcmul", "addcdiv", "isclose", "allclose", "equal",
              "logit", "polygamma", "mvlgamma", "round", "nan_to_num", "positive", "square",
              "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg"):
    _method(_name, globals()[_name])
for _name in ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
              "neg", "negative", "pow", "clamp", "clip", "clamp_min", "clamp_max",
              "float_power", "floor_divide", "lerp", "addcmul", "addcdiv", "logit", "mvlgamma",
              "round", "nan_to_num", "square", "eq", "ne", "lt", "le", "gt", "ge", "greater",
              "greater_equal", "less", "less_equal", "not_equal"):
    _method(_name + "_", _inplace_method(globals()[_name]))


def _direct_inplace(ufunc_name, general):
    """``x.add_(y)``-style methods that write straight into ``x`` with the ufunc's ``out=``.

    The direct path is taken only when nothing needs recording (no grad, or no_grad; views
    under grad mode always take the general path, which brings their history up to date and
    refuses what torch refuses), ``x`` is floating, the operand is a tensor of the same dtype
    and device or a real Python number, and it broadcasts to ``x``'s shape: the
    optimiser-update case. Everything else goes through the general in-place path, which
    computes out of place and writes back.
    """
    def method(self, other, **kwargs):
        data = self._data
        if (not kwargs and data.dtype.kind == "f" and self._device._xp is not None
                and _fw_state.level is None
                and _trace_state.tracer is None  # ember.jit records
                and not (_grad_state.enabled and (self._rg or self._base is not None
                                                  or getattr(other, "_rg", False)))):
            if isinstance(other, Tensor):
                operand = other._data
                ok = (other._device is self._device and operand.dtype == data.dtype
                      and (operand.shape == data.shape
                           or np.broadcast_shapes(operand.shape, data.shape) == data.shape))
            else:
                operand = other
                ok = type(other) is float or type(other) is int
            if ok:
                check_writable(self)  # may swap in a writable alias of a read-only view
                data = self._data
                getattr(self._device._xp, ufunc_name)(data, operand, out=data)
                self._vc[0] += 1
                return self
        return general(self, other, **kwargs)
    method.__name__ = general.__name__
    method.__doc__ = general.__doc__
    return method


for _name, _ufunc in (("add_", "add"), ("sub_", "subtract"), ("mul_", "multiply"),
                      ("div_", "true_divide")):
    _method(_name, _direct_inplace(_ufunc, getattr(Tensor, _name)))



def _float_power_(self, exponent):
    complex_ = self.dtype.is_complex or (exponent.dtype.is_complex if isinstance(
        exponent, Tensor) else isinstance(exponent, complex))
    dtype = dt.complex128 if complex_ else dt.float64
    if self.dtype is not dtype:
        raise RuntimeError(f"the base given to float_power_ has dtype {_short_name(self.dtype)} "
                           f"but the operation's result requires dtype {_short_name(dtype)}")
    return inplace(float_power, self, exponent)


Tensor.float_power_ = _float_power_
Tensor.polygamma = lambda self, n: polygamma(n, self)
Tensor.polygamma_ = lambda self, n: inplace(lambda s: polygamma(n, s), self)
Tensor.real = property(real)
Tensor.imag = property(imag)
Tensor.where = lambda self, condition, other: where(condition, self, other)
# the arithmetic dunders that call their primitive directly when the operands need no
# promotion (``operator_method``): name -> (primitive, whether the operands swap)
_DIRECT_PRIMITIVES = {
    "add": (add_op, False), "radd": (add_op, False), "sub": (sub_op, False),
    "rsub": (sub_op, True), "mul": (mul_op, False), "rmul": (mul_op, False),
    "truediv": (div_op, False), "rtruediv": (div_op, True), "rdiv": (div_op, True),
    "pow": (pow_op, False), "rpow": (pow_op, True)}
for _name, _fn in (
        ("add", add), ("radd", add), ("iadd", Tensor.add_), ("sub", sub),
        ("rsub", _reflected(sub)), ("isub", Tensor.sub_), ("mul", mul), ("rmul", mul),
        ("imul", Tensor.mul_), ("truediv", div), ("rtruediv", _reflected(div)),
        ("rdiv", _reflected(div)), ("itruediv", Tensor.div_), ("floordiv", floor_divide),
        ("rfloordiv", _reflected(floor_divide)), ("ifloordiv", Tensor.floor_divide_),
        ("mod", remainder), ("rmod", _reflected(remainder)), ("imod", Tensor.remainder_),
        ("pow", pow), ("rpow", _reflected(pow)), ("ipow", Tensor.pow_),
        ("and", Tensor.bitwise_and), ("rand", Tensor.bitwise_and),
        ("iand", Tensor.bitwise_and_), ("or", Tensor.bitwise_or), ("ror", Tensor.bitwise_or),
        ("ior", Tensor.bitwise_or_), ("xor", Tensor.bitwise_xor), ("rxor", Tensor.bitwise_xor),
        ("ixor", Tensor.bitwise_xor_), ("lshift", bitwise_left_shift),
        ("rlshift", _reflected(bitwise_left_shift)), ("ilshift", Tensor.bitwise_left_shift_),
        ("rshift", bitwise_right_shift), ("rrshift", _reflected(bitwise_right_shift)),
        ("irshift", Tensor.bitwise_right_shift_), ("lt", lt), ("le", le), ("gt", gt),
        ("ge", ge)):
    _op, _reflects = _DIRECT_PRIMITIVES.get(_name, (None, False))
    setattr(Tensor, f"__{_name}__", operator_method(_fn, f"__{_name}__", op=_op,
                                                    reflected=_reflects))
Tensor.__eq__ = operator_method(eq, "__eq__", arrays_as_tensors=True)
Tensor.__ne__ = operator_method(ne, "__ne__")
Tensor.__invert__ = _invert
Tensor.__abs__ = _abs_dunder
Tensor.__neg__ = neg
Tensor.__pos__ = positive
Tensor.__hash__ = object.__hash__

del _name, _fn, _ufunc, _word, _alias_name, _op, _reflects


# ================================================================ toplevel-helper section:
# isin, gcd/lcm, ldexp, frexp, rsub (torch names common programs use)

from .. import return_types as _return_types  # noqa: E402

__all__ += ["isin", "ldexp", "frexp", "rsub"]

binary("gcd", lambda xp, a, b: xp.gcd(a, b), "none", deny="bhfc", cpu_name="gcd_cpu",
       scalar_other=False, low=False,
       doc="The greatest common divisor of ``input`` and ``other``, elementwise (integers; "
           "never negative, ``gcd(0, 0) = 0``).",
       example="ember.gcd(ember.tensor([12, -18]), ember.tensor([8, 12]))\n"
               "        tensor([4, 6])")
binary("lcm", lambda xp, a, b: xp.lcm(a, b), "none", deny="bhfc", cpu_name="lcm_cpu",
       scalar_other=False, low=False,
       doc="The least common multiple of ``input`` and ``other``, elementwise (integers; "
           "never negative, 0 when either is 0; wraps on overflow as torch).",
       example="ember.lcm(ember.tensor([4, 6]), ember.tensor([6, 8]))\n"
               "        tensor([12, 24])")


@defop("isin", meta=lambda a, b, **_: (a.shape, dt.bool), save_inputs=False)
def isin_op(xp, elements, test_elements, *, invert):
    return xp.isin(elements, test_elements, invert=invert)


isin_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
isin_op.opt_out("derivative", "a boolean result has no gradient")


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """For each element of ``elements``, whether it occurs in ``test_elements`` (either may be
    a number; compared in their promoted dtype). ``invert`` negates the answer.

    Example::

        >>> ember.isin(ember.tensor([1, 2, 3]), ember.tensor([2, 5]))
        tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__})")
    dtype = dt.result_type(elements, test_elements)
    for x in (elements, test_elements):
        if isinstance(x, Tensor) and x.dtype.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{_short_name(x.dtype)}")
    (a, b), _ = promote_operands(elements, test_elements, dtype=dtype)
    return isin_op(a, b, invert=builtins.bool(invert))


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
    result = input.to(dtype) * other.to(dtype).exp2()
    return write_out(result, out, "ldexp")


Tensor.ldexp = ldexp


def _ldexp_(self, other):
    return inplace(ldexp, self, other)


_ldexp_.__name__, _ldexp_.__doc__ = "ldexp_", "In-place version of :func:`ldexp`."
Tensor.ldexp_ = _ldexp_


_frexp_result = _return_types.frexp
_return_types.frexp = _frexp_result


@defop("frexp", meta=lambda a: ((a.shape, a.dtype), (a.shape, np.dtype(np.int32))),
       save_inputs=False, save_output=True, multi_output=True, differentiable_outputs=(0,),
       kind="pointwise-unary")
def frexp_op(xp, a):
    if a.dtype in _LOW:
        mantissa, exponent = xp.frexp(a.astype(_F32))
        return mantissa.astype(a.dtype), exponent.astype(np.int32)
    mantissa, exponent = xp.frexp(a)
    return mantissa, exponent.astype(np.int32)


frexp_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@frexp_op.defderivative
def _frexp_derivative(ctx, grad, grad_exponent):
    exponent = ctx.output[1]
    return (grad / exponent.to(grad.dtype).exp2(),)


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


Tensor.frexp = frexp


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``: subtraction with the operands reversed.

    Example::

        >>> ember.rsub(ember.tensor([1, 2]), 5)
        tensor([4, 3])
    """
    _check_tensor(input, "rsub")
    return sub(other, input, alpha=alpha)
