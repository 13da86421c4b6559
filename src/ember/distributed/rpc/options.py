"""Names, options and worker identities of ``ember.distributed.rpc`` (torch's spelling).

Example::

    >>> from ember.distributed.rpc import TensorPipeRpcBackendOptions, WorkerInfo
    >>> TensorPipeRpcBackendOptions(rpc_timeout=20).rpc_timeout
    20
    >>> WorkerInfo("ps", 0)
    WorkerInfo(id=0, name=ps)
"""

from __future__ import annotations

import enum
import re

__all__ = ["BackendType", "RpcBackendOptions", "TensorPipeRpcBackendOptions", "WorkerInfo"]

DEFAULT_RPC_TIMEOUT_SEC = 60.0
UNSET_RPC_TIMEOUT = -1.0
DEFAULT_INIT_METHOD = "env://"
DEFAULT_NUM_WORKER_THREADS = 16
DEFAULT_SHUTDOWN_TIMEOUT = 0.0  # no limit, as torch

_NAME = re.compile(r"^[A-Za-z0-9_:\-]{1,127}$")


class BackendType(enum.Enum):
    """The RPC backends; ember implements TensorPipe's contract over TCP sockets.

    Example::

        >>> BackendType.TENSORPIPE.name
        'TENSORPIPE'
    """

    TENSORPIPE = "TENSORPIPE"


class RpcBackendOptions:
    """Options every RPC agent takes: the timeout of a call and the rendezvous URL.

    Example::

        >>> RpcBackendOptions(rpc_timeout=5).init_method
        'env://'
    """

    def __init__(self, rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC, init_method=DEFAULT_INIT_METHOD):
        self.rpc_timeout = rpc_timeout
        self.init_method = init_method


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """Options of the (default) TensorPipe agent: worker threads, timeout, rendezvous URL.

    ``device_maps``/``devices`` are accepted for compatibility: ember's RPC moves CPU tensors.

    Example::

        >>> opts = TensorPipeRpcBackendOptions(num_worker_threads=8)
        >>> opts.init_method = "tcp://localhost:29501"
        >>> opts.num_worker_threads
        8
    """

    def __init__(self, *, num_worker_threads=DEFAULT_NUM_WORKER_THREADS,
                 rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC, init_method=DEFAULT_INIT_METHOD,
                 device_maps=None, devices=None, _transports=None, _channels=None):
        super().__init__(rpc_timeout, init_method)
        self.num_worker_threads = num_worker_threads
        self.device_maps = dict(device_maps or {})
        self.devices = list(devices or [])

    def set_device_map(self, to, device_map):
        """Record a device map for worker ``to`` (kept; CPU tensors need none)."""
        self.device_maps.setdefault(to, {}).update(device_map)

    def set_devices(self, devices):
        """Record the devices this worker uses (kept; CPU tensors need none)."""
        self.devices = list(devices)


class WorkerInfo:
    """A worker's name and id (its rank), as ``rpc.get_worker_info()`` returns it.

    Example::

        >>> info = WorkerInfo("trainer1", 1)
        >>> info.name, info.id
        ('trainer1', 1)
    """

    __slots__ = ("name", "id")

    def __init__(self, name, id):  # noqa: A002 - torch's keyword
        if not _NAME.match(name):
            raise RuntimeError(f"Worker name must match ^[A-Za-z0-9-_:]*$, and must be shorter "
                               f"than 128 characters: got {name!r}")
        self.name = name
        self.id = id

    def __eq__(self, other):
        return isinstance(other, WorkerInfo) and (self.id, self.name) == (other.id, other.name)

    def __hash__(self):
        return hash((self.id, self.name))

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def __reduce__(self):
        return WorkerInfo, (self.name, self.id)
