"""``rpc.functions.async_execution``: a remote function that answers later, through a Future.

Example::

    >>> @rpc.functions.async_execution
    ... def add_later(x):
    ...     fut = ember.futures.Future()
    ...     threading.Timer(0.1, fut.set_result, (x + 1,)).start()
    ...     return fut                 # the caller receives x + 1 once fut completes
"""

from __future__ import annotations

import functools

__all__ = ["async_execution"]


def async_execution(fn):
    """Mark ``fn`` as returning a Future whose value is the RPC's result.

    The worker's thread is free while the Future is pending; works with ``rpc_sync``,
    ``rpc_async``, ``remote`` and the RRef proxies (put ``@staticmethod`` outside it).

    Example::

        >>> @rpc.functions.async_execution
        ... def echo(x):
        ...     fut = ember.futures.Future()
        ...     fut.set_result(x)
        ...     return fut
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper._wrapped_async_rpc_function = fn
    return wrapper
