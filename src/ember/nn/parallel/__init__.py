"""``ember.nn.parallel``: :class:`DistributedDataParallel` (data parallelism across processes).

Example::

    >>> model = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(4, 2))
"""

from ..modules.data_parallel import DataParallel, data_parallel
from . import comm  # noqa: F401
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather",
           "parallel_apply", "replicate", "scatter"]
