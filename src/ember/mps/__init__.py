"""``ember.mps``: Apple's Metal devices, which ember does not have.

Every name of ``torch.mps`` is here and behaves as on torch's CPU build: ``is_available()``
is False and ``device_count()`` 0, ``manual_seed`` is accepted and ignored, and calls that
need the device raise torch's RuntimeError ("Cannot execute X() without MPS backend.").

Example::

    >>> ember.mps.is_available(), ember.mps.device_count()
    (False, 0)
"""

from __future__ import annotations

import os

from . import profiler
from ._errors import no_mps
from .event import Event

__all__ = ["compile_shader", "load_metallib", "device_count", "get_rng_state", "manual_seed",
           "seed", "set_rng_state", "synchronize", "empty_cache",
           "set_per_process_memory_fraction", "current_allocated_memory",
           "driver_allocated_memory", "Event", "profiler", "recommended_max_memory",
           "is_available"]


def is_available():
    """False: ember has no MPS backend.

    Example::

        >>> ember.mps.is_available()
        False
    """
    return False


def device_count():
    """0: ember has no MPS backend.

    Example::

        >>> ember.mps.device_count()
        0
    """
    return 0


def get_rng_state(device="mps"):
    """The MPS generator's state: needs MPS (raises)."""
    raise no_mps("getDefaultGenerator")


def set_rng_state(new_state, device="mps"):
    """Set the MPS generator's state: the state is copied (as torch does), then setting it
    needs MPS (raises)."""
    new_state.clone()
    raise no_mps("getDefaultGenerator")


def manual_seed(seed):
    """Seed the MPS generator: ignored without MPS (as torch).

    Example::

        >>> ember.mps.manual_seed(0)
    """


def seed():
    """Seed the MPS generator randomly: needs MPS (raises)."""
    raise no_mps("getDefaultGenerator")


def synchronize():
    """Wait for the MPS device: needs MPS (raises)."""
    raise no_mps("deviceSynchronize")


def empty_cache():
    """Free the MPS allocator's cache: needs MPS (raises)."""
    raise no_mps("emptyCache")


def set_per_process_memory_fraction(fraction):
    """Limit this process's MPS memory to ``fraction`` (0 to 2) of the recommended maximum:
    the argument is checked as torch checks it, then the call needs MPS (raises)."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 2:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~2")
    raise no_mps("setMemoryFraction")


def current_allocated_memory():
    """Bytes of MPS memory held by tensors: needs MPS (raises)."""
    raise no_mps("getCurrentAllocatedMemory")


def driver_allocated_memory():
    """Bytes the Metal driver allocated for this process: needs MPS (raises)."""
    raise no_mps("getDriverAllocatedMemory")


def recommended_max_memory():
    """Metal's recommended working-set size: needs MPS (raises)."""
    raise no_mps("getRecommendedMaxMemory")


def compile_shader(source):
    """Compile Metal shader ``source`` into callable kernels: needs MPS (raises)."""
    raise RuntimeError("MPS is not available (ember has no Metal backend)")


def load_metallib(source):
    """Load a compiled Metal library (bytes or a path): the argument is checked as torch
    checks it, then loading needs MPS (raises)."""
    if not isinstance(source, (bytes, bytearray, str, os.PathLike)):
        raise TypeError(f"expected bytes or path, got {type(source).__name__}")
    raise RuntimeError("MPS is not available (ember has no Metal backend)")
