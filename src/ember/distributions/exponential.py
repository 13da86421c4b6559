"""``ember.distributions.exponential``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`Exponential` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.exponential import Exponential
"""

from .continuous import Exponential

__all__ = ["Exponential"]
