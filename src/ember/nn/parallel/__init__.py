"""``ember.nn.parallel``: :class:`DistributedDataParallel` (data parallelism across processes).

Example::

    >>> model = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(4, 2))
"""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
