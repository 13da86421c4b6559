"""``ember.distributions.binomial``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Binomial`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.binomial import Binomial
"""

from .discrete import Binomial

__all__ = ["Binomial"]
