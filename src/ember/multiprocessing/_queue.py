"""``ember.multiprocessing.Queue``: Python's process queue, with descriptors sent in-band.

It behaves as ``multiprocessing.Queue`` (a feeder thread sends what ``put`` buffers; ``get``,
``qsize``, ``close``, ``join_thread``, ``cancel_join_thread``), but each item is one packet of a
``SOCK_SEQPACKET`` socket carrying its tensors' memfd descriptors (see ``_channel``). So:

- an item whose sender exits or is killed after sending still arrives whole;
- a sender killed while sending cannot leave half an item in the queue (the kernel queues a
  packet whole or not at all), and no write lock can be left held by a dead process;
- a receiver killed while receiving loses at most the item it took; its descriptors are closed
  with it and the queue keeps working for the other processes.

Unlike Python's queue, an object that cannot be pickled raises in ``put`` (Python's feeder
thread prints the error and drops the item).
"""

from __future__ import annotations

import collections
import multiprocessing
import queue
import threading
import time
import weakref
from multiprocessing import context, util
from multiprocessing.connection import wait

from . import _channel

_SENTINEL = object()


class Queue:
    """A FIFO queue between processes whose tensors arrive as views of shared memory.

    ``maxsize <= 0`` means unbounded. ``ctx`` is the ``multiprocessing`` context whose
    semaphore bounds the queue (the default context if None).

    Example::

        >>> q = ember.multiprocessing.Queue()
        >>> q.put(ember.arange(3))
        >>> q.get(timeout=5)
        tensor([0, 1, 2])
    """

    def __init__(self, maxsize=0, *, ctx=None):
        ctx = ctx or multiprocessing.get_context()
        if maxsize <= 0:
            from multiprocessing.synchronize import SEM_VALUE_MAX as maxsize
        self._maxsize = maxsize
        self._reader, self._writer = _channel.socket_pair()
        self._sem = ctx.BoundedSemaphore(maxsize)
        self._reset()
        util.register_after_fork(self, Queue._reset)

    def __getstate__(self):
        context.assert_spawning(self)
        return self._maxsize, self._reader, self._writer, self._sem

    def __setstate__(self, state):
        self._maxsize, self._reader, self._writer, self._sem = state
        self._reset()
        util.register_after_fork(self, Queue._reset)

    def _reset(self):
        """Per-process state: a fresh buffer and no feeder thread (also after a fork)."""
        self._notempty = threading.Condition(threading.Lock())
        self._buffer = collections.deque()
        self._thread = None
        self._jointhread = None
        self._joincancelled = False
        self._closed = False
        self._close = None

    def put(self, obj, block=True, timeout=None):
        """Buffer ``obj`` for the feeder thread; ``queue.Full`` when the queue stays full."""
        if self._closed:
            raise ValueError(f"Queue {self!r} is closed")
        if not self._sem.acquire(block, timeout):
            raise queue.Full
        try:
            packet = _channel.pack(obj)
        except BaseException:
            self._sem.release()
            raise
        with self._notempty:
            if self._thread is None:
                self._start_thread()
            self._buffer.append(packet)
            self._notempty.notify()

    def get(self, block=True, timeout=None):
        """The next item; ``queue.Empty`` when none comes in time (or at once, ``block=False``)."""
        if self._closed:
            raise ValueError(f"Queue {self!r} is closed")
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0)
        while True:
            try:
                received = _channel.receive_raw(self._reader, block=False)
            except BlockingIOError:  # nothing yet, or another process took it first
                remaining = None if deadline is None else deadline - time.monotonic()
                if not block or (remaining is not None and remaining <= 0):
                    raise queue.Empty from None
                wait([self._reader], remaining)
                continue
            self._sem.release()
            return _channel.unpack(*received)

    def qsize(self):
        """The number of items put and not yet taken (approximate, as Python's)."""
        return self._maxsize - self._sem._semlock._get_value()

    def empty(self):
        """Whether no item is waiting (approximate, as Python's)."""
        return not wait([self._reader], 0)

    def full(self):
        """Whether a bounded queue holds ``maxsize`` items (approximate, as Python's)."""
        return self._sem._semlock._is_zero()

    def get_nowait(self):
        """``get(False)``."""
        return self.get(False)

    def put_nowait(self, obj):
        """``put(obj, False)``."""
        return self.put(obj, False)

    def close(self):
        """No more puts or gets here; the feeder thread sends what is buffered, then ends."""
        self._closed = True
        close, self._close = self._close, None
        if close:
            close()

    def join_thread(self):
        """Wait for the feeder thread (after :meth:`close`)."""
        assert self._closed, f"Queue {self!r} not closed"
        if self._jointhread:
            self._jointhread()

    def cancel_join_thread(self):
        """Let this process exit without waiting for buffered items to be sent."""
        self._joincancelled = True
        if self._jointhread is not None:
            self._jointhread.cancel()

    def _start_thread(self):
        self._thread = threading.Thread(target=_feed,
                                        args=(self._buffer, self._notempty, self._writer),
                                        name="QueueFeederThread", daemon=True)
        self._thread.start()
        if not self._joincancelled:
            self._jointhread = util.Finalize(self._thread, _join_feeder,
                                             [weakref.ref(self._thread)], exitpriority=-5)
        self._close = util.Finalize(self, _stop_feeder, [self._buffer, self._notempty],
                                    exitpriority=10)


def _feed(buffer, notempty, writer):
    """The feeder thread: send buffered packets in order until the sentinel."""
    while True:
        with notempty:
            while not buffer:
                notempty.wait()
            packet = buffer.popleft()
        if packet is _SENTINEL:
            return
        try:
            _channel.send_packet(writer, packet)
        except OSError:  # every reader is gone (or the process is exiting): drop the rest
            packet.close()


def _stop_feeder(buffer, notempty):
    with notempty:
        buffer.append(_SENTINEL)
        notempty.notify()


def _join_feeder(thread_ref):
    thread = thread_ref()
    if thread is not None:
        thread.join()
