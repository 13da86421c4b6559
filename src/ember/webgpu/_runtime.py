"""The WebGPU device itself: adapter, device, buffer pool and batched command encoding.

One process holds at most one ``GPUDevice`` (made on first use). Kernels record compute passes
into one open command encoder; :func:`flush` submits it. Every point where the host reads or
writes GPU memory (an upload, a download, ``synchronize``) flushes first, so the queue sees the
commands in program order. Buffers freed by tensors go back to a pool keyed by size
(``empty_cache`` releases them), so eager ops do not create buffers.

A device does not survive ``fork``: a forked child that touches it raises instead of hanging.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from . import _kernels

__all__ = ["WebGPUUnavailable", "runtime", "flush", "probe"]

_INSTALL_HINT = ("ember's webgpu device needs the wgpu package and a GPU adapter (on Linux a "
                 "Vulkan driver): pip install 'ember[webgpu]', and on Debian/Ubuntu without a "
                 "GPU apt-get install mesa-vulkan-drivers for the software Vulkan driver")


class WebGPUUnavailable(RuntimeError):
    """Raised when the webgpu device is used where wgpu or an adapter is missing."""


class _Probe:
    """What ``is_available`` found (computed once, never raising)."""

    __slots__ = ("wgpu", "adapter", "reason")

    def __init__(self):
        self.wgpu = self.adapter = None
        self.reason = None


_probe = None
_runtime = None
_lock = threading.Lock()


def _find_adapter():
    found = _Probe()
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences Mesa's warnings when headless
    try:
        import wgpu
    except Exception as error:  # no wgpu, or a broken install
        found.reason = f"wgpu is not installed ({error})"
        return found
    found.wgpu = wgpu
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as error:
        found.reason = f"no GPU adapter ({error})"
        return found
    if adapter is None:
        found.reason = "no GPU adapter"
        return found
    # without a Vulkan/Metal/D3D12 driver wgpu falls back to OpenGL, which cannot run compute
    backend = adapter.info.get("backend_type", "")
    if backend not in ("Vulkan", "Metal", "D3D12"):
        found.reason = f"only a {backend or 'unknown'} adapter was found (compute needs Vulkan, " \
                       f"Metal or Direct3D 12)"
        return found
    found.adapter = adapter
    return found


def probe():
    """The adapter search's result, made once per process."""
    global _probe
    if _probe is None or _probe_pid != os.getpid():
        _set_probe(_find_adapter())
    return _probe


_probe_pid = None


def _set_probe(found):
    global _probe, _probe_pid
    _probe, _probe_pid = found, os.getpid()


class Runtime:
    """The process's GPU device, its buffer pool, pipelines and the open command encoder."""

    def __init__(self, found):
        wgpu = found.wgpu
        self.wgpu = wgpu
        self.adapter = found.adapter
        self.pid = os.getpid()
        limits = found.adapter.limits
        self.max_binding = limits["max-storage-buffer-binding-size"]
        self.device = found.adapter.request_device_sync(
            required_limits={"max-storage-buffer-binding-size": self.max_binding,
                             "max-buffer-size": limits["max-buffer-size"]})
        self.queue = self.device.queue
        self.usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                      | wgpu.BufferUsage.COPY_DST)
        self.pool = {}  # size -> free buffers of that size
        # every buffer lent to a Storage, held here so that it is never part of cyclic garbage:
        # a Storage in a cycle (a failed test's traceback) is finalised together with its
        # buffer, and wgpu's finaliser would release the buffer the Storage returns to the pool
        self.lent = set()
        self.pooled_bytes = 0
        self.allocated = 0
        self.peak = 0
        self.pipelines = {}
        self.bind_groups = {}
        self.constants = {}  # parameter bytes -> a read-only buffer holding them
        self.param_buffers = {}  # parameter words (ints) -> their constant buffer
        self.encoder = None
        self.compute = None  # the open compute pass: consecutive dispatches share it
        self.deferred = []  # (device array, check) pairs run at the next host read (defer)
        self.bound = None  # the pipeline set on the open pass
        self.pending = 0
        self.dispatched = 0  # every dispatch recorded, for tests and benchmarks

    # ------------------------------------------------------------ buffers

    def allocate(self, nbytes):
        """A storage buffer of at least ``nbytes`` (a multiple of 4, at least 4), from the pool
        when one of that size is free."""
        size = _bucket(nbytes)
        free = self.pool.get(size)
        if free:
            buffer = free.pop()
            self.pooled_bytes -= size
        else:
            buffer = self.device.create_buffer(size=size, usage=self.usage)
        self.lent.add(buffer)
        self.allocated += size
        if self.allocated > self.peak:
            self.peak = self.allocated
        return buffer

    def release(self, buffer):
        """Give ``buffer`` back to the pool (commands already recorded may still use it: they
        run before any later write into it, which is recorded after them)."""
        if os.getpid() != self.pid:
            return
        self.lent.discard(buffer)
        self.allocated -= buffer.size
        self.pool.setdefault(buffer.size, []).append(buffer)
        self.pooled_bytes += buffer.size

    def empty_cache(self):
        flush()
        if self.deferred:
            self.run_deferred()
        self.bind_groups.clear()
        for buffers in self.pool.values():
            for buffer in buffers:
                buffer.destroy()
        self.pool.clear()
        self.pooled_bytes = 0

    def constant(self, data):
        """A read-only storage buffer holding ``data`` (bytes), cached by content: kernels'
        shapes and scalars repeat from step to step, and a new buffer made with its contents
        needs no queue write (which would run before the commands still being recorded)."""
        buffer = self.constants.get(data)
        if buffer is None:
            if len(self.constants) > 4096:
                self.constants.clear()
            buffer = self.device.create_buffer_with_data(
                data=data, usage=self.wgpu.BufferUsage.STORAGE)
            self.constants[data] = buffer
        return buffer

    def params(self, words):
        """The constant buffer of the u32 ``words`` (ints; floats are stored as float32 bits),
        looked up by the words themselves: converting them to bytes on every dispatch costs
        more than the rest of recording a small kernel.

        Example::

            >>> runtime().params([3, 1, 2.5]) is runtime().params((3, 1, 2.5))
            True
        """
        key = tuple(words)
        if set(map(type, key)) != _ONLY_INTS:  # 2.0 == 2: floats are keyed by their bits
            key = tuple(_kernels._float_bits(w) if isinstance(w, (float, np.floating)) else int(w)
                        for w in key)
        buffer = self.param_buffers.get(key)
        if buffer is None:
            if len(self.param_buffers) > 4096:
                self.param_buffers.clear()
            buffer = self.param_buffers[key] = self.constant(_kernels.params(key))
        return buffer

    # ------------------------------------------------------------ transfers

    def upload(self, buffer, data):
        flush()
        if len(data) % 4:  # writes are whole words
            data = bytes(data) + bytes(4 - len(data) % 4)
        self.queue.write_buffer(buffer, 0, data)

    def download(self, buffer, nbytes):
        flush()
        if self.deferred:
            self.run_deferred()
        return self.queue.read_buffer(buffer, 0, (nbytes + 3) & ~3)[:nbytes]

    def defer(self, info, check):
        """Call ``check(values)`` with the host copy of the device array ``info`` at the next
        point where the host reads device memory (a download, ``synchronize``), instead of
        waiting for the kernels now: how the kernels' argument checks (an index out of range)
        stay off the critical path, as CUDA's device-side checks report asynchronously. The
        error a check raises surfaces at that read (or here, once 1,024 are pending: a
        program that never reads the device must not hold its index arrays forever)."""
        self.deferred.append((info, check))
        if len(self.deferred) >= 1024:
            self.run_deferred()

    def run_deferred(self):
        """Run the deferred checks: their arrays are joined on the device and read at once."""
        from . import _xp

        pending, self.deferred = self.deferred, []
        flat = [_xp.reshape(info, (-1,)) for info, _ in pending]
        values = (_xp.concatenate(flat) if len(flat) > 1 else flat[0]).get()
        start = 0
        for piece, (_, check) in zip(flat, pending):
            check(values[start:start + piece.size])
            start += piece.size

    # ------------------------------------------------------------ kernels

    def pipeline(self, source):
        """The compute pipeline for WGSL ``source`` (compiled once)."""
        pipeline = self.pipelines.get(source)
        if pipeline is None:
            module = self.device.create_shader_module(code=source)
            pipeline = self.device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": "main"})
            self.pipelines[source] = pipeline
        return pipeline

    def dispatch(self, source, buffers, groups):
        """Record one dispatch of ``source`` over ``groups`` workgroups (x, y) with
        ``buffers`` bound at 0, 1, ... into the open encoder; an entry may be a window of a
        buffer, ``(buffer, byte offset, byte size)``, as larger buffers must be bound."""
        pipeline = self.pipeline(source)
        for buffer in buffers:
            size = buffer[2] if isinstance(buffer, tuple) else buffer.size
            if size > self.max_binding:
                raise RuntimeError(
                    f"ember.webgpu: this kernel would bind {size} bytes of a tensor, more than "
                    f"one binding can hold ({self.max_binding} bytes); the elementwise "
                    f"kernels split such tensors, this one does not yet (make the tensor "
                    f"smaller, or run this step on the cpu)")
        # a bind group per (pipeline, buffers): pooled buffers come back, so keys repeat from
        # step to step (the key holds the buffers, so their ids cannot be reused meanwhile)
        key = (source, *buffers)
        bind_group = self.bind_groups.get(key)
        if bind_group is None:
            if len(self.bind_groups) > 4096:
                self.bind_groups.clear()
            entries = [{"binding": i, "resource": _resource(b)} for i, b in enumerate(buffers)]
            bind_group = self.device.create_bind_group(
                layout=pipeline.get_bind_group_layout(0), entries=entries)
            self.bind_groups[key] = bind_group
        compute = self.compute
        if compute is None:
            if self.encoder is None:
                self.encoder = self.device.create_command_encoder()
            compute = self.compute = self.encoder.begin_compute_pass()
            self.bound = None
        if self.bound is not pipeline:
            compute.set_pipeline(pipeline)
            self.bound = pipeline
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(*groups)
        self.pending += 1
        self.dispatched += 1
        if self.pending >= 256:  # keep the recorded work bounded
            flush()

    def command_encoder(self):
        """The open command encoder for a copy or a clear (which cannot be recorded inside a
        compute pass: the open one ends, and the next dispatch begins another)."""
        if self.compute is not None:
            self.compute.end()
            self.compute = None
        if self.encoder is None:
            self.encoder = self.device.create_command_encoder()
        return self.encoder

    def copy(self, source, target, nbytes, source_offset=0, target_offset=0):
        """Record copying ``nbytes`` (a multiple of 4) between two buffers (byte offsets,
        multiples of 4): a plain copy, no kernel."""
        self.command_encoder().copy_buffer_to_buffer(source, source_offset, target,
                                                     target_offset, nbytes)

    def clear(self, buffer):
        """Record zero-filling ``buffer``."""
        self.command_encoder().clear_buffer(buffer)

    def submit(self):
        if self.encoder is not None:
            if self.compute is not None:
                self.compute.end()
                self.compute = None
            encoder, self.encoder, self.pending = self.encoder, None, 0
            self.queue.submit([encoder.finish()])


_ONLY_INTS = {int}


def _resource(binding):
    """A bind group entry's resource: a whole buffer, or a ``(buffer, offset, size)`` window."""
    if isinstance(binding, tuple):
        buffer, offset, size = binding
        return {"buffer": buffer, "offset": offset, "size": size}
    return {"buffer": binding, "offset": 0, "size": binding.size}


def _bucket(nbytes):
    """Pool size for ``nbytes``: multiples of 256 bytes up to 64 KiB, then powers of two
    split in four, so that reuse is likely and waste stays under a quarter."""
    nbytes = max(4, (nbytes + 3) & ~3)
    if nbytes <= 65536:
        return (nbytes + 255) & ~255
    top = 1 << (nbytes - 1).bit_length()
    step = top // 8
    return (nbytes + step - 1) // step * step


def runtime():
    """The process's :class:`Runtime`, made on first use; raises a clear error without wgpu or
    an adapter, and in a child forked after the parent made its device."""
    global _runtime
    current = _runtime
    if current is not None:
        if current.pid != os.getpid():
            raise RuntimeError(
                "ember: the webgpu device cannot be used in a process forked after the parent "
                "initialised it (the child would hang); use the 'spawn' or 'forkserver' start "
                "method (DataLoader(multiprocessing_context='spawn')), or send tensors to "
                "workers on the cpu")
        return current
    with _lock:
        if _runtime is None:
            found = probe()
            if found.adapter is None:
                raise WebGPUUnavailable(f"webgpu is not available: {found.reason}. "
                                        f"{_INSTALL_HINT}")
            _runtime = Runtime(found)
    return _runtime


def initialised():
    """Whether this process (not a forked parent) has made its device."""
    return _runtime is not None and _runtime.pid == os.getpid()


def flush():
    """Submit the recorded commands (a no-op when nothing is recorded or no device exists)."""
    current = _runtime
    if current is not None and current.pid == os.getpid():
        current.submit()
