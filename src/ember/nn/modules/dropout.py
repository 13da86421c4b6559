"""nn modules: dropout layers. Active in training mode, the identity in evaluation mode."""

from __future__ import annotations

from .._functional import dropout as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` during training, scaling the rest by
    ``1 / (1 - p)``.

    Example::

        >>> ember.nn.Dropout(0.2).eval()(ember.ones(3))
        tensor([1., 1., 1.])
    """

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) inputs during training.

    Example::

        >>> ember.nn.Dropout1d(0.2)(ember.ones(2, 3, 4)).shape
        ember.Size([2, 3, 4])
    """

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs during training.

    Example::

        >>> ember.nn.Dropout2d(0.2)(ember.ones(2, 3, 4, 4)).shape
        ember.Size([2, 3, 4, 4])
    """

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs during training.

    Example::

        >>> ember.nn.Dropout3d(0.2)(ember.ones(2, 3, 2, 2, 2)).shape
        ember.Size([2, 3, 2, 2, 2])
    """

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Alpha dropout for SELU networks (keeps mean 0 and variance 1).

    Example::

        >>> ember.nn.AlphaDropout(0.2)(ember.randn(4, 5)).shape
        ember.Size([4, 5])
    """

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels.

    Example::

        >>> ember.nn.FeatureAlphaDropout(0.2)(ember.randn(2, 3, 4)).shape
        ember.Size([2, 3, 4])
    """

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
