"""``ember.cuda``: the GPU device, backed by CuPy.

Without CuPy or a GPU, :func:`is_available` is False, queries answer as torch's CPU build
does, and calls that need a GPU raise an error that is both a RuntimeError and the exception
type torch's CPU build raises from that function (see ``_errors.py``).

Example::

    >>> ember.cuda.is_available()
    False
"""

from __future__ import annotations

from .._device import cupy_module
from . import memory as _memory
from ._errors import (
    NO_GPU_MESSAGE,
    CudaBindingMissingError,
    OutOfMemoryError,
    require_gpu,
)
from ._legacy import LEGACY_CUDA_TYPES as _LEGACY_CUDA_TYPES
from .memory import (
    empty_cache,
    get_per_process_memory_fraction,
    ipc_collect,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from .random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from .streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "get_device_name", "get_device_capability", "get_device_properties",
           "is_initialized", "init", "is_bf16_supported", "get_arch_list", "get_gencode_flags",
           "device", "device_of", "OutOfMemoryError", "Stream", "ExternalStream", "Event",
           "StreamContext", "stream", "current_stream", "default_stream", "set_stream",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
           "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "memory_cached", "max_memory_cached",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
           "memory_stats", "memory_summary", "mem_get_info", "set_per_process_memory_fraction",
           "get_per_process_memory_fraction", "ipc_collect", *_LEGACY_CUDA_TYPES]

globals().update(_LEGACY_CUDA_TYPES)


def is_available():
    """Whether a CUDA GPU can be used (CuPy installed and at least one device seen).

    Example::

        >>> ember.cuda.is_available()
        False
    """
    available = cupy_module() is not None
    if available:
        _memory.track()  # peak statistics count from here on
    return available


def device_count():
    """The number of GPUs CuPy sees (0 without CuPy).

    Example::

        >>> ember.cuda.device_count()
        0
    """
    cp = cupy_module()
    return cp.cuda.runtime.getDeviceCount() if cp is not None else 0


def current_device():
    """The index of the current GPU.

    Example::

        >>> ember.cuda.current_device()         # doctest: +SKIP
        0
    """
    return require_gpu().cuda.Device().id


def set_device(device):
    """Make ``device`` (an index, 'cuda:N' or a device) the current GPU.

    Example::

        >>> ember.cuda.set_device(0)            # doctest: +SKIP
    """
    index = _requested_index(device, strict=True)
    if index >= 0:  # a negative index selects nothing, as in torch
        require_gpu(CudaBindingMissingError).cuda.Device(index).use()


def synchronize(device=None):
    """Wait for all work queued on the GPU (``device``, or the current one) to finish.

    Example::

        >>> ember.cuda.synchronize()            # doctest: +SKIP
    """
    require_gpu().cuda.Device(_index(device)).synchronize()


def _index(device):
    """The ordinal of ``device`` (an index, 'cuda:N', a device, or None: the current GPU)."""
    cp = require_gpu()
    if device is None:
        return cp.cuda.Device().id
    if isinstance(device, int):
        return device
    from .._device import to_device

    index = to_device(device).index
    return cp.cuda.Device().id if index is None else index


def get_arch_list():
    """The GPU architectures ember can run on: the current GPU's (CuPy compiles kernels for
    the GPU it finds); [] without a GPU, as torch's CPU build.

    Example::

        >>> ember.cuda.get_arch_list()
        []
    """
    if not is_available():
        return []
    major, minor = get_device_capability()
    return [f"sm_{major}{minor}"]


def get_gencode_flags():
    """nvcc's ``-gencode`` flags for :func:`get_arch_list` ('' without a GPU).

    Example::

        >>> ember.cuda.get_gencode_flags()
        ''
    """
    flags = []
    for arch in get_arch_list():
        number = arch.split("_")[1]
        flags.append(f"-gencode compute=compute_{number},code={arch}")
    return " ".join(flags)


class device:
    """Within ``with ember.cuda.device(i):`` the current GPU is ``i``; the previous one comes
    back on exit. A negative index or None does nothing.

    Example::

        >>> with ember.cuda.device(-1):
        ...     pass
    """

    def __init__(self, device):
        self.idx = -1 if device is None else _requested_index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx < 0:
            return
        cupy = cupy_module()
        if cupy is None:
            raise RuntimeError(NO_GPU_MESSAGE)
        self.prev_idx = cupy.cuda.Device().id
        cupy.cuda.Device(self.idx).use()

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx >= 0:
            cupy_module().cuda.Device(self.prev_idx).use()
        return False


def _requested_index(device, strict=False):
    """The ordinal asked for without looking at the GPU (-1: none, or a CPU device);
    ``strict``: a device without an index is refused with torch's ValueError."""
    if isinstance(device, int):
        return device
    from .._device import to_device

    if strict and not isinstance(device, str) and not hasattr(device, "type"):
        raise ValueError("Expected a torch.device with a specified index or an integer, but "
                         f"got:{device}")
    target = to_device(device)
    if strict and target.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {target}")
    if strict and target.index is None:
        raise ValueError("Expected a torch.device with a specified index or an integer, but "
                         f"got:{target}")
    if target.type != "cuda":
        return -1
    return 0 if target.index is None else target.index


class device_of(device):
    """``device(obj.get_device())``: the current GPU is ``obj``'s within the block (nothing
    changes for a CPU tensor).

    Example::

        >>> with ember.cuda.device_of(ember.zeros(1)):
        ...     pass
    """

    def __init__(self, obj):
        on_gpu = obj.is_cuda
        super().__init__(obj.device if on_gpu else -1)


def get_device_properties(device=None):
    """The GPU's properties (CUDA's ``cudaDeviceProp`` fields, as CuPy reports them)."""
    return require_gpu().cuda.runtime.getDeviceProperties(_index(device))


def get_device_name(device=None):
    """The GPU's name."""
    return get_device_properties(device)["name"].decode()


def get_device_capability(device=None):
    """The GPU's compute capability as ``(major, minor)``."""
    props = get_device_properties(device)
    return props["major"], props["minor"]


def is_initialized():
    """Whether a GPU has been set up (CuPy found a device)."""
    return is_available()


def init():
    """Set up CUDA (raises without a GPU, as torch)."""
    require_gpu()


def is_bf16_supported(including_emulation=True):
    """False: ember's cuda tensors live in CuPy arrays, and CuPy has no bfloat16."""
    return False


from . import (  # noqa: E402,F401  (pinned attaches Tensor.pin_memory)  # noqa: E402,F401  (torch.cuda's submodules)
    amp,
    comm,
    gds,
    graphs,
    green_contexts,
    jiterator,
    nccl,
    nvtx,
    pinned,
    profiler,
    sparse,
    tunable,
)
from ._unavailable import *  # noqa: E402,F403  (torch.cuda's names that need CUDA itself)
from ._unavailable import cudart, default_generators, has_half, has_magma  # noqa: E402,F401
