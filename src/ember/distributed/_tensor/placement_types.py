"""``ember.distributed._tensor.placement_types``: the older path of
:mod:`ember.distributed.tensor.placement_types`.

Example::

    >>> from ember.distributed._tensor.placement_types import Shard
"""

from ..tensor.placement_types import Partial, Placement, Replicate, Shard

__all__ = ["Placement", "Shard", "Replicate", "Partial"]
