"""``ember.distributions.one_hot_categorical``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`OneHotCategorical` and :class:`OneHotCategoricalStraightThrough` under torch's path, so
torch's imports work unchanged.

Example::

    >>> from ember.distributions.one_hot_categorical import OneHotCategorical
"""

from .discrete import OneHotCategorical, OneHotCategoricalStraightThrough

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]
