"""Key-value stores for rendezvous: ``HashStore``, ``TCPStore``, ``FileStore``, ``PrefixStore``.

All stores share torch's API: ``set(key, value)``, ``get(key)`` (blocks until the key exists or
the store's timeout passes, then raises :class:`DistStoreError`), ``add(key, amount)``,
``wait(keys, timeout=None)``, ``compare_set(key, expected, desired)``, ``delete_key(key)``,
``num_keys()``. Values are ``str`` or ``bytes`` and come back as ``bytes``.

Example::

    >>> store = ember.distributed.HashStore()
    >>> store.set("k", "v")
    >>> store.get("k")
    b'v'
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import pickle
import socket
import struct
import threading
import time

__all__ = ["Store", "HashStore", "TCPStore", "FileStore", "PrefixStore", "DistError",
           "DistBackendError", "DistStoreError", "DistNetworkError"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


class DistError(RuntimeError):
    """Base class of the errors of ``ember.distributed``."""


class DistBackendError(DistError):
    """A collective backend failed (a peer went away, a timeout in a collective)."""


class DistStoreError(DistError):
    """A store operation failed (most often: a key did not appear before the timeout)."""


class DistNetworkError(DistError):
    """A network operation failed (a store could not be reached)."""


def _as_bytes(value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):  # torch accepts a list of ints (bytes values)
        return bytes(value)
    raise TypeError(f"store values must be str or bytes, got {type(value).__name__}")


def _seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


class _Table:
    """The dictionary behind a store, with a condition to wait for keys."""

    def __init__(self):
        self.data = {}
        self.cond = threading.Condition()

    def set(self, key, value):
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def get(self, key):
        with self.cond:
            return self.data.get(key)

    def add(self, key, amount):
        with self.cond:
            value = int(self.data.get(key, b"0")) + int(amount)
            self.data[key] = str(value).encode()
            self.cond.notify_all()
            return value

    def compare_set(self, key, expected, desired):
        with self.cond:
            current = self.data.get(key)
            if current is None:
                if expected == b"":
                    self.data[key] = desired
                    self.cond.notify_all()
                    return desired
                return expected
            if current == expected:
                self.data[key] = desired
                self.cond.notify_all()
                return desired
            return current

    def delete(self, key):
        with self.cond:
            return self.data.pop(key, None) is not None

    def num_keys(self):
        with self.cond:
            return len(self.data)

    def wait(self, keys, timeout):
        with self.cond:
            return self.cond.wait_for(lambda: all(k in self.data for k in keys), timeout)


class Store:
    """Base class of the key-value stores (see the module docstring)."""

    def __init__(self, timeout=_DEFAULT_TIMEOUT):
        self._timeout = _seconds(timeout)

    @property
    def timeout(self):
        """The default timeout of ``get`` and ``wait``, as a ``timedelta``."""
        return datetime.timedelta(seconds=self._timeout)

    def set_timeout(self, timeout):
        """Change the default timeout of ``get`` and ``wait``."""
        self._timeout = _seconds(timeout)

    def get(self, key):
        """The value of ``key`` as bytes; waits for the key up to the store's timeout."""
        self.wait([key])
        value = self._get_nowait(key)
        if value is None:  # deleted between the wait and the read
            raise DistStoreError(f"key {key!r} was deleted")
        return value

    def wait(self, keys, timeout=None):
        """Block until every key in ``keys`` exists; raise ``DistStoreError`` on timeout."""
        if isinstance(keys, str):
            keys = [keys]
        seconds = self._timeout if timeout is None else _seconds(timeout)
        if not self._wait(list(keys), seconds):
            shown = ", ".join(keys)
            raise DistStoreError(f"wait timeout after {int(seconds * 1000)}ms, keys: {shown}")

    def check(self, keys):
        """Whether every key in ``keys`` exists now (no waiting)."""
        return all(self._get_nowait(k) is not None for k in keys)


class HashStore(Store):
    """A store in this process's memory (threads of one process share it).

    Example::

        >>> s = ember.distributed.HashStore()
        >>> s.add("n", 2)
        2
    """

    def __init__(self):
        super().__init__()
        self._table = _Table()

    def set(self, key, value):
        """Set ``key`` to ``value`` (str or bytes)."""
        self._table.set(key, _as_bytes(value))

    def _get_nowait(self, key):
        return self._table.get(key)

    def add(self, key, amount):
        """Add ``amount`` to the integer stored at ``key`` (0 when missing); return the sum."""
        return self._table.add(key, amount)

    def compare_set(self, key, expected_value, desired_value):
        """Set ``key`` to ``desired_value`` if it holds ``expected_value``; return the value."""
        return self._table.compare_set(key, _as_bytes(expected_value),
                                       _as_bytes(desired_value))

    def delete_key(self, key):
        """Delete ``key``; return whether it existed."""
        return self._table.delete(key)

    def num_keys(self):
        """The number of keys."""
        return self._table.num_keys()

    def _wait(self, keys, seconds):
        return self._table.wait(keys, seconds)


class PrefixStore(Store):
    """A view of ``store`` whose keys all start with ``prefix + '/'``.

    Example::

        >>> s = ember.distributed.PrefixStore("group1", ember.distributed.HashStore())
    """

    def __init__(self, prefix, store):
        super().__init__()
        self.underlying_store = store
        self._prefix = prefix + "/"
        self._timeout = store._timeout

    def _k(self, key):
        return self._prefix + key

    def set(self, key, value):
        self.underlying_store.set(self._k(key), value)

    def _get_nowait(self, key):
        return self.underlying_store._get_nowait(self._k(key))

    def add(self, key, amount):
        return self.underlying_store.add(self._k(key), amount)

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self):
        return self.underlying_store.num_keys()

    def _wait(self, keys, seconds):
        return self.underlying_store._wait([self._k(k) for k in keys], seconds)


# ---------------------------------------------------------------- TCPStore

_LEN = struct.Struct("<Q")


def _send_msg(sock, obj):
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LEN.pack(len(payload)) + payload)


def _recv_exact(sock, n):
    """Exactly ``n`` bytes from ``sock`` (a writable bytearray: tensors are built on it)."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("connection closed")
        got += k
    return buf


def _recv_msg(sock):
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    return pickle.loads(_recv_exact(sock, n))


class _StoreServer:
    """The master's side of a TCPStore: one thread per client over a shared table."""

    def __init__(self, host, port):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            self.sock.close()
            if e.errno == errno.EADDRINUSE:
                raise DistNetworkError(f"The server socket has failed to listen on any local "
                                       f"network address. port: {port}, useIpv6: "
                                       f"{family == socket.AF_INET6}, code: -98, name: "
                                       f"EADDRINUSE, message: address already in use") from None
            raise DistNetworkError(f"The server socket has failed to bind to {host}:{port}: "
                                   f"{e}") from None
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.table = _Table()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name="ember-store-accept").start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True,
                             name="ember-store-client").start()

    def _serve(self, conn):
        table = self.table
        try:
            while True:
                cmd, args = _recv_msg(conn)
                if cmd == "wait":
                    result = table.wait(*args)
                else:
                    result = getattr(table, cmd)(*args)
                _send_msg(conn, result)
        except (ConnectionError, OSError, EOFError):
            pass
        finally:
            conn.close()

    def close(self):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass


class TCPStore(Store):
    """A store served over TCP by the master process (``is_master=True``), reached by the others.

    ``port=0`` on the master picks a free port (read it back from ``.port``).

    Example::

        >>> import datetime
        >>> server = ember.distributed.TCPStore("127.0.0.1", 0, 1, True,
        ...                                     timeout=datetime.timedelta(seconds=30))
        >>> server.set("k", b"v")
    """

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=_DEFAULT_TIMEOUT, wait_for_workers=True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        self.host = host_name
        self._server = _StoreServer(host_name, port) if is_master else None
        self.port = self._server.port if is_master else port
        self.world_size = world_size
        self._local = threading.local()  # one connection per thread: a blocking ``get`` in
        self._socks = []                  # one thread never holds up another's ``set``
        self._socks_lock = threading.Lock()
        self._sock()
        if world_size is not None and world_size > 0:
            self.add("__ember_store_workers", 1)
            if is_master and wait_for_workers and world_size > 1:
                deadline = time.monotonic() + self._timeout
                while int(self._get_nowait("__ember_store_workers")) < world_size:
                    if time.monotonic() > deadline:
                        raise DistStoreError(f"Timed out after {int(self._timeout)} seconds "
                                             f"waiting for clients. "
                                             f"{int(self._get_nowait('__ember_store_workers'))}"
                                             f"/{world_size} clients joined.")
                    time.sleep(0.005)

    def _connect(self):
        deadline = time.monotonic() + self._timeout
        delay = 0.01
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=5)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as e:
                if time.monotonic() > deadline:
                    raise DistNetworkError(f"The client socket has timed out after "
                                           f"{int(self._timeout)}s while trying to connect to "
                                           f"({self.host}, {self.port}): {e}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _sock(self):
        sock = getattr(self._local, "sock", None)
        if sock is None:
            sock = self._local.sock = self._connect()
            with self._socks_lock:
                self._socks.append(sock)
        return sock

    def _call(self, cmd, *args):
        sock = self._sock()
        _send_msg(sock, (cmd, args))
        return _recv_msg(sock)

    @property
    def local_address(self):
        """The address of this client's socket (the interface that reaches the master)."""
        return self._sock().getsockname()[0]

    def set(self, key, value):
        self._call("set", key, _as_bytes(value))

    def _get_nowait(self, key):
        return self._call("get", key)

    def add(self, key, amount):
        return self._call("add", key, int(amount))

    def compare_set(self, key, expected_value, desired_value):
        return self._call("compare_set", key, _as_bytes(expected_value),
                          _as_bytes(desired_value))

    def delete_key(self, key):
        return self._call("delete", key)

    def num_keys(self):
        return self._call("num_keys")

    def _wait(self, keys, seconds):
        return self._call("wait", keys, seconds)

    def __del__(self):
        try:
            for sock in self._socks:
                sock.close()
            if self._server is not None:
                self._server.close()
        except Exception:
            pass


# ---------------------------------------------------------------- FileStore


class FileStore(Store):
    """A store in a file that every process can open (a shared file system across nodes).

    Example::

        >>> s = ember.distributed.FileStore("/tmp/ember_store", 1)
    """

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        self.path = file_name
        self.world_size = world_size
        open(file_name, "ab").close()

    def _locked(self, update):
        with open(self.path, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                raw = f.read()
                table = pickle.loads(raw) if raw else {}
                result, changed = update(table)
                if changed:
                    f.seek(0)
                    f.truncate()
                    f.write(pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL))
                    f.flush()
                return result
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def set(self, key, value):
        value = _as_bytes(value)

        def update(table):
            table[key] = value
            return None, True
        self._locked(update)

    def _get_nowait(self, key):
        return self._locked(lambda table: (table.get(key), False))

    def add(self, key, amount):
        def update(table):
            value = int(table.get(key, b"0")) + int(amount)
            table[key] = str(value).encode()
            return value, True
        return self._locked(update)

    def compare_set(self, key, expected_value, desired_value):
        expected, desired = _as_bytes(expected_value), _as_bytes(desired_value)

        def update(table):
            current = table.get(key)
            if current is None:
                if expected == b"":
                    table[key] = desired
                    return desired, True
                return expected, False
            if current == expected:
                table[key] = desired
                return desired, True
            return current, False
        return self._locked(update)

    def delete_key(self, key):
        """Delete ``key``; returns True (as torch's FileStore, even for a missing key)."""
        def update(table):
            existed = table.pop(key, None) is not None
            return True, existed
        return self._locked(update)

    def num_keys(self):
        return self._locked(lambda table: (len(table), False))

    def _wait(self, keys, seconds):
        deadline = None if seconds is None else time.monotonic() + seconds
        delay = 0.001
        while True:
            if self._locked(lambda table: (all(k in table for k in keys), False)):
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def wait(self, keys, timeout=None):
        if isinstance(keys, str):
            keys = [keys]
        seconds = self._timeout if timeout is None else _seconds(timeout)
        if not self._wait(list(keys), seconds):
            raise DistStoreError(f"Timeout waiting for key: {', '.join(keys)} after "
                                 f"{int(seconds * 1000)} ms")
