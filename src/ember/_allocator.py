"""CPU memory: keep freed blocks for reuse, the CPU side of a caching allocator.

Training allocates and frees the same large buffers every step (activations, gradients). By
default glibc returns any block over 128 KiB to the operating system on ``free`` and maps it
again on the next ``malloc``, which costs a page fault per 4 KiB touched: for a small MLP that
is most of a step's time. ember raises glibc's thresholds once at import so those blocks are
reused instead. Set ``EMBER_MALLOC_TUNING=0`` to leave the process's allocator alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

__all__ = ["tune_malloc"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 * 1024 * 1024  # blocks up to 32 MiB come from (and return to) the heap
_TRIM_THRESHOLD = 512 * 1024 * 1024  # keep up to 512 MiB of free heap before trimming


def tune_malloc():
    """Raise glibc's mmap and trim thresholds (Linux/glibc only; a no-op elsewhere).

    Returns True when the allocator was tuned.

    Example::

        >>> ember._allocator.tune_malloc()
        True
    """
    if os.environ.get("EMBER_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt): nothing to tune
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
