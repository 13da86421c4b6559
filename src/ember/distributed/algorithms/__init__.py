"""``ember.distributed.algorithms``: training algorithms over process groups, as
``torch.distributed.algorithms``. ``_checkpoint.checkpoint_wrapper`` wraps modules for
activation checkpointing; the uneven-inputs ``Join`` context is not supported.

Example::

    >>> from ember.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    ...     apply_activation_checkpointing)
"""

__all__ = ["Join", "Joinable", "JoinHook"]


def _join_unsupported(name):
    return NotImplementedError(f"torch.distributed.algorithms.{name} (uneven inputs across "
                               "ranks) is not supported in ember; give every rank the same "
                               "number of batches (DistributedSampler(drop_last=True))")


class JoinHook:
    """A ``Join`` hook (not supported in ember)."""

    def __init__(self, *args, **kwargs):
        raise _join_unsupported("JoinHook")


class Joinable:
    """A ``Join`` participant (not supported in ember)."""

    def __init__(self, *args, **kwargs):
        raise _join_unsupported("Joinable")


class Join:
    """The uneven-inputs context manager (not supported in ember)."""

    def __init__(self, *args, **kwargs):
        raise _join_unsupported("Join")
