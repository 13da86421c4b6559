"""``ember.distributions.multinomial``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`Multinomial` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.multinomial import Multinomial
"""

from .count_families import Multinomial

__all__ = ["Multinomial"]
