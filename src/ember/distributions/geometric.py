"""``ember.distributions.geometric``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`Geometric` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.geometric import Geometric
"""

from .discrete import Geometric

__all__ = ["Geometric"]
