"""``ember.distributions.cauchy``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Cauchy`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.cauchy import Cauchy
"""

from .continuous import Cauchy

__all__ = ["Cauchy"]
