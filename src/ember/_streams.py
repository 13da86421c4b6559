"""The device-generic ``ember.Stream`` and ``ember.Event`` (torch.Stream, torch.Event): CUDA's
own on ``cuda``, an always-finished queue on the CPU.

Example::

    >>> ember.Stream().query()
    True
"""

from __future__ import annotations

__all__ = ["Stream", "Event"]


class Stream:
    """A device-generic stream (``torch.Stream``): on ``cuda`` an :class:`ember.cuda.Stream`,
    on ``cpu`` (and ``meta``) the one in-order queue, whose work is always done.

    Example::

        >>> ember.Stream().query()
        True
    """

    def __new__(cls, device=None, *, priority=0):
        from ._device import to_device

        target = to_device("cpu" if device is None else device)
        if target.type == "cuda":
            from . import cuda

            if not cuda.is_available():
                raise RuntimeError("PyTorch is not linked with support for cuda devices "
                                   "(ember needs CuPy and a GPU)")
            return cuda.Stream(target, priority=priority)
        stream = super().__new__(cls)
        stream.device = target
        stream.device_type, stream.device_index, stream.stream_id = target.type, -1, 0
        return stream

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait_event(self, event):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self, event=None):
        raise RuntimeError(f"{self.device_type} backend doesn't support events.")

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device == self.device

    def __hash__(self):
        return hash((self.device_type, self.stream_id))

    def __repr__(self):
        return (f"ember.Stream device_type={self.device_type}, device_index={self.device_index},"
                f" stream_id={self.stream_id}")


class Event:
    """A device-generic event (``torch.Event``): on ``cuda`` an :class:`ember.cuda.Event`; a CPU
    event is always reached but cannot be recorded (torch's CPU backend has no events).

    Example::

        >>> ember.Event().query()
        True
    """

    def __new__(cls, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        from ._device import to_device

        target = to_device("cpu" if device is None else device)
        if target.type == "cuda":
            from . import cuda

            if not cuda.is_available():
                raise RuntimeError("PyTorch is not linked with support for cuda devices "
                                   "(ember needs CuPy and a GPU)")
            with cuda.device(target):
                return cuda.Event(enable_timing, blocking, interprocess)
        event = super().__new__(cls)
        event.device, event.enable_timing = target, enable_timing
        return event

    def record(self, stream=None):
        raise RuntimeError(f"{self.device.type} backend doesn't support events.")

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def elapsed_time(self, end_event):
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise RuntimeError(f"{self.device.type} backend doesn't support events.")
