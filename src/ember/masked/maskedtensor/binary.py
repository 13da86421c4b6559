"""Binary pointwise operations on MaskedTensors: both operands' data, the masks must match.

One operand may be a plain tensor or a number; two MaskedTensors must have equal masks
(torch's rule: no union or intersection of masks yet). The result has the MaskedTensor
operand's mask, broadcast to the result's shape.

Example::

    >>> m = ember.tensor([True, False])
    >>> masked_tensor(ember.tensor([1., 2.]), m) + masked_tensor(ember.tensor([3., 4.]), m)
    MaskedTensor(
      [  4.0000,       --]
    )
"""

from __future__ import annotations

import numbers

import ember

from ..._tensor import Tensor
from ._autograd import broadcast_gated, gated
from .core import _plain, _wrap, is_masked_tensor

__all__ = []

BINARY_NAMES = (
    "add atan2 arctan2 bitwise_and bitwise_or bitwise_xor bitwise_left_shift "
    "bitwise_right_shift div divide floor_divide fmod logaddexp logaddexp2 mul multiply "
    "nextafter remainder sub subtract true_divide eq ne le ge greater greater_equal gt "
    "less_equal lt less maximum minimum fmax fmin not_equal").split()

INPLACE_BINARY_NAMES = [name + "_" for name in BINARY_NAMES if name not in (
    "logaddexp", "logaddexp2", "fmin", "minimum", "maximum", "fmax")]

# Tensor's operators that are binary operations of the list (a + b arrives as Tensor.add)
BINARY_DUNDERS = {"__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
                  "__floordiv__": "floor_divide", "__iand__": "bitwise_and_",
                  "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_"}


def _tensors_match(a, b):
    """torch's exact comparison of two masks: same number of dims, equal elements."""
    return a.dim() == b.dim() and bool(ember.eq(a, b).all())


def masks_match(a, b):
    """Whether two operands may be combined: true unless both are MaskedTensors whose masks
    differ."""
    if is_masked_tensor(a) and is_masked_tensor(b):
        return _tensors_match(a._masked_mask, b._masked_mask)
    return True


def _check_arguments(args, kwargs):
    if kwargs:
        raise ValueError("len(kwargs) must equal 0")
    if any(isinstance(arg, Tensor) for arg in args[2:]):
        raise TypeError("MaskedTensor binary ops do not support Tensor arguments aside from "
                        "the lhs and rhs")
    if not masks_match(*args[:2]):
        raise ValueError("Input masks must match. If you need support for this, please open "
                         "an issue on Github.")


def _operands(args):
    """The plain operands to compute on: MaskedTensors' data through the mask gate, plain
    tensors that require grad broadcast through the masked-sum gate."""
    operands = [gated(arg) for arg in args]
    tensors = [tuple(arg.shape) for arg in operands[:2] if isinstance(arg, Tensor)]
    if len(tensors) == 2 and tensors[0] != tensors[1]:
        shape = ember.broadcast_shapes(*tensors)
        operands[:2] = [arg if is_masked_tensor(original) else broadcast_gated(arg, shape)
                        for arg, original in zip(operands[:2], args)]
    return operands


def apply_binary(func, args, kwargs):
    """``func`` on the data of both operands, under the MaskedTensor operand's mask.

    Example::

        >>> mt = masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False]))
        >>> apply_binary(ember.mul, (mt, 3), {}).get_data()
        tensor([3., 6.])
    """
    if not all(isinstance(arg, (Tensor, numbers.Number)) for arg in args[:2]):
        return NotImplemented  # mt == None is False, mt + [1] a TypeError, as in Python
    _check_arguments(args, kwargs)
    result = func(*_operands(args))
    first = args[0] if is_masked_tensor(args[0]) else args[1]
    mask = first._masked_mask.expand_as(result)
    return _wrap(result, mask)


def apply_inplace_binary(func, args, kwargs):
    """The in-place ``func`` on the data of ``args[0]``, which must be a MaskedTensor."""
    if not is_masked_tensor(args[0]):
        raise TypeError(f"{func.__name__}: an in-place operation into a plain tensor cannot "
                        "take a MaskedTensor operand")
    _check_arguments(args, kwargs)
    func(*[_plain(arg) for arg in args])
    return args[0]
