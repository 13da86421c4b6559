"""``ember.multiprocessing.queue``: queues whose tensors travel through shared memory.

Example::

    >>> from ember.multiprocessing.queue import Queue, SimpleQueue
"""

import multiprocessing
import multiprocessing.queues
from multiprocessing.reduction import ForkingPickler

from ._queue import Queue

__all__ = ["ConnectionWrapper", "Queue", "SimpleQueue"]


class ConnectionWrapper:
    """A connection whose ``send``/``recv`` pickle with the tensor-sharing reducers.

    Example::

        >>> import multiprocessing
        >>> a, b = multiprocessing.Pipe()
        >>> ConnectionWrapper(a).send([1]); ConnectionWrapper(b).recv()
        [1]
    """

    def __init__(self, conn):
        self.conn = conn

    def send(self, obj):
        self.conn.send_bytes(ForkingPickler.dumps(obj))

    def recv(self):
        return ForkingPickler.loads(self.conn.recv_bytes())

    def __getattr__(self, name):
        if "conn" in self.__dict__:
            return getattr(self.conn, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute 'conn'")


class SimpleQueue(multiprocessing.queues.SimpleQueue):
    """multiprocessing's SimpleQueue, sending tensors through shared memory.

    Example::

        >>> q = SimpleQueue(ctx=multiprocessing.get_context())
    """

    def _make_methods(self):
        if not isinstance(self._reader, ConnectionWrapper):
            self._reader = ConnectionWrapper(self._reader)
            self._writer = ConnectionWrapper(self._writer)
        super()._make_methods()
