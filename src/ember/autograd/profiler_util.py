"""``ember.autograd.profiler_util``: the event classes behind the profilers' tables.

Example::

    >>> from ember.autograd.profiler_util import Interval
    >>> Interval(1.0, 4.0).elapsed_us()
    3.0
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any, NamedTuple

from ..profiler._events import (
    EventList,
    FunctionEvent,
    FunctionEventAvg,
    Interval,
    _FormattedTimes,
)

__all__ = ["EventList", "FormattedTimesMixin", "Interval", "Kernel", "FunctionEvent",
           "FunctionEventAvg", "StringTable", "MemRecordsAcc", "EventMetadata"]

# torch's name for the base of FunctionEvent and FunctionEventAvg (``*_str`` time formatters)
FormattedTimesMixin = _FormattedTimes


class Kernel(NamedTuple):
    """A device kernel launched by an operator: its name, device and duration (us)."""

    name: str
    device: int
    duration: float


class EventMetadata(NamedTuple):
    """Kernel, memory-copy and collective details torch's profiler attaches to device events
    (ember records CPU events only, so every field is usually None)."""

    registers_per_thread: int | None = None
    shared_memory: int | None = None
    grid: list | None = None
    block: list | None = None
    priority: int | None = None
    blocks_per_sm: float | None = None
    warps_per_sm: float | None = None
    occupancy: dict | None = None
    est_occupancy_pct: float | None = None
    queued: int | None = None
    graph_id: int | None = None
    graph_node_id: int | None = None
    stream: int | None = None
    context: int | None = None
    channel: int | None = None
    channel_type: int | None = None
    bytes: int | None = None
    bandwidth_gb_s: float | None = None
    collective_name: str | None = None
    dtype: str | None = None
    in_msg_nelems: int | None = None
    out_msg_nelems: int | None = None
    in_split_size: Any = None
    out_split_size: Any = None
    process_group_name: str | None = None
    process_group_desc: str | None = None
    group_size: int | None = None


class StringTable(defaultdict):
    """A cache of demangled symbol names (ember's names are already readable: identity).

    Example::

        >>> StringTable()["add"]
        'add'
    """

    def __missing__(self, key):
        self[key] = key
        return key


class MemRecordsAcc:
    """Memory records indexed by start time, to list those inside an interval quickly.

    ``mem_records`` are pairs whose first item has ``start_ns()``.

    Example::

        >>> MemRecordsAcc([]).in_interval(0, 10)  # doctest: +ELLIPSIS
        <generator object ...>
    """

    def __init__(self, mem_records):
        self._mem_records = mem_records
        ordered = sorted((record[0].start_ns(), i) for i, record in enumerate(mem_records))
        self._start_nses = [start for start, _ in ordered]
        self._indices = [i for _, i in ordered]

    def in_interval(self, start_ns, end_ns):
        """The records that start within ``[start_ns, end_ns]``."""
        first = bisect.bisect_left(self._start_nses, start_ns)
        last = bisect.bisect_right(self._start_nses, end_ns)
        for i in range(first, last):
            yield self._mem_records[self._indices[i]]
