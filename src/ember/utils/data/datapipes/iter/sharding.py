"""``sharding_filter``: keep every ``num_of_instances``-th item, for one worker or rank."""

from __future__ import annotations

from enum import IntEnum

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe

__all__ = ["SHARDING_PRIORITIES", "ShardingFilterIterDataPipe"]


class SHARDING_PRIORITIES(IntEnum):  # noqa: N801  (torch's name)
    """Sharding levels: distributed ranks shard before the workers of each rank."""

    DEFAULT = 1
    DISTRIBUTED = 2
    MULTIPROCESSING = 3


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(IterDataPipe):
    """Keep item ``i`` when ``i % num_of_instances == instance_id`` (set by
    :meth:`apply_sharding`, per sharding group; the groups combine as nested shards).

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> dp = IterableWrapper(range(7)).sharding_filter()
        >>> dp.apply_sharding(3, 1)
        >>> list(dp)
        [1, 4]
    """

    def __init__(self, source_datapipe, sharding_group_filter=None):
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.groups = {}
        self.num_of_instances = 1
        self.instance_id = 0
        self._update_num_of_instances()

    def apply_sharding(self, num_of_instances, instance_id,
                       sharding_group=SHARDING_PRIORITIES.DEFAULT):
        """Make this pipe shard ``instance_id`` of ``num_of_instances`` for ``sharding_group``."""
        if instance_id >= num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than "
                             f"num_of_instances({num_of_instances})")
        if sharding_group == SHARDING_PRIORITIES.DEFAULT:
            if len(self.groups) and SHARDING_PRIORITIES.DEFAULT not in self.groups:
                raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        elif SHARDING_PRIORITIES.DEFAULT in self.groups:
            raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        self.groups[sharding_group] = (num_of_instances, instance_id)
        self._update_num_of_instances()

    def _update_num_of_instances(self):
        chosen = [self.groups[key] for key in sorted(self.groups)
                  if self.sharding_group_filter is None or key == self.sharding_group_filter]
        self.num_of_instances, self.instance_id = 1, 0
        for group_instances, group_id in reversed(chosen):
            self.instance_id += self.num_of_instances * group_id
            self.num_of_instances *= group_instances

    def is_shardable(self):
        return True

    def __iter__(self):
        for i, item in enumerate(self.source_datapipe):
            if i % self.num_of_instances == self.instance_id:
                yield item

    def __len__(self):
        if not hasattr(self.source_datapipe, "__len__"):
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        n = len(self.source_datapipe)
        return n // self.num_of_instances + (
            1 if self.instance_id < n % self.num_of_instances else 0)
