"""``ember.distributed.fsdp``: fully sharded data parallelism, as ``torch.distributed.fsdp``.

FSDP2's :func:`fully_shard` (see ``_fully_shard.py``) and FSDP1's
:class:`FullyShardedDataParallel` wrapper (see ``fully_sharded_data_parallel.py``), with the
same numerics: N ranks on their shares of a batch take one process's full-batch step.

Example::

    >>> from ember.distributed.fsdp import fully_shard
    >>> for layer in model.layers:
    ...     fully_shard(layer)
    >>> fully_shard(model)
"""

from ._fully_shard import (
    CPUOffloadPolicy,
    FSDPModule,
    MixedPrecisionPolicy,
    OffloadPolicy,
    UnshardHandle,
    fully_shard,
    register_fsdp_forward_method,
)
from .api import (
    BackwardPrefetch,
    CPUOffload,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    LocalOptimStateDictConfig,
    LocalStateDictConfig,
    MixedPrecision,
    OptimStateDictConfig,
    OptimStateKeyType,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictSettings,
    StateDictType,
)
from .fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = ["BackwardPrefetch", "CPUOffload", "FullOptimStateDictConfig", "FullStateDictConfig",
           "FullyShardedDataParallel", "LocalOptimStateDictConfig", "LocalStateDictConfig",
           "MixedPrecision", "OptimStateDictConfig", "OptimStateKeyType",
           "ShardedOptimStateDictConfig", "ShardedStateDictConfig", "ShardingStrategy",
           "StateDictConfig", "StateDictSettings", "StateDictType", "CPUOffloadPolicy",
           "FSDPModule", "fully_shard", "MixedPrecisionPolicy", "OffloadPolicy",
           "register_fsdp_forward_method", "UnshardHandle"]
