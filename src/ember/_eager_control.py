"""torch's deferred and conditional execution, run eagerly: ``Future``, ``fork``/``wait``
and the ``cond`` control-flow operator.

torch compiles these for TorchScript and ``torch.export``; called eagerly, torch runs them on
the spot, and so does ember: ``fork(fn, x)`` calls ``fn(x)`` now and returns a finished
:class:`Future`; ``cond(pred, f, g, ops)`` calls the branch ``pred`` picks.
"""

from __future__ import annotations

import threading

from ._tensor import Tensor

__all__ = ["Future", "fork", "wait", "cond"]


class Future:
    """A value that may arrive later (``torch.futures.Future``'s base class): set it with
    :meth:`set_result` or :meth:`set_exception`, read it with :meth:`wait`, chain work on it
    with :meth:`then`.

    Example::

        >>> f = ember.Future()
        >>> g = f.then(lambda done: done.value() + 1)
        >>> f.set_result(1); g.wait()
        2
    """

    def __init__(self, devices=None):
        self._finished = threading.Event()
        self._lock = threading.Lock()
        self._result = self._error = None
        self._callbacks = []

    def done(self):
        """Whether the value (or an error) has been set."""
        return self._finished.is_set()

    def wait(self):
        """The value, once set (blocks until then); re-raises a set exception."""
        self._finished.wait()
        return self.value()

    def value(self):
        """The value of a finished future; re-raises a set exception."""
        if not self.done():
            raise RuntimeError("Future is not completed yet; call wait() first")
        if self._error is not None:
            raise self._error
        return self._result

    def set_result(self, result):
        """Finish this future with ``result`` and run its callbacks."""
        self._finish(result, None)

    def set_exception(self, result):
        """Finish this future with the exception ``result`` (raised by :meth:`wait`)."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._finish(None, result)

    def _finish(self, result, error):
        with self._lock:
            if self.done():
                raise RuntimeError("Future can only be marked completed once.")
            self._result, self._error = result, error
            self._finished.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback):
        """Call ``callback(self)`` when this future finishes (now if it has)."""
        with self._lock:
            if not self.done():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback):
        """A new future holding ``callback(self)`` once this one finishes."""
        chained = Future()

        def run(done):
            try:
                chained.set_result(callback(done))
            except Exception as err:  # noqa: BLE001 - handed to the chained future
                chained.set_exception(err)
        self.add_done_callback(run)
        return chained

    def __repr__(self):
        state = "done" if self.done() else "pending"
        return f"<ember.Future ({state})>"


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` (now: ember runs no TorchScript threads) and return a
    finished :class:`Future` holding its result or exception.

    Example::

        >>> ember.wait(ember.fork(lambda x: x * 2, ember.ones(2)))
        tensor([2., 2.])
    """
    future = Future()
    try:
        future.set_result(func(*args, **kwargs))
    except Exception as err:  # noqa: BLE001 - re-raised by wait()
        future.set_exception(err)
    return future


def wait(future):
    """The value of ``future`` (see :func:`fork`).

    Example::

        >>> ember.wait(ember.fork(lambda: 3))
        3
    """
    return future.wait()


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``; ``pred`` is a bool,
    a number or a one-element tensor (torch's control-flow operator, run eagerly).

    Example::

        >>> ember.cond(ember.tensor(True), lambda x: x + 1, lambda x: x - 1, (ember.ones(2),))
        tensor([2., 2.])
    """
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        pred = bool(pred.item())
    elif not isinstance(pred, (bool, int, float)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    return (true_fn if pred else false_fn)(*operands)
