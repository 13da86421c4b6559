"""``ember.distributions.relaxed_categorical``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`ExpRelaxedCategorical` and :class:`RelaxedOneHotCategorical` under torch's path, so torch's
imports work unchanged.

Example::

    >>> from ember.distributions.relaxed_categorical import ExpRelaxedCategorical
"""

from .relaxed import ExpRelaxedCategorical, RelaxedOneHotCategorical

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]
