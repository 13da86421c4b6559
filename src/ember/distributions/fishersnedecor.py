"""``ember.distributions.fishersnedecor``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`FisherSnedecor` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.fishersnedecor import FisherSnedecor
"""

from .gamma_families import FisherSnedecor

__all__ = ["FisherSnedecor"]
