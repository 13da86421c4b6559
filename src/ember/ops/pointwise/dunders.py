"""Tensor's operator dunders: ``x + y``, the reflected and in-place forms, comparisons, ``~x``,
``abs(x)``; and ``x.add_(y)``.. written straight into ``x`` when nothing records. Every other
pointwise method is declared under its function."""

from __future__ import annotations

from ..._tensor import Tensor, _trace_state
from ...autograd.forward_ad import _state as _fw_state
from ...autograd.grad_mode import state as _grad_state
from .._methods import tensor_method
from .._operands import (
    broadcast_shapes,
    operator_method,
)
from .._registry import check_writable
from .arithmetic import (
    add,
    add_op,
    div,
    div_op,
    floor_divide,
    mul,
    mul_op,
    neg,
    positive,
    pow,
    pow_op,
    sub,
    sub_op,
)
from .binary_math import bitwise_left_shift, bitwise_not, bitwise_right_shift, remainder
from .comparison import eq, ge, gt, le, lt, ne
from .unary_math import abs

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
                           or broadcast_shapes(data.shape, operand.shape) == data.shape))
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


tensor_method(_direct_inplace("add", Tensor.add_), "add_")
tensor_method(_direct_inplace("subtract", Tensor.sub_), "sub_")
tensor_method(_direct_inplace("multiply", Tensor.mul_), "mul_")
tensor_method(_direct_inplace("true_divide", Tensor.div_), "div_")


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
    tensor_method(operator_method(_fn, f"__{_name}__", op=_op, reflected=_reflects),
                  f"__{_name}__")
tensor_method(Tensor.__truediv__, "__div__")  # Python 2's spellings, which torch.Tensor keeps
tensor_method(Tensor.__itruediv__, "__idiv__")
tensor_method(operator_method(eq, "__eq__", arrays_as_tensors=True), "__eq__")
tensor_method(operator_method(ne, "__ne__"), "__ne__")
tensor_method(_invert, "__invert__")
tensor_method(_abs_dunder, "__abs__")
tensor_method(neg, "__neg__")
tensor_method(positive, "__pos__")

del _name, _fn, _op, _reflects
