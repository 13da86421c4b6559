"""``ember.distributions.weibull``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Weibull`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.weibull import Weibull
"""

from .transformed_families import Weibull

__all__ = ["Weibull"]
