"""``ember.backends.mkl``: Intel MKL, as ``torch.backends.mkl``.

:func:`is_available` answers True, as torch's CPU build: what torch takes from MKL (dense
BLAS, LAPACK, FFT on the CPU) ember has through NumPy, whichever BLAS NumPy is linked to.

Example::

    >>> ember.backends.mkl.is_available()
    True
"""

from __future__ import annotations

__all__ = ["is_available", "VERBOSE_OFF", "VERBOSE_ON", "verbose"]

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available():
    """True: ember's CPU kernels provide MKL's part of torch (see the module's docstring).

    Example::

        >>> ember.backends.mkl.is_available()
        True
    """
    return True


class verbose:
    """oneMKL's verbose messages inside the block (``VERBOSE_ON``); ember's BLAS is NumPy's,
    which prints none, so the block runs unchanged.

    Example::

        >>> with ember.backends.mkl.verbose(ember.backends.mkl.VERBOSE_ON):
        ...     pass
    """

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False
