"""``ember.distributions.mixture_same_family``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`MixtureSameFamily` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.mixture_same_family import MixtureSameFamily
"""

from .independent import MixtureSameFamily

__all__ = ["MixtureSameFamily"]
