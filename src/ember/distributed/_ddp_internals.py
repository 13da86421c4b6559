"""torch.distributed's names for DistributedDataParallel's C++ machinery: the built-in
communication hook kinds, the gradient bucket a hook receives, and the C++ ``Reducer`` and
``Logger``, plus ``QueueEmptyError`` and ``RankType``.

ember's ``DistributedDataParallel`` reduces its buckets itself (``nn/parallel/distributed.py``);
it has no C++ reducer to hand out, so ``Reducer`` and ``Logger`` raise ``NotImplementedError``
naming what to use instead.

Example::

    >>> ember.distributed.BuiltinCommHookType.ALLREDUCE
    <BuiltinCommHookType.ALLREDUCE: 1>
"""

from __future__ import annotations

import enum

from ._store import DistStoreError

__all__ = ["BuiltinCommHookType", "GradBucket", "Reducer", "Logger", "QueueEmptyError",
           "RankType"]

RankType = int  # torch: int | SymInt (ember has no symbolic ints)


class BuiltinCommHookType(enum.Enum):
    """The communication hooks DDP has built in: ``ALLREDUCE`` (the default averaging) and
    ``FP16_COMPRESS`` (gradients sent as float16).

    Example::

        >>> ddp._register_builtin_comm_hook(BuiltinCommHookType.FP16_COMPRESS)  # doctest: +SKIP
    """

    ALLREDUCE = 1
    FP16_COMPRESS = 2


class QueueEmptyError(DistStoreError):
    """A store's queue had nothing to pop before the timeout (torch's error type).

    Example::

        >>> issubclass(QueueEmptyError, ember.distributed.DistStoreError)
        True
    """


class GradBucket:
    """The gradients of one DDP bucket, flattened into one tensor, as a communication hook
    receives them (torch makes these only inside DDP; so does ember).

    Example::

        >>> bucket = GradBucket(0, ember.ones(3), [ember.ones(3)], [ember.ones(3)], True)
        >>> bucket.buffer().sum().item(), bucket.is_last()
        (3.0, True)
    """

    def __init__(self, index, buffer, gradients, parameters, is_last):
        self._index = index
        self._buffer = buffer
        self._gradients = list(gradients)
        self._parameters = list(parameters)
        self._is_last = is_last

    def index(self):
        """The bucket's position (0 is the first bucket reduced, the last parameters)."""
        return self._index

    def buffer(self):
        """The flattened gradients of the bucket (one 1-D tensor)."""
        return self._buffer

    def gradients(self):
        """The bucket's gradients, each a view of :meth:`buffer` in its parameter's shape."""
        return list(self._gradients)

    def parameters(self):
        """The parameters whose gradients the bucket holds."""
        return list(self._parameters)

    def is_last(self):
        """Whether this is the last bucket of the iteration."""
        return self._is_last

    def set_buffer(self, buffer):
        """Replace the bucket's flattened gradients by ``buffer`` (same size)."""
        self._buffer = buffer


_CPP_ONLY = ("torch.distributed.{name} is the C++ DistributedDataParallel {what}; ember's "
             "DistributedDataParallel reduces gradients itself and has no C++ {what}. Use "
             "ember.nn.parallel.DistributedDataParallel, and a communication hook "
             "(register_comm_hook) to change how buckets are reduced.")


class Reducer:
    """torch's C++ gradient reducer of DDP: not in ember (``NotImplementedError``).

    Example::

        >>> ember.distributed.Reducer()                              # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_CPP_ONLY.format(name="Reducer", what="reducer"))


class Logger:
    """torch's C++ DDP logger (construction data and runtime statistics): not in ember
    (``NotImplementedError``).

    Example::

        >>> ember.distributed.Logger()                               # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_CPP_ONLY.format(name="Logger", what="logger"))
