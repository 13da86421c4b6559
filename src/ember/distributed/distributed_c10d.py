"""Process groups and collectives with ``torch.distributed``'s names, signatures and errors.

The front end here checks arguments, turns tensors into contiguous arrays (copying back into
non-contiguous tensors afterwards), reserves each collective's sequence number in program order
and runs it on the group's backend, on the calling thread or, with ``async_op=True``, on a
worker thread behind a :class:`Work`.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import enum
import io
import os
import pickle
import urllib.parse

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._store import DistBackendError, FileStore, PrefixStore, Store, TCPStore

__all__ = [
    "Backend", "ReduceOp", "Work", "ProcessGroup", "GroupMember", "group", "P2POp",
    "default_pg_timeout", "is_available", "is_initialized", "is_gloo_available",
    "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
    "init_process_group", "destroy_process_group", "new_group", "get_rank", "get_world_size",
    "get_backend", "get_group_rank", "get_global_rank", "get_process_group_ranks",
    "barrier", "monitored_barrier", "broadcast", "all_reduce", "reduce", "all_gather",
    "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
    "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv", "batch_isend_irecv",
    "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
    "get_default_backend_for_device", "Store",
]

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


# ---------------------------------------------------------------- collectives


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Block until every rank of ``group`` has reached this call.

    Example::

        >>> ember.distributed.barrier()
    """
    pg = _group(group)
    if pg is None:
        return None
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.barrier(seq), [], async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier (ember's gloo reports which rank it timed out on in its error)."""
    return barrier(group)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` of rank ``src`` into ``tensor`` on every rank of ``group``.

    Example::

        >>> t = ember.arange(4) if ember.distributed.get_rank() == 0 else ember.zeros(4,
        ...                                                                 dtype=ember.int64)
        >>> ember.distributed.broadcast(t, src=0)
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast")
    buf = _Buf(tensor, _device_native(pg))
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.broadcast(seq, buf.array, root),
                [buf] if pg.rank() != root else [], async_op, [tensor])


def _reducer(pg, op, tensor):
    fn = _reduce_fn(op, tensor.dtype)
    return fn, RedOpType(op) == RedOpType.AVG


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across all ranks with ``op``; every rank gets the result, in place.

    Example::

        >>> t = ember.ones(3)
        >>> ember.distributed.all_reduce(t)   # t == world_size everywhere
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    fn, avg = _reducer(pg, op, tensor)
    buf = _Buf(tensor, _device_native(pg))
    seq = pg._impl.next_seq()
    n = pg.size()

    def work():
        pg._impl.allreduce(seq, buf.array, fn)
        if avg:
            _avg_fix(buf.array, n)
    return _run(pg, work, [buf], async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across ranks with ``op`` into ``tensor`` of rank ``dst`` only.

    Example::

        >>> ember.distributed.reduce(t, dst=0)
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "reduce")
    fn, avg = _reducer(pg, op, tensor)
    buf = _Buf(tensor, _device_native(pg))
    seq = pg._impl.next_seq()
    n = pg.size()
    is_root = pg.rank() == root

    def work():
        pg._impl.reduce(seq, buf.array, root, fn)
        if avg and is_root:
            _avg_fix(buf.array, n)
    return _run(pg, work, [buf] if is_root else [], async_op, [tensor])


def _check_same(outputs, like, what, pg):
    if len(outputs) != pg.size():
        raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::{what}: invalid output "
                           f"tensor list at index 0 (expected length {pg.size()}, got "
                           f"{len(outputs)})")
    _check_dtypes(like, *outputs)
    for i, t in enumerate(outputs):
        if t.shape != like.shape:
            raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::{what}: invalid tensor "
                               f"size at index {i} (expected {_shape(like)}, got {_shape(t)})")


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's ``tensor`` into ``tensor_list`` (one tensor per rank) on every rank.

    Example::

        >>> out = [ember.zeros(2) for _ in range(ember.distributed.get_world_size())]
        >>> ember.distributed.all_gather(out, ember.ones(2))
    """
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    _check_same(tensor_list, tensor, "allgather", pg)
    native = _device_native(pg)
    src = _Buf(tensor, native)
    outs = [_Buf(t, native) for t in tensor_list]
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.allgather(seq, [b.array for b in outs], src.array), outs,
                async_op, list(tensor_list))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` concatenated (or stacked) into ``output_tensor``.

    ``output_tensor`` has ``world_size`` times the first dimension of ``input_tensor``, or a
    new leading dimension of size ``world_size``.

    Example::

        >>> out = ember.zeros(2 * ember.distributed.get_world_size())
        >>> ember.distributed.all_gather_into_tensor(out, ember.ones(2))
    """
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _group(group)
    if pg is None:
        return None
    _check_dtypes(output_tensor, input_tensor)
    n = pg.size()
    if output_tensor.numel() != n * input_tensor.numel():
        raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::allgather: invalid tensor "
                           f"size: output tensor must have world_size ({n}) times the elements "
                           f"of the input tensor (output {_shape(output_tensor)}, input "
                           f"{_shape(input_tensor)})")
    native = _device_native(pg)
    src = _Buf(input_tensor, native)
    out = _Buf(output_tensor, native)
    seq = pg._impl.next_seq()
    parts = list(out.array.reshape(n, -1)) if input_tensor.numel() else \
        [out.array.reshape(-1)] * n
    return _run(pg, lambda: pg._impl.allgather(seq, parts, src.array.reshape(-1)), [out],
                async_op, [output_tensor])


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst``.

    Example::

        >>> ember.distributed.gather(ember.ones(2), out_list if rank == 0 else None, dst=0)
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "gather")
    native = _device_native(pg)
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_list(gather_list, "gather_list")
        _check_same(gather_list, tensor, "gather", pg)
        outs = [_Buf(t, native) for t in gather_list]
    else:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                             "ranks.")
        outs = []
    src = _Buf(tensor, native)
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.gather(seq, [b.array for b in outs], src.array, root),
                outs, async_op, list(gather_list or []))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src``'s ``scatter_list[i]`` into ``tensor`` on rank ``i``.

    Example::

        >>> ember.distributed.scatter(t, pieces if rank == 0 else None, src=0)
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "scatter")
    native = _device_native(pg)
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_list(scatter_list, "scatter_list")
        _check_same(scatter_list, tensor, "scatter", pg)
        ins = [_Buf(t, native).array for t in scatter_list]
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source "
                             "ranks.")
        ins = None
    out = _Buf(tensor, native)
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.scatter(seq, out.array, ins, root), [out], async_op,
                [tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list[i]`` across ranks with ``op`` into ``output`` of rank ``i``.

    Example::

        >>> ember.distributed.reduce_scatter(out, [ember.ones(2)] * world_size)
    """
    _check_tensor(output, "output")
    _check_list(input_list, "input_list")
    pg = _group(group)
    if pg is None:
        return None
    _check_same(input_list, output, "reduce_scatter", pg)
    fn, avg = _reducer(pg, op, output)
    native = _device_native(pg)
    ins = [_Buf(t, native).array for t in input_list]
    out = _Buf(output, native)
    seq = pg._impl.next_seq()
    n = pg.size()

    def work():
        pg._impl.reduce_scatter(seq, out.array, ins, fn)
        if avg:
            _avg_fix(out.array, n)
    return _run(pg, work, [out], async_op, [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (``world_size`` chunks along dim 0) across ranks; chunk ``i`` lands in
    ``output`` of rank ``i``.

    Example::

        >>> ember.distributed.reduce_scatter_tensor(ember.zeros(2), ember.ones(2 * world_size))
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group)
    if pg is None:
        return None
    _check_dtypes(output, input)
    n = pg.size()
    if input.numel() != n * output.numel():
        raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::reduce_scatter_tensor: "
                           f"input tensor must have world_size ({n}) times the elements of the "
                           f"output tensor (output {_shape(output)}, input {_shape(input)})")
    fn, avg = _reducer(pg, op, output)
    native = _device_native(pg)
    src = _Buf(input, native)
    out = _Buf(output, native)
    ins = list(src.array.reshape(n, -1))
    seq = pg._impl.next_seq()

    def work():
        flat = out.array.reshape(-1)
        pg._impl.reduce_scatter(seq, flat, ins, fn)
        if avg:
            _avg_fix(flat, n)
    return _run(pg, work, [out], async_op, [output])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """``input_tensor_list[j]`` of rank ``i`` lands in ``output_tensor_list[i]`` of rank ``j``.

    Example::

        >>> ember.distributed.all_to_all(outs, ins)
    """
    _check_list(output_tensor_list, "output_tensor_list")
    _check_list(input_tensor_list, "input_tensor_list")
    pg = _group(group)
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise RuntimeError(f"all_to_all: expected {n} input and output tensors, got "
                           f"{len(input_tensor_list)} and {len(output_tensor_list)}")
    _check_dtypes(*output_tensor_list, *input_tensor_list)
    native = _device_native(pg)
    ins = [_Buf(t, native).array for t in input_tensor_list]
    outs = [_Buf(t, native) for t in output_tensor_list]
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.alltoall(seq, [b.array for b in outs], ins), outs,
                async_op, list(output_tensor_list))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split ``input`` along dim 0 (equally, or by ``input_split_sizes``) and send piece ``j``
    to rank ``j``; the pieces received fill ``output`` in rank order.

    Example::

        >>> ember.distributed.all_to_all_single(out, ember.arange(world_size))
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group)
    if pg is None:
        return None
    _check_dtypes(output, input)
    n = pg.size()

    def splits(t, sizes, name):
        lead = t.shape[0] if t.dim() else 1
        if sizes is None or len(sizes) == 0:
            if lead % n:
                raise RuntimeError(f"all_to_all_single: {name} dim 0 ({lead}) is not divisible "
                                   f"by the world size ({n})")
            sizes = [lead // n] * n
        sizes = list(sizes)
        if len(sizes) != n or sum(sizes) != lead or min(sizes) < 0:
            raise RuntimeError(f"all_to_all_single: {name} split sizes {sizes} must be {n} "
                               f"non-negative sizes summing to dim 0 ({lead})")
        return sizes

    in_sizes = splits(input, input_split_sizes, "input")
    out_sizes = splits(output, output_split_sizes, "output")
    if output_split_sizes is None and input_split_sizes is None and \
            output.numel() != input.numel():
        raise RuntimeError(f"all_to_all_single: input and output must have the same number of "
                           f"elements ({_shape(input)} vs {_shape(output)})")
    native = _device_native(pg)
    src = _Buf(input, native)
    out = _Buf(output, native)
    a_in = src.array.reshape((src.array.shape[0] if src.array.ndim else 1), -1)
    a_out = out.array.reshape((out.array.shape[0] if out.array.ndim else 1), -1)
    ins = np.split(a_in, np.cumsum(in_sizes)[:-1]) if not native else \
        [a_in[s:e] for s, e in zip([0, *np.cumsum(in_sizes)[:-1]], np.cumsum(in_sizes))]
    outs = [a_out[s:e] for s, e in zip([0, *np.cumsum(out_sizes)[:-1]], np.cumsum(out_sizes))]
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.alltoall(seq, outs, ins), [out], async_op, [output])


# ---------------------------------------------------------------- point to point


def _peer(pg, rank, group_rank, what):
    if group_rank is not None:
        peer = group_rank
    elif rank is None:
        raise ValueError(f"{what}: a peer rank is required")
    elif pg is _STATE.default:
        peer = rank
    else:
        if rank not in pg._ranks:
            raise ValueError(f"Global rank {rank} is not part of group {pg}")
        peer = pg._ranks.index(rank)
    if not 0 <= peer < pg.size():
        raise ValueError(f"Invalid {what} rank: {peer} (the group has {pg.size()} ranks)")
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst``; returns a :class:`Work`.

    Example::

        >>> work = ember.distributed.isend(ember.ones(2), dst=1)
        >>> work.wait()
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "destination")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as "
                         "the rank of the current process.")
    buf = _Buf(tensor, _device_native(pg))
    if _device_native(pg):
        return _run(pg, lambda: pg._impl.send(buf.array, peer, tag), [], True, [tensor])
    pg._impl.send(buf.array, peer, tag)  # never blocks for long: the peer always drains
    return Work(None, [tensor])


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` (blocking).

    Example::

        >>> ember.distributed.send(ember.ones(2), dst=1)
    """
    isend(tensor, dst, group, tag, group_dst).wait()


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns a :class:`Work`.

    Example::

        >>> work = ember.distributed.irecv(t, src=0)
        >>> work.wait()
    """
    return _recv(tensor, src, group, tag, group_src, True)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank.

    Example::

        >>> ember.distributed.recv(t, src=0)
        0
    """
    return _recv(tensor, src, group, tag, group_src, False)


def _recv(tensor, src, group, tag, group_src, async_op):
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return -1
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "source")
    if peer is not None and peer == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the rank "
                         "of the current process.")
    buf = _Buf(tensor, _device_native(pg))
    sender = []

    def work():
        sender.append(pg._impl.recv(buf.array, peer, tag))
        buf.done()

    if async_op:
        return Work(_executor(pg).submit(work), [tensor])
    work()
    return pg._ranks[sender[0]]


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`: ``P2POp(isend, t, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed."
                             "isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every operation of ``p2p_op_list``; returns their :class:`Work` handles."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ---------------------------------------------------------------- objects


def _to_bytes(obj):
    f = io.BytesIO()
    pickle.Pickler(f).dump(obj)
    return np.frombuffer(f.getvalue(), np.uint8)


def _from_bytes(array):
    return pickle.loads(array.tobytes())


def _tensor_of(array):
    from .. import from_numpy

    return from_numpy(np.ascontiguousarray(array))


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Broadcast the picklable objects of ``object_list`` from rank ``src``, in place.

    Example::

        >>> objs = [{"lr": 0.1}] if rank == 0 else [None]
        >>> ember.distributed.broadcast_object_list(objs, src=0)
    """
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "broadcast")
    from .. import empty, int64, uint8, zeros

    if pg.rank() == root:
        blobs = [_to_bytes(o) for o in object_list]
        sizes = _tensor_of(np.array([b.size for b in blobs], np.int64))
    else:
        sizes = zeros(len(object_list), dtype=int64)
    broadcast(sizes, group=group, group_src=root)
    total = int(sizes.sum())
    payload = _tensor_of(np.concatenate(blobs)) if pg.rank() == root and total else \
        empty(total, dtype=uint8)
    broadcast(payload, group=group, group_src=root)
    if pg.rank() != root:
        data = payload.numpy()
        offsets = np.concatenate([[0], np.cumsum(sizes.numpy())])
        for i in range(len(object_list)):
            object_list[i] = _from_bytes(data[offsets[i]:offsets[i + 1]])


def _gather_blobs(pg, group, obj, dst_root):
    from .. import empty, uint8

    blob = _to_bytes(obj)
    n = pg.size()
    size = _tensor_of(np.array([blob.size], np.int64))
    sizes = [_tensor_of(np.zeros(1, np.int64)) for _ in range(n)]
    all_gather(sizes, size, group=group)
    longest = max(int(s.item()) for s in sizes)
    padded = np.zeros(longest, np.uint8)
    padded[:blob.size] = blob
    outs = [empty(longest, dtype=uint8) for _ in range(n)]
    if dst_root is None:
        all_gather(outs, _tensor_of(padded), group=group)
    else:
        gather(_tensor_of(padded), outs if pg.rank() == dst_root else None, group=group,
               group_dst=dst_root)
        if pg.rank() != dst_root:
            return None
    return [_from_bytes(o.numpy()[:int(s.item())]) for o, s in zip(outs, sizes)]


def all_gather_object(object_list, obj, group=None):
    """Every rank's picklable ``obj`` into ``object_list`` (length world size) on every rank.

    Example::

        >>> out = [None] * ember.distributed.get_world_size()
        >>> ember.distributed.all_gather_object(out, {"rank": rank})
    """
    pg = _group(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have length {pg.size()}")
    for i, o in enumerate(_gather_blobs(pg, group, obj, None)):
        object_list[i] = o


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Every rank's picklable ``obj`` into ``object_gather_list`` on rank ``dst``.

    Example::

        >>> out = [None] * world_size if rank == 0 else None
        >>> ember.distributed.gather_object(rank, out, dst=0)
    """
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather")
    if pg.rank() == root:
        if object_gather_list is None or len(object_gather_list) != pg.size():
            raise ValueError(f"Argument ``object_gather_list`` must be specified on destination "
                             f"rank with length {pg.size()}")
    objs = _gather_blobs(pg, group, obj, root)
    if objs is not None:
        for i, o in enumerate(objs):
            object_gather_list[i] = o


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """Rank ``src``'s ``scatter_object_input_list[i]`` into
    ``scatter_object_output_list[0]`` of rank ``i``."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "scatter")
    objs = list(scatter_object_input_list) if pg.rank() == root else [None] * pg.size()
    broadcast_object_list(objs, group=group, group_src=root)
    scatter_object_output_list[0] = objs[pg.rank()]


from ._c10d_extras import *  # noqa: E402,F403  (torch's remaining c10d names)
from ._c10d_extras import __all__ as _extra_names  # noqa: E402

__all__ += _extra_names
