"""``ember.accelerator``: the current accelerator, as ``torch.accelerator``: CUDA when a GPU
is usable, otherwise none (a CPU-only box).

Example::

    >>> ember.accelerator.current_accelerator() is None
    True
"""

from __future__ import annotations

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "synchronize"]


def is_available():
    """Whether an accelerator (a CUDA GPU) can be used."""
    from . import cuda

    return cuda.is_available()


def current_accelerator(check_available=False):
    """``device('cuda')`` with a GPU, else None."""
    if is_available():
        from ._device import device

        return device("cuda")
    return None


def device_count():
    """The number of accelerators (GPUs), 0 without one."""
    from . import cuda

    return cuda.device_count()


def current_device_index():
    """The current GPU's index (raises without a GPU)."""
    from . import cuda

    return cuda.current_device()


def synchronize(device=None):
    """Wait for the accelerator's queued work (a no-op without one)."""
    if is_available():
        from . import cuda

        cuda.synchronize(device)
