"""``ember.mps.profiler``: Metal's OS-signpost profiler and GPU capture, which need the MPS
backend: :func:`start` and :func:`stop` raise torch's RuntimeError; the context managers
raise on entering, as on torch's CPU build.

Example::

    >>> from ember.mps import profiler
    >>> region = profiler.profile()    # entering it needs MPS
"""

from __future__ import annotations

import contextlib

from ._errors import MpsBindingMissingError, no_mps

__all__ = ["start", "stop", "profile", "metal_capture", "is_metal_capture_enabled",
           "is_capturing_metal"]


def start(mode="interval", wait_until_completed=False):
    """Start OS-signpost tracing of MPS operations: needs MPS (raises)."""
    if mode not in ("interval", "event", "interval,event", "event,interval"):
        raise ValueError(f"Unknown profiler mode {mode!r}")
    raise no_mps("profilerStartTrace")


def stop():
    """Stop OS-signpost tracing: needs MPS (raises)."""
    raise no_mps("profilerStopTrace")


@contextlib.contextmanager
def profile(mode="interval", wait_until_completed=False):
    """Trace the block's MPS operations: entering needs MPS (raises).

    Example::

        >>> with profile():         # doctest: +SKIP
        ...     pass
    """
    try:
        start(mode, wait_until_completed)
        yield
    finally:
        stop()


def is_metal_capture_enabled():
    """Whether Metal GPU capture is enabled: needs MPS (AttributeError, as torch's CPU build)."""
    raise MpsBindingMissingError("torch.mps.profiler.is_metal_capture_enabled: "
                                 "ember has no MPS backend")


def is_capturing_metal():
    """Whether a Metal GPU capture is running: needs MPS (raises as
    :func:`is_metal_capture_enabled`)."""
    raise MpsBindingMissingError("torch.mps.profiler.is_capturing_metal: "
                                 "ember has no MPS backend")


@contextlib.contextmanager
def metal_capture(fname):
    """Capture the block's Metal work into ``fname``: needs MPS (entering raises)."""
    raise MpsBindingMissingError("torch.mps.profiler.metal_capture: ember has no MPS backend")
    yield  # unreachable; makes this a generator, as a context manager must be
