"""torch's deferred and conditional execution, run eagerly: ``Future``, ``fork``/``wait``
and the ``cond`` control-flow operator. ``Future`` is :class:`ember.futures.Future` (torch
has a C++ base class under it; ember has one class).

torch compiles these for TorchScript and ``torch.export``; called eagerly, torch runs them on
the spot, and so does ember: ``fork(fn, x)`` calls ``fn(x)`` now and returns a finished
:class:`Future`; ``cond(pred, f, g, ops)`` calls the branch ``pred`` picks.
"""

from __future__ import annotations

from ._tensor import Tensor
from .futures import Future

__all__ = ["Future", "fork", "wait", "cond"]


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` now (eager torch runs forked calls synchronously too, so an
    exception propagates from ``fork`` itself) and return a finished :class:`Future` holding
    the result.

    Example::

        >>> ember.wait(ember.fork(lambda x: x * 2, ember.ones(2)))
        tensor([2., 2.])
    """
    future = Future()
    future.set_result(func(*args, **kwargs))
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
