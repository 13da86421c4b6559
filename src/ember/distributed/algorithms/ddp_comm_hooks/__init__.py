"""``torch.distributed.algorithms.ddp_comm_hooks``: communication hooks of
``DistributedDataParallel`` (how each bucket of gradients is reduced across ranks), registered
with ``ddp.register_comm_hook(state, hook)`` or by name with :func:`register_ddp_comm_hook`.

Example::

    >>> from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    >>> ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)   # doctest: +SKIP
"""

from __future__ import annotations

import enum
import functools

from . import default_hooks

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]


class DDPCommHookType(enum.Enum):
    """The hooks that can be registered by name (each value is the hook with its state
    argument bound).

    Example::

        >>> register_ddp_comm_hook(DDPCommHookType.ALLREDUCE, ddp)   # doctest: +SKIP
    """

    ALLREDUCE = functools.partial(default_hooks.allreduce_hook)
    FP16_COMPRESS = functools.partial(default_hooks.fp16_compress_hook)
    BF16_COMPRESS = functools.partial(default_hooks.bf16_compress_hook)


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    """Register the hook named by ``comm_hook_type`` on the DDP ``model`` (``state``: its
    process group, None for the default group).

    Example::

        >>> register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, ddp)   # doctest: +SKIP
    """
    model.register_comm_hook(state, comm_hook_type.value)
