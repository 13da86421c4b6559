"""Switches of torch's autograd engine that ember accepts and reports.

ember's backward runs on the calling thread, so multithreading changes nothing; views are
regenerated from their base when needed (``autograd/views.py``), never replayed.
"""

from __future__ import annotations

__all__ = ["is_multithreading_enabled", "set_multithreading_enabled", "is_view_replay_enabled"]

_state = {"multithreading": True}


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
