"""``ember.distributions.laplace``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Laplace`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.laplace import Laplace
"""

from .continuous import Laplace

__all__ = ["Laplace"]
