"""``ember.distributions.uniform``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Uniform`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.uniform import Uniform
"""

from .continuous import Uniform

__all__ = ["Uniform"]
