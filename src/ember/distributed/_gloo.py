"""The ``'gloo'`` backend: collectives over TCP sockets between the ranks, on NumPy buffers.

Every pair of ranks shares one TCP connection (a full mesh, set up through the store: each rank
listens on an ephemeral port, publishes ``host:port``, connects to the lower ranks and accepts
the higher ones). A reader thread per connection drains it into mailboxes keyed by
``(group, kind, a, b)``: ``kind`` 0 is a collective (``a`` its sequence number in the group,
``b`` the step of its algorithm), 1 a point-to-point message (``a`` the tag). Because every
socket is always drained, a rank may send to all its peers before receiving, without deadlock,
and operations run from several threads (async work) never read each other's bytes.

Algorithms: small buffers (or two ranks) are reduced directly: every rank sends its buffer to
every other and reduces the inputs in rank order, so each rank computes the same bits. Larger
buffers on three or more ranks use a ring: reduce-scatter then all-gather of ``n`` chunks; each
chunk is reduced once and copied to the others, so all ranks again end with the same bits.
"""

from __future__ import annotations

import collections
import socket
import struct
import threading
import time
import zlib

import numpy as np

from ._store import DistBackendError

_HEADER = struct.Struct("<qqqqQQ")  # group id, kind, a, b, payload bytes, dtype code
_RING_MIN_BYTES = 1 << 18
_COLL, _P2P = 0, 1


def _dtype_code(dtype):
    """A code for ``dtype`` that every process computes alike (bfloat16 included)."""
    return zlib.crc32(dtype.name.encode())


def _bytes_of(array):
    """A flat uint8 view of a contiguous array (any dtype, bfloat16 included)."""
    return array.reshape(-1).view(np.uint8)


class Mesh:
    """Connections from this rank to every other rank of the world."""

    def __init__(self, store, rank, world_size, timeout, host="127.0.0.1"):
        self.rank = rank
        self.world_size = world_size
        self.timeout = timeout
        self.socks = {}
        self.send_locks = {}
        self.boxes = collections.defaultdict(collections.deque)
        self.cond = threading.Condition()
        self.dead = {}  # peer -> reason its connection closed
        self.closing = False
        if world_size == 1:
            return
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                                 socket.SOCK_STREAM)
        listener.bind((host, 0))
        listener.listen(world_size)
        listener.settimeout(timeout)
        store.set(f"addr/{rank}", f"{host}|{listener.getsockname()[1]}")
        try:
            for peer in range(rank):
                peer_host, port = store.get(f"addr/{peer}").decode().split("|")
                sock = self._connect(peer_host, int(port))
                sock.sendall(struct.pack("<q", rank))
                self._add(peer, sock)
            for _ in range(world_size - rank - 1):
                try:
                    sock, _ = listener.accept()
                except TimeoutError:
                    raise DistBackendError(f"[Rank {rank}]: timed out waiting for the other "
                                           "ranks to connect") from None
                sock.settimeout(None)
                (peer,) = struct.unpack("<q", _recv_exact(sock, 8))
                self._add(peer, sock)
        finally:
            listener.close()
        for peer, sock in self.socks.items():
            threading.Thread(target=self._read, args=(peer, sock), daemon=True,
                             name=f"ember-gloo-read-{peer}").start()

    def _connect(self, host, port):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return socket.create_connection((host, port), timeout=self.timeout)
            except OSError:
                if time.monotonic() > deadline:
                    raise DistBackendError(f"[Rank {self.rank}]: could not connect to "
                                           f"{host}:{port}") from None
                time.sleep(0.01)

    def _add(self, peer, sock):
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socks[peer] = sock
        self.send_locks[peer] = threading.Lock()

    def _read(self, peer, sock):
        try:
            while True:
                header = _recv_exact(sock, _HEADER.size)
                gid, kind, a, b, nbytes, code = _HEADER.unpack(header)
                payload = np.empty(nbytes, np.uint8)
                if nbytes:
                    _recv_into(sock, memoryview(payload))
                with self.cond:
                    self.boxes[(peer, gid, kind, a, b)].append((code, payload))
                    self.cond.notify_all()
        except (OSError, ConnectionError) as e:
            with self.cond:
                self.dead[peer] = "closed" if self.closing else str(e) or "connection closed"
                self.cond.notify_all()

    def send(self, peer, key, array):
        data = _bytes_of(array)
        header = _HEADER.pack(*key, data.nbytes, _dtype_code(array.dtype))
        if peer in self.dead:
            raise DistBackendError(f"[Rank {self.rank}]: connection to rank {peer} is closed")
        try:
            with self.send_locks[peer]:
                self.socks[peer].sendall(header)
                if data.nbytes:
                    self.socks[peer].sendall(memoryview(data))
        except OSError as e:
            raise DistBackendError(f"[Rank {self.rank}]: send to rank {peer} failed: "
                                   f"{e}") from None

    def recv(self, peers, key, timeout):
        """The next message for ``key`` from one of ``peers``:
        ``(peer, (dtype code, uint8 array))``."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for peer in peers:
                    box = self.boxes.get((peer,) + key)
                    if box:
                        message = box.popleft()
                        if not box:
                            del self.boxes[(peer,) + key]
                        return peer, message
                for peer in peers:
                    if peer in self.dead:
                        raise DistBackendError(f"[Rank {self.rank}]: connection to rank {peer} "
                                               f"closed: {self.dead[peer]}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DistBackendError(f"[Rank {self.rank}]: Timed out waiting "
                                           f"{int(timeout * 1000)}ms for recv operation to "
                                           "complete")
                self.cond.wait(left)

    def close(self):
        self.closing = True
        for sock in self.socks.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _recv_exact(sock, n):
    buf = bytearray(n)
    _recv_into(sock, memoryview(buf))
    return bytes(buf)


def _recv_into(sock, view):
    got, n = 0, len(view)
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("connection closed by peer")
        got += k


class GlooGroup:
    """One process group on a :class:`Mesh`: group ranks, a sequence number, the algorithms.

    Every method takes contiguous NumPy arrays and works in place; ``reduce_fn(a, b, out)`` is
    the binary reduction (NumPy ufunc semantics).
    """

    name = "gloo"

    def __init__(self, mesh, gid, ranks, timeout):
        self.mesh = mesh
        self.gid = gid
        self.ranks = list(ranks)  # group rank -> global rank
        self.rank = self.ranks.index(mesh.rank)
        self.size = len(self.ranks)
        self.timeout = timeout
        self._seq = 0
        self._seq_lock = threading.Lock()

    def next_seq(self):
        """Reserve the sequence number of the next collective (called in program order)."""
        with self._seq_lock:
            self._seq += 1
            return self._seq

    # -- messaging in group ranks
    def _send(self, dst, seq, step, array):
        self.mesh.send(self.ranks[dst], (self.gid, _COLL, seq, step), array)

    def _recv(self, src, seq, step, like):
        _, message = self.mesh.recv([self.ranks[src]], (self.gid, _COLL, seq, step),
                                    self.timeout)
        return self._as(message, like, src)

    def _as(self, message, like, src):
        code, payload = message
        if code != _dtype_code(like.dtype):
            raise DistBackendError(f"[Rank {self.rank}]: dtype mismatch with rank {src}: "
                                   f"expected {like.dtype.name} (do the tensors have the same "
                                   "dtype on every rank?)")
        if payload.nbytes != like.nbytes:
            raise DistBackendError(f"[Rank {self.rank}]: size mismatch with rank {src}: "
                                   f"received {payload.nbytes} bytes, expected {like.nbytes} "
                                   "(do the tensors have the same size and dtype on every "
                                   "rank?)")
        return payload.view(like.dtype).reshape(like.shape)

    # -- collectives
    def allreduce(self, seq, array, reduce_fn):
        n = self.size
        if n == 1:
            return
        if n == 2 or array.nbytes < _RING_MIN_BYTES:
            for peer in range(n):
                if peer != self.rank:
                    self._send(peer, seq, 0, array)
            inputs = [np.ascontiguousarray(array).reshape(array.shape) if peer == self.rank
                      else self._recv(peer, seq, 0, array) for peer in range(n)]
            # reduce in rank order on every rank, all operands contiguous and the result in a
            # fresh buffer: NumPy then takes the same inner loop everywhere (its SIMD loops may
            # round differently from its strided ones, e.g. complex products with FMA), so
            # every rank computes the same bits
            acc = np.empty(array.shape, array.dtype)
            reduce_fn(inputs[0], inputs[1], acc)
            for x in inputs[2:]:
                reduce_fn(acc, x, acc)
            array[...] = acc
            return
        flat = array.reshape(-1)
        bounds = [i * flat.size // n for i in range(n + 1)]
        chunk = [flat[bounds[i]:bounds[i + 1]] for i in range(n)]
        right, left, r = (self.rank + 1) % n, (self.rank - 1) % n, self.rank
        for s in range(n - 1):
            self._send(right, seq, s, chunk[(r - s) % n])
            c = (r - s - 1) % n
            incoming = self._recv(left, seq, s, chunk[c])
            reduce_fn(incoming, chunk[c], chunk[c])
        for s in range(n - 1):
            self._send(right, seq, n + s, chunk[(r + 1 - s) % n])
            c = (r - s) % n
            chunk[c][...] = self._recv(left, seq, n + s, chunk[c])

    def broadcast(self, seq, array, root):
        if self.rank == root:
            for peer in range(self.size):
                if peer != root:
                    self._send(peer, seq, 0, array)
        else:
            array[...] = self._recv(root, seq, 0, array)

    def reduce(self, seq, array, root, reduce_fn):
        if self.rank != root:
            self._send(root, seq, 0, array)
            return
        acc = None
        for peer in range(self.size):
            x = array if peer == root else self._recv(peer, seq, 0, array)
            if acc is None:
                acc = x.copy()
            else:
                reduce_fn(acc, x, acc)
        array[...] = acc

    def allgather(self, seq, outputs, array):
        for peer in range(self.size):
            if peer != self.rank:
                self._send(peer, seq, 0, array)
        for peer in range(self.size):
            out = outputs[peer]
            out[...] = array if peer == self.rank else self._recv(peer, seq, 0, out)

    def gather(self, seq, outputs, array, root):
        if self.rank != root:
            self._send(root, seq, 0, array)
            return
        for peer in range(self.size):
            out = outputs[peer]
            out[...] = array if peer == root else self._recv(peer, seq, 0, out)

    def scatter(self, seq, output, inputs, root):
        if self.rank == root:
            for peer in range(self.size):
                if peer != root:
                    self._send(peer, seq, 0, inputs[peer])
            output[...] = inputs[root]
        else:
            output[...] = self._recv(root, seq, 0, output)

    def reduce_scatter(self, seq, output, inputs, reduce_fn):
        for peer in range(self.size):
            if peer != self.rank:
                self._send(peer, seq, 0, inputs[peer])
        acc = None
        for peer in range(self.size):
            x = inputs[self.rank] if peer == self.rank else self._recv(peer, seq, 0, output)
            if acc is None:
                acc = x.copy()
            else:
                reduce_fn(acc, x, acc)
        output[...] = acc

    def alltoall(self, seq, outputs, inputs):
        for peer in range(self.size):
            if peer != self.rank:
                self._send(peer, seq, 0, inputs[peer])
        for peer in range(self.size):
            out = outputs[peer]
            out[...] = inputs[peer] if peer == self.rank else self._recv(peer, seq, 0, out)

    def barrier(self, seq):
        empty = np.empty(0, np.uint8)
        for peer in range(self.size):
            if peer != self.rank:
                self._send(peer, seq, 0, empty)
        for peer in range(self.size):
            if peer != self.rank:
                self._recv(peer, seq, 0, empty)

    # -- point to point (group ranks; src None: any source)
    def send(self, array, dst, tag):
        self.mesh.send(self.ranks[dst], (self.gid, _P2P, tag, 0), array)

    def recv(self, array, src, tag):
        peers = [self.ranks[src]] if src is not None else \
            [g for g in self.ranks if g != self.mesh.rank]
        peer, message = self.mesh.recv(peers, (self.gid, _P2P, tag, 0), self.timeout)
        src = self.ranks.index(peer)
        array[...] = self._as(message, array, src)
        return src

    def close(self):
        pass
