"""``ember.distributions.pareto``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Pareto`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.pareto import Pareto
"""

from .transformed_families import Pareto

__all__ = ["Pareto"]
