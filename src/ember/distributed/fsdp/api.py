"""FSDP1's configuration types (``torch.distributed.fsdp.api``): sharding strategies, state
dict types and their configs, mixed precision and offload settings.

Example::

    >>> FSDP(net, sharding_strategy=ShardingStrategy.FULL_SHARD,
    ...      mixed_precision=MixedPrecision(param_dtype=ember.bfloat16))
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["ShardingStrategy", "BackwardPrefetch", "MixedPrecision", "CPUOffload",
           "StateDictType", "StateDictConfig", "FullStateDictConfig", "LocalStateDictConfig",
           "ShardedStateDictConfig", "OptimStateDictConfig", "FullOptimStateDictConfig",
           "LocalOptimStateDictConfig", "ShardedOptimStateDictConfig", "StateDictSettings",
           "OptimStateKeyType"]


class ShardingStrategy(enum.Enum):
    """How FSDP1 shards: ``FULL_SHARD`` (reshard after forward) and ``SHARD_GRAD_OP`` (keep
    the gathered parameters until backward) run in ember; the others raise."""

    FULL_SHARD = enum.auto()
    SHARD_GRAD_OP = enum.auto()
    NO_SHARD = enum.auto()
    HYBRID_SHARD = enum.auto()
    _HYBRID_SHARD_ZERO2 = enum.auto()


class BackwardPrefetch(enum.Enum):
    """Prefetching hint (ember gathers eagerly; accepted, no effect)."""

    BACKWARD_PRE = enum.auto()
    BACKWARD_POST = enum.auto()


class StateDictType(enum.Enum):
    """What ``state_dict()`` of an FSDP1 module returns: whole tensors (``FULL_STATE_DICT``)
    or DTensor shards (``SHARDED_STATE_DICT``); ``LOCAL_STATE_DICT`` raises in ember."""

    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


class OptimStateKeyType(enum.Enum):
    """Keys of an optimiser state dict: parameter names or ids."""

    PARAM_NAME = enum.auto()
    PARAM_ID = enum.auto()


@dataclass
class MixedPrecision:
    """FSDP1's dtypes: ``param_dtype`` for compute, ``reduce_dtype`` for the gradient
    reduction, ``buffer_dtype`` for buffers.

    Example::

        >>> MixedPrecision(param_dtype=ember.bfloat16, reduce_dtype=ember.float32)
    """

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: tuple = field(default_factory=tuple)


@dataclass
class CPUOffload:
    """Parameter offloading (ember's CPU ranks already keep everything on the CPU).

    Example::

        >>> CPUOffload(offload_params=True)
    """

    offload_params: bool = False


@dataclass
class StateDictConfig:
    """Base of the state dict configs.

    Example::

        >>> StateDictConfig(offload_to_cpu=True)
    """

    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    """Whole tensors; with ``rank0_only`` only rank 0 gets them (the others an empty dict).

    Example::

        >>> FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    """

    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    """Config of ``LOCAL_STATE_DICT`` (not supported in ember)."""


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    """Config of ``SHARDED_STATE_DICT`` (DTensor shards).

    Example::

        >>> ShardedStateDictConfig(offload_to_cpu=True)
    """

    _use_dtensor: bool = True


@dataclass
class OptimStateDictConfig:
    """Base of the optimiser state dict configs.

    Example::

        >>> OptimStateDictConfig(offload_to_cpu=True)
    """

    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    """Whole optimiser states; with ``rank0_only`` only rank 0 gets them.

    Example::

        >>> FullOptimStateDictConfig(rank0_only=True)
    """

    rank0_only: bool = False


@dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    """Config of local optimiser state dicts (not supported in ember)."""

    offload_to_cpu: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    """Sharded optimiser states (DTensors).

    Example::

        >>> ShardedOptimStateDictConfig()
    """

    _use_dtensor: bool = True


@dataclass
class StateDictSettings:
    """The state dict type and configs in force for an FSDP1 module."""

    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig
