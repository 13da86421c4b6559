"""``ember.utils.data.distributed``: torch's module path of :class:`DistributedSampler`.

Example::

    >>> from ember.utils.data.distributed import DistributedSampler
    >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
    [1, 3, 0]
"""

from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
