"""``ember.cpu``: the CPU device's namespace, as ``torch.cpu`` (``ember.cpu.amp``).

Example::

    >>> ember.cpu.is_available()
    True
"""

from __future__ import annotations

import functools
import os
import platform
import types

from . import amp

__all__ = ["amp", "is_available", "is_initialized", "synchronize", "current_device",
           "current_stream", "stream", "set_device", "device_count", "Stream",
           "StreamContext", "Event", "get_capabilities"]


def is_available():
    """Always True: the CPU is always there."""
    return True


def device_count():
    """1, as torch."""
    return 1


def current_device():
    """``'cpu'``, as torch."""
    return "cpu"


def synchronize(device=None):
    """A no-op: CPU work is synchronous."""


def is_initialized():
    """Always True: the CPU needs no setting up.

    Example::

        >>> ember.cpu.is_initialized()
        True
    """
    return True


def set_device(device):
    """Nothing to do: there is one CPU device (for device-agnostic code).

    Example::

        >>> ember.cpu.set_device("cpu")
    """


class Stream:
    """The CPU's only stream: work runs in order, so every method does nothing (for
    device-agnostic code written against ``ember.cuda.Stream``).

    Example::

        >>> ember.cpu.Stream().wait_stream(ember.cpu.current_stream())
    """

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        """Nothing to wait for: CPU work is synchronous."""

    def record_event(self):
        """Nothing to record."""

    def wait_event(self, event):
        """Nothing to wait for."""


class Event:
    """An event on the CPU stream: always complete.

    Example::

        >>> ember.cpu.Event().query()
        True
    """

    def query(self):
        """True: CPU work has finished by the time this is asked."""
        return True

    def record(self, stream=None):
        """Nothing to record."""

    def synchronize(self):
        """Nothing to wait for."""

    def wait(self, stream=None):
        """Nothing to wait for."""


_streams = {"default": Stream()}
_streams["current"] = _streams["default"]


def current_stream(device=None):
    """The selected CPU :class:`Stream` (the default one unless :func:`stream` chose another).

    Example::

        >>> isinstance(ember.cpu.current_stream(), ember.cpu.Stream)
        True
    """
    return _streams["current"]


class StreamContext:
    """Select ``stream`` as the current CPU stream inside the block (None: no change).

    Example::

        >>> s = ember.cpu.Stream()
        >>> with ember.cpu.StreamContext(s):
        ...     ember.cpu.current_stream() is s
        True
    """

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _streams["default"]

    def __enter__(self):
        if self.stream is not None:
            self.prev_stream = _streams["current"]
            _streams["current"] = self.stream

    def __exit__(self, exc_type, exc_value, traceback):
        if self.stream is not None:
            _streams["current"] = self.prev_stream


def stream(stream):
    """``StreamContext(stream)``: select ``stream`` inside a ``with`` block.

    Example::

        >>> with ember.cpu.stream(ember.cpu.Stream()):
        ...     pass
    """
    return StreamContext(stream)


# torch's capability names for the flags Linux lists in /proc/cpuinfo
_CPUINFO_FLAGS = {
    "clflush": "clflush", "sha_ni": "sha", "aes": "aes", "abm": "lzcnt", "bmi2": "bmi2",
    "bmi1": "bmi", "fma": "fma3", "amx_fp16": "amx_fp16", "amx_tile": "amx_tile",
    "avx_vnni_int16": "avx_vnni_int16", "clflushopt": "clflushopt",
    "avx_vnni_int8": "avx_vnni_int8", "fma4": "fma4", "avx10_2": "avx10_2",
    "avx512_4vnniw": "avx512_4vnniw", "avx512_vp2intersect": "avx512_vp2intersect",
    "avx512_fp16": "avx512_fp16", "avx10_1": "avx10_1", "sse4_2": "sse4_2",
    "avx512_4fmaps": "avx512_4fmaps", "sse": "sse", "avx_ne_convert": "avx_ne_convert",
    "amx_int8": "amx_int8", "amx_bf16": "amx_bf16", "avx512bw": "avx512_bw", "sse2": "sse2",
    "f16c": "f16c", "pni": "sse3", "avx2": "avx2", "avx512_bf16": "avx512_bf16",
    "sse4_1": "sse4_1", "clwb": "clwb", "avx512cd": "avx512_cd", "sse4a": "sse4a",
    "popcnt": "popcnt", "avx_vnni": "avx_vnni", "avx": "avx", "avx512vl": "avx512_vl",
    "ssse3": "ssse3", "avx512f": "avx512_f", "avx512dq": "avx512_dq",
    "avx512vbmi": "avx512_vbmi", "avx512ifma": "avx512_ifma",
    "avx512_vpopcntdq": "avx512_vpopcntdq", "avx512_vbmi2": "avx512_vbmi2",
    "avx512_bitalg": "avx512_bitalg", "avx512_vnni": "avx512_vnni"}


def _cpuinfo():
    """/proc/cpuinfo as a list of {field: value} dicts, one per logical CPU ([] elsewhere)."""
    try:
        with open("/proc/cpuinfo") as file:
            blocks = file.read().strip().split("\n\n")
    except OSError:
        return []
    return [dict((part.strip() for part in line.split(":", 1)) for line in block.splitlines()
                 if ":" in line) for block in blocks]


def _cache_size(level, kind):
    """The size in bytes of CPU 0's cache of this level and type (0 when unknown)."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(root)
    except OSError:
        return 0
    for entry in entries:
        try:
            with open(f"{root}/{entry}/level") as f_level, open(f"{root}/{entry}/type") as f_type:
                if int(f_level.read()) != level or f_type.read().strip() not in kind:
                    continue
            with open(f"{root}/{entry}/size") as f_size:
                text = f_size.read().strip()
        except (OSError, ValueError):
            continue
        scale = {"K": 1024, "M": 1024 ** 2}.get(text[-1:], 1)
        return int(text.rstrip("KM")) * scale
    return 0


@functools.lru_cache(maxsize=1)
def get_capabilities():
    """What this CPU offers, under torch's names: instruction-set flags (``avx2``,
    ``avx512_f``, ``amx_bf16``, ...), cache sizes, core and socket counts, its name and
    architecture (read from /proc/cpuinfo and sysfs on Linux; flags False elsewhere).

    Example::

        >>> ember.cpu.get_capabilities()["architecture"] == platform.machine()
        True
    """
    cpus = _cpuinfo()
    first = cpus[0] if cpus else {}
    present = set(first.get("flags", "").split())
    found = {name: flag in present for flag, name in _CPUINFO_FLAGS.items()}
    cores = {(cpu.get("physical id"), cpu.get("core id")) for cpu in cpus}
    logical = os.cpu_count() or 1
    found.update(
        l1d_cache_size=_cache_size(1, ("Data", "Unified")),
        l2_cache_size=_cache_size(2, ("Unified", "Data")),
        num_logical_cores=logical,
        num_physical_cores=len(cores) if cpus and None not in next(iter(cores)) else logical,
        num_sockets=max(len({cpu.get("physical id") for cpu in cpus}), 1),
        cpu_name=_cpu_name(first.get("vendor_id", ""), first.get("model name", "")),
        architecture=platform.machine())
    return types.MappingProxyType(found)


def _cpu_name(vendor, model):
    """The maker and product line, as torch prints it ('Intel Xeon', 'AMD EPYC')."""
    maker = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(vendor, vendor)
    for line in ("Xeon", "Core", "Atom", "EPYC", "Ryzen", "Opteron"):
        if line in model:
            return f"{maker} {line}"
    return maker or platform.processor() or "unknown"
