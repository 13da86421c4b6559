"""Linear layers: Identity, Linear, Bilinear, LazyLinear."""

from __future__ import annotations

import math

from ...ops.creation import empty
from .. import init
from .._functional.linear import bilinear, linear
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored).

    Example::

        >>> ember.nn.Identity(54)(ember.ones(2)).shape
        ember.Size([2])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ W.T + b`` with ``W`` of shape (out_features, in_features).

    Weights and bias start uniform in ``+-1/sqrt(in_features)``, as in torch.

    Example::

        >>> ember.nn.Linear(20, 30)(ember.randn(128, 20)).shape
        ember.Size([128, 30])
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw weight and bias from torch's default distributions."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` under torch's name, the output projection of
    :class:`~ember.nn.MultiheadAttention` (its class is part of a pickled model).

    Example::

        >>> ember.nn.MultiheadAttention(4, 2).out_proj
        NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)
    """


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``A`` of shape (out_features, in1_features, in2_features).

    Weight and bias start uniform in ``+-1/sqrt(in1_features)``, as in torch.

    Example::

        >>> m = ember.nn.Bilinear(20, 30, 40)
        >>> m(ember.randn(128, 20), ember.randn(128, 30)).shape
        ember.Size([128, 40])
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw weight and bias uniformly in ``+-1/sqrt(in1_features)``."""
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


def __getattr__(name):
    # torch's LazyLinear is importable from here; ember defines it in lazy.py, which imports
    # this module, so it is fetched on first use
    if name == "LazyLinear":
        from .lazy import LazyLinear
        return LazyLinear
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
