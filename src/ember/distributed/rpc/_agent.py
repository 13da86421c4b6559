"""The RPC agent: each worker serves calls from the others over TCP sockets.

Wire format: every frame is a length-prefixed pickle of ``(kind, message_id, context_id,
payload, buffer sizes)`` followed by the raw bytes of the buffers. ``payload`` is pickled by
:class:`_RpcPickler`, which sends tensors by value (as TensorPipe does for CPU tensors) as
out-of-band pickle buffers (written to the socket without a copy), records tensors that require
grad in the current distributed autograd context, and turns RRefs into forks. Requests are
unpickled in the reader thread of their connection, so a worker sees one peer's messages in
the order they were sent, and run on a thread pool; the reply travels back on the same
connection.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import io
import itertools
import pickle
import queue
import socket
import struct
import sys
import threading
import time
import traceback

from ...futures import Future
from .. import autograd as dist_autograd
from .._store import _recv_exact, _recv_msg, _send_msg
from .options import WorkerInfo

_REQUEST, _REPLY = 0, 1


class _Unpickling(threading.local):
    ctx = None  # the distributed autograd context the message belongs to
    src = None  # the worker id that sent it


_unpickling = _Unpickling()


class _RpcPickler(pickle.Pickler):
    """Pickles a message for worker ``dst``: tensors by value, RRefs as forks."""

    def __init__(self, file, dst, ctx, buffer_callback):
        super().__init__(file, protocol=5, buffer_callback=buffer_callback)
        self.dst = dst
        self.ctx = ctx

    def reducer_override(self, obj):
        from ..._tensor import Tensor
        from .api import RRef

        if type(obj) is Tensor:
            return _reduce_tensor(obj, self.dst, self.ctx)
        if isinstance(obj, RRef):
            return obj._fork_to(self.dst)
        reduce = getattr(type(obj), "_rpc_reduce", None)  # RemoteModule: the same remote module
        if reduce is not None:
            return reduce(obj)
        return NotImplemented


def _reduce_tensor(t, dst, ctx):
    # contiguous, so that it travels as one out-of-band buffer (sent before the call returns)
    array = t.detach().cpu()._host_array()
    if not array.flags.c_contiguous:
        array = array.copy(order="C")
    if ctx is not None and t.requires_grad:
        send_id = dist_autograd._next_send_id()
        ctx.record_send(t, send_id, dst)
        return _rebuild_received, (array, send_id)
    return _rebuild_plain, (array, t.requires_grad)


def _rebuild_plain(array, requires_grad=False):
    from ..._tensor import _rebuild_tensor

    return _rebuild_tensor(array, "cpu", requires_grad)


def _rebuild_received(array, send_id):
    """A tensor that required grad on its sender: a leaf whose gradient goes back there."""
    t = _rebuild_plain(array, True)
    ctx = _unpickling.ctx
    if ctx is not None:
        ctx.record_recv(t, _unpickling.src, send_id)
    return t


def dumps(obj, dst, ctx):
    """``(payload, buffers)``: the pickle and the raw buffers of its arrays."""
    buffer, buffers = io.BytesIO(), []
    _RpcPickler(buffer, dst, ctx, buffers.append).dump(obj)
    return buffer.getvalue(), buffers


def loads(message, src, ctx):
    payload, buffers = message
    saved = _unpickling.ctx, _unpickling.src
    _unpickling.ctx, _unpickling.src = ctx, src
    try:
        return pickle.loads(payload, buffers=buffers)
    finally:
        _unpickling.ctx, _unpickling.src = saved


_LEN = struct.Struct("<Q")


def _send_frame(sock, head, message):
    payload, buffers = message
    raws = [b.raw() for b in buffers]
    header = pickle.dumps((head, payload, [r.nbytes for r in raws]), protocol=5)
    sock.sendall(_LEN.pack(len(header)) + header)
    for raw in raws:
        sock.sendall(raw)


def _recv_frame(sock):
    """``(head, (payload, buffers))`` of the next frame."""
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    head, payload, sizes = pickle.loads(_recv_exact(sock, n))
    return head, (payload, [_recv_exact(sock, size) for size in sizes])


class RemoteError:
    """An exception raised by a remote function, as it travels back (torch's RemoteException)."""

    def __init__(self, msg, exception_type):
        self.msg = msg
        self.exception_type = exception_type

    def rebuild(self):
        """The exception the caller raises: the remote type, with the remote message."""
        message = self.msg.encode("utf-8").decode("unicode_escape")
        try:
            return self.exception_type(message)
        except BaseException as e:  # noqa: BLE001 - some exception types need other arguments
            return RuntimeError(f"Failed to create original exception type. Error msg was {e}"
                                f" Original exception on remote side was {message}")


class Deferred:
    """A handler's result that is a Future to wait for (``@rpc.functions.async_execution``)."""

    def __init__(self, future):
        self.future = future


class _Connection:
    def __init__(self, sock):
        self.sock = sock
        self.lock = threading.Lock()

    def send(self, head, message):
        with self.lock:
            _send_frame(self.sock, head, message)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _Pending:
    __slots__ = ("future", "ctx", "dst", "deadline", "timeout")

    def __init__(self, future, ctx, dst, timeout):
        self.future = future
        self.ctx = ctx
        self.dst = dst
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout if timeout > 0 else None


class Agent:
    """One worker's RPC endpoint: a server for the others' calls, a client for its own."""

    def __init__(self, name, rank, world_size, store, options, host):
        self.info = WorkerInfo(name, rank)
        self.world_size = world_size
        self.store = store
        self.timeout = options.rpc_timeout
        self.closing = False
        self._ids = itertools.count()
        self._pending = {}
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._outgoing = {}
        self._incoming = []
        self._threads = []
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(options.num_worker_threads, 64), thread_name_prefix="rpc-worker")
        self._deletions = queue.Queue()
        self._server = socket.create_server((host, 0))
        self._start(self._accept_loop)
        self._start(self._watch_timeouts)
        self._start(self._send_deletions)
        self._rendezvous(host)

    # ---- set-up and tear-down -----------------------------------------------------------
    def _start(self, target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _rendezvous(self, host):
        port = self._server.getsockname()[1]
        self.store.set(f"worker/{self.info.id}", pickle.dumps((self.info.name, host, port)))
        keys = [f"worker/{r}" for r in range(self.world_size)]
        self.store.wait(keys)
        self.workers, self.addresses, self.by_name = {}, {}, {}
        for rank, key in enumerate(keys):
            name, worker_host, worker_port = pickle.loads(self.store.get(key))
            if name in self.by_name:
                raise RuntimeError(f"RPC worker name {name} is not unique. Workers "
                                   f"{self.by_name[name].id} and {rank} share the same name.")
            info = WorkerInfo(name, rank)
            self.workers[rank] = info
            self.by_name[name] = info
            self.addresses[rank] = (worker_host, worker_port)

    def barrier(self, label, timeout=0):
        """Every worker reaches ``label`` before any goes on (through the store)."""
        self.store.set(f"{label}/{self.info.id}", b"1")
        # a worker may serve the others for as long as they train: no time limit here
        self.store.wait([f"{label}/{r}" for r in range(self.world_size)],
                        store_timeout(timeout))

    def drain(self):
        """Wait until every call this worker made (deletions included) has its reply."""
        while True:
            self._deletions.join()
            with self._idle:
                while self._pending:
                    self._idle.wait()
            if self._deletions.unfinished_tasks == 0:
                return

    def close(self):
        self.closing = True
        self._deletions.put(None)
        try:
            self._server.close()
        except OSError:
            pass
        with self._lock:
            connections = list(self._outgoing.values()) + list(self._incoming)
            self._outgoing.clear()
        for conn in connections:
            conn.close()
        self._pool.shutdown(wait=True)
        error = RuntimeError("RPC agent is shut down")
        with self._idle:
            pending, self._pending = self._pending, {}
            self._idle.notify_all()
        for entry in pending.values():
            if not entry.future.done():
                entry.future.set_exception(error)

    # ---- client side ------------------------------------------------------------------
    def _connection(self, dst):
        with self._lock:
            conn = self._outgoing.get(dst)
        if conn is not None:
            return conn
        sock = socket.create_connection(self.addresses[dst])
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _send_msg(sock, self.info.id)
        conn = _Connection(sock)
        with self._lock:
            existing = self._outgoing.get(dst)
            if existing is not None:
                conn.close()
                return existing
            self._outgoing[dst] = conn
        self._start(self._read_replies, conn, dst)
        return conn

    def send(self, dst, fn, args, kwargs, ctx, timeout):
        """Call ``fn(*args, **kwargs)`` on worker ``dst``; a Future of its result."""
        if self.closing:
            raise RuntimeError("RPC agent is shut down")
        payload = dumps((fn, args, kwargs), dst, ctx)
        future = Future()
        message_id = next(self._ids)
        with self._lock:
            self._pending[message_id] = _Pending(future, ctx, dst, timeout)
        try:
            self._connection(dst).send((_REQUEST, message_id, -1 if ctx is None else ctx.id),
                                       payload)
        except OSError as e:
            self._complete(message_id, error=RuntimeError(
                f"Failed to send an RPC to {self.workers[dst]}: {e}"))
        return future

    def _complete(self, message_id, value=None, error=None):
        with self._idle:
            entry = self._pending.pop(message_id, None)
            self._idle.notify_all()
        if entry is None:  # timed out already
            return
        if error is not None:
            entry.future.set_exception(error)
        else:
            entry.future.set_result(value)

    def _read_replies(self, conn, dst):
        try:
            while True:
                (_, message_id, _), payload = _recv_frame(conn.sock)
                with self._lock:
                    entry = self._pending.get(message_id)
                if entry is None:
                    continue
                try:
                    status, value = loads(payload, dst, entry.ctx)
                except Exception as e:  # noqa: BLE001 - the caller gets the error
                    self._complete(message_id, error=e)
                    continue
                if status == "ok":
                    self._complete(message_id, value=value)
                else:
                    self._complete(message_id, error=value.rebuild())
        except (ConnectionError, OSError, EOFError):
            self._fail_pending(dst)

    def _fail_pending(self, dst):
        if self.closing:
            return
        with self._lock:
            lost = [mid for mid, e in self._pending.items() if e.dst == dst]
        for message_id in lost:
            self._complete(message_id, error=RuntimeError(
                f"Connection to {self.workers[dst]} was closed before its RPC replied"))

    def _watch_timeouts(self):
        while not self.closing:
            time.sleep(0.05)
            now = time.monotonic()
            with self._lock:
                late = [(mid, e) for mid, e in self._pending.items()
                        if e.deadline is not None and e.deadline < now]
            for message_id, entry in late:
                milliseconds = int(entry.timeout * 1000)
                self._complete(message_id, error=RuntimeError(
                    f"RPCErr:1:RPC ran for more than set timeout ({milliseconds} ms) and will "
                    f"now be marked with an error"))

    def delete_later(self, owner, rref_id):
        """Tell ``owner`` that a user RRef is gone (from a thread of its own: never in __del__)."""
        if not self.closing:
            self._deletions.put((owner, rref_id))

    def _send_deletions(self):
        from .api import _rref_delete_fork

        while True:
            item = self._deletions.get()
            try:
                if item is None:
                    return
                owner, rref_id = item
                if not self.closing:
                    self.send(owner, _rref_delete_fork, (rref_id,), {}, None, 0)
            except Exception:  # noqa: BLE001 - a lost deletion only keeps a value alive
                pass
            finally:
                self._deletions.task_done()

    # ---- server side ------------------------------------------------------------------
    def _accept_loop(self):
        while True:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(sock)
            with self._lock:
                self._incoming.append(conn)
            self._start(self._serve, conn)

    def _serve(self, conn):
        try:
            src = _recv_msg(conn.sock)
            while True:
                (_, message_id, context_id), payload = _recv_frame(conn.sock)
                ctx = None if context_id == -1 else dist_autograd._get_or_create(context_id)
                if ctx is not None:
                    ctx.workers.add(src)
                try:
                    fn, args, kwargs = loads(payload, src, ctx)
                except Exception as e:  # noqa: BLE001 - the caller gets the error
                    self._reply_error(conn, src, message_id, ctx, e)
                    continue
                self._pool.submit(self._run, conn, src, message_id, ctx, fn, args, kwargs)
        except (ConnectionError, OSError, EOFError, RuntimeError):
            pass

    def _run(self, conn, src, message_id, ctx, fn, args, kwargs):
        with dist_autograd._use_context(ctx):
            try:
                result = fn(*args, **(kwargs or {}))
            except Exception as e:  # noqa: BLE001 - the caller gets the error
                self._reply_error(conn, src, message_id, ctx, e)
                return
        if getattr(fn, "_wrapped_async_rpc_function", None) is not None:
            result = Deferred(result)
        if isinstance(result, Deferred):
            if not isinstance(result.future, Future):
                error = TypeError(f"Functions decorated with @rpc.functions.async_execution "
                                  f"must return a torch.futures.Future object, but got "
                                  f"{type(result.future)}")
                self._reply_error(conn, src, message_id, ctx, error)
                return
            result.future.add_done_callback(
                lambda fut: self._reply_future(conn, src, message_id, ctx, fut))
            return
        self._reply(conn, src, message_id, ctx, result)

    def _reply_future(self, conn, src, message_id, ctx, future):
        try:
            value = future.wait()
        except Exception as e:  # noqa: BLE001 - the caller gets the error
            self._reply_error(conn, src, message_id, ctx, e)
            return
        self._reply(conn, src, message_id, ctx, value)

    def _reply(self, conn, src, message_id, ctx, value):
        try:
            payload = dumps(("ok", value), src, ctx)
        except Exception as e:  # noqa: BLE001 - an unpicklable result is the caller's error
            self._reply_error(conn, src, message_id, ctx, e)
            return
        self._send_reply(conn, message_id, payload)

    def _reply_error(self, conn, src, message_id, ctx, error):
        text = (f"On {self.info}:\n{error!r}\n"
                f"{''.join(traceback.format_exception(error))}")
        print(text, file=sys.stderr)
        try:
            payload = dumps(("error", RemoteError(text, type(error))), src, ctx)
        except Exception:  # noqa: BLE001 - an exception type that cannot be pickled
            payload = dumps(("error", RemoteError(text, RuntimeError)), src, ctx)
        self._send_reply(conn, message_id, payload)

    def _send_reply(self, conn, message_id, payload):
        try:
            conn.send((_REPLY, message_id, -1), payload)
        except OSError:
            pass  # the caller is gone


def store_timeout(seconds):
    return datetime.timedelta(seconds=seconds if seconds and seconds > 0 else 365 * 86400)
