"""Pipeline schedules (``torch.distributed.pipelining.schedules``): the order in which a
stage runs the forward and backward of each microbatch. :class:`ScheduleGPipe` runs every
forward, then every backward; :class:`Schedule1F1B` starts the backwards as soon as the last
stage can (fewer activations kept). Both give the same gradients: the microbatches' losses
are averaged (``scale_grads``) and the gradients accumulate in ``.grad``. Schedules with
several stages per rank or split weight gradients are not built.
"""

from __future__ import annotations

from .microbatch import merge_chunks, split_args_kwargs_into_chunks

__all__ = ["get_schedule_class", "PipelineScheduleSingle", "PipelineScheduleMulti",
           "Schedule1F1B", "ScheduleGPipe", "ScheduleInterleaved1F1B", "ScheduleLoopedBFS",
           "ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble", "ScheduleDualPipeV"]


class PipelineScheduleSingle:
    """A schedule of one stage per rank; subclasses give the order of the microbatches'
    forward (``"F"``) and backward (``"B"``) steps.

    Example::

        >>> issubclass(ScheduleGPipe, PipelineScheduleSingle)
        True
    """

    def __init__(self, stage, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        self._stage = stage
        self._n_microbatches = n_microbatches
        self._loss_fn = loss_fn
        self._args_chunk_spec = args_chunk_spec
        self._kwargs_chunk_spec = kwargs_chunk_spec
        self._output_merge_spec = output_merge_spec
        self.scale_grads = scale_grads

    def _order(self):
        raise NotImplementedError

    def step(self, *args, target=None, losses=None, return_outputs=True, loss_kwargs=None,
             **kwargs):
        """One training step over ``n_microbatches`` microbatches of the inputs (given on the
        first stage) and ``target`` (on the last); the last stage appends each microbatch's
        loss to ``losses`` and returns the merged outputs.

        Example::

            >>> out = schedule.step(x) if rank == 0 else schedule.step(target=y, losses=losses)
        """
        stage, count = self._stage, self._n_microbatches
        arg_chunks, kwarg_chunks = split_args_kwargs_into_chunks(
            args, kwargs, count, self._args_chunk_spec, self._kwargs_chunk_spec) \
            if stage.is_first else ([()] * count, [{}] * count)
        targets = split_args_kwargs_into_chunks((target,), {}, count)[0] \
            if stage.is_last and target is not None else [(None,)] * count
        training = self._loss_fn is not None
        outputs, pending = {}, {}
        order = self._order() if training else [("F", i) for i in range(count)]
        for kind, index in order:
            if kind == "F":
                output = stage.forward_one_chunk(index, arg_chunks[index], kwarg_chunks[index])
                outputs[index] = output
                if stage.is_last and training:
                    loss = self._loss_fn(output, targets[index][0], **(loss_kwargs or {}))
                    if losses is not None:
                        losses.append(loss.detach())
                    pending[index] = loss / count if self.scale_grads else loss
            else:
                stage.backward_one_chunk(index, pending.pop(index, None))
        if stage.is_last and return_outputs:
            return merge_chunks([outputs[i] for i in range(count)], self._output_merge_spec)
        return None


class ScheduleGPipe(PipelineScheduleSingle):
    """Every microbatch's forward, then every backward (GPipe).

    Example::

        >>> schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=ember.nn.MSELoss())
    """

    def _order(self):
        count = self._n_microbatches
        return [("F", i) for i in range(count)] + [("B", i) for i in range(count)]


class Schedule1F1B(PipelineScheduleSingle):
    """One forward, one backward (1F1B): after a warm-up of ``num_stages - stage_index - 1``
    forwards each forward is followed by the oldest pending backward.

    Example::

        >>> schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=ember.nn.MSELoss())
    """

    def _order(self):
        count = self._n_microbatches
        warmup = min(self._stage.num_stages - self._stage.stage_index - 1, count)
        order = [("F", i) for i in range(warmup)]
        backward = 0
        for forward in range(warmup, count):
            order += [("F", forward), ("B", backward)]
            backward += 1
        order += [("B", i) for i in range(backward, count)]
        return order


def _not_built(name):
    class Schedule:
        __doc__ = f"torch's {name}: not in ember (``NotImplementedError``)."

        def __init__(self, *args, **kwargs):
            raise NotImplementedError(
                f"torch.distributed.pipelining.{name} (several stages per rank or split "
                f"weight gradients) is not supported by ember; use ScheduleGPipe or "
                f"Schedule1F1B with one PipelineStage per rank")

    Schedule.__name__ = Schedule.__qualname__ = name
    return Schedule


PipelineScheduleMulti = _not_built("PipelineScheduleMulti")
ScheduleInterleaved1F1B = _not_built("ScheduleInterleaved1F1B")
ScheduleLoopedBFS = _not_built("ScheduleLoopedBFS")
ScheduleInterleavedZeroBubble = _not_built("ScheduleInterleavedZeroBubble")
ScheduleZBVZeroBubble = _not_built("ScheduleZBVZeroBubble")
ScheduleDualPipeV = _not_built("ScheduleDualPipeV")

_BY_NAME = {cls.__name__[len("Schedule"):].lower() if cls.__name__.startswith("Schedule")
            else cls.__name__.lower(): cls
            for cls in (ScheduleGPipe, Schedule1F1B, ScheduleInterleaved1F1B, ScheduleLoopedBFS,
                        ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble,
                        ScheduleDualPipeV)}


def get_schedule_class(schedule_name):
    """The schedule class named ``schedule_name`` (``"GPipe"``, ``"1F1B"``..., any case).

    Example::

        >>> get_schedule_class("gpipe").__name__
        'ScheduleGPipe'
    """
    found = _BY_NAME.get(schedule_name.lower())
    if found is None:
        raise ValueError(f"Unknown schedule name '{schedule_name}'. The valid options are "
                         f"{sorted(cls.__name__[8:] for cls in _BY_NAME.values())}")
    return found
