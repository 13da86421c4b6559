"""``ember.backends.openmp``: ember's CPU kernels do not use OpenMP (NumPy's BLAS has its
own thread pool; see :func:`ember.set_num_threads`).

Example::

    >>> ember.backends.openmp.is_available()
    False
"""

from __future__ import annotations

__all__ = ["is_available"]


def is_available():
    """False: ember is not built with OpenMP."""
    return False
