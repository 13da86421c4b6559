"""``ember.distributions.beta``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Beta`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.beta import Beta
"""

from .continuous import Beta

__all__ = ["Beta"]
