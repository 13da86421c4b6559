"""``ember.distributions.half_cauchy``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`HalfCauchy` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.half_cauchy import HalfCauchy
"""

from .transformed_families import HalfCauchy

__all__ = ["HalfCauchy"]
