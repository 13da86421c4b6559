"""``ember.autograd.profiler``: the older, single-run profiler API of torch.

Example::

    >>> with ember.autograd.profiler.profile(record_shapes=True) as prof:
    ...     y = (ember.ones(3, requires_grad=True) * 2).sum()
    ...     y.backward()
    >>> print(prof.key_averages().table(sort_by="self_cpu_time_total"))   # doctest: +SKIP
"""

from __future__ import annotations

import warnings

from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler._recorder import Session, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg",
           "EnforceUnique", "KinetoStepTracker", "MemRecordsAcc", "emit_itt", "emit_nvtx",
           "load_nvprof", "parse_nvprof_trace"]


class profile:
    """Record the operators, backward nodes and :class:`record_function` ranges run inside
    the ``with`` block; afterwards ``function_events`` holds them and :meth:`table`,
    :meth:`key_averages` and :meth:`export_chrome_trace` summarise them.

    Example::

        >>> with ember.autograd.profiler.profile() as prof:
        ...     ember.ones(2) + 1
        >>> [e.name for e in prof.function_events]
        ['aten::add']
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False):
        self.enabled = enabled
        if not enabled:
            return
        self.use_device = use_device
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            self.use_device = "cuda"
        if self.use_device == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
                self.use_device = None
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.function_events = None
        self.entered = False
        self._session = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._session = Session(self.record_shapes, self.profile_memory, self.with_stack,
                                self.with_flops, self.use_device)
        self._session.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.function_events = self._session.stop()
        return False

    def _finished_events(self):
        """The events, or an empty list while the profiler has not finished (as torch)."""
        if self.function_events is None:
            return EventList()
        return self.function_events

    def __str__(self):
        return str(self._finished_events())

    __repr__ = __str__

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as torch's text table (see ``EventList.table``)."""
        return self._finished_events().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The events averaged by name (and input shapes / top stack entries when asked)."""
        return self._finished_events().key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        """All events summed into one ``FunctionEventAvg`` with key ``"Total"``."""
        return self._finished_events().total_average()

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace JSON."""
        return self._finished_events().export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write the recorded stacks (needs ``with_stack=True``) for flame-graph tools."""
        return self._finished_events().export_stacks(path, metric)

    @property
    def self_cpu_time_total(self):
        """The total self CPU time of all events, in microseconds."""
        return self._finished_events().self_cpu_time_total


from .profiler_util import MemRecordsAcc  # noqa: E402,F401


class EnforceUnique:
    """Raise ``RuntimeError`` when a key is seen twice.

    Example::

        >>> seen = EnforceUnique(); seen.see("a", 1)
    """

    def __init__(self):
        self.seen = set()

    def see(self, *key):
        if key in self.seen:
            raise RuntimeError("duplicate key: " + str(key))
        self.seen.add(key)


class KinetoStepTracker:
    """A global step counter per requester (the profiler, optimizers), as in torch; the global
    step is the largest count.

    Example::

        >>> KinetoStepTracker.init_step_count("doc"); KinetoStepTracker.increment_step("doc")
        1
        >>> KinetoStepTracker.erase_step_count("doc")
        True
    """

    _current_step = 0
    _step_dict: dict = {}

    @classmethod
    def init_step_count(cls, requester):
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester):
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester):
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls):
        return cls._current_step


class _Annotations:
    """Base of emit_nvtx/emit_itt: a non-reentrant context manager."""

    kind = ""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError(f"{self.kind} annotation context manager is not reentrant")
        self.entered = True
        self._start()
        return self

    def _start(self):
        pass

    def __exit__(self, *exc):
        self.entered = False
        return False


class emit_nvtx(_Annotations):
    """Emit NVTX ranges for Nsight: needs CUDA, so entering it fails on a CPU build as in torch.

    Example::

        >>> with emit_nvtx(enabled=False):
        ...     pass
    """

    kind = "NVTX"

    def _start(self):
        from .. import cuda
        self.entered = False
        cuda.synchronize()
        self.entered = True


class emit_itt(_Annotations):
    """Emit Intel ITT ranges for VTune; ember has no ITT backend, so the block runs unannotated.

    Example::

        >>> with emit_itt():
        ...     pass
    """

    kind = "ITT"


def parse_nvprof_trace(path):
    """Read an nvprof trace: ember has no CUDA profiler traces to read.

    Example::

        >>> parse_nvprof_trace("trace.nvvp")  # doctest: +SKIP
    """
    raise NotImplementedError("torch.autograd.profiler.parse_nvprof_trace reads CUDA nvprof "
                              "traces, which ember does not produce; use "
                              "ember.profiler.profile and its export_chrome_trace instead")


def load_nvprof(path):
    """Load an nvprof trace as an EventList: not available in ember (see parse_nvprof_trace).

    Example::

        >>> load_nvprof("trace.nvvp")  # doctest: +SKIP
    """
    return EventList(parse_nvprof_trace(path))
