"""CUDA streams and events, as ``torch.cuda.Stream`` / ``torch.cuda.Event``, on CuPy's.

A :class:`Stream` is a queue of GPU work; kernels launched while a stream is current run on it
in order. An :class:`Event` is a marker recorded on a stream: other streams can wait for it, the
host can wait for it, and two timed events measure the GPU time between them. (This file is
written against CuPy's API; the machine it was written on has no GPU.)

Example::

    >>> s = ember.cuda.Stream()                      # doctest: +SKIP
    >>> with ember.cuda.stream(s):                   # doctest: +SKIP
    ...     y = x @ x
    >>> s.synchronize()                              # doctest: +SKIP
"""

from __future__ import annotations

from .._device import cupy_module
from ._errors import NO_GPU_MESSAGE, require_gpu

__all__ = ["Stream", "ExternalStream", "Event", "StreamContext", "stream", "current_stream",
           "default_stream", "set_stream"]


def _device_index(device):
    """The ordinal of ``device`` (None: the current GPU)."""
    from . import _index

    return _index(device)


class Stream:
    """A CUDA stream on ``device`` (default: the current GPU) with ``priority`` (lower numbers
    run first; see :meth:`priority_range`).

    Example::

        >>> s = ember.cuda.Stream(priority=-1)       # doctest: +SKIP
        >>> s.query()                                # doctest: +SKIP
        True
    """

    def __init__(self, device=None, priority=0, **kwargs):
        cupy = cupy_module()
        if cupy is None:
            raise RuntimeError("ember.cuda.Stream requires CUDA support: " + NO_GPU_MESSAGE)
        with cupy.cuda.Device(_device_index(device)):
            self._cupy = cupy.cuda.Stream(non_blocking=True, priority=priority)
        self.priority = priority

    @classmethod
    def _wrap(cls, cupy_stream, priority=0):
        """A Stream around an existing CuPy stream (no new stream is created)."""
        stream = cls.__new__(cls)
        stream._cupy = cupy_stream
        stream.priority = priority
        return stream

    @staticmethod
    def priority_range():
        """``(least, greatest)`` priorities this GPU accepts (greatest is the lowest number)."""
        return tuple(require_gpu().cuda.runtime.deviceGetStreamPriorityRange())

    @property
    def device_index(self):
        """The ordinal of this stream's GPU."""
        return self._cupy.device_id

    @property
    def device_type(self):
        return "cuda"

    @property
    def device(self):
        """This stream's device, ``cuda:N``."""
        from .._device import device

        return device("cuda", self.device_index)

    @property
    def cuda_stream(self):
        """The raw ``cudaStream_t`` pointer, as an int."""
        return self._cupy.ptr

    stream_id = cuda_stream

    def query(self):
        """True when all work queued on this stream has finished."""
        return self._cupy.done

    def synchronize(self):
        """Wait on the host until this stream's queued work has finished."""
        self._cupy.synchronize()

    def wait_event(self, event):
        """Make work queued on this stream after now wait until ``event`` has happened."""
        self._cupy.wait_event(event._cupy)

    def wait_stream(self, stream):
        """Make work queued on this stream after now wait for ``stream``'s work queued so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one by default) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __enter__(self):
        self._context = StreamContext(self)
        return self._context.__enter__()

    def __exit__(self, *exc):
        self._context.__exit__(*exc)

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} " \
               f"cuda_stream={self.cuda_stream:#x}>"


class ExternalStream(Stream):
    """A stream made elsewhere (another library's ``cudaStream_t``), given as a pointer; ember
    neither creates nor destroys it.

    Example::

        >>> s = ember.cuda.ExternalStream(cupy_stream.ptr)   # doctest: +SKIP
    """

    def __init__(self, stream_ptr, device=None, **kwargs):
        cupy = cupy_module()
        if cupy is None:
            # torch's CPU build fails comparing the missing device index: a TypeError
            raise _ExternalStreamUnavailable(NO_GPU_MESSAGE)
        self._cupy = cupy.cuda.ExternalStream(stream_ptr, _device_index(device))
        self.priority = 0


class _ExternalStreamUnavailable(RuntimeError, TypeError):
    """No GPU for :class:`ExternalStream` (torch's CPU build raises TypeError there)."""


class Event:
    """A CUDA event: a marker in a stream's queue.

    ``enable_timing`` lets :meth:`elapsed_time` measure it, ``blocking`` makes
    :meth:`synchronize` sleep instead of spin, ``interprocess`` lets another process open it.

    Example::

        >>> start, end = (ember.cuda.Event(enable_timing=True) for _ in range(2))  # doctest: +SKIP
        >>> start.record(); y = x @ x; end.record(); end.synchronize()            # doctest: +SKIP
        >>> start.elapsed_time(end)                  # milliseconds  # doctest: +SKIP
        0.42
    """

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        cupy = cupy_module()
        if cupy is None:
            raise RuntimeError("ember.cuda.Event requires CUDA support: " + NO_GPU_MESSAGE)
        self.enable_timing = enable_timing
        self._cupy = cupy.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                     interprocess=interprocess)
        self._device_index = cupy.cuda.Device().id

    @property
    def device(self):
        from .._device import device

        return device("cuda", self._device_index)

    @property
    def cuda_event(self):
        """The raw ``cudaEvent_t`` pointer, as an int."""
        return self._cupy.ptr

    event_id = cuda_event

    def record(self, stream=None):
        """Record this event on ``stream`` (default: the current stream)."""
        stream = current_stream() if stream is None else stream
        self._cupy.record(stream._cupy)

    def wait(self, stream=None):
        """Make ``stream`` (default: the current stream) wait for this event."""
        stream = current_stream() if stream is None else stream
        stream.wait_event(self)

    def query(self):
        """True when the work recorded before this event has finished."""
        return self._cupy.done

    def synchronize(self):
        """Wait on the host until this event has happened."""
        self._cupy.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds of GPU time between this event and ``end_event`` (both timed)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        return require_gpu().cuda.get_elapsed_time(self._cupy, end_event._cupy)

    def ipc_handle(self):
        """A handle another process can open the (interprocess) event with."""
        return require_gpu().cuda.runtime.ipcGetEventHandle(self._cupy.ptr)

    def __repr__(self):
        return f"<ember.cuda.Event {self.cuda_event:#x}>"


def current_stream(device=None):
    """The stream kernels are queued on now for ``device`` (default: the current GPU).

    Example::

        >>> ember.cuda.current_stream() == ember.cuda.default_stream()   # doctest: +SKIP
        True
    """
    cupy = require_gpu()
    with cupy.cuda.Device(_device_index(device)):
        return Stream._wrap(cupy.cuda.get_current_stream())


def default_stream(device=None):
    """The GPU's default (legacy null) stream.

    Example::

        >>> ember.cuda.default_stream().cuda_stream     # doctest: +SKIP
        0
    """
    cupy = require_gpu()
    with cupy.cuda.Device(_device_index(device)):
        return Stream._wrap(cupy.cuda.Stream.null)


def set_stream(stream):
    """Make ``stream`` the current stream of its GPU (None: do nothing, as torch).

    Example::

        >>> ember.cuda.set_stream(None)
    """
    if stream is None:
        return
    stream._cupy.use()


class StreamContext:
    """Within ``with StreamContext(s):`` kernels run on ``s`` (and on its GPU); the previous
    stream and device come back on exit. ``StreamContext(None)`` does nothing.

    Example::

        >>> with ember.cuda.StreamContext(None):
        ...     pass
    """

    def __init__(self, stream):
        self.stream = stream
        self._saved = None

    def __enter__(self):
        if self.stream is None:
            return None
        cupy = require_gpu()
        previous_device = cupy.cuda.Device().id
        target_device = self.stream.device_index
        cupy.cuda.Device(target_device).use()
        self._saved = (previous_device, cupy.cuda.get_current_stream())
        self.stream._cupy.use()
        return self.stream

    def __exit__(self, *exc):
        if self._saved is None:
            return
        cupy = require_gpu()
        previous_device, previous_stream = self._saved
        previous_stream.use()
        cupy.cuda.Device(previous_device).use()
        self._saved = None


def stream(stream):
    """A :class:`StreamContext` for ``stream`` (None: a context that does nothing).

    Example::

        >>> with ember.cuda.stream(None):
        ...     pass
    """
    return StreamContext(stream)

