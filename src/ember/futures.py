"""``ember.futures``: torch's ``Future`` for results computed elsewhere (threads, RPC).

A :class:`Future` completes once, with a value (:meth:`Future.set_result`) or an exception
(:meth:`Future.set_exception`); :meth:`Future.wait` blocks until then, :meth:`Future.then`
chains a callback whose own Future completes with the callback's result. Errors raised by a
callback surface as torch's ``RuntimeError("Got the following error when running the
callback: ...")``.

Example::

    >>> from ember.futures import Future, collect_all
    >>> fut = Future()
    >>> doubled = fut.then(lambda f: f.wait() * 2)
    >>> fut.set_result(21)
    >>> doubled.wait()
    42
"""

from __future__ import annotations

import threading
import traceback
from typing import Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")


class Future(Generic[T]):
    """A value that will be available later; thread-safe.

    ``devices`` (CUDA devices whose streams torch would synchronise) is accepted for
    compatibility; ember's values need no stream synchronisation.

    Example::

        >>> fut = Future()
        >>> fut.set_result(1)
        >>> fut.done(), fut.value()
        (True, 1)
    """

    def __init__(self, devices=None):
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._value = None
        self._error = None
        self._callbacks = []

    def done(self):
        """Whether the Future has a value or an exception."""
        return self._done.is_set()

    def wait(self):
        """Block until done; return the value or raise the exception."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self):
        """The value of a completed Future (raises its exception; an error if not done)."""
        if not self.done():
            raise RuntimeError("Future.value() called before the Future completed; use "
                               "Future.wait() to block until it does")
        return self.wait()

    def set_result(self, result):
        """Complete the Future with ``result`` and run its callbacks."""
        self._complete(result, None)

    def set_exception(self, result):
        """Complete the Future with the exception ``result``; ``wait`` will raise it."""
        if not isinstance(result, Exception):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, value, error):
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback):
        """Run ``callback(self)`` when done (now, if already done); its result is ignored."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback):
        """A new Future completed with ``callback(self)`` once this one is done.

        Example::

            >>> fut = Future(); fut.set_result(2)
            >>> fut.then(lambda f: f.value() + 1).wait()
            3
        """
        chained = Future()

        def run(source):
            try:
                result = callback(source)
            except Exception as error:  # noqa: BLE001  (reported through the chained Future)
                chained.set_exception(_callback_error(error))
            else:
                chained.set_result(result)

        self.add_done_callback(run)
        return chained


def _callback_error(error):
    """torch's wrapping of an exception raised inside a ``then`` callback."""
    frames = "".join(traceback.format_tb(error.__traceback__))
    return RuntimeError("Got the following error when running the callback: "
                        f"{type(error).__name__}: {error}\n\nAt:\n{frames}")


def collect_all(futures):
    """A Future completed with the list ``futures`` once every one of them is done.

    Example::

        >>> a, b = Future(), Future()
        >>> both = collect_all([a, b])
        >>> a.set_result(1); b.set_result(2)
        >>> [f.wait() for f in both.wait()]
        [1, 2]
    """
    futures = list(futures)
    collected = Future()
    remaining = [len(futures)]
    lock = threading.Lock()
    if not futures:
        collected.set_result([])
        return collected

    def one_done(_):
        with lock:
            remaining[0] -= 1
            finished = remaining[0] == 0
        if finished:
            collected.set_result(futures)

    for future in futures:
        future.add_done_callback(one_done)
    return collected


def wait_all(futures):
    """Wait for every Future; return their values, raising the first error met in order.

    Example::

        >>> a = Future(); a.set_result(5)
        >>> wait_all([a])
        [5]
    """
    return [future.wait() for future in collect_all(futures).wait()]
