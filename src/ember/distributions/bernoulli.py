"""``ember.distributions.bernoulli``: torch's module path.

ember groups distribution families by kind in a few files; this module re-exports
:class:`Bernoulli` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.distributions.bernoulli import Bernoulli
"""

from .discrete import Bernoulli

__all__ = ["Bernoulli"]
