"""Comparisons and logic: eq/ne/lt/le/gt/ge, where, maximum/minimum/fmax/fmin, clamp,
isclose/allclose/equal, logical_and/or/xor/not and isin."""

from __future__ import annotations

import builtins

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import Tensor
from .._fusion import BOOL_RESULT, COMPOSITE_KERNEL, decline
from .._methods import tensor_method
from .._operands import (
    binary_operands,
    broadcast_shapes,
    promote_operands,
    scalar_tensor,
)
from .._registry import Op, _short_name, defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._declare import (
    _F32,
    _LOW,
    _bool_meta,
    _check_dtype,
    _check_tensor,
    _inplace_method,
    _low_precision,
    _same_shape_meta,
    declarers,
)

__all__ = ["where", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
           "less_equal", "not_equal", "maximum", "minimum", "clamp", "clip", "clamp_min",
           "clamp_max", "fmax", "fmin", "isclose", "allclose", "equal", "isin"]
unary, binary, _alias = declarers(globals())


# ---------------------------------------------------------------- comparisons


def _comparison(name, ufunc, onnx):
    op = Op(name, lambda xp, a, b: getattr(xp, ufunc)(a, b), meta=_bool_meta,
            kind="pointwise-binary", onnx=onnx)
    op.opt_out("derivative", "a boolean result has no gradient")
    op.opt_out("fuse", BOOL_RESULT)
    ordered = name in ("lt", "le", "gt", "ge")

    def compare(input, other, *, out=None):
        _check_tensor(input, name)
        a, b = binary_operands(input, other)
        if ordered and a._data.dtype.kind == "c":
            _check_dtype(f"{name}_cpu", a.dtype, "c")
        return write_out(op(a, b), out, name)

    compare.__name__ = compare.__qualname__ = name
    compare.bool_result = True  # its in-place form never fails to cast (see _registry.inplace)
    tensor_method(compare, name)
    tensor_method(_inplace_method(compare), name + "_")
    symbol = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
    compare.__doc__ = f"""``input {symbol} other`` elementwise, as a bool tensor.

    Example::

        >>> ember.{name}(ember.tensor([1, 2, 3]), 2)
        tensor({[bool(eval(f"{v} {symbol} 2")) for v in (1, 2, 3)]})
    """
    return compare


def _compare_onnx(onnx_type, negate=False):
    """The ONNX form of a comparison: ``onnx_type`` on the operands promoted to one dtype,
    negated for ``ne``."""
    def mapping(ctx, a, b):
        result = ctx.op(onnx_type, *ctx.operands(a, b, dtype=ctx.promoted_dtype()))
        return ctx.op("Not", result) if negate else result
    return mapping


eq = _comparison("eq", "equal", _compare_onnx("Equal"))
ne = _comparison("ne", "not_equal", _compare_onnx("Equal", negate=True))
lt = _comparison("lt", "less", _compare_onnx("Less"))
le = _comparison("le", "less_equal", _compare_onnx("LessOrEqual"))
gt = _comparison("gt", "greater", _compare_onnx("Greater"))
ge = _comparison("ge", "greater_equal", _compare_onnx("GreaterOrEqual"))
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
tensor_method(gt, "greater")
tensor_method(_inplace_method(gt), "greater_")
tensor_method(ge, "greater_equal")
tensor_method(_inplace_method(ge), "greater_equal_")
tensor_method(lt, "less")
tensor_method(_inplace_method(lt), "less_")
tensor_method(le, "less_equal")
tensor_method(_inplace_method(le), "less_equal_")
tensor_method(ne, "not_equal")
tensor_method(_inplace_method(ne), "not_equal_")


# ---------------------------------------------------------------- where, maximum, minimum


@defop("where", meta=lambda c, a, b: (np.broadcast_shapes(c.shape, a.shape, b.shape), a.dtype),
       grad_name="WhereBackward0", kind="pointwise-ternary")
def where_op(xp, condition, a, b):
    return xp.where(condition, a, b)


@where_op.defonnx
def _where_onnx(ctx, condition, a, b):
    condition = ctx.cast(condition, ctx.in_dtype(0), "bool")
    a = ctx.cast(a, ctx.in_dtype(1), ctx.out_dtype())
    b = ctx.cast(b, ctx.in_dtype(2), ctx.out_dtype())
    return ctx.op("Where", condition, a, b)


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
        from ..index import nonzero

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


@tensor_method("where")
def _where_method(self, condition, other):
    """``x.where(condition, y)``: :func:`where` with ``x`` where ``condition`` holds, ``y``
    elsewhere.

    Example::

        >>> ember.tensor([1, 2]).where(ember.tensor([True, False]), 0)
        tensor([1, 0])
    """
    return where(condition, self, other)



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
                kind="pointwise-binary", fuse="maximum", onnx="Max")
maximum_op.defderivative(_select_derivative(lambda a, b: a > b))
minimum_op = Op("minimum", lambda xp, a, b: xp.minimum(a, b), meta=_same_shape_meta,
                kind="pointwise-binary", fuse="minimum", onnx="Min")
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
    return tensor_method(fn, name)


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
             kind="pointwise-binary", fuse="fmax", onnx="Max")
fmax_op.defderivative(_fselect_derivative(lambda a, b: a >= b))
fmin_op = Op("fmin", _low_precision(lambda xp, a, b: xp.fmin(a, b)), meta=_same_shape_meta,
             kind="pointwise-binary", fuse="fmin", onnx="Min")
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


@clamp_op.defonnx
def _clamp_onnx(ctx, x, *bounds, has_min, has_max):
    (x,) = ctx.operands(x)
    bounds = [ctx.cast(b, ctx.in_dtype(i + 1), ctx.out_dtype()) for i, b in enumerate(bounds)]
    if has_min:
        x = ctx.op("Max", x, bounds.pop(0))
    if has_max:
        x = ctx.op("Min", x, bounds.pop(0))
    return x


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


@tensor_method
@signature("clamp(Tensor input, PyObject? min=None, PyObject? max=None, *, "
           "Tensor? out=None) -> Tensor", overloaded=True)
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
    broadcast_shapes(*(t._data.shape for t in tensors))  # (torch's error, not NumPy's)
    result = clamp_op(*tensors, has_min=min is not None, has_max=max is not None)
    return write_out(result, out, "clamp")


tensor_method(_inplace_method(clamp), "clamp_")


clip = tensor_method(clamp, "clip")
tensor_method(_inplace_method(clamp), "clip_")


@tensor_method
@signature("clamp_min(Tensor input, Tensor min, *, Tensor? out=None) -> Tensor", overloaded=True,
           numbers_as_tensors=("min",))
def clamp_min(input, min, *, out=None):
    """``clamp(input, min=min)``.

    Example::

        >>> ember.clamp_min(ember.tensor([-1., 2.]), 0)
        tensor([0., 2.])
    """
    return clamp(input, min=min, out=out)


tensor_method(_inplace_method(clamp_min), "clamp_min_")


@tensor_method
@signature("clamp_max(Tensor input, Tensor max, *, Tensor? out=None) -> Tensor", overloaded=True,
           numbers_as_tensors=("max",))
def clamp_max(input, max, *, out=None):
    """``clamp(input, max=max)``.

    Example::

        >>> ember.clamp_max(ember.tensor([-1., 2.]), 0)
        tensor([-1.,  0.])
    """
    return clamp(input, max=max, out=out)


tensor_method(_inplace_method(clamp_max), "clamp_max_")


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


isclose_op = Op("isclose", _isclose_kernel, meta=_bool_meta, kind="pointwise-binary",
                opt_outs={"onnx": "not mapped yet (composable from ONNX operators)"})
isclose_op.opt_out("derivative", "a boolean result has no gradient")


@tensor_method
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


@tensor_method
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


@tensor_method
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


# ---------------------------------------------------------------- logical


def _logical(name, ufunc, onnx_type):
    def kernel(xp, a, b):
        return getattr(xp, ufunc)(a, b)

    def onnx(ctx, a, b):  # the truth of each element, as bools
        return ctx.op(onnx_type, *ctx.operands(a, b, dtype="bool"))
    op = Op(name, kernel, meta=_bool_meta, kind="pointwise-binary", onnx=onnx)
    op.opt_out("derivative", "a boolean result has no gradient")
    op.opt_out("fuse", BOOL_RESULT)

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
    tensor_method(fn, name)
    tensor_method(_inplace_method(fn), name + "_")


_logical("logical_and", "logical_and", "And")
_logical("logical_or", "logical_or", "Or")
_logical("logical_xor", "logical_xor", "Xor")
def _logical_not_onnx(ctx, x):
    return ctx.op("Not", ctx.cast(x, ctx.in_dtype(0), "bool"))


unary("logical_not", lambda xp, a: xp.logical_not(a), promote="keep", out_dtype="bool",
      low=False, doc="Elementwise logical NOT (zero is false), as a bool tensor.",
      example="ember.logical_not(ember.tensor([0, 1]))\n        tensor([ True, False])",
      onnx=_logical_not_onnx)


# ---------------------------------------------------------------- isin


@defop("isin", meta=lambda a, b, **_: (a.shape, dt.bool), save_inputs=False,
       opt_outs={"onnx": "not mapped yet (an Equal over a broadcast axis, then ReduceMax)"})
def isin_op(xp, elements, test_elements, *, invert):
    return xp.isin(elements, test_elements, invert=invert)


isin_op.defbatch(batching.first_operand_batched)
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


# Fusion (``ops/_fusion.py``): where these ops have no step in a fused chain, and why
decline(COMPOSITE_KERNEL, where_op, clamp_op)
decline(BOOL_RESULT, isclose_op)
