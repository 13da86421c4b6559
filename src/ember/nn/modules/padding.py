"""nn modules: padding layers (zero, constant, reflection, replication, circular), 1-3 d.

Each stores ``padding`` as torch does (an int becomes a tuple of 2, 4 or 6) and calls
:func:`ember.nn.functional.pad`.
"""

from __future__ import annotations

from ...ops.shape import pad as _pad
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _padding(padding, nd):
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    return (padding,) * (2 * nd)


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _nd = 1

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _padding(padding, self._nd)
        self.value = value

    def forward(self, input):
        return _pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: ``padding`` is an int or (left, right).

    Example::

        >>> ember.nn.ConstantPad1d(1, 3.5)(ember.zeros(1, 2))
        tensor([[3.5000, 0.0000, 0.0000, 3.5000]])
    """

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``: (left, right, top, bottom).

    Example::

        >>> ember.nn.ConstantPad2d(1, 2.0)(ember.zeros(1, 1, 1)).shape
        ember.Size([1, 3, 3])
    """

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``: (left, right, top, bottom, front, back).

    Example::

        >>> ember.nn.ConstantPad3d(1, 2.0)(ember.zeros(1, 1, 1, 1)).shape
        ember.Size([1, 3, 3, 3])
    """

    _nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros.

    Example::

        >>> ember.nn.ZeroPad1d((1, 0))(ember.ones(1, 2))
        tensor([[0., 1., 1.]])
    """

    _nd = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two dims with zeros.

    Example::

        >>> ember.nn.ZeroPad2d(1)(ember.ones(1, 1, 1)).shape
        ember.Size([1, 3, 3])
    """

    _nd = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three dims with zeros.

    Example::

        >>> ember.nn.ZeroPad3d(1)(ember.ones(1, 1, 1, 1)).shape
        ember.Size([1, 3, 3, 3])
    """

    _nd = 3


class _ModePadNd(Module):
    __constants__ = ["padding"]
    _nd = 1
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(padding, self._nd)

    def forward(self, input):
        return _pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pad the last dim with its reflection (the edge is not repeated).

    Example::

        >>> ember.nn.ReflectionPad1d(2)(ember.tensor([[0., 1., 2., 3.]]))
        tensor([[2., 1., 0., 1., 2., 3., 2., 1.]])
    """

    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pad the last two dims with their reflection.

    Example::

        >>> ember.nn.ReflectionPad2d(1)(ember.ones(1, 2, 2)).shape
        ember.Size([1, 4, 4])
    """

    _nd, _mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Pad the last three dims with their reflection.

    Example::

        >>> ember.nn.ReflectionPad3d(1)(ember.ones(1, 1, 2, 2, 2)).shape
        ember.Size([1, 1, 4, 4, 4])
    """

    _nd, _mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pad the last dim by repeating its edge values.

    Example::

        >>> ember.nn.ReplicationPad1d(1)(ember.tensor([[1., 2.]]))
        tensor([[1., 1., 2., 2.]])
    """

    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pad the last two dims by repeating their edge values.

    Example::

        >>> ember.nn.ReplicationPad2d(1)(ember.ones(1, 2, 2)).shape
        ember.Size([1, 4, 4])
    """

    _nd, _mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pad the last three dims by repeating their edge values.

    Example::

        >>> ember.nn.ReplicationPad3d(1)(ember.ones(1, 1, 2, 2, 2)).shape
        ember.Size([1, 1, 4, 4, 4])
    """

    _nd, _mode = 3, "replicate"


class _CircularPadNd(_ModePadNd):
    _mode = "circular"

    def forward(self, input):
        if input.dim() not in (self._nd + 1, self._nd + 2):
            raise ValueError(f"expected {self._nd + 1}D or {self._nd + 2}D input (got "
                             f"{input.dim()}D input)")
        return _pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim by wrapping around.

    Example::

        >>> ember.nn.CircularPad1d(1)(ember.tensor([[1., 2., 3.]]))
        tensor([[3., 1., 2., 3., 1.]])
    """

    _nd = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last two dims by wrapping around.

    Example::

        >>> ember.nn.CircularPad2d(1)(ember.ones(1, 2, 2)).shape
        ember.Size([1, 4, 4])
    """

    _nd = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last three dims by wrapping around.

    Example::

        >>> ember.nn.CircularPad3d(1)(ember.ones(1, 1, 2, 2, 2)).shape
        ember.Size([1, 1, 4, 4, 4])
    """

    _nd = 3
