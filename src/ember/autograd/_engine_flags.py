"""Switches of torch's autograd engine that ember accepts and reports.

ember's backward runs on the calling thread, so multithreading changes nothing; views are
regenerated from their base when needed (``autograd/views.py``), never replayed.
"""

from __future__ import annotations

import functools

__all__ = ["is_multithreading_enabled", "set_multithreading_enabled", "is_view_replay_enabled",
           "enforce_grad_layout_policy"]

_state = {"multithreading": True, "grad_layout": True}


def is_multithreading_enabled():
    """Whether backward may run on worker threads (the flag; ember always uses one thread).

    Example::

        >>> ember.autograd.is_multithreading_enabled()
        True
    """
    return _state["multithreading"]


class set_multithreading_enabled:
    """Set the multithreading flag, as a call or as a context manager restoring it on exit.

    Example::

        >>> with ember.autograd.set_multithreading_enabled(False):
        ...     ember.autograd.is_multithreading_enabled()
        False
        >>> ember.autograd.is_multithreading_enabled()
        True
    """

    def __init__(self, mode):
        self.prev = _state["multithreading"]
        _state["multithreading"] = bool(mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _state["multithreading"] = self.prev
        return False

    def clone(self):
        """A new context manager with the same mode."""
        return type(self)(_state["multithreading"])


def is_view_replay_enabled():
    """Whether autograd replays view operations on in-place changes (never, in ember).

    Example::

        >>> ember.autograd.is_view_replay_enabled()
        False
    """
    return False


class enforce_grad_layout_policy:
    """Whether accumulated gradients are made to follow their parameter's layout (torch's flag;
    ember's gradients are always laid out like their parameters, so it changes nothing).

    Works as a call, a context manager restoring the flag on exit, or a decorator.

    Example::

        >>> with ember.autograd.enforce_grad_layout_policy(False):
        ...     pass
    """

    def __init__(self, enable=True):
        self.prev = _state["grad_layout"]
        _state["grad_layout"] = bool(enable)
        self.mode = enable

    def __call__(self, fn):
        _state["grad_layout"] = self.prev
        mode = self.mode

        def wrapper(*args, **kwargs):
            with enforce_grad_layout_policy(mode):
                return fn(*args, **kwargs)

        return functools.wraps(fn)(wrapper)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _state["grad_layout"] = self.prev
        return False

    def clone(self):
        """A new context manager with the same mode."""
        return type(self)(self.mode)
