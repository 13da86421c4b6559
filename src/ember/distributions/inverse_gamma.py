"""``ember.distributions.inverse_gamma``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`InverseGamma` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.inverse_gamma import InverseGamma
"""

from .transformed_families import InverseGamma

__all__ = ["InverseGamma"]
