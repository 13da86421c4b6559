"""``ember.distributions.half_normal``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`HalfNormal` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.half_normal import HalfNormal
"""

from .transformed_families import HalfNormal

__all__ = ["HalfNormal"]
