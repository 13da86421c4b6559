"""``ember.nn.grad``: gradients of a convolution with respect to its input or its weight.

A convolution is linear in each of its operands, so the gradient with respect to one of them
is the vector-Jacobian product of the convolution at any value of that operand: these
functions run ember's autograd on the convolution itself, which gives torch's numbers.

Example::

    >>> import ember.nn.grad as G
    >>> w, gy = ember.randn(4, 2, 3), ember.randn(1, 4, 6)
    >>> G.conv1d_input((1, 2, 8), w, gy).shape
    ember.Size([1, 2, 8])
"""

from __future__ import annotations

from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad
from ..ops.creation import zeros
from ._functional.conv import conv1d, conv2d, conv3d

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _vjp(conv, input, weight, grad_output, wrt, stride, padding, dilation, groups):
    """``d conv(input, weight) / d (input or weight)`` applied to ``grad_output``."""
    with enable_grad():
        input = input.detach().requires_grad_(wrt == "input")
        weight = weight.detach().requires_grad_(wrt == "weight")
        output = conv(input, weight, None, stride, padding, dilation, groups)
        if tuple(output.shape) != tuple(grad_output.shape):
            raise RuntimeError(
                f"Expected grad_output of shape {tuple(output.shape)} for this convolution, "
                f"but got {tuple(grad_output.shape)}")
        (result,) = _autograd_grad(output, input if wrt == "input" else weight, grad_output)
    return result


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    input = zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device)
    return _vjp(conv, input, weight, grad_output, "input", stride, padding, dilation, groups)


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    weight = zeros(tuple(weight_size), dtype=input.dtype, device=input.device)
    return _vjp(conv, input, weight, grad_output, "weight", stride, padding, dilation, groups)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of ``conv1d`` with respect to an input of shape ``input_size``.

    Example::

        >>> conv1d_input((1, 2, 8), ember.randn(4, 2, 3), ember.randn(1, 4, 6)).shape
        ember.Size([1, 2, 8])
    """
    return _input_grad(conv1d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of ``conv1d`` with respect to a weight of shape ``weight_size``.

    Example::

        >>> conv1d_weight(ember.randn(1, 2, 8), (4, 2, 3), ember.randn(1, 4, 6)).shape
        ember.Size([4, 2, 3])
    """
    return _weight_grad(conv1d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of ``conv2d`` with respect to an input of shape ``input_size``.

    Example::

        >>> w, gy = ember.randn(4, 2, 3, 3), ember.randn(1, 4, 3, 3)
        >>> conv2d_input((1, 2, 5, 5), w, gy).shape
        ember.Size([1, 2, 5, 5])
    """
    return _input_grad(conv2d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of ``conv2d`` with respect to a weight of shape ``weight_size``.

    Example::

        >>> x, gy = ember.randn(1, 2, 5, 5), ember.randn(1, 4, 3, 3)
        >>> conv2d_weight(x, (4, 2, 3, 3), gy).shape
        ember.Size([4, 2, 3, 3])
    """
    return _weight_grad(conv2d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of ``conv3d`` with respect to an input of shape ``input_size``.

    Example::

        >>> w, gy = ember.randn(2, 1, 2, 2, 2), ember.randn(1, 2, 2, 2, 2)
        >>> conv3d_input((1, 1, 3, 3, 3), w, gy).shape
        ember.Size([1, 1, 3, 3, 3])
    """
    return _input_grad(conv3d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Gradient of ``conv3d`` with respect to a weight of shape ``weight_size``.

    Example::

        >>> x, gy = ember.randn(1, 1, 3, 3, 3), ember.randn(1, 2, 2, 2, 2)
        >>> conv3d_weight(x, (2, 1, 2, 2, 2), gy).shape
        ember.Size([2, 1, 2, 2, 2])
    """
    return _weight_grad(conv3d, input, weight_size, grad_output, stride, padding, dilation, groups)
