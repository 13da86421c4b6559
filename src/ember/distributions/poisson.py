"""``ember.distributions.poisson``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Poisson`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.poisson import Poisson
"""

from .discrete import Poisson

__all__ = ["Poisson"]
