"""``ember.distributions.log_normal``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`LogNormal` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.log_normal import LogNormal
"""

from .transformed_distribution import LogNormal

__all__ = ["LogNormal"]
