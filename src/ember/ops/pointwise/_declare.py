"""What the pointwise families share: the dtype checks, the low-precision wrapper, and the
declaration helpers :func:`unary_op`, :func:`unary` and :func:`binary` that make an op, its
public function and its methods from a kernel and a derivative.

The helpers take the namespace to declare into (a module's ``globals()``): the public function
lands there under its name and in its ``__all__``. A family module binds them once::

    unary, binary, _alias = declarers(globals())
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor, _trace_state
from ...autograd.forward_ad import _state as _fw_state
from ...autograd.grad_mode import state as _grad_state
from ...profiler._recorder import state as _profiling
from .._fusion import BOOL_RESULT, INTEGER_ONLY
from .._methods import tensor_method
from .._operands import (
    binary_operands,
    broadcast_meta,
    float_operand,
)
from .._registry import Op, _short_name, inplace, write_out
from .._signature import signature
from .._util import scipy_special

_same_shape_meta = broadcast_meta()
_bool_meta = broadcast_meta(np.dtype(np.bool_))
_LOW = dt.LOW_PRECISION
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_REAL_FLOATS = (_F32, _F64)  # the dtypes whose derivatives may take the NumPy fast path


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


# ---------------------------------------------------------------- unary math (table-driven)


def _unary_meta(out_dtype):
    if out_dtype == "bool":
        return _bool_meta
    if out_dtype == "real":
        return lambda a, **params: (a.shape, dt.from_numpy_dtype(a.dtype).to_real())
    return lambda a, **params: (a.shape, a.dtype)


def unary_op(name, kernel, derivative=None, *, save="input", out_dtype=None, low=True,
             grad_name=None, jvp=None, holomorphic=False, fast=None, fuse=None, autocast=None,
             onnx=None, opt_outs=None):
    """The :class:`Op` of a unary pointwise function.

    ``kernel(xp, a, **params)`` computes it (in float32 for float16/bfloat16 when ``low``);
    ``derivative(x, y, grad, **params)`` returns the input's gradient from the input ``x``,
    the output ``y`` (whichever ``save`` names; the other is None) and the output's gradient.
    ``jvp(x, y, tangent)`` (optional) is the forward-mode rule; without one it follows from the
    derivative (element-wise), which is exact for complex inputs too when ``holomorphic``.
    ``fast(x, y, grad, out)`` (optional) writes the same first-order derivative into ``out``
    with NumPy ufuncs (float32/float64 arrays of one shape): the backward uses it when
    :func:`_plain_backward` allows. ``fuse`` is the op's fusion rule (``ops/_fusion.py``),
    ``autocast`` its autocast policy (:class:`Op`), ``onnx`` its ONNX form
    (:meth:`Op.defonnx`); ``opt_outs`` names the rules it declines, with a reason.
    """
    run = _low_precision(kernel) if low else kernel
    if out_dtype is None:
        inner = run

        def run(xp, a, **params):  # NumPy/SciPy may widen (float32 -> float64): cast back
            result = inner(xp, a, **params)
            return result if result.dtype == a.dtype else result.astype(a.dtype)
    op = Op(name, run, meta=_unary_meta(out_dtype), save_inputs=save in ("input", "both"),
            save_output=save in ("output", "both"), grad_name=grad_name, kind="pointwise-unary",
            holomorphic=holomorphic, fuse=fuse, autocast=autocast, onnx=onnx,
            opt_outs=opt_outs)
    if out_dtype == "bool":
        op.opt_out("derivative", "a boolean result has no gradient")
        if fuse is None:
            op.opt_out("fuse", BOOL_RESULT)
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
          cpu_name=None, save="input", out_dtype=None, low=True, doc, example, namespace=None,
          methods=True, jvp=None, holomorphic=False, fast=None, fuse=None, autocast=None,
          onnx=None, opt_outs=None):
    """Declare a unary pointwise op and its public function, method and in-place method.

    ``promote="float"`` turns integer and bool inputs into the default float dtype; ``deny``
    lists the dtype groups the op refuses (see the package docstring).

    The public function lands in ``namespace`` (a module's ``globals()``) and its ``__all__``
    when one is given.
    """
    op = unary_op(name, kernel, derivative, save=save, out_dtype=out_dtype, low=low, jvp=jvp,
                  holomorphic=holomorphic, fast=fast, fuse=fuse, autocast=autocast,
                  onnx=onnx, opt_outs=opt_outs)
    if derivative is None and "f" in deny:
        op.opt_out("derivative", "integer and bool inputs only: no gradient")
    if fuse is None and "f" in deny:
        op.opt_out("fuse", INTEGER_ONLY)
    unchecked = () if "f" in deny else (_F32, _F64)  # dtypes unary_operand lets through as is

    def checked(input, *, out=None):
        return write_out(op(unary_operand(input, name, promote, deny, errors, cpu_name)), out,
                         name)

    checked.__name__ = checked.__qualname__ = name
    checked.op = op
    checked = signature(f"{name}(Tensor input, *, Tensor? out=None) -> Tensor")(checked)

    def fn(input, *, out=None):
        # the common call needs no parser: this test is its Tensor guard; the rest is parsed
        if out is None and type(input) is Tensor and input._data.dtype in unchecked:
            return op(input)
        return checked(input, out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{doc}

    Example::

        >>> {example}
    """
    fn.op = op
    fn.__ember_signature__ = op.signature
    if namespace is not None:
        _publish(namespace, name, fn)
    if methods:
        tensor_method(fn, name)
        tensor_method(_inplace_method(fn), name + "_")
    return fn


def _inplace_method(fn):
    def method(self, *args, **kwargs):
        return inplace(fn, self, *args, **kwargs)
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place version of :func:`{fn.__name__}`."
    return method


def _publish(namespace, name, fn):
    """Put the public function ``fn`` into ``namespace`` and its ``__all__``; ``fn`` names that
    module as its own (pickle and ``inspect`` find it there)."""
    namespace[name] = fn
    fn.__module__ = namespace["__name__"]
    if name not in namespace["__all__"]:
        namespace["__all__"].append(name)


def alias(alias, name, *, namespace):
    """Declare ``alias`` as another name of the op ``name`` of ``namespace`` (function, method
    and in-place method)."""
    _publish(namespace, alias, namespace[name])
    tensor_method(getattr(Tensor, name), alias)
    tensor_method(getattr(Tensor, name + "_"), alias + "_")


# ---------------------------------------------------------------- binary math (table-driven)


def binary(name, kernel, derivative=None, *, promote="keep", deny="", errors=None,
           cpu_name=None, out_dtype=None, low=True, scalar_input=False, scalar_other=True,
           other_name="other", doc, example, methods=True, inplace_method=True, save="input",
           fuse=None, autocast=None, namespace=None, onnx=None, opt_outs=None):
    """Declare a binary pointwise op, its public function ``name(input, other, *, out=None)``,
    its method and in-place method.

    ``derivative(ctx, grad)`` follows :meth:`Op.defderivative` (or ``"none"`` for an op torch
    does not differentiate); ``save`` says what it reads: the inputs (``ctx.inputs``), the
    output (``ctx.output``) or ``"both"``. ``promote="float"`` turns integer results into the
    default float dtype; ``scalar_input``/``scalar_other`` say where torch accepts a Python
    number. ``fuse`` is the op's fusion rule (``ops/_fusion.py``), ``autocast`` its autocast
    policy (:class:`Op`), ``onnx`` its ONNX form (:meth:`Op.defonnx`); ``opt_outs`` names the
    rules it declines, with a reason.

    The public function lands in ``namespace`` and its ``__all__`` when one is given; Tensor
    gets the method (and, with ``inplace_method``, the in-place one) when ``methods``.
    """
    op = Op(name, _low_precision(kernel) if low else kernel,
            meta=_bool_meta if out_dtype == "bool" else _same_shape_meta,
            save_inputs=save in ("input", "both"), save_output=save in ("output", "both"),
            kind="pointwise-binary", fuse=fuse, autocast=autocast, onnx=onnx,
            opt_outs=opt_outs)
    if derivative == "none":
        op.defderivative(_not_differentiable(name))
    elif derivative is not None:
        op.defderivative(derivative)
    elif out_dtype == "bool":
        op.opt_out("derivative", "a boolean result has no gradient")
    elif "f" in deny:
        op.opt_out("derivative", "integer and bool inputs only: no gradient")
    if fuse is None and out_dtype == "bool":
        op.opt_out("fuse", BOOL_RESULT)
    elif fuse is None and "f" in deny:
        op.opt_out("fuse", INTEGER_ONLY)

    def fn(input, other, *, out=None):  # (the signature has checked the operands' types)
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
    numbers = tuple(n for n, ok in (("input", scalar_input), ("other", scalar_other)) if ok)
    fn = signature(f"{name}(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor",
                   numbers_as_tensors=numbers)(fn)
    if namespace is not None:
        _publish(namespace, name, fn)
    if methods:
        tensor_method(fn, name)
    if methods and inplace_method:
        tensor_method(_inplace_method(fn), name + "_")
    return fn


def declarers(namespace):
    """:func:`unary`, :func:`binary` and :func:`alias` bound to one module's namespace.

    Example::

        >>> unary, binary, _alias = declarers(globals())
    """
    return (functools.partial(unary, namespace=namespace),
            functools.partial(binary, namespace=namespace),
            functools.partial(alias, namespace=namespace))
