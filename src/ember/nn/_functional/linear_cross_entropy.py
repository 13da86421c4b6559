"""``linear_cross_entropy``: a linear projection followed by cross entropy, in one call.

torch offers it to avoid materialising large-vocabulary logits; ember computes the reference
definition (``cross_entropy(linear(input, weight, bias), target)``) for every ``options`` value,
so the loss and its gradients equal torch's.
"""

from __future__ import annotations

from .linear import linear
from .loss import cross_entropy

__all__ = ["linear_cross_entropy"]


def _logits(input, linear_weight, linear_bias):
    """``(N, in)`` or ``(in,)`` input and ``(C, d1.., in)`` weight -> ``(N, C, d1..)`` logits."""
    out_shape = tuple(linear_weight.shape[:-1])
    if len(out_shape) > 1 and input.dim() != 2:
        raise ValueError("linear_cross_entropy: a multi-dimensional linear_weight "
                         f"{tuple(linear_weight.shape)} requires a 2-D input, got {input.dim()}-D")
    flat_weight = linear_weight.reshape(-1, linear_weight.shape[-1])
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)
    logits = linear(input, flat_weight, flat_bias)
    return logits.reshape(*logits.shape[:-1], *out_shape)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """Cross entropy of ``target`` against the logits ``linear(input, linear_weight, linear_bias)``.

    ``linear_weight`` is ``(C, in_features)`` or ``(C, d_1, ..., d_K, in_features)`` for a
    K-dimensional loss; ``ignore_index=None`` means torch's ``-100`` for class-index targets.
    ``options`` (:class:`~ember.nn.LinearCrossEntropyOptions`) is accepted and changes nothing
    in the result.

    Example::

        >>> x, w = ember.randn(4, 3), ember.randn(5, 3)
        >>> y = ember.tensor([0, 4, 2, 1])
        >>> linear_cross_entropy(x, w, y).shape
        ember.Size([])
    """
    logits = _logits(input, linear_weight, linear_bias)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)
