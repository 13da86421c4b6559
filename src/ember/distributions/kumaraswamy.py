"""``ember.distributions.kumaraswamy``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`Kumaraswamy` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.kumaraswamy import Kumaraswamy
"""

from .transformed_families import Kumaraswamy

__all__ = ["Kumaraswamy"]
