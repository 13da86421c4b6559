"""``ember.distributions.normal``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`Normal`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.normal import Normal
"""

from .continuous import Normal

__all__ = ["Normal"]
