"""ember.signal, as torch.signal: the window functions of :mod:`ember.signal.windows`.

Example::

    >>> ember.signal.windows.hann(3)
    tensor([0., 1., 0.])
"""

from . import windows

__all__ = ["windows"]
