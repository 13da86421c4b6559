"""``ember.distributions.negative_binomial``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`NegativeBinomial` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.negative_binomial import NegativeBinomial
"""

from .count_families import NegativeBinomial

__all__ = ["NegativeBinomial"]
