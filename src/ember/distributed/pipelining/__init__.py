"""``torch.distributed.pipelining``: pipeline parallelism with one stage per rank.

Split the model by hand into sequential parts, make a :class:`PipelineStage` of each rank's
part, and run training steps with :class:`ScheduleGPipe` or :class:`Schedule1F1B`; the first
rank feeds the inputs, the last the targets (and receives the outputs and losses). torch's
automatic splitting (:func:`pipeline`, :class:`Pipe`, :class:`SplitPoint`, ``build_stage``)
needs torch.export tracing and raises ``NotImplementedError``; :func:`pipe_split` (a marker
for that tracer) does nothing when run.

Example::

    >>> stage = PipelineStage(parts[rank], rank, world_size, ember.device("cpu"))
    >>> schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=ember.nn.MSELoss())
    >>> if rank == 0:
    ...     schedule.step(x)
    ... else:
    ...     losses = []
    ...     out = schedule.step(target=y, losses=losses)
"""

from __future__ import annotations

import enum

from .schedules import (
    Schedule1F1B,
    ScheduleDualPipeV,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
    ScheduleLoopedBFS,
    ScheduleZBVZeroBubble,
)
from .stage import PipelineStage, build_stage

__all__ = ["Pipe", "pipe_split", "SplitPoint", "pipeline", "PipelineStage", "build_stage",
           "Schedule1F1B", "ScheduleGPipe", "ScheduleInterleaved1F1B", "ScheduleLoopedBFS",
           "ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble", "ScheduleDualPipeV"]

_TRACED = ("torch.distributed.pipelining.{name} splits a model by tracing it with "
           "torch.export, which ember does not build; split the model by hand and make a "
           "PipelineStage of each rank's part")


class SplitPoint(enum.Enum):
    """Where ``pipeline()``'s ``split_spec`` splits: before or after a submodule.

    Example::

        >>> SplitPoint.END.name
        'END'
    """

    BEGINNING = 1
    END = 2


class Pipe:
    """torch's traced, split model: not in ember (``NotImplementedError``).

    Example::

        >>> Pipe()                                                    # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_TRACED.format(name="Pipe"))


def pipeline(module, mb_args, mb_kwargs=None, split_spec=None, split_policy=None):
    """torch's automatic model splitting: not in ember (``NotImplementedError``).

    Example::

        >>> pipeline(model, (x,))                                    # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError(_TRACED.format(name="pipeline"))


def pipe_split():
    """A split point for ``pipeline()``'s tracer; running it does nothing (as in torch).

    Example::

        >>> pipe_split()
    """
