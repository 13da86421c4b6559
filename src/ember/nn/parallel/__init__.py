"""``ember.nn.parallel``: :class:`DistributedDataParallel` (data parallelism across processes).

Example::

    >>> model = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(4, 2))
"""

# the submodule before the function of the same name: importing it later (pickle finds
# DataParallel there) would otherwise rebind ``ember.nn.parallel.data_parallel`` to it
from . import comm, data_parallel  # noqa: F401

# isort: split
from ..modules.data_parallel import DataParallel, data_parallel  # noqa: F811
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather",
           "parallel_apply", "replicate", "scatter"]
