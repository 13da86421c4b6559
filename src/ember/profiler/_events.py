"""Profiling results: events, their averages, the summary table and the Chrome trace.

A session's raw records become :class:`FunctionEvent` objects linked into trees by
containment (a record is the child of the innermost record on its thread that began before
and ended after it). Times are in microseconds from the session's start. Self time is an
event's total time minus the total time of its direct children, as in torch.
"""

from __future__ import annotations

import enum
import json
from collections import defaultdict

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]


class DeviceType(enum.Enum):
    """Where an event ran (ember records host-side events only)."""

    CPU = 0
    CUDA = 1


class Interval:
    """A time range in microseconds.

    Example::

        >>> Interval(2.0, 5.5).elapsed_us()
        3.5
    """

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        """The range's length in microseconds."""
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start}, end={self.end})"


def _format_time(time_us):
    """torch's time cells: ``'12.345us'``, ``'1.234ms'`` or ``'2.000s'``."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes):
    """torch's memory cells: ``'64 B'``, ``'1.50 KB'``, ``'2.00 MB'``, ``'1.00 GB'``."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _FormattedTimes:
    """The ``*_str`` views of an event's times."""

    @property
    def cpu_time_str(self):
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self):
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self):
        return _format_time(self.self_cpu_time_total)

    @property
    def device_time_str(self):
        return _format_time(self.device_time)

    @property
    def device_time_total_str(self):
        return _format_time(self.device_time_total)

    @property
    def self_device_time_total_str(self):
        return _format_time(self.self_device_time_total)

    @property
    def cpu_time(self):
        """Average CPU time per call, in microseconds."""
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    # torch's older names for the device columns
    cuda_time = device_time
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)


class FunctionEvent(_FormattedTimes):
    """One recorded call: an operator, a backward node or a ``record_function`` range.

    Example::

        >>> with ember.profiler.profile() as prof:
        ...     ember.ones(2) * 3
        >>> event = prof.events()[0]
        >>> event.name, event.count, event.cpu_parent
        ('aten::mul', 1, None)
    """

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, input_dtypes=None,
                 stack=None, cpu_memory_usage=0, device_memory_usage=0, flops=0,
                 sequence_nr=-1, is_user_annotation=False, use_device=None):
        self.id = id
        self.name = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_dtypes = input_dtypes if input_dtypes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.flops = flops
        self.sequence_nr = sequence_nr
        self.is_user_annotation = is_user_annotation
        self.use_device = use_device
        self.cpu_children = []
        self.cpu_parent = None
        self.count = 1
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.device_type = DeviceType.CPU
        self.overload_name = ""
        self.kernels = []
        self.device_time_total = 0
        self.self_device_time_total = 0
        self.trace_name = name
        if name.startswith("ProfilerStep#"):  # the table sums all steps in one row
            self.name = "ProfilerStep*"

    @property
    def key(self):
        """What :meth:`EventList.key_averages` groups by: the name."""
        return self.name


    @property
    def cpu_time_total(self):
        """The call's wall time in microseconds, children included."""
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        """The call's wall time minus that of its direct children."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"node_id={self.node_id} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start} end_us={self.time_range.end} "
                f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"seq_nr={self.sequence_nr}>")


class FunctionEventAvg(_FormattedTimes):
    """The sums over all events with one key (and input shapes, when grouped by them).

    Example::

        >>> with ember.profiler.profile() as prof:
        ...     for _ in range(3):
        ...         ember.ones(2) * 3
        >>> prof.key_averages()[0].count
        3
    """

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.is_user_annotation = False
        self.overload_name = ""
        self.flops = 0

    def add(self, other):
        """Add ``other`` (a FunctionEvent or FunctionEventAvg of the same key) into this."""
        if self.key is None:
            self.key = other.key
            for attr in ("node_id", "is_async", "is_remote", "use_device", "cpu_parent",
                         "cpu_children", "input_shapes", "stack", "device_type",
                         "is_user_annotation"):
                setattr(self, attr, getattr(other, attr))
        if other.key != self.key:
            raise ValueError(f"cannot average events with different keys: {other.key!r} and "
                             f"{self.key!r}")
        return self._accumulate(other)

    __iadd__ = add

    def _accumulate(self, other):
        for attr in ("cpu_time_total", "self_cpu_time_total", "device_time_total",
                     "self_device_time_total", "cpu_memory_usage", "self_cpu_memory_usage",
                     "device_memory_usage", "self_device_memory_usage", "count", "flops"):
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))
        return self

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events with torch's summaries: :meth:`table`, :meth:`key_averages`,
    :meth:`total_average` and :meth:`export_chrome_trace`.

    Example::

        >>> with ember.profiler.profile() as prof:
        ...     ember.ones(2) + 1
        >>> print(prof.events().table())            # doctest: +SKIP
    """

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False,
                 trace_info=None):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._trace_info = trace_info or {}

    def _like(self, events):
        return EventList(events, use_device=self._use_device,
                         profile_memory=self._profile_memory, with_flops=self._with_flops,
                         trace_info=self._trace_info)

    @property
    def self_cpu_time_total(self):
        """The sum of the events' self CPU times (each moment counted once)."""
        return sum(e.self_cpu_time_total for e in self)

    def __str__(self):
        return self.table()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as torch's text table, sorted by the attribute ``sort_by``
        (descending; ``"cpu_time_total"``, ``"self_cpu_time_total"``, ``"count"``, ...),
        at most ``row_limit`` rows (-1: all).

        Example::

            >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))
            ... # doctest: +SKIP
        """
        from ._table import build_table

        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           profile_memory=self._profile_memory, with_flops=self._with_flops,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        """One :class:`FunctionEventAvg` per event name (and input shapes, and top
        ``group_by_stack_n`` stack entries, when asked), in order of first appearance.

        Example::

            >>> [(a.key, a.count) for a in prof.events().key_averages()]  # doctest: +SKIP
            [('aten::add', 1)]
        """
        groups = defaultdict(FunctionEventAvg)
        for event in self:
            key = [event.key, event.node_id, event.device_type, event.is_user_annotation]
            if group_by_input_shapes:
                key.append(str(event.input_shapes))
            if group_by_stack_n > 0:
                key += event.stack[:group_by_stack_n]
            groups[tuple(key)].add(event)
        averages = self._like(groups.values())
        for average in averages:
            average.stack = average.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                average.input_shapes = ""
        return averages

    def total_average(self):
        """All events summed into one :class:`FunctionEventAvg` with key ``"Total"``."""
        total = FunctionEventAvg()
        for event in self:
            total._accumulate(event)
        total.key = "Total"
        return total

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto): JSON with
        ``traceEvents`` of complete (``"ph": "X"``) events, ``ts``/``dur`` in microseconds.
        A path ending in ``.gz`` is written gzip-compressed.

        Example::

            >>> prof.export_chrome_trace("trace.json")            # doctest: +SKIP
        """
        import gzip

        from ._trace import chrome_trace

        trace = chrome_trace(self, self._trace_info, path)
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "wt") as f:
            json.dump(trace, f)

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write one line per event with a stack, ``root;...;leaf value`` (the collapsed
        format flame-graph tools read), ``value`` being ``metric`` in whole microseconds."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        attribute = metric.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        no_separators = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for event in self:
                value = int(getattr(event, attribute))
                if event.stack and value > 0:
                    frames = ";".join(e.translate(no_separators) for e in reversed(event.stack))
                    f.write(f"{frames} {value}\n")


def build_event_list(session):
    """The :class:`EventList` of a stopped session: events in order of start, each linked to
    its parent and children, memory totals including the children's."""
    to_us = 1e-3
    records = sorted(session.records, key=lambda r: r.begin_mark)
    events, open_by_thread = [], {}
    for index, record in enumerate(records):
        event = FunctionEvent(
            id=index + 1, name=record.name, thread=record.thread,
            start_us=(record.start_ns - session.start_ns) * to_us,
            end_us=(record.end_ns - session.start_ns) * to_us,
            input_shapes=record.shapes, input_dtypes=record.dtypes, stack=record.stack,
            cpu_memory_usage=record.cpu_memory, device_memory_usage=record.device_memory,
            flops=record.flops, sequence_nr=record.sequence_nr,
            is_user_annotation=record.category == "user_annotation",
            use_device=session.use_device)
        event._end_mark = record.end_mark
        event._category = record.category
        _attach_to_parent(event, open_by_thread.setdefault(record.thread, []), record)
        events.append(event)
    for event in reversed(events):  # children come after their parent: add them up first
        if event.cpu_parent is not None:
            event.cpu_parent.cpu_memory_usage += event.cpu_memory_usage
            event.cpu_parent.device_memory_usage += event.device_memory_usage
    info = {"base_ns": session.wall_start_ns, "record_shapes": session.record_shapes,
            "profile_memory": session.profile_memory, "with_flops": session.with_flops,
            "with_stack": session.with_stack}
    return EventList(events, use_device=session.use_device,
                     profile_memory=session.profile_memory, with_flops=session.with_flops,
                     trace_info=info)


def _attach_to_parent(event, open_events, record):
    """Link ``event`` to the innermost still-open event on its thread (``open_events``, a
    stack ordered by begin)."""
    while open_events and open_events[-1]._end_mark < record.begin_mark:
        open_events.pop()
    if open_events and record.end_mark < open_events[-1]._end_mark:
        parent = open_events[-1]
        event.cpu_parent = parent
        parent.cpu_children.append(event)
    open_events.append(event)

