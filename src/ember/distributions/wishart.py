"""``ember.distributions.wishart``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Wishart`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.wishart import Wishart
"""

from .matrix_families import Wishart

__all__ = ["Wishart"]
