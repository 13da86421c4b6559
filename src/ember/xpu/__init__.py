"""``ember.xpu``: Intel XPU devices, which ember does not have.

Every name of ``torch.xpu`` is here and behaves as on torch's CPU build: queries answer
"none" (``is_available()`` False, ``device_count()`` 0, memory counters 0, empty statistics),
seeding is accepted and ignored, and calls that need a device raise torch's exception type
(AssertionError "not compiled with XPU", which is also a RuntimeError here; RuntimeError for
XPU classes; ImportError for the ``pyzes`` telemetry).

Example::

    >>> ember.xpu.is_available(), ember.xpu.device_count(), ember.xpu.memory_allocated()
    (False, 0, 0)
"""

from __future__ import annotations

import collections
import contextlib
import ctypes

from . import streams
from ._errors import (
    NO_XPU_MESSAGE,
    XpuBindingMissingError,
    XpuUnavailableError,
    dummy_class_error,
    needs_xpu,
)
from .streams import Event, Stream

__all__ = ["Event", "Stream", "StreamContext", "XPUPluggableAllocator", "XPUGraph",
           "can_device_access_peer", "change_current_allocator", "clock_rate",
           "current_device", "current_stream", "default_generators", "device", "device_of",
           "device_count", "device_memory_used", "empty_cache", "get_arch_list",
           "get_device_capability", "get_device_name", "get_device_properties",
           "get_gencode_flags", "get_per_process_memory_fraction", "get_rng_state",
           "get_rng_state_all", "get_stream_from_external", "graph", "graph_pool_handle", "init",
           "initial_seed", "is_available", "is_bf16_supported", "is_current_stream_capturing",
           "is_initialized", "is_tf32_supported", "make_graphed_callables", "manual_seed",
           "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "mem_get_info",
           "memory_allocated", "memory_reserved", "memory_snapshot", "memory_stats",
           "memory_stats_as_nested_dict", "memory_usage", "MemPool", "power_draw",
           "use_mem_pool", "reset_accumulated_memory_stats", "reset_peak_memory_stats", "seed",
           "seed_all", "set_device", "set_per_process_memory_fraction", "set_rng_state",
           "set_rng_state_all", "set_stream", "stream", "streams", "synchronize", "temperature",
           "utilization"]

default_generators: tuple = ()

can_device_access_peer = needs_xpu("can_device_access_peer", "device, peer")
current_device = needs_xpu("current_device")
current_stream = needs_xpu("current_stream", "device=None")
get_device_capability = needs_xpu("get_device_capability", "device=None")
get_device_name = needs_xpu("get_device_name", "device=None")
get_device_properties = needs_xpu("get_device_properties", "device=None")
get_per_process_memory_fraction = needs_xpu("get_per_process_memory_fraction", "device=None")
set_per_process_memory_fraction = needs_xpu("set_per_process_memory_fraction",
                                            "fraction, device=None")
get_rng_state = needs_xpu("get_rng_state", "device='xpu'")
get_stream_from_external = needs_xpu("get_stream_from_external", "data_ptr, device=None")
init = needs_xpu("init")
initial_seed = needs_xpu("initial_seed")
mem_get_info = needs_xpu("mem_get_info", "device=None")
set_device = needs_xpu("set_device", "device")
synchronize = needs_xpu("synchronize", "device=None")
change_current_allocator = needs_xpu("change_current_allocator", "allocator",
                                     error=XpuBindingMissingError)
reset_accumulated_memory_stats = needs_xpu("reset_accumulated_memory_stats", "device=None",
                                           error=XpuBindingMissingError)
reset_peak_memory_stats = needs_xpu("reset_peak_memory_stats", "device=None",
                                    error=XpuBindingMissingError)


def _needs_pyzes(name):
    def function(device=None):
        raise ImportError("pyzes is required; install it with 'pip install pyzes'. "
                          f"(torch.xpu.{name} reads Level Zero's telemetry; {NO_XPU_MESSAGE})")

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"torch's ``torch.xpu.{name}``: Level Zero telemetry through ``pyzes``;"
                        " without it, torch's ImportError.")
    return function


clock_rate = _needs_pyzes("clock_rate")
device_memory_used = _needs_pyzes("device_memory_used")
memory_usage = _needs_pyzes("memory_usage")
power_draw = _needs_pyzes("power_draw")
temperature = _needs_pyzes("temperature")
utilization = _needs_pyzes("utilization")


def is_available():
    """False: ember has no XPU backend.

    Example::

        >>> ember.xpu.is_available()
        False
    """
    return False


def is_initialized():
    """False: no XPU was set up.

    Example::

        >>> ember.xpu.is_initialized()
        False
    """
    return False


def device_count():
    """0: ember has no XPU backend.

    Example::

        >>> ember.xpu.device_count()
        0
    """
    return 0


def is_bf16_supported(including_emulation=True):
    """False: no XPU.

    Example::

        >>> ember.xpu.is_bf16_supported()
        False
    """
    return False


def is_tf32_supported():
    """False: no XPU.

    Example::

        >>> ember.xpu.is_tf32_supported()
        False
    """
    return False


def get_arch_list():
    """The XPU architectures ember is built for: none.

    Example::

        >>> ember.xpu.get_arch_list()
        []
    """
    return []


def get_gencode_flags():
    """The XPU code-generation flags: none.

    Example::

        >>> ember.xpu.get_gencode_flags()
        ''
    """
    return ""


def empty_cache():
    """Free cached XPU memory: there is none.

    Example::

        >>> ember.xpu.empty_cache()
    """


def _zero_bytes(name):
    def counter(device=None):
        return 0

    counter.__name__ = counter.__qualname__ = name
    counter.__doc__ = f"torch's ``torch.xpu.{name}``: 0 bytes, as no XPU memory is used."
    return counter


memory_allocated = _zero_bytes("memory_allocated")
max_memory_allocated = _zero_bytes("max_memory_allocated")
memory_reserved = _zero_bytes("memory_reserved")
max_memory_reserved = _zero_bytes("max_memory_reserved")


def memory_stats(device=None):
    """The XPU allocator's statistics: none.

    Example::

        >>> ember.xpu.memory_stats()
        OrderedDict()
    """
    return collections.OrderedDict()


def memory_stats_as_nested_dict(device=None):
    """The XPU allocator's statistics as a nested dict: empty.

    Example::

        >>> ember.xpu.memory_stats_as_nested_dict()
        {}
    """
    return {}


def memory_snapshot(mempool_id=None):
    """The XPU allocator's segments: none.

    Example::

        >>> ember.xpu.memory_snapshot()
        []
    """
    return []


def get_rng_state_all():
    """The random states of every XPU: there are none.

    Example::

        >>> ember.xpu.get_rng_state_all()
        []
    """
    return []


def manual_seed(seed):
    """Seed the XPU generators: accepted and ignored (torch queues it until an XPU exists).

    Example::

        >>> ember.xpu.manual_seed(0)
    """
    int(seed)


def manual_seed_all(seed):
    """Seed every XPU generator: accepted and ignored, as :func:`manual_seed`."""
    int(seed)


def seed():
    """Seed the XPU generator randomly: nothing to seed."""


def seed_all():
    """Seed every XPU generator randomly: nothing to seed."""


def set_rng_state(new_state, device="xpu"):
    """Set an XPU generator's state: the state is copied (as torch does) and otherwise
    ignored."""
    new_state.clone()


def set_rng_state_all(new_states):
    """Set every XPU generator's state: each is checked as :func:`set_rng_state`."""
    for state in new_states:
        set_rng_state(state)


def graph_pool_handle():
    """A memory-pool handle for XPU graphs: needs an XPU (RuntimeError, as torch's)."""
    raise dummy_class_error("_xpu_graph_pool_handle")


def is_current_stream_capturing():
    """Whether an XPU graph is being captured: needs an XPU (RuntimeError, as torch's)."""
    raise dummy_class_error("_xpu_isCurrentStreamCapturing")


class XPUGraph:
    """An XPU graph: needs an XPU (constructing it raises)."""

    def __init__(self, *args, **kwargs):
        raise dummy_class_error("XPUGraph")


class MemPool:
    """A pool of XPU memory: needs an XPU (constructing it raises)."""

    def __init__(self, *args, **kwargs):
        raise dummy_class_error("MemPool")


class graph:  # noqa: N801  (torch's name)
    """Capture XPU work into ``xpu_graph`` inside the block: needs an XPU (constructing one
    raises, as its capture stream cannot be made)."""

    def __init__(self, xpu_graph, pool=None, stream=None, capture_error_mode="global"):
        raise dummy_class_error("Stream")


def make_graphed_callables(callables, sample_args, num_warmup_iters=3,
                           allow_unused_input=False, pool=None):
    """Graph-captured versions of ``callables``: needs an XPU (raises)."""
    raise dummy_class_error("XPUGraph")


class XPUPluggableAllocator:
    """An XPU allocator loaded from a shared library: the library is opened (an OSError if
    it cannot be), then installing it needs an XPU."""

    def __init__(self, path_to_lib_file, alloc_fn_name, free_fn_name):
        library = ctypes.CDLL(path_to_lib_file)
        getattr(library, alloc_fn_name)
        getattr(library, free_fn_name)
        raise XpuBindingMissingError(f"torch.xpu.XPUPluggableAllocator: {NO_XPU_MESSAGE}")


class StreamContext:
    """Make ``stream`` the current XPU stream inside the block (None: nothing changes).

    Example::

        >>> with ember.xpu.StreamContext(None):
        ...     pass
    """

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            raise XpuUnavailableError(f"torch.xpu.StreamContext: {NO_XPU_MESSAGE}")

    def __exit__(self, exc_type, exc_value, traceback):
        return False


def stream(stream):
    """``StreamContext(stream)``.

    Example::

        >>> with ember.xpu.stream(None):
        ...     pass
    """
    return StreamContext(stream)


def set_stream(stream):
    """Make ``stream`` the current XPU stream (None: nothing changes; a stream needs an XPU).

    Example::

        >>> ember.xpu.set_stream(None)
    """
    if stream is not None:
        raise XpuUnavailableError(f"torch.xpu.set_stream: {NO_XPU_MESSAGE}")


class device:  # noqa: N801  (torch's name)
    """Within the block the current XPU is ``device``: entering needs an XPU
    (NotImplementedError, as torch's CPU build)."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        raise NotImplementedError(f"torch.xpu.device: {NO_XPU_MESSAGE}")

    def __exit__(self, exc_type, exc_value, traceback):
        return False


class device_of(device):  # noqa: N801  (torch's name)
    """``device(obj.get_device())``: entering needs an XPU, as :class:`device`."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_xpu else -1)


@contextlib.contextmanager
def use_mem_pool(pool, device=None):
    """Allocate from ``pool`` inside the block: needs an XPU (entering raises)."""
    raise XpuUnavailableError(f"torch.xpu.use_mem_pool: {NO_XPU_MESSAGE}")
    yield  # unreachable; makes this a generator, as a context manager must be


from . import graphs, memory, random  # noqa: E402,F401  (torch's submodule paths)
