"""``ember.distributions.gumbel``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Gumbel`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.gumbel import Gumbel
"""

from .transformed_distribution import Gumbel

__all__ = ["Gumbel"]
