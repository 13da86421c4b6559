"""``ember.distributions.lkj_cholesky``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`LKJCholesky` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.lkj_cholesky import LKJCholesky
"""

from .matrix_families import LKJCholesky

__all__ = ["LKJCholesky"]
