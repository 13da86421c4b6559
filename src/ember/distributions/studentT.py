"""``ember.distributions.studentT``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports :class:`StudentT`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.studentT import StudentT
"""

from .gamma_families import StudentT

__all__ = ["StudentT"]
