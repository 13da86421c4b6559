"""``ember.distributed.rpc``: remote calls, remote references and their lifetime, as torch's.

Workers join with :func:`init_rpc` (rendezvous through ``env://``, ``tcp://`` or ``file://``,
like process groups), call functions on each other with :func:`rpc_sync`, :func:`rpc_async` and
:func:`remote`, pass :class:`RRef` handles around and leave with :func:`shutdown`. Messages are
pickled; tensors travel by value over TCP. Errors raised by a remote function are raised again
on the caller, with their type and a message that names the remote worker.

Example::

    >>> import ember.distributed.rpc as rpc
    >>> rpc.init_rpc("worker0", rank=0, world_size=2)
    >>> fut = rpc.rpc_async("worker1", ember.add, args=(ember.ones(2), 3))
    >>> fut.wait()
    tensor([4., 4.])
    >>> rpc.shutdown()
"""

from __future__ import annotations

from . import functions
from .api import (
    PyRRef,
    RRef,
    get_worker_info,
    init_rpc,
    remote,
    rpc_async,
    rpc_sync,
    shutdown,
)
from .options import BackendType, RpcBackendOptions, TensorPipeRpcBackendOptions, WorkerInfo

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info", "RRef",
           "PyRRef", "WorkerInfo", "BackendType", "RpcBackendOptions",
           "TensorPipeRpcBackendOptions", "functions", "is_available"]


def is_available():
    """Whether RPC is available (always, in ember).

    Example::

        >>> ember.distributed.rpc.is_available()
        True
    """
    return True
