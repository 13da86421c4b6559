"""``ember.distributions.logistic_normal``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`LogisticNormal` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.logistic_normal import LogisticNormal
"""

from .transformed_families import LogisticNormal

__all__ = ["LogisticNormal"]
