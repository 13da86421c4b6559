"""``DataLoader``: batches from a dataset, in this process or in worker processes.

With ``num_workers > 0`` each worker process runs :func:`_worker_loop`: it takes lists of
indices from its own task socket, fetches and collates them, and sends the batch on the shared
result socket. Tensors cross the process boundary through shared memory: each message is one
packet carrying its tensors' memfd descriptors (``ember.multiprocessing._channel``), never a
pickled copy of their data. A thread of the main process receives and unpickles the batches;
the main thread keeps ``prefetch_factor * num_workers`` batches in flight, hands them out in
sampler order (or as they come with ``in_order=False``), re-raises worker exceptions with the
worker's traceback, and shuts the workers down when the iterator ends or is dropped.

When things go wrong (torch's errors, never a hang or a raw OS error):

- ``timeout > 0``: each ``next()`` raises ``RuntimeError("DataLoader timed out after
  {timeout} seconds")`` once ``timeout`` seconds have passed since the call without its batch,
  also while the workers are still starting; the workers are then stopped.
- A worker that dies (killed by a signal, ``os._exit``, a crash), whether before, while or after
  sending a batch, makes the waiting ``next()`` raise ``RuntimeError("DataLoader worker (pid(s)
  N) exited unexpectedly")`` within ``_DEATH_CHECK_INTERVAL`` seconds, caused by torch's
  detail ("is killed by signal: Killed." or "exited unexpectedly with exit code 1. ..."). The
  other workers are stopped.
- Stopping the workers (end of epoch, ``del`` of the iterator mid-epoch, a failure, Ctrl-C
  then ``del``) closes the sockets, gives busy workers ``_SHUTDOWN_GRACE`` seconds (none after a
  failure) and then terminates them; batches in flight are released with the sockets, so no
  process, descriptor or shared memory is left behind.
"""

from __future__ import annotations

import collections.abc
import itertools
import multiprocessing
import os
import queue
import random
import signal
import socket
import sys
import threading
import time
import traceback
import warnings
import weakref
from multiprocessing.connection import wait

import numpy as np

from ... import _device
from ... import _dtype as dt
from ... import multiprocessing as _multiprocessing  # noqa: F401  (tensors go through shm)
from ..._tensor import Tensor
from ..._traceback import hide_internal_frames as _hide_internal_frames
from ...multiprocessing import _channel
from ._collate import default_collate, default_convert
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]

_CPU = _device.device("cpu")

_STATUS_CHECK_INTERVAL = 1.0  # seconds between a worker's checks that the main process lives
_DEATH_CHECK_INTERVAL = 0.1  # seconds between the main process's checks that workers live
_SHUTDOWN_GRACE = 5.0  # seconds a worker has to exit once asked, before it is terminated
_worker_info = None


class WorkerInfo:
    """What a worker process knows about itself: ``id``, ``num_workers``, ``seed``,
    ``dataset`` (its own copy)."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)
        self._frozen = True

    def __setattr__(self, key, value):
        if getattr(self, "_frozen", False):
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, value)

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)}" for k in ("id", "num_workers", "seed"))
        return f"WorkerInfo({fields}, dataset={self.dataset!r})"


def get_worker_info():
    """In a DataLoader worker, its :class:`WorkerInfo`; in the main process, None.

    Example::

        >>> class Stream(ember.utils.data.IterableDataset):
        ...     def __iter__(self):
        ...         info = ember.utils.data.get_worker_info()
        ...         start = 0 if info is None else info.id
        ...         step = 1 if info is None else info.num_workers
        ...         return iter(range(start, 100, step))
    """
    return _worker_info


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, exc_info, where):
        self.exc_type = exc_info[0]
        self.message = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        message = (f"Caught {self.exc_type.__name__} {self.where}.\nOriginal "
                   f"{self.message}")
        try:
            error = self.exc_type(message)
        except Exception:  # an exception type whose constructor wants other arguments
            raise RuntimeError(message) from None
        raise error


class _IterableStop:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _Fetcher:
    """Turns a list of indices (or a count, for iterable datasets) into one collated batch."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.iterator = iter(dataset) if isinstance(dataset, IterableDataset) else None
        self.ended = False
        # A TensorDataset (or a subclass that keeps its __getitem__ and has no __getitems__)
        # collated by default_collate is one gather per tensor: the same batch as indexing each
        # sample and stacking, without a tensor per sample.
        kind = type(dataset)
        self.tensor_batches = (isinstance(dataset, TensorDataset)
                               and kind.__getitem__ is TensorDataset.__getitem__
                               and getattr(kind, "__getitems__", None) is None
                               and collate_fn is default_collate)

    def _tensor_batch(self, indices):
        """The gathered batch, or None where the indices are not a plain list of integers
        (bools, tuples, an empty batch...): those take the per-sample path and its errors."""
        if type(indices) is not list:
            return None
        try:
            index = np.array(indices)
        except (ValueError, TypeError):
            return None
        if index.ndim != 1 or not index.size or index.dtype.kind not in "iu":
            return None
        from ..._tensor import Tensor

        index = Tensor._make(index.astype(np.int64, copy=False), _CPU)
        return [t[index] for t in self.dataset.tensors]

    def fetch(self, indices):
        if self.iterator is not None:
            return self._fetch_iterable(indices)
        if self.auto_collation:
            if self.tensor_batches:
                batch = self._tensor_batch(indices)
                if batch is not None:
                    return batch
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(indices) if getitems else [self.dataset[i] for i in indices]
        else:
            data = self.dataset[indices]
        return self.collate_fn(data)

    def _fetch_iterable(self, indices):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in indices:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(indices)):
            raise StopIteration
        return self.collate_fn(data)


def _seed_worker(base_seed, worker_id):
    """Seed a worker's generators as torch does: ember's and ``random``'s with
    ``base_seed + worker_id``, NumPy's legacy one from a SeedSequence of both numbers."""
    from ...ops.random import manual_seed

    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Tests make a worker die at a chosen point of handing a batch over, to prove that every such
# moment ends in the main process's "exited unexpectedly" error. The variable holds
# "stage:batch:action": stage "fetched" (batch made, not yet pickled), "packed" (its tensors in
# shared memory, descriptors copied, nothing sent) or "sent"; batch counts the batches worker 0
# has made (from 1); action "kill" (SIGKILL) or "exit" (os._exit(1)).
_FAULT_VARIABLE = "EMBER_DATALOADER_TEST_FAULT"


def _fault_from_environment(worker_id):
    spec = os.environ.get(_FAULT_VARIABLE)
    if not spec or worker_id != 0:
        return None
    stage, batch, action = spec.split(":")
    return stage, int(batch), action


def _fault_point(fault, stage, batch):
    if fault is None or fault[:2] != (stage, batch):
        return
    if fault[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(1)


def _send_result(result_socket, send_idx, data, worker_id, fault, batch):
    """Send one result; an unpicklable batch is sent as the error it raised."""
    _fault_point(fault, "fetched", batch)
    try:
        packet = _channel.pack((send_idx, data))
    except Exception:
        error = _ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id} "
                                                  f"(sending the batch)")
        packet = _channel.pack((send_idx, error))
    _fault_point(fault, "packed", batch)
    _channel.send_packet(result_socket, packet)
    _fault_point(fault, "sent", batch)


# The main process's ends of every live iterator's sockets. A forked worker closes its copies
# at once: a copy kept open would keep another iterator's batches (and their shared memory)
# alive in its socket after that iterator has closed it.
_MAIN_PROCESS_SOCKETS = weakref.WeakSet()


def _close_main_process_sockets():
    for sock in list(_MAIN_PROCESS_SOCKETS):
        sock.close()
    _MAIN_PROCESS_SOCKETS.clear()


def _next_task(task_socket, parent_pid):
    """The next (send_idx, indices) from the main process; None when the main process says
    stop, closes the socket, or has died."""
    while _alive(parent_pid):
        if not wait([task_socket], _STATUS_CHECK_INTERVAL):
            continue
        try:
            return _channel.receive(task_socket, block=False)
        except BlockingIOError:
            continue
        except (EOFError, OSError):
            return None
    return None


def _is_iter_datapipe(dataset):
    from .datapipes.datapipe import IterDataPipe
    return isinstance(dataset, IterDataPipe)


def _shard_datapipe(dataset, num_workers, worker_id):
    """Give each worker (of each distributed rank) its shard of a DataPipe, as torch does:
    ranks are sharded first, then the workers of each rank."""
    from .datapipes.datapipe import IterDataPipe, MapDataPipe
    if not isinstance(dataset, (IterDataPipe, MapDataPipe)):
        return
    from ... import distributed
    from .graph_settings import apply_sharding
    world, rank = 1, 0
    if distributed.is_available() and distributed.is_initialized():
        world, rank = distributed.get_world_size(), distributed.get_rank()
    if num_workers * world > 1:
        apply_sharding(dataset, num_workers * world, worker_id * world + rank)


def _worker_loop(dataset, task_socket, result_socket, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers, parent_pid):
    """The body of a worker process: fetch the batches the main process names and send them,
    until it sends None, shuts the task or result socket, or dies."""
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles Ctrl-C
    _close_main_process_sockets()
    fault = _fault_from_environment(worker_id)
    try:
        seed = base_seed + worker_id
        _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None
        try:
            _shard_datapipe(dataset, num_workers, worker_id)
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _Fetcher(dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = _ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process "
                                                          f"{worker_id}")
        iterable_done = False
        batches = 0
        while True:
            task = _next_task(task_socket, parent_pid)
            if task is None:
                break
            send_idx, indices = task
            if init_error is not None:
                data, init_error = init_error, None
            elif iterable_done:
                data = _IterableStop(worker_id)
            else:
                try:
                    data = fetcher.fetch(indices)
                except StopIteration:
                    iterable_done = True
                    data = _IterableStop(worker_id)
                except Exception:
                    data = _ExceptionWrapper(sys.exc_info(),
                                             f"in DataLoader worker process {worker_id}")
            batches += 1
            _send_result(result_socket, send_idx, data, worker_id, fault, batches)
            del data
    except (KeyboardInterrupt, BrokenPipeError, ConnectionResetError):
        pass  # Ctrl-C, or the main process closed the result socket: it wants no more


class DataLoader:
    """Iterate over ``dataset`` in batches, optionally with worker processes.

    Arguments and defaults are torch's: ``batch_size=1``, ``shuffle``, ``sampler``,
    ``batch_sampler``, ``num_workers``, ``collate_fn``, ``pin_memory``, ``drop_last``,
    ``timeout``, ``worker_init_fn``, ``multiprocessing_context``, ``generator``,
    ``prefetch_factor``, ``persistent_workers``, ``in_order``.

    With workers, ``next()`` raises torch's ``RuntimeError`` when ``timeout`` seconds pass
    without its batch ("DataLoader timed out after ...") or when a worker dies at any moment
    ("DataLoader worker (pid(s) ...) exited unexpectedly"); either stops the workers (see the
    module's notes).

    Example::

        >>> ds = ember.utils.data.TensorDataset(ember.arange(10.), ember.arange(10))
        >>> x, y = next(iter(ember.utils.data.DataLoader(ds, batch_size=4)))
        >>> y
        tensor([0, 1, 2, 3])
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator
        self._iterator = None
        if isinstance(dataset, IterableDataset):
            if _is_iter_datapipe(dataset):
                if shuffle is not None:  # a DataPipe graph turns its shuffle pipes on or off
                    from .graph_settings import apply_shuffle_settings
                    dataset = self.dataset = apply_shuffle_settings(dataset, shuffle=shuffle)
            elif shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def _seed_datapipe(self):
        """torch's DataPipe seeding: a shared seed drawn before the workers' seed, from which
        every random pipe of the graph gets its seed (so one generator state gives torch's
        shuffles)."""
        if _is_iter_datapipe(self.dataset):
            from ...ops.random import Generator
            from .graph_settings import apply_random_seed
            rng = Generator()
            rng.manual_seed(self._base_seed())
            apply_random_seed(self.dataset, rng)

    def _base_seed(self):
        """The seed of this epoch's workers, drawn as torch draws it (so one seed gives torch's
        worker seeds)."""
        from ...ops.creation import empty

        return int(empty((), dtype=dt.int64).random_(generator=self.generator).item())


def _pinning_possible(requested):
    """``pin_memory=True`` pins only with a GPU; without one torch warns and loads unpinned."""
    from ... import cuda

    if requested and not cuda.is_available():
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                      "device pinned memory won't be used.", UserWarning, stacklevel=4)
        return False
    return bool(requested)


def pin_memory(data):
    """``data`` with every CPU tensor in it (through dicts, lists, tuples, namedtuples and
    objects with a ``pin_memory()`` method) copied into page-locked memory, as torch's loader
    pins batches.

    Example::

        >>> batch = pin_memory({"x": ember.zeros(2)})   # with a GPU
        >>> batch["x"].is_pinned()
        True
    """
    if isinstance(data, Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        pinned = {key: pin_memory(value) for key, value in data.items()}
        try:
            return type(data)(pinned)
        except TypeError:
            return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(item) for item in data))
    if isinstance(data, tuple):
        return tuple(pin_memory(item) for item in data)
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([pin_memory(item) for item in data])
        except TypeError:
            return [pin_memory(item) for item in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


class _InfiniteConstantSampler:
    def __iter__(self):
        while True:
            yield None


class _SingleProcessIter:
    def __init__(self, loader):
        self._loader = loader
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = _Fetcher(loader.dataset, loader._auto_collation, loader.collate_fn,
                                 loader.drop_last)
        self._yielded = 0
        self._pin = _pinning_possible(loader.pin_memory)
        loader._seed_datapipe()
        _shard_datapipe(loader.dataset, 1, 0)
        # drawn as the multi-worker iterator draws it, so any worker count sees the same order
        self._base_seed = loader._base_seed()

    def __iter__(self):
        return self

    def __next__(self):
        try:  # free until an error: then ember's frames leave its traceback (_traceback.py)
            indices = next(self._sampler_iter)
            batch = self._fetcher.fetch(indices)
            self._yielded += 1
            return pin_memory(batch) if self._pin else batch
        except Exception as error:
            _hide_internal_frames(error)
            raise

    def __len__(self):
        return len(self._loader)


class _MultiProcessIter:
    """The main-process side of a multi-worker DataLoader."""

    def __init__(self, loader):
        self._loader = loader
        self._pin = _pinning_possible(loader.pin_memory)
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        context = loader.multiprocessing_context
        if context is None:
            context = multiprocessing.get_context()
        elif isinstance(context, str):
            context = multiprocessing.get_context(context)
        self._context = context
        self._shutdown = False
        self._workers = []
        self._task_sockets = []
        self._receiver = None
        self._result_socket, writer = _channel.socket_pair()
        _MAIN_PROCESS_SOCKETS.add(self._result_socket)
        loader._seed_datapipe()
        base_seed = loader._base_seed()
        try:
            for worker_id in range(self._num_workers):
                task_socket, worker_end = _channel.socket_pair()
                self._task_sockets.append(task_socket)
                _MAIN_PROCESS_SOCKETS.add(task_socket)
                worker = context.Process(
                    target=_worker_loop,
                    args=(loader.dataset, worker_end, writer, loader._auto_collation,
                          loader.collate_fn, loader.drop_last, base_seed, loader.worker_init_fn,
                          worker_id, self._num_workers, os.getpid()),
                    daemon=True)
                try:
                    worker.start()
                finally:
                    worker_end.close()
                self._workers.append(worker)
        finally:
            writer.close()  # the workers hold it now: all of them gone is an end of file
        self._results = queue.SimpleQueue()
        self._receiver = threading.Thread(target=_receive_results,
                                          args=(self._result_socket, self._results),
                                          name="DataLoaderResultReceiver", daemon=True)
        self._receiver.start()
        _live_iterators.add(self)
        self._reset(loader, first=True)

    def _reset(self, loader, first=False):
        self._sampler_iter = iter(loader._index_sampler)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # send_idx -> (worker_id,) while pending, + (data,) once received
        self._tasks_outstanding = 0
        self._workers_active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(loader.prefetch_factor * self._num_workers):
            self._try_put_index()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _try_put_index(self):
        try:
            indices = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._workers_active[worker_id]:
                break
        else:
            return
        self._send_task(worker_id, (self._send_idx, indices))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self, deadline):
        """One (idx, data) from the workers. Raises torch's errors when a worker has died or
        when ``deadline`` (a ``time.monotonic()`` value, or None) passes first; either way the
        workers are stopped first."""
        while True:
            wait_for = _DEATH_CHECK_INTERVAL
            if deadline is not None:
                wait_for = min(wait_for, deadline - time.monotonic())
            try:
                return self._results.get(timeout=max(wait_for, 0.0))
            except queue.Empty:
                pass
            self._raise_if_a_worker_died()
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown_workers(grace=0)
                raise RuntimeError(f"DataLoader timed out after {self._timeout} "
                                   "seconds") from None

    def _raise_if_a_worker_died(self):
        dead = [w for w in self._workers if not w.is_alive()]
        if not dead:
            return
        self._shutdown_workers(grace=0)
        pids = ", ".join(str(w.pid) for w in dead)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                           f"unexpectedly") from _death_detail(dead[0])

    def __next__(self):
        try:  # free until an error: then ember's frames leave its traceback (_traceback.py)
            return self._next_batch()
        except Exception as error:
            _hide_internal_frames(error)
            raise

    def _next_batch(self):
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is None:  # already handed out, out of order
                    self._rcvd_idx += 1
                    continue
                worker_id = info[0]
                if len(info) == 2 or self._workers_active[worker_id]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                return self._process(data)
            if self._shutdown:
                raise StopIteration
            idx, data = self._get_data(deadline)
            if isinstance(data, _ReceiveError):
                self._shutdown_workers(grace=0)
                data.reraise()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableStop):
                self._workers_active[data.worker_id] = False
                if not self._persistent:
                    self._send_task(data.worker_id, None)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx and self._in_order:
                self._task_info[idx] += (data,)
                continue
            if idx != self._rcvd_idx:
                del self._task_info[idx]
                return self._process(data, advance=False)
            del self._task_info[idx]
            return self._process(data)

    def _send_task(self, worker_id, task):
        try:
            _channel.send(self._task_sockets[worker_id], task)
        except OSError:  # the worker has died: the next wait for a batch reports it
            pass

    def _process(self, data, advance=True):
        if advance:
            self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return pin_memory(data) if self._pin else data

    def _shutdown_workers(self, grace=_SHUTDOWN_GRACE):
        """Stop the workers: ask them to stop, close the result socket (a worker blocked
        sending gets a broken pipe), give them ``grace`` seconds to exit, then terminate them.
        Batches still in flight are dropped with the socket, their shared memory with them."""
        if self._shutdown:
            return
        self._shutdown = True
        _live_iterators.discard(self)
        sockets = self._task_sockets + [self._result_socket]
        try:
            for sock in sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            _stop_processes(self._workers, grace)
            if self._receiver not in (None, threading.current_thread()):  # __del__: any thread
                self._receiver.join()
        finally:
            for sock in sockets:
                sock.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # interpreter shutdown: queues may already be gone
            pass


class _ReceiveError:
    """A batch that arrived but could not be unpickled in the main process."""

    def __init__(self, error):
        self.error = error

    def reraise(self):
        raise self.error


def _receive_results(result_socket, results):
    """The main process's receiving thread: unpickle each batch as it arrives, so that a
    Ctrl-C in the main thread never finds a batch half received (descriptors not yet owned)."""
    while True:
        try:
            item = _channel.receive(result_socket)
        except (EOFError, OSError):  # every worker is gone, or the iterator shut the socket
            return
        except Exception as error:
            item = (None, _ReceiveError(error))
        results.put(item)


def _stop_processes(processes, grace):
    """Join ``processes``, terminating (then killing) those still alive after ``grace`` s."""
    deadline = time.monotonic() + grace
    try:
        for process in processes:
            process.join(timeout=max(deadline - time.monotonic(), 0))
    finally:  # even when Ctrl-C cuts the wait short
        _terminate(processes)


def _terminate(processes):
    for stop in ("terminate", "kill"):
        alive = [p for p in processes if p.is_alive()]
        for process in alive:
            getattr(process, stop)()
        for process in alive:
            process.join(timeout=_SHUTDOWN_GRACE)


def _death_detail(process):
    """torch's description of how a worker died (the cause of the "exited unexpectedly")."""
    code = process.exitcode
    if code is not None and code < 0:
        return RuntimeError(f"DataLoader worker (pid {process.pid}) is killed by signal: "
                            f"{signal.strsignal(-code)}. ")
    return RuntimeError(f"DataLoader worker (pid {process.pid}) exited unexpectedly with exit "
                        f"code {code}. Details are lost due to multiprocessing. Rerunning with "
                        f"num_workers=0 may give better error trace.")


_live_iterators = weakref.WeakSet()  # iterators with running workers, shut down at exit
_exit_lock = threading.Lock()


def _shutdown_all():
    with _exit_lock:
        for it in list(_live_iterators):
            it._shutdown_workers()


import atexit  # noqa: E402  (registered after the definitions it uses)

atexit.register(_shutdown_all)
