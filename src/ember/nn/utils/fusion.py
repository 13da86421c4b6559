"""Folding an eval-mode BatchNorm into the convolution or linear layer before it.

In eval mode BatchNorm is an affine map per channel, ``y = (x - mean) * scale + shift`` with
``scale = weight / sqrt(running_var + eps)``; applied to a layer's output it can be folded
into that layer's weight (scaled per output channel) and bias, which removes one pass over the
activations at inference time.
"""

from __future__ import annotations

import copy

from ...ops.creation import ones_like, zeros_like
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _check_eval(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")


def _check_running_statistics(bn):
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A new convolution (a deep copy of ``conv``) computing ``bn(conv(x))`` in eval mode.

    ``transpose=True`` is for transposed convolutions, whose weight holds the output channels
    in its second dim. Both modules must be in eval mode and ``bn`` must track running stats.

    Example::

        >>> conv, bn = ember.nn.Conv2d(3, 8, 3).eval(), ember.nn.BatchNorm2d(8).eval()
        >>> fused = ember.nn.utils.fuse_conv_bn_eval(conv, bn)
        >>> x = ember.randn(1, 3, 5, 5)
        >>> bool(ember.allclose(fused(x), bn(conv(x)), atol=1e-6))
        True
    """
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    _check_running_statistics(bn)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The fused convolution ``(weight, bias)`` as Parameters, in the conv's dtypes.

    ``conv_b``, ``bn_w`` and ``bn_b`` may be None (no bias, no affine BatchNorm).

    Example::

        >>> w, b = ember.nn.utils.fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean,
        ...                                            bn.running_var, bn.eps, bn.weight, bn.bias)
    """
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    inverse_std = (bn_rv + bn_eps).rsqrt()
    channel_dim_shape = [1, -1] if transpose else [-1, 1]
    shape = channel_dim_shape + [1] * (conv_w.dim() - 2)
    fused_w = (conv_w * (bn_w * inverse_std).reshape(shape)).to(dtype=weight_dtype)
    fused_b = ((conv_b - bn_rm) * inverse_std * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A new Linear (a deep copy of ``linear``) computing ``bn(linear(x))`` in eval mode.

    ``bn.num_features`` must equal ``linear.out_features`` or be 1.

    Example::

        >>> lin, bn = ember.nn.Linear(4, 3).eval(), ember.nn.BatchNorm1d(3).eval()
        >>> fused = ember.nn.utils.fuse_linear_bn_eval(lin, bn)
        >>> fused.weight.shape
        ember.Size([3, 4])
    """
    _check_eval(linear, bn)
    fused = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or "
                             "bn.num_features == 1, got linear.out_features="
                             f"{linear.out_features} and bn.num_features={bn.num_features}")
    _check_running_statistics(bn)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The fused Linear ``(weight, bias)`` as Parameters, in the linear layer's dtypes.

    Example::

        >>> w, b = ember.nn.utils.fuse_linear_bn_weights(lin.weight, lin.bias, bn.running_mean,
        ...                                              bn.running_var, bn.eps, bn.weight,
        ...                                              bn.bias)
    """
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=weight_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
