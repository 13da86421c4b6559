"""Chrome trace export: the JSON that ``chrome://tracing``, Perfetto and TensorBoard read.

The layout follows the traces torch's profiler writes: a top-level object with
``schemaVersion``, ``traceEvents`` and ``traceName``; metadata (``"ph": "M"``) events naming
the process and its threads; one complete (``"ph": "X"``) event per recorded call, category
``cpu_op`` or ``user_annotation``, with ``ts`` (start) and ``dur`` in microseconds and the
input shapes under ``args["Input Dims"]`` when shapes were recorded. Times count from the
session's start; ``baseTimeNanoseconds`` is that start on the wall clock (epoch nanoseconds),
which keeps sub-microsecond precision in the doubles that JSON numbers are.
"""

from __future__ import annotations

import os
import socket


def chrome_trace(events, info, path):
    """The trace of ``events`` as a JSON-ready dict."""
    pid = os.getpid()
    trace_events = _metadata_events(pid, sorted({e.thread for e in events}))
    for index, event in enumerate(events):
        trace_events.append(_complete_event(event, index, pid))
    trace = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "record_shapes": int(bool(info.get("record_shapes"))),
        "profile_memory": int(bool(info.get("profile_memory"))),
        "with_flops": int(bool(info.get("with_flops"))),
        "with_stack": int(bool(info.get("with_stack"))),
        "host_name": socket.gethostname(),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": info.get("base_ns") or 0,
        "traceEvents": trace_events,
        "traceName": os.fspath(path),
    }
    trace.update(info.get("metadata", {}))  # entries from profile.add_metadata
    return trace


def _metadata_events(pid, threads, ts=0.0):
    events = [
        {"ph": "M", "name": "process_name", "ts": ts, "pid": pid, "tid": 0,
         "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "ts": ts, "pid": pid, "tid": 0,
         "args": {"labels": "CPU"}},
    ]
    for tid in threads:
        events.append({"ph": "M", "name": "thread_name", "ts": ts, "pid": pid, "tid": tid,
                       "args": {"name": f"thread {tid} (python)"}})
    return events


def _complete_event(event, index, pid):
    args = {"External id": event.id, "Ev Idx": index}
    if event.sequence_nr >= 0:
        args["Sequence number"] = event.sequence_nr
    if event.input_shapes:
        args["Input Dims"] = event.input_shapes
    if event.input_dtypes:
        args["Input type"] = event.input_dtypes
    if event.flops:
        args["flops"] = event.flops
    if event.stack:
        args["Call stack"] = ";".join(event.stack)
    return {
        "ph": "X",
        "cat": event._category,
        "name": event.trace_name,
        "pid": pid,
        "tid": event.thread,
        "ts": event.time_range.start,
        "dur": event.time_range.elapsed_us(),
        "args": args,
    }
