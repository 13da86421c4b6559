"""nn.functional: linear and bilinear maps."""

from __future__ import annotations

__all__ = ["linear"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``.

    Example::

        >>> F.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
        ember.Size([2, 4])
    """
    output = input.matmul(weight.t()) if weight.ndim == 2 else input.matmul(weight)
    if bias is not None:
        output = output + bias
    return output
