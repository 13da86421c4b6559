"""``ember.webgpu``: the vendor-neutral GPU device (WebGPU through ``wgpu``: Vulkan, Metal,
Direct3D 12), in the shape of ``ember.cuda``.

Tensors on ``device("webgpu")`` hold :class:`~ember.webgpu._array.WebGPUArray` data; ember's
operators run on it through the array module :mod:`ember.webgpu._xp` (WGSL kernels, and a
counted CPU fallback for what has none yet: :func:`fallback_ops`).

Example::

    >>> import ember
    >>> if ember.webgpu.is_available():
    ...     x = ember.ones(3, device="webgpu")
    ...     print((x * 2).sum().item())
    6.0
"""

from __future__ import annotations

from . import _random, _runtime

__all__ = ["is_available", "device_count", "get_device_name", "synchronize", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "set_rng_state", "get_rng_state_all", "set_rng_state_all", "memory_allocated",
           "max_memory_allocated", "reset_peak_memory_stats", "empty_cache", "fallback_ops",
           "adapter_info"]


def is_available():
    """Whether wgpu is installed and found a Vulkan, Metal or Direct3D 12 adapter (never
    raises).

    Example::

        >>> ember.webgpu.is_available() in (True, False)
        True
    """
    try:
        return _runtime.probe().adapter is not None
    except Exception:
        return False


def device_count():
    """1 when an adapter is available, else 0 (ember uses one adapter).

    Example::

        >>> ember.webgpu.device_count() in (0, 1)
        True
    """
    return 1 if is_available() else 0


def adapter_info():
    """The adapter's description (``backend_type``, ``device``, ``vendor``...) as a dict."""
    found = _runtime.probe()
    if found.adapter is None:
        raise _runtime.WebGPUUnavailable(f"webgpu is not available: {found.reason}")
    return dict(found.adapter.info)


def get_device_name(device=None):
    """The adapter's name, e.g. ``'llvmpipe (LLVM 15.0.6, 256 bits)'``.

    Example::

        >>> ember.webgpu.get_device_name()  # doctest: +SKIP
        'llvmpipe (LLVM 15.0.6, 256 bits)'
    """
    return adapter_info()["device"]


def synchronize(device=None):
    """Wait until every recorded kernel has run.

    Example::

        >>> ember.webgpu.synchronize()  # doctest: +SKIP
    """
    runtime = _runtime.runtime()
    runtime.submit()
    if runtime.deferred:  # the kernels' deferred argument checks raise here at the latest
        runtime.run_deferred()
    # a one-word read waits for the queue (on_submitted_work_done_sync fails in wgpu 0.32)
    marker = runtime.allocate(4)
    runtime.queue.read_buffer(marker, 0, 4)
    runtime.release(marker)


def manual_seed(seed):
    """Seed the webgpu generator (Philox-4x32 on the device: its seed, offset 0), as
    ``torch.cuda.manual_seed``; ``ember.manual_seed`` seeds it too.

    Example::

        >>> ember.webgpu.manual_seed(0)
    """
    _random.default_generator().manual_seed(seed)


manual_seed_all = manual_seed


def seed():
    """Seed the webgpu generator from a non-deterministic source.

    Example::

        >>> ember.webgpu.seed()
    """
    _random.default_generator().seed()


seed_all = seed


def initial_seed():
    """The seed the webgpu generator was last seeded with.

    Example::

        >>> ember.webgpu.manual_seed(5); ember.webgpu.initial_seed()
        5
    """
    return _random.default_generator().initial_seed()


def get_rng_state(device="webgpu"):
    """The webgpu generator's state: 16 bytes (seed, offset; little-endian int64s) in a
    uint8 CPU tensor, as ``torch.cuda.get_rng_state``.

    Example::

        >>> state = ember.webgpu.get_rng_state(); state.shape
        ember.Size([16])
    """
    return _random.default_generator().get_state()


def set_rng_state(new_state, device="webgpu"):
    """Restore a state returned by :func:`get_rng_state` (the draws after it repeat).

    Example::

        >>> ember.webgpu.set_rng_state(ember.webgpu.get_rng_state())
    """
    _random.default_generator().set_state(new_state)


def get_rng_state_all():
    """The generator states of all webgpu devices (one), as a list."""
    return [get_rng_state()]


def set_rng_state_all(new_states):
    """Restore :func:`get_rng_state_all`'s states."""
    for state in new_states:
        set_rng_state(state)


def memory_allocated(device=None):
    """Bytes held by live webgpu tensors (pooled free buffers not counted).

    Example::

        >>> ember.webgpu.memory_allocated() >= 0  # doctest: +SKIP
        True
    """
    return _runtime.runtime().allocated if _runtime.initialised() else 0


def max_memory_allocated(device=None):
    """The peak of :func:`memory_allocated` since the start or the last reset."""
    return _runtime.runtime().peak if _runtime.initialised() else 0


def reset_peak_memory_stats(device=None):
    """Restart :func:`max_memory_allocated` from the current allocation."""
    if _runtime.initialised():
        runtime = _runtime.runtime()
        runtime.peak = runtime.allocated


def empty_cache():
    """Release the pool's free buffers to the driver.

    Example::

        >>> ember.webgpu.empty_cache()
    """
    if _runtime.initialised():
        _runtime.runtime().empty_cache()


def fallback_ops():
    """How many times each NumPy function ran on the CPU for lack of a WGSL kernel.

    Example::

        >>> ember.webgpu.fallback_ops()  # doctest: +SKIP
        {'take_along_axis': 2}
    """
    from . import _xp

    return _xp.fallback_counts()
