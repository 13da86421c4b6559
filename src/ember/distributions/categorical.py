"""``ember.distributions.categorical``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`Categorical` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.categorical import Categorical
"""

from .discrete import Categorical

__all__ = ["Categorical"]
