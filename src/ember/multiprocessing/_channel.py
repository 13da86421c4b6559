"""Messages that carry their shared tensors' file descriptors with them.

Python's ``Queue`` sends a shared tensor's descriptor through ``resource_sharer``: the receiver
connects back to a thread of the sender to fetch it, so a sender that exits or is killed between
``put`` and the receiver's unpickling leaves the receiver with a raw ``ConnectionResetError``.
Here a message is one ``SOCK_SEQPACKET`` packet: its pickle, with the descriptors attached
(``SCM_RIGHTS``). The kernel delivers a packet whole or not at all and holds the descriptors
while it is in flight, so whenever either side dies the other gets the message or nothing (an
end of file), and descriptors in flight are closed with the socket that holds them.

A pickle larger than ``_MAX_INLINE`` travels in a memfd of its own; more than ``_MAX_FDS``
descriptors travel on a fresh socket whose reading end is attached instead (the kernel takes
at most 253 descriptors per packet).

Example::

    >>> reader, writer = socket_pair()
    >>> send(writer, ember.ones(2))
    >>> receive(reader)
    tensor([1., 1.])
"""

from __future__ import annotations

import array
import errno
import mmap
import os
import pickle
import socket
import struct
import threading
from multiprocessing import reduction

_MAX_INLINE = 32 * 1024  # pickle bytes sent in the packet itself
_MAX_FDS = 250  # descriptors attached to one packet
_HEADER = struct.Struct("!BI")  # flags, number of tensor descriptors
_BODY_IN_FD = 1  # the pickle is in the last attached descriptor (a memfd)
_FDS_ON_SOCKET = 2  # the tensor descriptors wait on the first attached descriptor (a socket)
_ANCILLARY_SIZE = socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize)

_packing = threading.local()  # .fds: descriptors collected while pickling a message
_unpacking = threading.local()  # .fds: descriptors received with the message being unpickled


def socket_pair():
    """A connected pair of packet sockets: (reading end, writing end)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


class _AttachedFd:
    """Stands for a descriptor that travels attached to the message (in a pickle, the index)."""

    def __init__(self, index):
        self.index = index

    def detach(self):
        """The received descriptor; the caller owns it from now on."""
        fds = _unpacking.fds
        fd, fds[self.index] = fds[self.index], None
        if fd is None:
            raise RuntimeError("a shared tensor's file descriptor was used twice")
        return fd


def fd_handle(fd):
    """What a tensor's pickle holds for its memfd ``fd``: an attached descriptor while
    :func:`pack` runs, else ``multiprocessing``'s ``DupFd``."""
    fds = getattr(_packing, "fds", None)
    if fds is None:
        return reduction.DupFd(fd)
    fds.append(os.dup(fd))  # our own copy: the tensor may be freed before the packet is sent
    return _AttachedFd(len(fds) - 1)


class Packet:
    """A pickled message and the descriptors it owns (closed by :meth:`close` or by
    :func:`send_packet`)."""

    def __init__(self, data, fds):
        self.data, self.fds = data, fds

    def close(self):
        fds, self.fds = self.fds, []
        for fd in fds:
            os.close(fd)

    def __del__(self):
        self.close()


def pack(obj):
    """``obj`` pickled, with copies of its shared tensors' descriptors."""
    outer, fds = getattr(_packing, "fds", None), []
    try:  # set inside the try: a Ctrl-C right after must still restore it
        _packing.fds = fds
        data = reduction.ForkingPickler.dumps(obj)
    except BaseException:
        _close_all(fds)
        raise
    finally:
        _packing.fds = outer
    return Packet(data, fds)


def send(sock, obj):
    """Pickle ``obj`` and send it on ``sock`` with its descriptors (blocks while the socket
    is full)."""
    send_packet(sock, pack(obj))


def send_packet(sock, packet):
    """Send a :class:`Packet` as one packet, then close its descriptors."""
    extra = []  # descriptors made for this packet only
    try:
        flags, attached = 0, list(packet.fds)
        if len(attached) > _MAX_FDS:
            extra.append(_fds_on_socket(attached))
            attached, flags = [extra[-1]], flags | _FDS_ON_SOCKET
        inline = len(packet.data) <= _MAX_INLINE
        if inline:
            try:
                _send(sock, flags, len(packet.fds), packet.data, attached)
                return
            except OSError as error:  # a send buffer smaller than the packet
                if error.errno != errno.EMSGSIZE:
                    raise
        extra.append(_bytes_in_memfd(packet.data))
        _send(sock, flags | _BODY_IN_FD, len(packet.fds), b"", attached + [extra[-1]])
    finally:
        for fd in extra:
            os.close(fd)
        packet.close()


def _send(sock, flags, count, body, attached):
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", attached))]
    sock.sendmsg([_HEADER.pack(flags, count), body], ancillary if attached else [])


def _bytes_in_memfd(data):
    fd = os.memfd_create("ember-message", os.MFD_CLOEXEC)
    try:
        view, written = memoryview(data), 0
        while written < len(data):
            written += os.write(fd, view[written:])
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fds_on_socket(fds):
    """A socket whose reading end, returned, yields ``fds`` in packets, then end of file."""
    reader, writer = socket_pair()
    with writer:
        try:
            for start in range(0, len(fds), _MAX_FDS):
                chunk = array.array("i", fds[start:start + _MAX_FDS])
                writer.sendmsg([b"f"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, chunk)])
        except BaseException:
            reader.close()
            raise
    return reader.detach()


def receive(sock, block=True):
    """The next message on ``sock``. ``EOFError`` when every writer has closed it;
    ``BlockingIOError`` with ``block=False`` when there is none (or another reader took it)."""
    return unpack(*receive_raw(sock, block))


def receive_raw(sock, block=True):
    """The next packet's header fields, inline bytes and attached descriptors (now owned by
    the caller)."""
    flags = 0 if block else socket.MSG_DONTWAIT
    data, ancillary, msg_flags, _ = sock.recvmsg(_HEADER.size + _MAX_INLINE, _ANCILLARY_SIZE,
                                                 flags | socket.MSG_CMSG_CLOEXEC)
    fds = _descriptors(ancillary)
    if not data:
        _close_all(fds)
        raise EOFError("the channel was closed")
    if msg_flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) or len(data) < _HEADER.size:
        _close_all(fds)
        raise RuntimeError("received a malformed message (truncated packet)")
    kind, count = _HEADER.unpack_from(data)
    return kind, count, data[_HEADER.size:], fds


def _descriptors(ancillary):
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return list(fds)


def _close_all(fds):
    for fd in fds:
        if fd is not None:
            os.close(fd)


def discard(sock):
    """Receive one packet without unpickling it and close its descriptors (``EOFError`` at the
    end, ``BlockingIOError`` when none is waiting)."""
    _close_all(receive_raw(sock, block=False)[3])


def unpack(kind, count, body, fds):
    """The object a received packet holds; every descriptor its tensors do not keep is closed."""
    try:
        if kind & _BODY_IN_FD:
            body_fd = fds.pop()
            try:
                size = os.fstat(body_fd).st_size
                with mmap.mmap(body_fd, size, prot=mmap.PROT_READ) as mapped:
                    body = mapped[:]
            finally:
                os.close(body_fd)
        if kind & _FDS_ON_SOCKET:
            fds = _receive_fd_socket(fds.pop(), count)
        if len(fds) != count:
            raise RuntimeError(f"received a message with {len(fds)} of its {count} file "
                               f"descriptors")
        outer = getattr(_unpacking, "fds", None)
        try:
            _unpacking.fds = fds
            return pickle.loads(body)
        finally:
            _unpacking.fds = outer
    finally:
        _close_all(fds)


def _receive_fd_socket(fd, count):
    fds = []
    with socket.socket(fileno=fd) as sock:
        try:
            while len(fds) < count:
                data, ancillary, _, _ = sock.recvmsg(1, _ANCILLARY_SIZE,
                                                     socket.MSG_CMSG_CLOEXEC)
                if not data:
                    break
                fds += _descriptors(ancillary)
        except BaseException:
            _close_all(fds)
            raise
    return fds
