"""The RPC calls, RRefs and the agent's lifetime (torch's ``torch.distributed.rpc.api``).

Example::

    >>> import ember.distributed.rpc as rpc
    >>> rpc.init_rpc("worker0", rank=0, world_size=2)      # MASTER_ADDR/MASTER_PORT set
    >>> rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 1))
    tensor([2., 2.])
    >>> rpc.shutdown()
"""

from __future__ import annotations

import itertools
import threading

from ...futures import Future
from .. import autograd as dist_autograd
from . import _agent
from .options import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    UNSET_RPC_TIMEOUT,
    BackendType,
    RpcBackendOptions,
    TensorPipeRpcBackendOptions,
    WorkerInfo,
)

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info",
           "RRef", "PyRRef"]

_state = {"agent": None}
_init_counter = itertools.count()


def _require_agent():
    agent = _state["agent"]
    if agent is None:
        raise RuntimeError("RPC has not been initialized. Call torch.distributed.rpc.init_rpc "
                           "first.")
    return agent


# ---- lifetime ---------------------------------------------------------------------------
def _rendezvous(options, rank, world_size):
    from .. import distributed_c10d as c10d
    from .._store import DistError, PrefixStore

    timeout = _agent.store_timeout(options.rpc_timeout)
    try:
        store, rank, world_size = c10d._make_store(options.init_method, rank, world_size,
                                                   timeout)
    except (DistError, OSError):
        # env:// on the port of an existing process group: its server is already this one
        if c10d._STATE.store is None:
            raise
        store = c10d._STATE.store
        rank = c10d.get_rank() if rank is None else rank
        world_size = c10d.get_world_size() if world_size is None else world_size
    store.set_timeout(timeout)
    prefix = PrefixStore(f"rpc_prefix_{next(_init_counter)}", store)
    return store, prefix, rank, world_size


def init_rpc(name, backend=None, rank=-1, world_size=None, rpc_backend_options=None):
    """Join the RPC group as worker ``name`` (rank ``rank`` of ``world_size``).

    Rendezvous through ``rpc_backend_options.init_method`` (``env://`` by default: the
    MASTER_ADDR and MASTER_PORT variables). Every worker calls it; it returns once all have.

    Example::

        >>> rpc.init_rpc("trainer", rank=1, world_size=2)
    """
    from .. import distributed_c10d as c10d

    if backend is not None and not isinstance(backend, BackendType):
        raise TypeError("Argument backend must be a member of BackendType")
    if rpc_backend_options is not None and not isinstance(rpc_backend_options,
                                                          RpcBackendOptions):
        raise TypeError("Argument rpc_backend_options must be an instance of "
                        "RpcBackendOptions")
    if _state["agent"] is not None:
        raise RuntimeError("RPC is already initialized")
    options = rpc_backend_options or TensorPipeRpcBackendOptions()
    WorkerInfo(name, 0)  # validates the name before any rendezvous
    store, prefix, rank, world_size = _rendezvous(options, None if rank == -1 else rank,
                                                  world_size)
    dist_autograd._init(rank)
    agent = _agent.Agent(name, rank, world_size, prefix, options, c10d._local_host(store))
    agent.base_store = store
    _state["agent"] = agent
    agent.barrier("started", options.rpc_timeout)


def shutdown(graceful=True, timeout=DEFAULT_SHUTDOWN_TIMEOUT):
    """Leave the RPC group. ``graceful``: first wait until every worker's calls have finished.

    Example::

        >>> rpc.shutdown()          # returns when all workers have called it
    """
    agent = _require_agent()
    try:
        if graceful:
            agent.drain()
            agent.barrier("shutdown_intent")
            agent.drain()  # replies to calls made while the others were finishing
            agent.barrier("shutdown_done")
    finally:
        agent.close()
        _state["agent"] = None
        with _owners.lock:
            _owners.entries.clear()
        dist_autograd._forget_all()
        if graceful and agent.info.id == 0:
            # the store's server lives in this process: let every worker finish reading it
            agent.store.set("exit/0", b"1")
            agent.store.wait([f"exit/{r}" for r in range(agent.world_size)])
        elif graceful:
            agent.store.set(f"exit/{agent.info.id}", b"1")


def get_worker_info(worker_name=None):
    """This worker's :class:`WorkerInfo`, or the one named ``worker_name``.

    Example::

        >>> rpc.get_worker_info().name
        'worker0'
    """
    agent = _require_agent()
    if worker_name is None:
        return agent.info
    info = agent.by_name.get(worker_name)
    if info is None:
        raise RuntimeError(f"name:{agent.info.name},rank:{agent.info.id} could not find "
                           f"destination name {worker_name}")
    return info


def _worker_id(to):
    agent = _require_agent()
    if isinstance(to, WorkerInfo):
        return to.id
    if isinstance(to, str):
        return get_worker_info(to).id
    if isinstance(to, int) and to in agent.workers:
        return to
    raise RuntimeError(f"name:{agent.info.name},rank:{agent.info.id} could not find "
                       f"destination {to!r}")


def _timeout(agent, timeout):
    return agent.timeout if timeout is None or timeout == UNSET_RPC_TIMEOUT else timeout


def _call_async(to, func, args, kwargs=None, timeout=UNSET_RPC_TIMEOUT, ctx=False):
    """Send ``func(*args, **kwargs)``; ``ctx=False`` means the current autograd context."""
    agent = _require_agent()
    if ctx is False:
        ctx = dist_autograd._current_context()
    return agent.send(_worker_id(to), func, tuple(args or ()), dict(kwargs or {}), ctx,
                      _timeout(agent, timeout))


def _notify(to, func, args):
    """Fire-and-forget internal message (shutdown still waits for it)."""
    agent = _state["agent"]
    if agent is not None and not agent.closing:
        agent.send(to, func, args, {}, None, 0)


def _check_callable(func):
    if not callable(func):
        raise TypeError("function should be callable.")


def rpc_sync(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run ``func(*args, **kwargs)`` on worker ``to`` and return its result (blocking).

    Example::

        >>> rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 3))
        tensor([4., 4.])
    """
    _check_callable(func)
    return _call_async(to, func, args, kwargs, timeout).wait()


def rpc_async(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run ``func(*args, **kwargs)`` on worker ``to``; a :class:`~ember.futures.Future` of it.

    Example::

        >>> fut = rpc.rpc_async("worker1", ember.add, args=(ember.ones(2), 3))
        >>> fut.wait()
        tensor([4., 4.])
    """
    _check_callable(func)
    return _call_async(to, func, args, kwargs, timeout)


def remote(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run ``func(*args, **kwargs)`` on worker ``to``, keep the result there: an :class:`RRef`.

    Example::

        >>> rref = rpc.remote("worker1", ember.add, args=(ember.ones(2), 3))
        >>> rref.to_here()
        tensor([4., 4.])
    """
    _check_callable(func)
    agent = _require_agent()
    owner = agent.workers[_worker_id(to)]
    rref_id = (agent.info.id, next(_rref_counter))
    if owner.id == agent.info.id:
        rref = RRef._owner_view(rref_id, _owners.entry(rref_id))
    else:
        rref = RRef._user(owner, rref_id)
    rref._confirmed = _call_async(owner, _owner_create, (rref_id, func, tuple(args or ()),
                                                        dict(kwargs or {})), None, timeout)
    return rref


# ---- RRefs ------------------------------------------------------------------------------
_rref_counter = itertools.count()


class _OwnerEntry:
    """A value owned by this worker, and how many user RRefs elsewhere point at it."""

    __slots__ = ("future", "forks")

    def __init__(self):
        self.future = Future()
        self.forks = 0


class _OwnerTable:
    def __init__(self):
        self.lock = threading.Lock()
        self.entries = {}

    def entry(self, rref_id, entry=None):
        with self.lock:
            found = self.entries.get(rref_id)
            if found is None:
                found = self.entries[rref_id] = entry or _OwnerEntry()
            return found

    def adjust(self, rref_id, delta, entry=None):
        with self.lock:
            found = self.entries.get(rref_id)
            if found is None:
                found = self.entries[rref_id] = entry or _OwnerEntry()
            found.forks += delta
            if found.forks == 0:
                del self.entries[rref_id]
            return found


_owners = _OwnerTable()


def _owner_create(rref_id, func, args, kwargs):
    """On the owner of a ``remote()`` result: run ``func`` and keep its value."""
    entry = _owners.adjust(rref_id, +1) if rref_id[0] != _require_agent().info.id \
        else _owners.entry(rref_id)
    try:
        value = func(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - raised again by to_here()
        entry.future.set_exception(e)
        return None
    if getattr(func, "_wrapped_async_rpc_function", None) is not None:
        value.add_done_callback(lambda fut: _settle(entry, fut))
    else:
        entry.future.set_result(value)
    return None


def _settle(entry, future):
    try:
        entry.future.set_result(future.wait())
    except Exception as e:  # noqa: BLE001 - raised again by to_here()
        entry.future.set_exception(e)


def _rref_fetch(rref_id):
    return _owners.entry(rref_id).future.wait()


def _rref_add_fork(rref_id):
    _owners.adjust(rref_id, +1)


def _rref_delete_fork(rref_id):
    _owners.adjust(rref_id, -1)


def _invoke_on_value(rref, name, args, kwargs):
    """On the owner: call the method ``name`` of the RRef's value (the RRef proxies)."""
    method = getattr(rref.local_value(), name)
    result = method(*args, **kwargs)
    if getattr(method, "_wrapped_async_rpc_function", None) is not None:
        return _agent.Deferred(result)
    return result


def _rref_backward(rref, context_id, retain_graph):
    root = rref.local_value()
    if context_id == -1:
        root.backward(retain_graph=retain_graph)
    else:
        dist_autograd.backward(context_id, [root], retain_graph=retain_graph)


def _value_type(rref):
    return type(rref.local_value())


class _Proxy:
    """``rref.rpc_sync().method(...)``: call a method of the remote value."""

    def __init__(self, rref, call, timeout):
        self._rref = rref
        self._call = call
        self._timeout = timeout

    def __getattr__(self, name):
        def invoke(*args, **kwargs):
            return self._call(self._rref.owner(), _invoke_on_value,
                              args=(self._rref, name, args, kwargs), timeout=self._timeout)
        return invoke


class RRef:
    """A reference to a value that lives on one worker (its owner).

    ``RRef(value)`` makes this worker the owner; ``rpc.remote`` returns a user RRef to a value
    made on another worker. ``to_here()`` copies the value here; ``local_value()`` is the value
    itself, on the owner only. RRefs travel in RPC arguments and results; the owner keeps the
    value while user RRefs to it exist.

    Example::

        >>> rref = rpc.RRef(ember.ones(2))
        >>> rref.is_owner(), rref.to_here()
        (True, tensor([1., 1.]))
    """

    def __init__(self, value, type_hint=None):
        agent = _state["agent"]
        if agent is None:
            raise RuntimeError("Current RPC agent is not set! Did you initialize the RPC "
                               "framework (e.g. by calling `rpc.init_rpc`)?")
        entry = _OwnerEntry()
        entry.future.set_result(value)
        self._init(agent.info, (agent.info.id, next(_rref_counter)), entry)
        self._type_hint = type_hint

    def _init(self, owner, rref_id, entry):
        self._owner = owner
        self._id = rref_id
        self._entry = entry
        self._confirmed = None
        self._type_hint = None

    @classmethod
    def _owner_view(cls, rref_id, entry):
        rref = cls.__new__(cls)
        rref._init(_require_agent().info, rref_id, entry)
        return rref

    @classmethod
    def _user(cls, owner, rref_id):
        rref = cls.__new__(cls)
        rref._init(owner, rref_id, None)
        return rref

    def __del__(self):
        if getattr(self, "_entry", True) is None:  # a user RRef: the owner may drop the value
            agent = _state["agent"]
            if agent is not None:
                agent.delete_later(self._owner.id, self._id)

    # ---- queries
    def is_owner(self):
        """Whether this worker owns the value."""
        return self._entry is not None

    def owner(self):
        """The owner's :class:`WorkerInfo`."""
        return self._owner

    def owner_name(self):
        """The owner's worker name."""
        return self._owner.name

    def confirmed_by_owner(self):
        """Whether the owner knows of this RRef (a ``remote()`` result once it is created)."""
        return self._confirmed is None or self._confirmed.done()

    def local_value(self):
        """The value itself; only on the owner.

        Example::

            >>> rpc.RRef([1, 2]).local_value()
            [1, 2]
        """
        if self._entry is None:
            raise RuntimeError(f"Call it on {self._owner}, as the RRef is owned by that "
                               f"worker: local_value() only works on the owner of an RRef "
                               f"(this is {_require_agent().info}).")
        return self._entry.future.wait()

    def to_here(self, timeout=UNSET_RPC_TIMEOUT):
        """A copy of the value on this worker (the value itself on the owner).

        Example::

            >>> rpc.remote("worker1", ember.ones, args=(2,)).to_here()
            tensor([1., 1.])
        """
        if self._entry is not None:
            return self._entry.future.wait()
        return _call_async(self._owner, _rref_fetch, (self._id,), None, timeout).wait()

    def is_pyobj(self):
        """Whether the value is a Python object (always, in ember: no TorchScript values)."""
        return True

    def backward(self, dist_autograd_ctx_id=-1, retain_graph=False):
        """Backward from the value (a scalar tensor) on its owner.

        With ``dist_autograd_ctx_id=-1`` it is a local ``backward()`` on the owner; otherwise a
        distributed backward in that context.

        Example::

            >>> with dist_autograd.context() as context_id:
            ...     loss_rref = rpc.remote("worker1", compute_loss, args=(w,))
            ...     loss_rref.backward(context_id)
        """
        rpc_sync(self._owner, _rref_backward, args=(self, dist_autograd_ctx_id, retain_graph))

    # ---- proxies
    def rpc_sync(self, timeout=UNSET_RPC_TIMEOUT):
        """A proxy whose methods run on the owner through ``rpc_sync``."""
        return _Proxy(self, rpc_sync, timeout)

    def rpc_async(self, timeout=UNSET_RPC_TIMEOUT):
        """A proxy whose methods run on the owner through ``rpc_async`` (return Futures)."""
        return _Proxy(self, rpc_async, timeout)

    def remote(self, timeout=UNSET_RPC_TIMEOUT):
        """A proxy whose methods run on the owner through ``remote`` (return RRefs)."""
        return _Proxy(self, remote, timeout)

    def _get_type(self, timeout=UNSET_RPC_TIMEOUT, blocking=True):
        """The type of the value (asked of the owner when this worker is a user)."""
        if self._type_hint is None:
            self._type_hint = (type(self.local_value()) if self._entry is not None
                               else rpc_sync(self._owner, _value_type, args=(self,),
                                             timeout=timeout))
        if blocking:
            return self._type_hint
        future = Future()
        future.set_result(self._type_hint)
        return future

    # ---- pickling (only inside RPC messages)
    def _fork_to(self, dst):
        """How this RRef travels to worker ``dst``: the owner counts one more user."""
        if dst == self._owner.id:
            if self._entry is not None:  # to itself: the message finds the value by its id
                _owners.entry(self._id, self._entry)
        else:
            if self._entry is not None:
                _owners.adjust(self._id, +1, self._entry)
            else:
                rpc_sync(self._owner, _rref_add_fork, args=(self._id,))
        return _rebuild_rref, (self._owner.id, self._owner.name, self._id)

    def __reduce__(self):
        raise RuntimeError("Can not pickle rref in python pickler, rref can only be pickled "
                           "when using RPC")

    def __repr__(self):
        created_on, local_id = self._id
        if self._entry is not None:
            return f"OwnerRRef(GloballyUniqueId(created_on={created_on}, local_id={local_id}))"
        return (f"UserRRef(RRefId = GloballyUniqueId(created_on={created_on}, "
                f"local_id={local_id}), owner = {self._owner})")


PyRRef = RRef


def _rebuild_rref(owner_id, owner_name, rref_id):
    agent = _require_agent()
    if owner_id == agent.info.id:
        return RRef._owner_view(rref_id, _owners.entry(rref_id))
    return RRef._user(WorkerInfo(owner_name, owner_id), rref_id)
