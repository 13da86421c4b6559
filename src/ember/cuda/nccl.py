"""``ember.cuda.nccl``: NVIDIA's collective operations on CUDA tensors (needs a GPU; for
collectives across processes use :mod:`ember.distributed`).

Example::

    >>> from ember.cuda import nccl
    >>> nccl.is_available([ember.ones(1)])
    False
"""

from ._unavailable import _needs_gpu

__all__ = ["all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter"]

SUM = 0


def is_available(tensors):
    """Whether NCCL can run on ``tensors``: never without CUDA tensors."""
    return False


def version():
    """NCCL's version: raises, since ember has no NCCL library loaded."""
    return _needs_gpu("nccl.version")()


all_reduce = _needs_gpu("nccl.all_reduce")
reduce = _needs_gpu("nccl.reduce")
broadcast = _needs_gpu("nccl.broadcast")
all_gather = _needs_gpu("nccl.all_gather")
reduce_scatter = _needs_gpu("nccl.reduce_scatter")
