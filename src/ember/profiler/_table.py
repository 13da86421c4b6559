"""The summary table that ``EventList.table()`` prints, laid out as torch's profiler lays it
out: right-aligned columns separated by two spaces, a dashed rule above and below the header
and at the end, then the total self CPU time."""

from __future__ import annotations

import math

from ._events import _format_memory, _format_time, _format_time_share

_COLUMN_WIDTH = 12
_SPACING = 2
_FLOP_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _time_cell(time_us, time_unit):
    """A time in the table's fixed unit when one is asked for, else in the best one."""
    if time_unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if time_unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return _format_time(time_us)


def _flops_scale(smallest):
    """The unit in which the smallest non-zero count is at least 1, and its factor."""
    level = int(max(0.0, min(math.log10(smallest) / 3, len(_FLOP_UNITS) - 1)))
    return 10.0 ** (-3 * level), _FLOP_UNITS[level]


def _sort_attribute(sort_by):
    return sort_by.replace("cuda", "device").replace("xpu", "device") \
        .replace("privateuse1", "device")


class _Layout:
    """Column headers, widths and alignment; formats one row at a time."""

    def __init__(self):
        self.headers, self.widths, self.aligns = [], [], []

    def add(self, header, width, align=">"):
        self.headers.append(header)
        self.widths.append(width)
        self.aligns.append(align)

    def row(self, cells):
        return "".join(f"{str(c):{a}{w}}" + " " * _SPACING
                       for c, w, a in zip(cells, self.widths, self.aligns))

    def rule(self):
        return "".join("-" * w + " " * _SPACING for w in self.widths)

    def length(self):
        return sum(self.widths) + _SPACING * (len(self.widths) - 1)


def build_table(events, sort_by=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, header=None,
                profile_memory=False, with_flops=False, top_level_events_only=False,
                time_unit=None):
    """The text table of ``events`` (FunctionEvents or FunctionEventAvgs)."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        attribute = _sort_attribute(sort_by)
        events = sorted(events, key=lambda e: getattr(e, attribute), reverse=True)
    use_device = events[0].use_device
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_memory = any(e.self_device_memory_usage > 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    flop_counts = [e.flops for e in events if e.flops > 0] if with_flops else []

    layout = _Layout()
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    layout.add("Name", name_width)
    for title in ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"):
        layout.add(title, _COLUMN_WIDTH)
    device = use_device.upper() if use_device else "None"
    if has_device_time:
        for title in (f"Self {device}", f"Self {device} %", f"{device} total",
                      f"{device} time avg"):
            layout.add(title, _COLUMN_WIDTH)
    if profile_memory:
        layout.add("CPU Mem", _COLUMN_WIDTH)
        layout.add("Self CPU Mem", _COLUMN_WIDTH)
        if use_device and has_device_memory:
            layout.add(f"{device} Mem", _COLUMN_WIDTH)
            layout.add(f"Self {device} Mem", _COLUMN_WIDTH)
    layout.add("# of Calls", _COLUMN_WIDTH)
    if has_shapes:
        shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
        if max_shapes_column_width is not None:
            shapes_width = min(shapes_width, max_shapes_column_width)
        layout.add("Input Shapes", shapes_width)
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)
        layout.add("Source Location", src_width, "<")
    if flop_counts:
        scale, unit = _flops_scale(min(flop_counts))
        layout.add(f"Total {unit}", _COLUMN_WIDTH)

    total_self_cpu = sum(e.self_cpu_time_total for e in events)
    total_self_device = sum(e.self_device_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * layout.length(), header]
    if top_level_events_only:
        lines += ["=" * layout.length(), "This report only display top-level ops statistics"]
    lines += [layout.rule(), layout.row(layout.headers), layout.rule()]

    shown = 0
    for event in events:
        if shown == row_limit:
            break
        if top_level_events_only and event.cpu_parent is not None:
            continue
        shown += 1
        name = event.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        cells = [name,
                 _format_time_share(event.self_cpu_time_total, total_self_cpu),
                 _time_cell(event.self_cpu_time_total, time_unit),
                 _format_time_share(event.cpu_time_total, total_self_cpu),
                 _time_cell(event.cpu_time_total, time_unit),
                 _time_cell(event.cpu_time, time_unit)]
        if has_device_time:
            cells += [_time_cell(event.self_device_time_total, time_unit),
                      _format_time_share(event.self_device_time_total, total_self_device),
                      _time_cell(event.device_time_total, time_unit),
                      _time_cell(event.device_time, time_unit)]
        if profile_memory:
            cells += [_format_memory(event.cpu_memory_usage),
                      _format_memory(event.self_cpu_memory_usage)]
            if use_device and has_device_memory:
                cells += [_format_memory(event.device_memory_usage),
                          _format_memory(event.self_device_memory_usage)]
        cells.append(event.count)
        if has_shapes:
            cells.append(str(event.input_shapes)[:shapes_width])
        if stacks:
            cells.append(_trim_path(event.stack[0], src_width) if event.stack else "")
        if flop_counts:
            cells.append(f"{event.flops * scale:8.3f}" if event.flops > 0 else "--")
        lines.append(layout.row(cells))
        if stacks and event.stack:
            source_column = layout.headers.index("Source Location")
            for entry in event.stack[1:]:
                blank = [""] * len(layout.headers)
                blank[source_column] = _trim_path(entry, src_width)
                lines.append(layout.row(blank))
            lines.append(layout.row([""] * len(layout.headers)))
    lines.append(layout.rule())
    lines.append(f"Self CPU time total: {_time_cell(total_self_cpu, time_unit)}")
    if has_device_time:
        lines.append(f"Self {device} time total: {_time_cell(total_self_device, time_unit)}")
    return "\n".join(lines) + "\n"


def _trim_path(path, width):
    """The end of a long source path, marked with a leading ``...``."""
    if len(path) <= width:
        return path
    path = path[len(path) - width:]
    return "..." + path[3:] if len(path) > 3 else path
