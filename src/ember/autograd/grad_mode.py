"""Grad modes: whether operations are recorded, per thread, as in torch.

Example::

    >>> with ember.no_grad():
    ...     y = x * 2          # not recorded
"""

from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _ThreadCount:
    """How many threads have a per-thread switch on. ``none`` is True while no thread has, so
    the operator hot path tests one slot instead of reading a ``threading.local`` attribute
    (which costs about 0.1 us, more than the rest of a small op's bookkeeping).

    Example::

        >>> _grad_off.none                   # grad mode is on in every thread
        True
        >>> with ember.no_grad():
        ...     _grad_off.none
        False
    """

    __slots__ = ("none", "_count", "_lock")

    def __init__(self):
        self.none = True
        self._count = 0
        self._lock = threading.Lock()

    def change(self, was_on, now_on):
        """Count one thread's switch going from ``was_on`` to ``now_on``."""
        was_on, now_on = bool(was_on), bool(now_on)
        if was_on != now_on:
            with self._lock:
                self._count += 1 if now_on else -1
                self.none = self._count == 0


_grad_off = _ThreadCount()  # threads whose grad mode is off


class _State(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False

    def __setattr__(self, name, value):
        if name == "enabled":  # however it is set (context managers, direct writes)
            _grad_off.change(not getattr(self, "enabled", True), not value)
        super().__setattr__(name, value)


state = _State()


class _Mode:
    """Base of the grad-mode context managers; each also works as a decorator."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError("grad mode decorators apply to functions, not classes")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()

    def __enter__(self):
        self._prev = (state.enabled, state.inference)
        self._apply()
        return None

    def __exit__(self, *exc):
        state.enabled, state.inference = self._prev
        return False


class no_grad(_Mode):
    """Context manager and decorator that turns off gradient recording.

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.no_grad():
        ...     (x * 2).requires_grad
        False
    """

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)  # used bare, as ``@no_grad``

    def _apply(self):
        state.enabled = False


class enable_grad(_Mode):
    """Context manager and decorator that turns gradient recording back on.

    Example::

        >>> with ember.no_grad():
        ...     with ember.enable_grad():
        ...         ember.is_grad_enabled()
        True
    """

    def _apply(self):
        state.enabled = True


class set_grad_enabled(_Mode):
    """Turn recording on or off; works as a function, a context manager and a decorator.

    Example::

        >>> ember.set_grad_enabled(False); ember.is_grad_enabled()
        False
    """

    def __init__(self, mode):
        self._prev = (state.enabled, state.inference)
        self.mode = bool(mode)
        state.enabled = self.mode

    def __call__(self, fn):
        state.enabled = self._prev[0]  # used as a decorator: the mode applies only inside fn
        return super().__call__(fn)

    def clone(self):
        return set_grad_enabled(self.mode)

    def __enter__(self):
        return None

    def _apply(self):
        state.enabled = self.mode


class inference_mode(_Mode):
    """Like :class:`no_grad`, and marks the tensors made inside as inference tensors.

    Example::

        >>> with ember.inference_mode():
        ...     ember.is_inference_mode_enabled()
        True
    """

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def clone(self):
        return inference_mode(self.mode)

    def _apply(self):
        if self.mode:
            state.enabled = False
            state.inference = True
        else:
            state.inference = False


def is_grad_enabled():
    """Whether operations are being recorded for autograd on this thread."""
    return state.enabled


def is_inference_mode_enabled():
    """Whether this thread is inside ``inference_mode``."""
    return state.inference


# torch's grad_mode also exports these two engine switches (documented in _engine_flags)
from ._engine_flags import enforce_grad_layout_policy, set_multithreading_enabled  # noqa: E402,F401
