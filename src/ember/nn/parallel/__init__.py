"""``ember.nn.parallel``: :class:`DistributedDataParallel` (data parallelism across processes).

Example::

    >>> model = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(4, 2))
"""

from ..modules.data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
