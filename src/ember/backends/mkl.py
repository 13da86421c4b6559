"""``ember.backends.mkl``: whether ember's CPU BLAS is Intel MKL (NumPy's BLAS).

Example::

    >>> isinstance(ember.backends.mkl.is_available(), bool)
    True
"""

from __future__ import annotations

__all__ = ["is_available", "VERBOSE_OFF", "VERBOSE_ON", "verbose"]

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available():
    """Whether NumPy (ember's CPU kernels) is linked against MKL (torch: built with MKL)."""
    import numpy as np

    try:
        name = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        return False
    return "mkl" in str(name).lower()


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
