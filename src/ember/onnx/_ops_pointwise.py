"""ONNX mappings of element-wise operators, reductions and matrix products.

ONNX's arithmetic wants operands of one type where ember promotes (an int tensor plus a
float scalar), so operands are cast to the traced result's dtype first (comparisons: to the
promoted dtype of their operands).
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from ._symbolic import symbolic

# ember primitive -> ONNX operator of the same meaning on one input
_UNARY = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs",
          "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos",
          "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh",
          "atanh": "Atanh", "tanh": "Tanh", "sigmoid": "Sigmoid", "erf": "Erf",
          "floor": "Floor", "ceil": "Ceil", "round": "Round", "reciprocal": "Reciprocal",
          "sign": "Sign", "relu": "Relu", "_relu": "Relu", "isnan": "IsNaN"}


def _unary(onnx_type):
    def mapping(ctx, x):
        return ctx.op(onnx_type, ctx.cast(x, ctx.in_dtype(0), ctx.out_dtype()))
    return mapping


for _name, _onnx_type in _UNARY.items():
    symbolic(_name)(_unary(_onnx_type))


@symbolic("logical_not")
def _logical_not(ctx, x):
    return ctx.op("Not", ctx.cast(x, ctx.in_dtype(0), "bool"))


@symbolic("isinf")
def _isinf(ctx, x):
    return ctx.op("IsInf", x)


def _operands(ctx, *names, dtype=None):
    """The inputs cast to ``dtype`` (default: the result's dtype)."""
    dtype = dtype or ctx.out_dtype()
    return [ctx.cast(n, ctx.in_dtype(i), dtype) for i, n in enumerate(names)]


@symbolic("rsqrt")
def _rsqrt(ctx, x):
    return ctx.op("Reciprocal", ctx.op("Sqrt", *_operands(ctx, x)))


@symbolic("log1p")
def _log1p(ctx, x):
    (x,) = _operands(ctx, x)
    return ctx.op("Log", ctx.op("Add", x, ctx.scalar(1, ctx.out_dtype())))


@symbolic("expm1")
def _expm1(ctx, x):
    (x,) = _operands(ctx, x)
    return ctx.op("Sub", ctx.op("Exp", x), ctx.scalar(1, ctx.out_dtype()))


@symbolic("log2", "log10")
def _log_base(ctx, x):
    (x,) = _operands(ctx, x)
    base = 2 if ctx.node.op.name == "log2" else 10
    return ctx.op("Div", ctx.op("Log", x), ctx.scalar(math.log(base), ctx.out_dtype()))


def _scaled(ctx, b, alpha):
    if alpha == 1:
        return b
    return ctx.op("Mul", b, ctx.scalar(alpha, ctx.out_dtype()))


@symbolic("add")
def _add(ctx, a, b, alpha=1):
    a, b = _operands(ctx, a, b)
    if ctx.out_dtype() == "bool":
        return ctx.op("Or", a, b)
    return ctx.op("Add", a, _scaled(ctx, b, alpha))


@symbolic("sub")
def _sub(ctx, a, b, alpha=1):
    a, b = _operands(ctx, a, b)
    return ctx.op("Sub", a, _scaled(ctx, b, alpha))


@symbolic("mul")
def _mul(ctx, a, b):
    a, b = _operands(ctx, a, b)
    if ctx.out_dtype() == "bool":
        return ctx.op("And", a, b)
    return ctx.op("Mul", a, b)


@symbolic("div")
def _div(ctx, a, b):
    return ctx.op("Div", *_operands(ctx, a, b))


@symbolic("pow")
def _pow(ctx, a, b):
    return ctx.op("Pow", *_operands(ctx, a, b))


@symbolic("maximum", "fmax")
def _maximum(ctx, a, b):
    return ctx.op("Max", *_operands(ctx, a, b))


@symbolic("minimum", "fmin")
def _minimum(ctx, a, b):
    return ctx.op("Min", *_operands(ctx, a, b))


def _is_float(name):
    return getattr(dt, name).is_floating_point


@symbolic("floor_divide", "div_floor")
def _floor_divide(ctx, a, b):
    a, b = _operands(ctx, a, b)
    quotient = ctx.op("Div", a, b)
    if _is_float(ctx.out_dtype()):
        return ctx.op("Floor", quotient)
    # integer Div truncates: step down where the remainder's sign differs from b's
    remainder = ctx.op("Mod", a, b, fmod=1)
    zero = ctx.scalar(0, ctx.out_dtype())
    inexact = ctx.op("Not", ctx.op("Equal", remainder, zero))
    signs_differ = ctx.op("Xor", ctx.op("Less", remainder, zero), ctx.op("Less", b, zero))
    step = ctx.op("Cast", ctx.op("And", inexact, signs_differ),
                  to=ctx.onnx.TensorProto.INT64)
    return ctx.op("Sub", quotient, ctx.cast(step, "int64", ctx.out_dtype()))


@symbolic("div_trunc")
def _div_trunc(ctx, a, b):
    a, b = _operands(ctx, a, b)
    quotient = ctx.op("Div", a, b)
    if not _is_float(ctx.out_dtype()):
        return quotient
    return ctx.op("Mul", ctx.op("Sign", quotient), ctx.op("Floor", ctx.op("Abs", quotient)))


@symbolic("remainder")
def _remainder(ctx, a, b):
    a, b = _operands(ctx, a, b)
    if not _is_float(ctx.out_dtype()):
        return ctx.op("Mod", a, b, fmod=0)  # the sign of the divisor, as Python's %
    return ctx.op("Sub", a, ctx.op("Mul", b, ctx.op("Floor", ctx.op("Div", a, b))))


@symbolic("fmod")
def _fmod(ctx, a, b):
    return ctx.op("Mod", *_operands(ctx, a, b), fmod=1)


def _promoted(ctx):
    return dt.promote_types(getattr(dt, ctx.in_dtype(0)), getattr(dt, ctx.in_dtype(1))).name


def _comparison(onnx_type, negate=False):
    def mapping(ctx, a, b):
        result = ctx.op(onnx_type, *_operands(ctx, a, b, dtype=_promoted(ctx)))
        return ctx.op("Not", result) if negate else result
    return mapping


for _name, _onnx_type, _negate in [("eq", "Equal", False), ("ne", "Equal", True),
                                   ("lt", "Less", False), ("le", "LessOrEqual", False),
                                   ("gt", "Greater", False), ("ge", "GreaterOrEqual", False)]:
    symbolic(_name)(_comparison(_onnx_type, _negate))


def _logical(onnx_type):
    def mapping(ctx, a, b):
        return ctx.op(onnx_type, *_operands(ctx, a, b, dtype="bool"))
    return mapping


for _name, _onnx_type in [("logical_and", "And"), ("logical_or", "Or"),
                          ("logical_xor", "Xor")]:
    symbolic(_name)(_logical(_onnx_type))


@symbolic("where")
def _where(ctx, condition, a, b):
    condition = ctx.cast(condition, ctx.in_dtype(0), "bool")
    a = ctx.cast(a, ctx.in_dtype(1), ctx.out_dtype())
    b = ctx.cast(b, ctx.in_dtype(2), ctx.out_dtype())
    return ctx.op("Where", condition, a, b)


@symbolic("clamp")
def _clamp(ctx, x, *bounds, has_min, has_max):
    (x,) = _operands(ctx, x)
    bounds = [ctx.cast(b, ctx.in_dtype(i + 1), ctx.out_dtype()) for i, b in enumerate(bounds)]
    if has_min:
        x = ctx.op("Max", x, bounds.pop(0))
    if has_max:
        x = ctx.op("Min", x, bounds.pop(0))
    return x


@symbolic("_to_copy")
def _to_copy(ctx, x, dtype=None, device=None):
    return ctx.op("Identity", ctx.cast(x, ctx.in_dtype(0), ctx.out_dtype()))


@symbolic("clone", "detach", "alias")
def _identity(ctx, x, **params):
    return ctx.op("Identity", x)


# ---------------------------------------------------------------- reductions


def _reduced(ctx, x):
    """The input cast to the result's dtype (sum of bools counts in int64, as torch)."""
    return ctx.cast(x, ctx.in_dtype(0), ctx.out_dtype())


def _axes(dims, ndim):
    if dims is None:
        return list(range(ndim))
    return [d % ndim if ndim else 0 for d in (dims if isinstance(dims, (tuple, list))
                                              else (dims,))]


def _reduction(onnx_type):
    def mapping(ctx, x, dims=None, keepdim=False, dtype=None):
        ndim = len(ctx.in_dims(0))
        if ndim == 0:
            return ctx.op("Identity", _reduced(ctx, x))
        return ctx.reduce(onnx_type, _reduced(ctx, x), _axes(dims, ndim), keepdim)
    return mapping


for _name, _onnx_type in [("sum", "ReduceSum"), ("mean", "ReduceMean"),
                          ("amax", "ReduceMax"), ("amin", "ReduceMin"),
                          ("prod", "ReduceProd"), ("logsumexp", "ReduceLogSumExp")]:
    symbolic(_name)(_reduction(_onnx_type))


@symbolic("_norm_mean")
def _norm_mean(ctx, x, dims):
    return ctx.reduce("ReduceMean", x, _axes(dims, len(ctx.in_dims(0))), True)


@symbolic("max", "min")
def _max_all(ctx, x):
    onnx_type = "ReduceMax" if ctx.node.op.name == "max" else "ReduceMin"
    if not ctx.in_dims(0):
        return ctx.op("Identity", x)
    return ctx.reduce(onnx_type, x, None, False)


@symbolic("argmax", "argmin")
def _argmax(ctx, x, dim=None, keepdim=False):
    onnx_type = "ArgMax" if ctx.node.op.name == "argmax" else "ArgMin"
    if dim is None:
        x = ctx.op("Reshape", x, ctx.int64s([-1]))
        return ctx.op(onnx_type, x, axis=0, keepdims=0)
    return ctx.op(onnx_type, x, axis=dim % max(len(ctx.in_dims(0)), 1), keepdims=int(keepdim))


@symbolic("max_dim", "min_dim")
def _max_dim(ctx, x, dim, keepdim=False):
    largest = ctx.node.op.name == "max_dim"
    axis = dim % max(len(ctx.in_dims(0)), 1)
    values = ctx.reduce("ReduceMax" if largest else "ReduceMin", x, [axis], keepdim)
    indices = ctx.op("ArgMax" if largest else "ArgMin", x, axis=axis, keepdims=int(keepdim))
    return values, indices


def _count(ctx, x, axes):
    """The number of elements the reduction over ``axes`` averages, as a 0-dim tensor of
    the result's dtype (computed at run time when a reduced size is dynamic)."""
    sizes = [ctx.in_dims(0)[a] for a in axes]
    if all(isinstance(s, int) for s in sizes):
        return ctx.scalar(math.prod(sizes), ctx.out_dtype())
    count = ctx.reduce("ReduceProd", ctx.shape_tensor(sizes, (x, ctx.in_dims(0))), None, False)
    return ctx.cast(count, "int64", ctx.out_dtype())


@symbolic("var", "std")
def _var(ctx, x, dims=None, correction=1, keepdim=False):
    axes = _axes(dims, len(ctx.in_dims(0)))
    centred = ctx.op("Sub", x, ctx.reduce("ReduceMean", x, axes, True))
    squares = ctx.reduce("ReduceSum", ctx.op("Mul", centred, centred), axes, keepdim)
    count = _count(ctx, x, axes)
    if correction:
        count = ctx.op("Sub", count, ctx.scalar(correction, ctx.out_dtype()))
    variance = ctx.op("Div", squares, count)
    return ctx.op("Sqrt", variance) if ctx.node.op.name == "std" else variance


@symbolic("norm")
def _norm(ctx, x, p=2.0, dims=None, keepdim=False):
    axes = _axes(dims, len(ctx.in_dims(0)))
    if p == 2:
        return ctx.reduce("ReduceL2", x, axes, keepdim)
    if p == 1:
        return ctx.reduce("ReduceL1", x, axes, keepdim)
    if p == math.inf:
        return ctx.reduce("ReduceMax", ctx.op("Abs", x), axes, keepdim)
    power = ctx.scalar(p, ctx.out_dtype())
    total = ctx.reduce("ReduceSum", ctx.op("Pow", ctx.op("Abs", x), power), axes, keepdim)
    return ctx.op("Pow", total, ctx.scalar(1.0 / p, ctx.out_dtype()))


# ---------------------------------------------------------------- matrix products


@symbolic("mm", "bmm", "matmul", "mv", "dot")
def _matmul(ctx, a, b):
    return ctx.op("MatMul", *_operands(ctx, a, b))


@symbolic("einsum")
def _einsum(ctx, *operands, equation, shape=None):
    return ctx.op("Einsum", *operands, equation=equation.replace(" ", ""))


# ---------------------------------------------------------------- bitwise


def _bitwise(logical, bitwise):
    def mapping(ctx, *operands):
        operands = _operands(ctx, *operands)
        if ctx.out_dtype() == "bool":
            return ctx.op(logical, *operands)
        if ctx.opset < 18:
            ctx.fail(f"{bitwise} on integer tensors needs opset 18")
        return ctx.op(bitwise, *operands)
    return mapping


for _name, _logical_type, _bitwise_type in [
        ("bitwise_and", "And", "BitwiseAnd"), ("bitwise_or", "Or", "BitwiseOr"),
        ("bitwise_xor", "Xor", "BitwiseXor"), ("bitwise_not", "Not", "BitwiseNot")]:
    symbolic(_name)(_bitwise(_logical_type, _bitwise_type))
