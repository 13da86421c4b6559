"""Every DataLoader and Queue fault case, repeated while two processes keep the CPUs busy.

Each repetition must end as the case says (torch's error, or every item), within a watchdog's
time limit (a hang dumps every thread's stack and fails the run), and leave no child process,
memfd, descriptor or /dev/shm file behind. The normal suite runs each case ``EMBER_STRESS=1``
times with fixed seeds; a developer runs the long version with::

    EMBER_STRESS=50 .venv/bin/python -m pytest -m stress tests/data/test_stress.py
"""

import faulthandler
import multiprocessing
import os
import queue
import random
import signal
import sys
import threading
import time

import pytest

import ember
import ember.multiprocessing as emp
from ember.utils import data as edata

sys.path.insert(0, os.path.dirname(__file__))
import _leaks  # noqa: E402
import _workers  # noqa: E402

pytestmark = pytest.mark.stress

REPETITIONS = int(os.environ.get("EMBER_STRESS", "1"))
HANG_LIMIT = 120  # seconds one repetition may take before it counts as a hang
FORK = multiprocessing.get_context("fork")


def _batches(n, batch_size):
    return [list(range(i, min(i + batch_size, n))) for i in range(0, n, batch_size)]


def _take(iterator, count):
    """The labels of the next ``count`` batches."""
    return [next(iterator)[1].tolist() for _ in range(count)]


# ---------------------------------------------------------------- the cases


def worker_exception(rng):
    bad = rng.randrange(32)
    batch_size = rng.choice([1, 2, 4])
    loader = edata.DataLoader(_workers.Sleepy(32, fail_index=bad), batch_size=batch_size,
                              num_workers=2)
    got = []
    with pytest.raises(ValueError, match=f"bad sample {bad}"):
        for _, labels in loader:
            got.append(labels.tolist())
    assert got == _batches(32, batch_size)[:bad // batch_size]


def killed_worker(rng):
    loader = edata.DataLoader(_workers.Sleepy(32), batch_size=2, num_workers=2)
    if rng.random() < 0.5:  # by the worker itself, at a named stage of a hand-over
        stage = rng.choice(["fetched", "packed", "sent"])
        spec = f"{stage}:{rng.randint(1, 4)}:{rng.choice(['kill', 'exit'])}"
        os.environ["EMBER_DATALOADER_TEST_FAULT"] = spec
        try:
            iterator = iter(loader)
        finally:
            del os.environ["EMBER_DATALOADER_TEST_FAULT"]
        victim = iterator._workers[0].pid
        consumed = 0
    else:  # from outside, at a random moment
        iterator = iter(loader)
        worker = iterator._workers[rng.randrange(2)]
        consumed = rng.randrange(8)
        assert _take(iterator, consumed) == _batches(32, 2)[:consumed]
        time.sleep(rng.random() * 0.005)
        victim = worker.pid
        os.kill(victim, signal.SIGKILL)
    got = []
    with pytest.raises(RuntimeError, match=rf"^DataLoader worker \(pid\(s\) {victim}\) exited "
                                           r"unexpectedly$"):
        for _, labels in iterator:
            got.append(labels.tolist())
    assert got == _batches(32, 2)[consumed:consumed + len(got)]


def timeout(rng):
    slow = rng.randrange(16)
    loader = edata.DataLoader(_workers.Sleepy(16, slow_index=slow, slow=3.0), batch_size=1,
                              num_workers=2, timeout=0.3)
    iterator = iter(loader)
    for expected in range(slow):
        assert next(iterator)[1].tolist() == [expected]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.3 seconds$"):
        next(iterator)
    elapsed = time.monotonic() - start
    assert 0.3 <= elapsed < 0.8, f"the 0.3 s timeout fired after {elapsed:.3f} s"


def persistent_workers_shut_down_mid_epoch(rng):
    loader = edata.DataLoader(_workers.Sleepy(16), batch_size=2, num_workers=2,
                              persistent_workers=True)
    assert [labels.tolist() for _, labels in loader] == _batches(16, 2)
    iterator = iter(loader)
    consumed = rng.randrange(8)
    assert _take(iterator, consumed) == _batches(16, 2)[:consumed]
    del iterator, loader  # the workers go with the loader


def iterator_deleted_mid_epoch(rng):
    iterator = iter(edata.DataLoader(_workers.Sleepy(16), batch_size=2, num_workers=2))
    consumed = rng.randrange(8)
    assert _take(iterator, consumed) == _batches(16, 2)[:consumed]
    del iterator


def keyboard_interrupt(rng):
    iterator = iter(edata.DataLoader(_workers.Sleepy(4000), batch_size=2, num_workers=2))
    interrupt = threading.Timer(rng.random() * 0.05, signal.pthread_kill,
                                (threading.main_thread().ident, signal.SIGINT))
    got = []
    with pytest.raises(KeyboardInterrupt):
        interrupt.start()
        for _, labels in iterator:
            got.append(labels.tolist())
    interrupt.join()
    assert got == _batches(4000, 2)[:len(got)]
    del iterator


def queue_sender_killed(rng):
    q = emp.Queue()
    values = [float(v) for v in range(rng.randint(1, 5))]
    how = rng.choice(["now", "soon", "flushed"])
    sender = FORK.Process(target=_workers.put_then_die, args=(q, values, how))
    sender.start()
    sender.join(30)
    assert sender.exitcode == -signal.SIGKILL
    got = []
    while True:
        try:
            got.append(q.get(timeout=0.2).tolist())
        except queue.Empty:
            break
    expected = [[v] * 4 for v in values]
    assert got == (expected if how == "flushed" else expected[:len(got)])
    q.put(ember.full((4,), -1.0))
    assert q.get(timeout=10).tolist() == [-1.0] * 4
    q.close()


def queue_receiver_killed(rng):
    q = emp.Queue()
    takes = rng.randint(0, 3)
    how = rng.choice(["after", "waiting"])
    receiver = FORK.Process(target=_workers.get_then_die, args=(q, takes, how))
    receiver.start()
    values = [float(v) for v in range(takes + 3)]
    for value in values:
        q.put(ember.full((4,), value))
        time.sleep(rng.random() * 0.002)
    if how == "waiting":
        time.sleep(rng.random() * 0.02)
        receiver.kill()
    receiver.join(30)
    assert receiver.exitcode == -signal.SIGKILL
    got = []
    while True:
        try:
            got.append(q.get(timeout=0.2).tolist())
        except queue.Empty:
            break
    # the receiver took the first items (the one it was taking when killed is lost whole)
    assert got == [[v] * 4 for v in values][len(values) - len(got):]
    assert len(got) >= len(values) - takes - 1
    q.close()


CASES = [worker_exception, killed_worker, timeout, persistent_workers_shut_down_mid_epoch,
         iterator_deleted_mid_epoch, keyboard_interrupt, queue_sender_killed,
         queue_receiver_killed]


# ---------------------------------------------------------------- the driver


@pytest.fixture(scope="module")
def busy_cpus():
    """Two processes that keep two CPUs busy for the whole module; their pids."""
    spinners = [FORK.Process(target=_workers.spin, daemon=True) for _ in range(2)]
    for spinner in spinners:
        spinner.start()
    yield {spinner.pid for spinner in spinners}
    for spinner in spinners:
        spinner.kill()
        spinner.join()


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_fault_case_repeatedly_under_load(busy_cpus, case):
    before = _leaks.snapshot(exclude=busy_cpus)
    for repetition in range(REPETITIONS):
        faulthandler.dump_traceback_later(HANG_LIMIT, exit=True)
        try:
            case(random.Random(f"{case.__name__}-{repetition}"))
        finally:
            faulthandler.cancel_dump_traceback_later()
        _leaks.assert_clean(before, exclude=busy_cpus)
