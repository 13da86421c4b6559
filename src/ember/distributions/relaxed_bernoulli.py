"""``ember.distributions.relaxed_bernoulli``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`LogitRelaxedBernoulli` and :class:`RelaxedBernoulli` under torch's path, so torch's imports
work unchanged.

Example::

    >>> from ember.distributions.relaxed_bernoulli import LogitRelaxedBernoulli
"""

from .relaxed import LogitRelaxedBernoulli, RelaxedBernoulli

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]
