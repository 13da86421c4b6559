"""``ember.backends.mkl``: whether ember's CPU BLAS is Intel MKL (NumPy's BLAS).

Example::

    >>> isinstance(ember.backends.mkl.is_available(), bool)
    True
"""

from __future__ import annotations

__all__ = ["is_available"]


def is_available():
    """Whether NumPy (ember's CPU kernels) is linked against MKL (torch: built with MKL)."""
    import numpy as np

    try:
        name = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        return False
    return "mkl" in str(name).lower()
