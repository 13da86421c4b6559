"""``ember.multiprocessing.pool``: a process pool whose task queues share tensors' memory.

Example::

    >>> from ember.multiprocessing.pool import Pool
"""

import gc
import multiprocessing.pool
import multiprocessing.util as util

from .queue import SimpleQueue

__all__ = ["Pool", "SimpleQueue", "clean_worker"]


def clean_worker(*args, **kwargs):
    """Run a pool worker, then collect garbage so shared tensors are released promptly."""
    multiprocessing.pool.worker(*args, **kwargs)
    gc.collect()


class Pool(multiprocessing.pool.Pool):
    """multiprocessing's Pool with tensor-sharing queues and :func:`clean_worker` workers.

    Example::

        >>> with Pool(2) as pool:  # doctest: +SKIP
        ...     pool.map(abs, [-1, 2])
    """

    def _setup_queues(self):
        self._inqueue = SimpleQueue(ctx=self._ctx)
        self._outqueue = SimpleQueue(ctx=self._ctx)
        self._quick_put = self._inqueue._writer.send
        self._quick_get = self._outqueue._reader.recv

    def _repopulate_pool(self):
        for _ in range(self._processes - len(self._pool)):
            args = (self._inqueue, self._outqueue, self._initializer, self._initargs,
                    self._maxtasksperchild)
            if hasattr(self, "_wrap_exception"):
                args += (self._wrap_exception,)
            worker = self.Process(self._ctx, target=clean_worker, args=args)
            self._pool.append(worker)
            worker.name = worker.name.replace("Process", "PoolWorker")
            worker.daemon = True
            worker.start()
            util.debug("added worker")
