"""nn.functional: dropout, channel-wise (feature) dropout and alpha dropout.

In training mode each element (or whole channel, for the feature forms) is kept with
probability ``1 - p``. Plain dropout scales the kept values by ``1 / (1 - p)``; alpha dropout
(for SELU networks) sets dropped values to SELU's negative saturation and applies the affine
correction that keeps mean 0 and variance 1. The result is ``input * mask (+ b)`` with a mask
drawn from ember's default generator, so gradients are ``grad * mask``. Evaluation mode (and
``p == 0``) returns ``input`` unchanged.
"""

from __future__ import annotations

import math
import warnings

from ..._tensor import Tensor
from ...ops._registry import _short_name, inplace

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

_ALPHA = 1.7580993408473766  # -SELU's negative saturation value (scale * alpha)


def _check(input, p, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(input, p, feature):
    """A keep-mask (1 with probability ``1 - p``) in ``input``'s dtype; per channel for
    ``feature``."""
    dtype = input.dtype
    if dtype.is_complex:
        raise NotImplementedError(f'"bernoulli_scalar_cpu_" not implemented for '
                                  f"'{_short_name(dtype)}'")
    if not dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_short_name(dtype)}")
    shape = input.shape
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(shape[:2]) + (1,) * (input.dim() - 2)
    return input.detach().new_empty(shape).bernoulli_(1 - p)


def _dropped(input, p, feature, alpha, unbatched=False):
    """The out-of-place dropout of ``input`` (training mode, ``0 < p <= 1``)."""
    if unbatched:
        return _dropped(input.unsqueeze(0), p, feature, alpha).squeeze(0)
    noise = _noise(input, p, feature)
    if p == 1:
        return input * noise.zero_()
    if not alpha:
        return input * noise.div_(1 - p)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
    return input * noise.mul_(a) + b


def _dropout_impl(input, p, training, in_place, feature, alpha, unbatched=False):
    if not training or p == 0:
        return input
    if in_place:
        return inplace(_dropped, input, p, feature, alpha, unbatched)
    return _dropped(input, p, feature, alpha, unbatched)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Example::

        >>> F.dropout(ember.ones(4), p=0.0)
        tensor([1., 1., 1., 1.])
    """
    _check(input, p, "dropout")
    return _dropout_impl(input, p, training, inplace, False, False)


def _feature_dropout(input, p, training, in_place, unbatched):
    return _dropout_impl(input, p, training, in_place, True, False, unbatched)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (C, L) or (N, C, L) input with probability ``p``.

    Example::

        >>> F.dropout1d(ember.ones(2, 3, 4), training=False).shape
        ember.Size([2, 3, 4])
    """
    _check(input, p, "dropout1d")
    ndim = input.dim()
    if ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {ndim}D input. "
                           "Note that dropout1d exists to provide channel-wise dropout on inputs "
                           "with 1 spatial dimension, a channel dimension, and an optional batch "
                           "dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, ndim == 2)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an (N, C, H, W) input with probability ``p``.

    A 3-D input is taken as (N, C, L), with torch's warning.

    Example::

        >>> F.dropout2d(ember.ones(2, 3, 4, 4), training=False).shape
        ember.Size([2, 3, 4, 4])
    """
    _check(input, p, "dropout2d")
    ndim = input.dim()
    if ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {ndim}-D input to dropout2d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior "
                      "and silence this warning, please use dropout instead. Note that "
                      "dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (C, D, H, W) or (N, C, D, H, W) input with probability ``p``.

    Example::

        >>> F.dropout3d(ember.ones(2, 3, 2, 2, 2), training=False).shape
        ember.Size([2, 3, 2, 2, 2])
    """
    _check(input, p, "dropout3d")
    ndim = input.dim()
    if ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {ndim}-D input to dropout3d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior "
                      "and silence this warning, please use dropout instead. Note that "
                      "dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, ndim != 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout: keeps SELU activations at mean 0 and variance 1.

    Example::

        >>> F.alpha_dropout(ember.ones(3), 0.5)
        tensor([1., 1., 1.])
    """
    _check(input, p, "alpha_dropout")
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1).

    Example::

        >>> F.feature_alpha_dropout(ember.ones(2, 3), 0.5)
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
    """
    _check(input, p, "feature_alpha_dropout")
    return _dropout_impl(input, p, training, inplace, True, True)

