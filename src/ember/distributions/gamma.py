"""``ember.distributions.gamma``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Gamma`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.gamma import Gamma
"""

from .continuous import Gamma

__all__ = ["Gamma"]
