"""``ember.distributions.chi2``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Chi2`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.chi2 import Chi2
"""

from .gamma_families import Chi2

__all__ = ["Chi2"]
