"""``ember.distributed``: data-parallel training across processes, as ``torch.distributed``.

Backends: ``'gloo'`` (CPU tensors; ember's own collectives over TCP sockets between the ranks),
``'mpi'`` (through ``mpi4py`` when it is installed) and ``'nccl'`` (CUDA tensors through CuPy's
NCCL bindings). Rendezvous through a store (:class:`TCPStore`, :class:`FileStore`,
:class:`HashStore`) or an ``init_method`` URL (``env://``, ``tcp://``, ``file://``). Start the
ranks with ``python -m ember.distributed.run --nproc-per-node=N script.py``.

Example::

    >>> import ember.distributed as dist
    >>> dist.init_process_group("gloo")          # env:// from the launcher's variables
    >>> t = ember.ones(3)
    >>> dist.all_reduce(t)                        # t == world_size on every rank
    >>> dist.destroy_process_group()
"""

from ._breakpoint import breakpoint, log  # noqa: F401  (torch.distributed.log)
from ._ddp_internals import (
    BuiltinCommHookType,
    GradBucket,
    Logger,
    QueueEmptyError,
    RankType,  # noqa: F401  (a type alias, as in torch)
    Reducer,
)
from ._store import (  # noqa: F401
    DistBackendError,
    DistError,
    DistNetworkError,
    DistStoreError,
    FileStore,
    HashStore,
    PrefixStore,
    Store,
    TCPStore,
)
from .device_mesh import DeviceMesh, init_device_mesh
from .distributed_c10d import *  # noqa: F403
from .distributed_c10d import __all__ as _c10d_all

__all__ = ["Store", "HashStore", "TCPStore", "FileStore", "PrefixStore", "DistError",
           "DistBackendError", "DistStoreError", "DistNetworkError", "DeviceMesh",
           "init_device_mesh", "BuiltinCommHookType", "GradBucket", "Logger", "QueueEmptyError",
           "Reducer", "register_rendezvous_handler", *_c10d_all]

# as in torch, the package's ``rendezvous`` is the function (the module is still importable)
from .rendezvous import register_rendezvous_handler, rendezvous  # noqa: E402, F401

_LAZY_SUBMODULES = ("rpc", "autograd", "optim", "algorithms", "checkpoint", "fsdp", "launch",
                    "nn", "run", "tensor", "_tensor", "c10d_logger", "collective_utils",
                    "config", "constants", "logging_handlers", "remote_device", "utils",
                    "argparse_util", "elastic", "launcher", "pipelining", "debug",
                    "flight_recorder")


def __getattr__(name):
    # torch imports these with torch.distributed; ember loads them on first use
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
