"""Process groups for :mod:`ember.distributed`: backends, reduce ops, ``Work``, the world.

``init_process_group`` / ``new_group`` / ``destroy_process_group``, the rank and size
queries, and the plumbing every collective of :mod:`ember.distributed.distributed_c10d` shares
(argument checks, host buffers, the per-group executor that runs a collective asynchronously).
Example::

    >>> import ember.distributed as dist
    >>> dist.is_initialized()
    False
"""

from __future__ import annotations

import concurrent.futures
import datetime
import enum
import os
import urllib.parse

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._store import DistBackendError, FileStore, PrefixStore, TCPStore

default_pg_timeout = datetime.timedelta(minutes=30)
_NOT_INIT = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")


class Backend(str):
    """A backend name: ``Backend.GLOO``, ``Backend.NCCL``, ``Backend.MPI``.

    Example::

        >>> ember.distributed.Backend("GLOO")
        'gloo'
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = [UNDEFINED, GLOO, NCCL, MPI]

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        value = name.lower()
        if value not in cls.backend_list:
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __str__(self):
        return f"RedOpType.{self.name}"


class ReduceOp:
    """The reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter``.

    Example::

        >>> ember.distributed.ReduceOp.SUM
        <RedOpType.SUM: 0>
    """

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR


def _reduce_fn(op, dtype):
    """The binary NumPy reduction for ``op`` on arrays of ``dtype`` (an ember dtype)."""
    op = RedOpType(op)
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR):
        if dtype.is_floating_point or dtype.is_complex:
            raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
        return {RedOpType.BAND: np.bitwise_and, RedOpType.BOR: np.bitwise_or,
                RedOpType.BXOR: np.bitwise_xor}[op]
    if op in (RedOpType.MIN, RedOpType.MAX) and dtype.is_complex:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with complex inputs")
    if op == RedOpType.AVG and not (dtype.is_floating_point or dtype.is_complex):
        names = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                 "uint8": "Byte", "bool": "Bool"}
        name = names.get(str(dtype).split(".")[-1], str(dtype))
        raise RuntimeError(f"result type Float can't be cast to the desired output type {name}")
    if op == RedOpType.PREMUL_SUM:
        raise ValueError("ReduceOp.PREMUL_SUM is not supported by ember's backends")
    return {RedOpType.SUM: np.add, RedOpType.AVG: np.add, RedOpType.PRODUCT: np.multiply,
            RedOpType.MIN: np.minimum, RedOpType.MAX: np.maximum}[op]


def _avg_fix(array, n):
    """Divide a summed floating-point buffer by ``n`` in place (AVG rejects other dtypes)."""
    if array.dtype in dt.LOW_PRECISION:
        array[...] = (array.astype(np.float32) / n).astype(array.dtype)
    else:
        array /= n


# ---------------------------------------------------------------- work


class Work:
    """The handle of an asynchronous operation (``async_op=True``): ``wait()`` blocks until it
    is done and raises its error, if any.

    Example::

        >>> work = ember.distributed.all_reduce(t, async_op=True)
        >>> work.wait()
        True
    """

    def __init__(self, future=None, result=None):
        self._future = future
        self._result = result

    def wait(self, timeout=None):
        """Wait for completion; re-raise the operation's error. Returns True."""
        if self._future is not None:
            seconds = None if timeout is None else (
                timeout.total_seconds() if isinstance(timeout, datetime.timedelta)
                else float(timeout))
            try:
                self._future.result(seconds)
            except concurrent.futures.TimeoutError:
                raise DistBackendError("Work.wait timed out") from None
        return True

    def is_completed(self):
        """Whether the operation has finished (successfully or not)."""
        return self._future is None or self._future.done()

    def is_success(self):
        """Whether the operation finished without error."""
        return self.is_completed() and self.exception() is None

    def exception(self):
        """The operation's error, or None."""
        if self._future is None or not self._future.done():
            return None
        return self._future.exception()

    def result(self):
        """The output tensors of the operation (as torch's ``Work.result()``)."""
        self.wait()
        return self._result

    def get_future(self):
        """An :class:`ember.futures.Future` (torch's ``torch.futures.Future``) completed with
        the output tensors: ``wait()``, ``value()``, ``then(callback)``."""
        from ..futures import Future

        done = Future()
        if self._future is None:
            done.set_result(self._result)
            return done

        def finish(f):
            if f.exception() is not None:
                done.set_exception(f.exception())
            else:
                done.set_result(self._result)
        self._future.add_done_callback(finish)
        return done


# ---------------------------------------------------------------- groups


class ProcessGroup:
    """A set of ranks that run collectives together, on one backend.

    ``rank()`` and ``size()`` are this process's rank in the group and the group's size.
    """

    def __init__(self, impl, backend, ranks, timeout):
        self._impl = impl
        self._backend = Backend(backend)
        self._ranks = list(ranks)
        self._timeout = timeout

    def rank(self):
        """This process's rank in the group."""
        return self._impl.rank

    def size(self):
        """The number of ranks in the group."""
        return self._impl.size

    def name(self):
        """The backend's name."""
        return str(self._backend)

    def __repr__(self):
        return f"<ProcessGroup {self._backend} ranks={self._ranks}>"


class GroupMember:
    """Sentinels: ``GroupMember.WORLD`` (the default group) and ``NON_GROUP_MEMBER`` (what
    ``new_group`` returns on ranks outside the group)."""

    WORLD = None
    NON_GROUP_MEMBER = object()


class group:  # noqa: N801  (torch's name)
    """``group.WORLD``: the default process group once initialised."""

    WORLD = None


class _State:
    def __init__(self):
        self.default = None
        self.store = None
        self.mesh = None
        self.groups = []
        self.next_gid = 0
        self.executor = None
        self.generation = 0


_STATE = _State()


def is_available():
    """Whether ``ember.distributed`` is available (always True)."""
    return True


def is_initialized():
    """Whether the default process group has been initialised."""
    return _STATE.default is not None


_DEFAULT_BACKENDS = {"cpu": "gloo", "cuda": "nccl", "xpu": "xccl", "mps": "gloo"}


def get_default_backend_for_device(device):
    """The collective backend torch picks for a device type: 'gloo' for cpu, 'nccl' for cuda.

    Example::

        >>> ember.distributed.get_default_backend_for_device("cpu")
        'gloo'
    """
    kind = device.type if hasattr(device, "type") else str(device).split(":")[0]
    if kind not in _DEFAULT_BACKENDS:
        raise ValueError(f"Default backend not registered for device : {kind}")
    return _DEFAULT_BACKENDS[kind]


def is_gloo_available():
    """Whether the 'gloo' backend is available (ember's own: always True)."""
    return True


def is_mpi_available():
    """Whether the 'mpi' backend is available (needs ``mpi4py``)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_nccl_available():
    """Whether the 'nccl' backend is available (needs CuPy with NCCL)."""
    try:
        from cupy.cuda import nccl  # noqa: F401
    except Exception:
        return False
    return True


def is_torchelastic_launched():
    """Whether this process was started by a launcher (``ember.distributed.run``)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _default():
    if _STATE.default is None:
        raise ValueError(_NOT_INIT)
    return _STATE.default


def _group(group):
    if group is None or group is GroupMember.WORLD:
        return _default()
    _default()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    return group


def _env_int(name, url_query, given):
    if given is not None and given != -1:
        return int(given)
    if name in url_query:
        return int(url_query[name][0])
    value = os.environ.get(name.upper())
    if value is None:
        return None
    return int(value)


def _make_store(init_method, rank, world_size, timeout):
    """Rendezvous: the store, rank and world size from ``init_method``."""
    parsed = urllib.parse.urlparse(init_method)
    if parsed.scheme not in ("env", "tcp", "file"):  # a register_rendezvous_handler scheme
        from .rendezvous import rendezvous

        return next(rendezvous(init_method, -1 if rank is None else rank,
                               -1 if world_size is None else world_size, timeout=timeout))
    query = urllib.parse.parse_qs(parsed.query)
    rank = _env_int("rank", query, rank)
    world_size = _env_int("world_size", query, world_size)
    if parsed.scheme == "env":
        for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
            if (var == "RANK" and rank is not None) or (var == "WORLD_SIZE"
                                                          and world_size is not None):
                continue
            if var not in os.environ:
                raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                                 f"environment variable {var} expected, but not set")
        host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    elif parsed.scheme == "tcp":
        host, port = parsed.hostname, parsed.port
        if rank is None or world_size is None:
            raise ValueError(f"rank and world_size are required for the tcp:// init_method "
                             f"({init_method})")
    elif parsed.scheme == "file":
        if world_size is None or rank is None:
            raise ValueError(f"rank and world_size are required for the file:// init_method "
                             f"({init_method})")
        store = FileStore(parsed.path, world_size)
        store.set_timeout(timeout)
        return store, rank, world_size
    else:
        raise ValueError(f"No rendezvous handler for {parsed.scheme}://")
    store = TCPStore(host, port, world_size, rank == 0, timeout=timeout)
    return store, rank, world_size


def _local_host(store):
    base = store
    while isinstance(base, PrefixStore):
        base = base.underlying_store
    if isinstance(base, TCPStore):
        return base.local_address
    return "127.0.0.1"


def _check_device_id(device_id):
    """torch binds a process group to an accelerator with an index, never to the CPU."""
    if device_id is None or isinstance(device_id, int):
        return
    from .._device import canonical

    device_id = canonical(device_id)
    if device_id.index is None or device_id.type == "cpu":
        raise ValueError("init_process_group device_id parameter must be an accelerator with "
                         "an index")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Initialise the default process group (every rank calls it).

    ``init_method``: ``'env://'`` (the default: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE),
    ``'tcp://host:port'`` or ``'file:///path'``; or pass a ``store`` with ``rank`` and
    ``world_size``. ``backend``: ``'gloo'`` (CPU, ember's sockets), ``'mpi'`` (mpi4py),
    ``'nccl'`` (CUDA tensors through CuPy).

    Example::

        >>> import ember.distributed as dist
        >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        >>> dist.get_world_size()
        1
    """
    if _STATE.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    _check_device_id(device_id)
    backend = "gloo" if backend is None else str(backend)
    if ":" in backend:  # "cpu:gloo,cuda:nccl": ember picks one backend per group
        backend = "gloo"
    if backend.lower() not in (Backend.GLOO, Backend.NCCL, Backend.MPI):
        raise AssertionError(f"Unknown backend type {backend}")
    backend = Backend(backend)
    timeout = default_pg_timeout if timeout is None else timeout
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
    if backend == Backend.MPI:
        from ._mpi import MPIGroup

        impl = MPIGroup(None, seconds)
        world_size, rank = impl.size, impl.rank
    else:
        if store is None:
            store, rank, world_size = _make_store(init_method or "env://",
                                                  None if rank == -1 else rank,
                                                  None if world_size == -1 else world_size,
                                                  timeout)
        else:
            if init_method is not None:
                raise ValueError("Cannot specify both init_method and store.")
            if world_size is None or world_size <= 0:
                raise AssertionError("world_size must be positive if using store")
            if rank is None or rank < 0:
                raise AssertionError("rank must be non-negative if using store")
        if not 0 <= rank < world_size:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {world_size - 1}]")
        _STATE.generation += 1
        prefix = PrefixStore(f"ember_pg{_STATE.generation}", store)
        if backend == Backend.NCCL:
            from ._nccl import NCCLGroup

            impl = NCCLGroup(prefix, rank, world_size, list(range(world_size)), rank, seconds)
        else:
            from ._gloo import GlooGroup, Mesh

            _STATE.mesh = Mesh(prefix, rank, world_size, seconds, host=_local_host(store))
            impl = GlooGroup(_STATE.mesh, 0, range(world_size), seconds)
    _STATE.store = store
    _STATE.next_gid = 1
    pg = ProcessGroup(impl, backend, range(world_size), seconds)
    pg._global_rank = rank
    _STATE.default = pg
    _STATE.groups = [pg]
    group.WORLD = GroupMember.WORLD = pg


def destroy_process_group(group=None):
    """Tear down ``group`` (default: everything, the default group included).

    Example::

        >>> ember.distributed.destroy_process_group()
    """
    if group is None or group is _STATE.default:
        _default()
        if _STATE.executor is not None:
            _STATE.executor.shutdown(wait=True)
            _STATE.executor = None
        for pg in _STATE.groups:
            if getattr(pg, "_serial", None) is not None:
                pg._serial.shutdown(wait=True)
            pg._impl.close()
        if _STATE.mesh is not None:
            _STATE.mesh.close()
        _STATE.default = _STATE.store = _STATE.mesh = None
        _STATE.groups = []
        group_cls = globals()["group"]
        group_cls.WORLD = GroupMember.WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    group._impl.close()
    if group in _STATE.groups:
        _STATE.groups.remove(group)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A new group of ``ranks`` (global ranks; default all). Every rank of the world must call
    it, in the same order; ranks outside the group get ``GroupMember.NON_GROUP_MEMBER``.

    Example::

        >>> g = ember.distributed.new_group([0])
    """
    world = _default()
    world_size = world.size()
    ranks = list(range(world_size)) if ranks is None else list(ranks)
    if sort_ranks:
        ranks = sorted(ranks)
    if len(ranks) > world_size:
        raise ValueError("the new group's world size should be less or equal to the world "
                         "size set by init_process_group")
    for r in ranks:
        if r < 0 or r >= world_size:
            raise ValueError("The new group's rank should be within the world_size set by "
                             "init_process_group")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks must be unique, got {ranks}")
    gid = _STATE.next_gid
    _STATE.next_gid += 1
    backend = world._backend if backend is None else Backend(backend)
    seconds = world._timeout if timeout is None else (
        timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout)
    me = world._global_rank
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    if backend == Backend.MPI:
        impl = world._impl.subgroup(ranks, seconds)
    elif backend == Backend.NCCL:
        from ._nccl import NCCLGroup

        store = PrefixStore(f"ember_pg{_STATE.generation}/group{gid}", _STATE.store)
        impl = NCCLGroup(store, ranks.index(me), len(ranks), ranks, me, seconds)
    else:
        from ._gloo import GlooGroup

        impl = GlooGroup(_STATE.mesh, gid, ranks, seconds)
    pg = ProcessGroup(impl, backend, ranks, seconds)
    pg._global_rank = me
    _STATE.groups.append(pg)
    return pg


def get_rank(group=None):
    """This process's rank in ``group`` (-1 outside it).

    Example::

        >>> ember.distributed.get_rank()
        0
    """
    pg = _group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None):
    """The number of ranks in ``group`` (-1 outside it).

    Example::

        >>> ember.distributed.get_world_size()
        1
    """
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    """The backend of ``group``.

    Example::

        >>> ember.distributed.get_backend()
        'gloo'
    """
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg._backend


def get_process_group_ranks(group):
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = _group(group)
    return list(pg._ranks)


def get_group_rank(group, global_rank):
    """The rank in ``group`` of global rank ``global_rank``."""
    pg = _group(group)
    if global_rank not in pg._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg._ranks.index(global_rank)


def get_global_rank(group, group_rank):
    """The global rank of rank ``group_rank`` of ``group``."""
    pg = _group(group)
    if not 0 <= group_rank < len(pg._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
    return pg._ranks[group_rank]


# ---------------------------------------------------------------- plumbing


def _check_tensor(t, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"Tensor\n             but got {type(t)} instead.")
    if t._device.type == "meta":
        raise RuntimeError(f"collectives need tensors with data; `{name}` is on the meta device")


def _check_list(ts, name):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[Tensor]\n             but got {type(ts)} instead.")
    for t in ts:
        _check_tensor(t, name)


def _check_dtypes(*tensors):
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        a, b = sorted(str(d) for d in dtypes)[:2]
        raise ValueError(f"Invalid usage of tensors with different dtypes. Found {a} and {b}")


class _Buf:
    """A contiguous host/device array for a tensor; ``done()`` writes it back if it was a copy."""

    __slots__ = ("tensor", "array", "copied")

    def __init__(self, tensor, needs_device=False):
        self.tensor = tensor
        array = tensor._data
        self.copied = False
        if tensor._device.type == "cuda" and not needs_device:
            array = array.get()
            self.copied = True
        elif not array.flags.c_contiguous:
            array = array.copy(order="C")
            self.copied = True
        self.array = array

    def done(self):
        t = self.tensor
        if self.copied:
            if t._device.type == "cuda":
                import cupy

                t._data[...] = cupy.asarray(self.array)
            else:
                t._data[...] = self.array
        t._bump_version()


def _executor(pg=None):
    """The threads async work runs on. Gloo matches messages by sequence number, so its work
    may run concurrently; MPI and NCCL match by call order: one thread per group, in order."""
    if pg is not None and getattr(pg._impl, "serial", False):
        if getattr(pg, "_serial", None) is None:
            pg._serial = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="ember-dist-serial")
        return pg._serial
    if _STATE.executor is None:
        _STATE.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="ember-dist")
    return _STATE.executor


def _run(pg, fn, outputs, async_op, results=None):
    """Run ``fn()`` then write ``outputs`` (``_Buf``s) back; asynchronously if asked."""
    def job():
        fn()
        for b in outputs:
            b.done()

    if not async_op and not getattr(pg._impl, "serial", False):
        job()
        return None
    work = Work(_executor(pg).submit(job), results)
    if async_op:
        return work
    work.wait()  # in order behind the group's pending async work
    return None


def _device_native(pg):
    return pg._backend == Backend.NCCL


def _root(pg, src, group_src, what):
    if group_src is not None:
        root = group_src
    elif src is None:
        root = 0
    else:
        root = src if pg is _STATE.default else (pg._ranks.index(src) if src in pg._ranks
                                                 else None)
        if root is None:
            raise ValueError(f"Global rank {src} is not part of group {pg}")
    if not 0 <= root < pg.size():
        raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::{what}: invalid root "
                           f"rank: {root}")
    return root


def _shape(t):
    return "(" + ", ".join(str(s) for s in t.shape) + ")"
