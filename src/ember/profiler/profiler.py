"""``ember.profiler.profile``: torch's profiler API, with schedules and trace handlers.

A :class:`profile` runs one recording *session* per profiling cycle. Its ``schedule`` maps
each step number (counted by :meth:`profile.step`) to a :class:`ProfilerAction`; going from
one action to the next starts or stops the session and calls ``on_trace_ready`` at the end of
each cycle, by the same transition table as torch's profiler.
"""

from __future__ import annotations

import enum
import os
import time
import warnings

from ._events import EventList
from ._recorder import Session, record_function

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "schedule",
           "supported_activities", "tensorboard_trace_handler", "ExecutionTraceObserver",
           "kineto_available"]


class ProfilerActivity(enum.Enum):
    """What to record: host-side work (``CPU``) and, where torch has it, device work."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does during a step: nothing, warm up, record, or record and then
    hand the trace to ``on_trace_ready``."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """The activities this build can record: ``CPU``, and ``CUDA`` when a GPU is present.

    Example::

        >>> ember.profiler.ProfilerActivity.CPU in ember.profiler.supported_activities()
        True
    """
    activities = {ProfilerActivity.CPU}
    from .. import cuda

    if cuda.is_available():
        activities.add(ProfilerActivity.CUDA)
    return activities


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step -> :class:`ProfilerAction` function: skip ``skip_first`` steps, then cycle
    through ``wait`` idle, ``warmup`` and ``active`` recorded steps, ``repeat`` times
    (0: until the profiler stops). The last active step of a cycle is ``RECORD_AND_SAVE``.
    With ``skip_first_wait`` the first cycle starts without its ``wait`` steps.

    Example::

        >>> s = ember.profiler.schedule(wait=1, warmup=1, active=2)
        >>> [s(i).name for i in range(4)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def action_at(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait  # as if the first wait had already passed
        if repeat > 0 and step >= repeat * cycle:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action_at


_warned = set()


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, stacklevel=4)


def _always_record(step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` handler that writes each trace into ``dir_name`` as
    ``<worker_name>.<time in ns>.pt.trace.json`` (``.gz`` added with ``use_gzip``), the
    worker name defaulting to ``<hostname>_<pid>``: the files TensorBoard's profiler plugin
    reads.

    Example::

        >>> handler = ember.profiler.tensorboard_trace_handler("./log")
        >>> with ember.profiler.profile(on_trace_ready=handler):   # doctest: +SKIP
        ...     model(x)
    """
    import socket

    def handler(prof):
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler


class _Profile:
    """The recording machinery shared by :class:`profile`: one session per trace."""

    def __init__(self, activities=None, record_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, acc_events=False):
        self.activities = set(activities) if activities is not None \
            else supported_activities()
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.acc_events = acc_events
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None
        self.session = None
        self._events = None
        self._accumulated = []
        self._metadata = {}

    def prepare_trace(self):
        """Get a new session ready (the WARMUP phase records nothing)."""
        if self.session is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events "
                       "from the current cycle will be reported. To keep events across "
                       "cycles, set acc_events=True.")
        self.session = Session(self.record_shapes, self.profile_memory, self.with_stack,
                               self.with_flops, self.use_device)

    def start_trace(self):
        """Start recording into the prepared session."""
        if self.session is None:
            self.prepare_trace()
        self.session.start()

    def stop_trace(self):
        """Stop recording; the session's events become this profiler's results."""
        if self.session is not None and self.session.running:
            events = self.session.stop()
            if self.acc_events:  # the new cycle's events first, then the older ones (as torch)
                self._accumulated = list(events) + self._accumulated
                events = events._like(self._accumulated)
            self._events = events

    def events(self):
        """The events of the last finished trace, in order of start (an ``EventList``;
        empty while the first trace is still running).

        Example::

            >>> with ember.profiler.profile() as prof:
            ...     ember.ones(2) + 1
            >>> [e.name for e in prof.events()]
            ['aten::add']
        """
        return self._results("accessing events")

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The events averaged by name (and input shapes / top stack entries when asked).

        Example::

            >>> print(prof.key_averages().table(sort_by="self_cpu_time_total"))  # doctest: +SKIP
        """
        return self._results("getting key averages").key_averages(group_by_input_shape,
                                                                   group_by_stack_n)

    def _results(self, what):
        if self._events is not None:
            return self._events
        if self.session is None:
            raise AssertionError(f"Profiler must be initialized before {what}")
        return EventList()

    def export_chrome_trace(self, path):
        """Write the last trace as Chrome trace JSON (gzip-compressed for a ``.gz`` path)."""
        events = self.events()
        events._trace_info["metadata"] = dict(self._metadata)
        return events.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write the recorded stacks (needs ``with_stack=True``) for flame-graph tools."""
        return self.events().export_stacks(path, metric)

    def add_metadata(self, key, value):
        """Attach a string entry to the exported trace (a top-level key of its JSON).

        Example::

            >>> prof.add_metadata("run", "baseline")              # doctest: +SKIP
        """
        self._metadata[key] = value

    def add_metadata_json(self, key, value):
        """Attach an entry given as JSON text to the exported trace."""
        import json

        self._metadata[key] = json.loads(value)


class profile(_Profile):
    """Profile the code run inside the ``with`` block (or between :meth:`start` and
    :meth:`stop`): every operator call, backward node and :func:`record_function` range,
    with its CPU time, and on request its input shapes (``record_shapes``), the memory its
    results allocate (``profile_memory``), its Python stack (``with_stack``) and its
    floating-point operations (``with_flops``: matrix products, convolutions, add, mul).

    With a ``schedule``, call :meth:`step` once per iteration; ``on_trace_ready(prof)`` is
    called at the end of each recorded cycle (without one, once at the end).

    Example::

        >>> with ember.profiler.profile(record_shapes=True) as prof:
        ...     with ember.profiler.record_function("model"):
        ...         y = ember.mm(ember.ones(4, 4), ember.ones(4, 4)).relu().sum()
        >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))
        ... # doctest: +SKIP
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None):
        activities = set(activities) if activities is not None else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                activities.add(ProfilerActivity.CUDA)
            else:
                activities.discard(ProfilerActivity.CUDA)
        if not activities:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities, record_shapes, profile_memory, with_stack, with_flops,
                         acc_events)
        self.schedule = schedule if schedule else _always_record
        self.record_steps = bool(schedule)  # step markers only when stepping is scheduled
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._step_range = None
        self._transitions = self._transition_table()

    def _transition_table(self):
        """(previous action, next action) -> what to do; None as next means stopping."""
        none, warmup = ProfilerAction.NONE, ProfilerAction.WARMUP
        record, save = ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE
        prepare, start, stop = self.prepare_trace, self.start_trace, self.stop_trace
        ready = self._trace_ready

        def wrong(message):
            return lambda: warnings.warn(message, stacklevel=4)

        return {
            (none, warmup): [prepare],
            (none, record): [prepare, start],
            (none, save): [prepare, start],
            (warmup, none): [wrong("Incorrect schedule: WARMUP followed by NONE"), start,
                             stop],
            (warmup, record): [start],
            (warmup, save): [start],
            (record, none): [wrong("Incorrect schedule: RECORD followed by NONE"), stop],
            (record, warmup): [wrong("Incorrect schedule: RECORD followed by WARMUP"), stop],
            (save, none): [stop, ready],
            (save, warmup): [stop, ready, prepare],
            (save, record): [stop, ready, prepare, start],
            (save, save): [stop, ready, prepare, start],
            (warmup, None): [start, stop],
            (record, None): [stop, ready],
            (save, None): [stop, ready],
        }

    def _transit(self, previous, current):
        for action in self._transitions.get((previous, current), ()):
            action()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def start(self):
        """Begin profiling (what entering the ``with`` block does)."""
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step_range()

    def stop(self):
        """End profiling (what leaving the ``with`` block does)."""
        self._close_step_range()
        self._transit(self.current_action, None)

    def step(self):
        """Mark the start of the next step: the schedule decides what happens now.

        Example::

            >>> with ember.profiler.profile(schedule=ember.profiler.schedule(
            ...         wait=1, warmup=1, active=1)) as prof:      # doctest: +SKIP
            ...     for batch in loader:
            ...         train_step(batch)
            ...         prof.step()
        """
        self._close_step_range()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._open_step_range()

    def _open_step_range(self):
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step_range(self):
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def kineto_available():
    """Whether torch's Kineto tracing library is present: ember profiles with its own recorder.

    Example::

        >>> kineto_available()
        False
    """
    return False


class ExecutionTraceObserver:
    """torch's Chakra execution-trace observer (a graph of every operator for replay tools).

    ember's profiler has no execution-trace format: registering raises ``NotImplementedError``;
    use :class:`profile` and ``export_chrome_trace`` instead.

    Example::

        >>> obs = ExecutionTraceObserver()
        >>> obs.is_registered()
        False
    """

    def __init__(self):
        self._registered = False
        self._running = False
        self._output_file_path = None

    @classmethod
    def build_execution_trace_obs_from_env(cls):
        """An observer if ``ENABLE_PYTORCH_EXECUTION_TRACE`` asks for one, else None."""
        import os
        if os.environ.get("ENABLE_PYTORCH_EXECUTION_TRACE", "0") in ("1", "True", "true"):
            return cls().register_callback("")
        return None

    def register_callback(self, output_file_path):
        raise NotImplementedError(
            "torch.profiler.ExecutionTraceObserver records a Chakra execution trace, which "
            "ember's profiler does not produce; use ember.profiler.profile and "
            "export_chrome_trace instead")

    def is_registered(self):
        return self._registered

    def is_running(self):
        return self._running

    def get_output_file_path(self):
        return self._output_file_path

    def start(self):
        self._running = self._registered

    def stop(self):
        self._running = False

    def unregister_callback(self):
        self._registered = False

    def cleanup(self):
        self.unregister_callback()
