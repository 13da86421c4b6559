"""Anomaly detection: remember where each node was recorded, and fail loudly on NaN gradients.

Example::

    >>> with ember.autograd.detect_anomaly():
    ...     loss.backward()   # a NaN gradient raises, naming the node and its forward line
"""

from __future__ import annotations

import threading
import traceback
import warnings

from .grad_mode import _ThreadCount

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


class _State(threading.local):
    def __init__(self):
        self.enabled = False
        self.check_nan = True

    def __setattr__(self, name, value):
        if name == "enabled":  # counted, so that recording a node tests one slot
            _anomaly_on.change(getattr(self, "enabled", False), value)
        super().__setattr__(name, value)


_anomaly_on = _ThreadCount()  # threads with anomaly detection on
state = _State()


def is_anomaly_enabled():
    """Whether anomaly detection is on."""
    return state.enabled


class detect_anomaly:
    """Context manager: record forward tracebacks and raise on NaN gradients in backward.

    Example::

        >>> with ember.autograd.detect_anomaly():
        ...     y = x.sqrt()
    """

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)
        self._prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = True, self.check_nan

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self._prev
        return False


class set_detect_anomaly(detect_anomaly):
    """Turn anomaly detection on or off, as a function or a context manager."""

    def __init__(self, mode, check_nan=True):
        self._prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = bool(mode), check_nan

    def __enter__(self):
        return None


def forward_trace():
    """The user's stack where a node is recorded (ember's own frames dropped)."""
    frames = [f for f in traceback.extract_stack()[:-1] if "/ember/" not in f.filename]
    return "".join(traceback.format_list(frames))


def run_checked(node, grads):
    """Run ``node`` and raise if any gradient it returns holds a NaN."""
    try:
        input_grads = node._apply(grads)
    except Exception:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                      f"the error:\n{node._trace}", stacklevel=2)
        raise
    if state.check_nan:
        for i, g in enumerate(input_grads):
            if g is not None and _has_nan(g):
                warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that "
                              f"caused the error:\n{node._trace}", stacklevel=2)
                raise RuntimeError(
                    f"Function '{node.name()}' returned nan values in its {i}th output.\n"
                    f"Traceback of forward call that caused the error:\n{node._trace}")
    return input_grads


def _has_nan(t):
    data = t._data
    if t._device.type == "meta" or data.dtype.kind not in "fcV":
        return False
    return bool(t._device.xp.isnan(data).any())
