"""Datasets and functions that worker processes import (must live in a module, for spawn)."""

import os
import random
import signal
import time

import numpy as np

import ember
from ember.utils.data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    def __init__(self, n=20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return ember.tensor([float(i), float(i * i)]), i


class Failing(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 5:
            raise ValueError("bad sample 5")
        return i


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(3)
        return i


class Suicidal(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class RandomDraws(Dataset):
    """Each sample records the worker's random streams (ember, random, numpy)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return (info.id if info else -1, ember.rand(1).item(), random.random(),
                float(np.random.rand()))


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


def record_init(worker_id):
    info = get_worker_info()
    assert info.id == worker_id
    if worker_id == 1:
        raise RuntimeError("init failed in worker 1")


def hogwild_step(shared, steps):
    for _ in range(steps):
        shared.add_(1)


def add_one_and_report(queue_in, queue_out):
    tensor = queue_in.get()
    tensor.add_(1)
    if tensor.is_cuda:
        ember.cuda.synchronize()  # the write must land before the parent looks
    queue_out.put(tensor.data_ptr() != 0)


def hogwild_train(rank, model, steps):
    """Each process runs SGD steps directly on the shared parameters (no locks)."""
    import ember

    ember.manual_seed(rank)
    for _ in range(steps):
        x = ember.randn(16, 4)
        target = x.sum(1, keepdim=True)
        loss = ((model(x) - target) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with ember.no_grad():
            for p in model.parameters():
                p.sub_(0.05 * p.grad)


def spawn_target(rank, shared):
    shared[rank] = rank + 10


def spawn_fail(rank):
    if rank == 1:
        raise ValueError("rank 1 failed")


class SeedProbe:
    """A map-style dataset (for ember's and torch's DataLoader alike) whose samples report the
    worker's seed and one draw from each generator a worker seeds."""

    def __init__(self, lib_name, n=8):
        self.lib_name, self.n = lib_name, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import importlib

        lib = importlib.import_module(self.lib_name)
        info = lib.utils.data.get_worker_info()
        seed = info.seed if info is not None else -1
        return [i, seed, int(np.random.randint(1 << 30)), random.random(),
                float(lib.rand(()).item())]


# ---------------------------------------------------------------- faults and stress


class Sleepy(Dataset):
    """``n`` samples ``(tensor [i, i, i], i)``, each taking ``delay`` seconds; sample
    ``slow_index`` takes ``slow`` seconds and sample ``fail_index`` raises ValueError."""

    def __init__(self, n=32, delay=0.001, slow_index=-1, slow=0.0, fail_index=-1):
        self.n, self.delay = n, delay
        self.slow_index, self.slow, self.fail_index = slow_index, slow, fail_index

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_index:
            raise ValueError(f"bad sample {i}")
        time.sleep(self.slow if i == self.slow_index else self.delay)
        return ember.full((3,), float(i)), i


def sleep_three_seconds(worker_id):
    time.sleep(3)


def spin():
    """Keep one CPU busy until terminated."""
    while True:
        pass


def put_then_die(queue, values, how):
    """Put one tensor per value on ``queue``; then SIGKILL this process: at once ("now"),
    after a random pause of at most 2 ms ("soon"), or once the feeder has sent everything
    ("flushed")."""
    for value in values:
        queue.put(ember.full((4,), float(value)))
    if how == "flushed":
        queue.close()
        queue.join_thread()
    elif how == "soon":
        time.sleep(random.random() * 0.002)
    os.kill(os.getpid(), signal.SIGKILL)


def get_then_die(queue, count, how):
    """Take ``count`` items from ``queue``, then SIGKILL this process (``how="after"``), or
    keep waiting for more until killed from outside (``how="waiting"``)."""
    for _ in range(count):
        queue.get()
    if how == "waiting":
        queue.get()
    os.kill(os.getpid(), signal.SIGKILL)


def put_on_python_queue_and_exit(queue):
    queue.put(ember.arange(3.0))


def collate_to_lambda(samples):
    return lambda: samples


def keep_as_list(samples):
    return samples


class DiesAtOnce(Dataset):
    """The first sample ends its worker: SIGKILL (``how="kill"``) or exit code 1 ("exit").
    No batch is ever sent, so torch's own loader reports the death deterministically."""

    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if self.how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(1)
