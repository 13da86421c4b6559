"""``ember.distributions.dirichlet``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`Dirichlet` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.dirichlet import Dirichlet
"""

from .continuous import Dirichlet

__all__ = ["Dirichlet"]
