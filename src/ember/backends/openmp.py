"""``ember.backends.openmp``: intra-op CPU parallelism, as ``torch.backends.openmp``.

:func:`is_available` answers True, as torch's CPU build: ember's CPU kernels run on one
thread pool whose size :func:`ember.set_num_threads` sets, as torch's OpenMP pool (oneDNN's
OpenMP threads when oneDNN is installed, else NumPy's BLAS).

Example::

    >>> ember.backends.openmp.is_available()
    True
"""

from __future__ import annotations

__all__ = ["is_available"]


def is_available():
    """True: ember has intra-op CPU threads (see the module's docstring).

    Example::

        >>> ember.backends.openmp.is_available()
        True
    """
    return True
