"""DataLoader and ember.multiprocessing.Queue when things go wrong: timeouts that fire on
time, workers killed at each stage of handing a batch over, senders and receivers of a queue
killed mid-transfer. Each ends in torch's error (or the item), never a hang or a raw OS error,
and leaves no process, memfd or descriptor behind."""

import gc
import multiprocessing
import os
import pickle
import queue
import re
import signal
import sys
import time

import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.multiprocessing as emp
from ember.utils import data as edata

sys.path.insert(0, os.path.dirname(__file__))
import _leaks  # noqa: E402
import _workers  # noqa: E402

FORK = multiprocessing.get_context("fork")


def _normalised(error):
    """An error's message and its cause's, with process ids replaced by N."""
    def text(e):
        return re.sub(r"\d+", "N", str(e)) if e is not None else None

    return type(error).__name__, text(error), text(error.__cause__)


def _error_of(run):
    """The RuntimeError ``run()`` raises, without tracebacks (they would keep the failed
    iterator, and its workers, alive until some later garbage collection)."""
    with pytest.raises(RuntimeError) as info:
        run()
    error, chain = info.value, [info.value]
    del info
    while chain:
        e = chain.pop()
        if e is not None and e.__traceback__ is not None:
            e.__traceback__ = None
            chain += [e.__cause__, e.__context__]
    return error


# ---------------------------------------------------------------- timeout


def test_timeout_counts_from_next_and_fires_on_time_as_torchs():
    errors, elapsed = {}, {}
    for lib in (edata, tdata):
        iterator = iter(lib.DataLoader(_workers.Sleepy(n=2, delay=1.6), batch_size=1,
                                       num_workers=1, timeout=1))
        time.sleep(0.5)  # workers start here; the timeout starts with next()
        start = time.monotonic()
        errors[lib] = _error_of(lambda it=iterator: next(it))
        elapsed[lib] = time.monotonic() - start
        del iterator
        gc.collect()  # torch's workers end here, not in a later test
    assert _normalised(errors[edata]) == _normalised(errors[tdata])
    assert str(errors[edata]) == "DataLoader timed out after 1 seconds"
    assert 1.0 <= elapsed[edata] < 1.5, elapsed


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_timeout_fires_while_the_worker_is_still_starting(context):
    before = _leaks.snapshot()
    loader = edata.DataLoader(range(4), num_workers=1, timeout=0.5,
                              worker_init_fn=_workers.sleep_three_seconds,
                              multiprocessing_context=context)
    iterator = iter(loader)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.5 seconds$"):
        next(iterator)
    assert 0.5 <= time.monotonic() - start < 1.0
    del iterator
    _leaks.assert_clean(before)


def test_each_next_has_its_own_timeout():
    """Batches that each come within the timeout never time out, however long the epoch."""
    loader = edata.DataLoader(_workers.Sleepy(n=4, delay=0.15), batch_size=1, num_workers=1,
                              timeout=0.45)
    assert [int(i) for _, i in loader] == list(range(4))


# ---------------------------------------------------------------- killed workers


@pytest.fixture(scope="module")
def torch_death_errors():
    """torch's errors for a worker killed by SIGKILL and for one that exits with code 1."""
    errors = {how: _normalised(_error_of(
        lambda how=how: list(tdata.DataLoader(_workers.DiesAtOnce(how), num_workers=1))))
        for how in ("kill", "exit")}
    gc.collect()  # torch's iterators end here, not in a later test
    return errors


@pytest.mark.parametrize("action", ["kill", "exit"])
@pytest.mark.parametrize("stage", ["fetched", "packed", "sent"])
def test_worker_dying_at_each_stage_of_a_hand_over_raises_torchs_error(
        monkeypatch, torch_death_errors, stage, action):
    before = _leaks.snapshot()
    monkeypatch.setenv("EMBER_DATALOADER_TEST_FAULT", f"{stage}:1:{action}")
    loader = edata.DataLoader(_workers.Squares(12), batch_size=2, num_workers=2)
    iterator = iter(loader)
    worker_pid = iterator._workers[0].pid
    error = _error_of(lambda it=iterator: list(it))
    assert str(error) == f"DataLoader worker (pid(s) {worker_pid}) exited unexpectedly"
    assert _normalised(error) == torch_death_errors[action]
    del iterator, error
    _leaks.assert_clean(before)


def test_batches_before_a_death_are_delivered_in_order():
    os.environ["EMBER_DATALOADER_TEST_FAULT"] = "sent:2:kill"
    try:
        loader = edata.DataLoader(_workers.Squares(12), batch_size=2, num_workers=2)
        got = []
        with pytest.raises(RuntimeError, match="exited unexpectedly"):
            for _, y in loader:
                got.append(y.tolist())
    finally:
        del os.environ["EMBER_DATALOADER_TEST_FAULT"]
    # worker 0 made batches 0 and 2 and died after sending batch 2: at most 0..3 arrive
    assert got == [[0, 1], [2, 3], [4, 5], [6, 7]][:len(got)]


def test_unpicklable_batch_raises_pickles_error_instead_of_hanging():
    with pytest.raises(Exception) as expected:
        pickle.dumps(lambda: None)
    loader = edata.DataLoader(range(4), batch_size=2, num_workers=1,
                              collate_fn=_workers.collate_to_lambda, timeout=30)
    with pytest.raises(type(expected.value), match="sending the batch"):
        next(iter(loader))


def test_many_tensors_and_large_pickles_cross_whole():
    """More tensors than one packet carries descriptors for, and a pickle larger than a
    packet: both as torch delivers them."""
    samples = [torch.full((2,), float(i)) for i in range(300)]
    expected = list(tdata.DataLoader(samples, batch_size=300, num_workers=1,
                                     collate_fn=_workers.keep_as_list))
    loader = edata.DataLoader([ember.full((2,), float(i)) for i in range(300)],
                              batch_size=300, num_workers=1, collate_fn=_workers.keep_as_list)
    got = list(loader)
    assert [[t.tolist() for t in b] for b in got] == [[t.tolist() for t in b] for b in expected]
    text = ["x" * 300_000, "y"]
    assert list(edata.DataLoader(text, batch_size=2, num_workers=1)) == \
        list(tdata.DataLoader(text, batch_size=2, num_workers=1))


# ---------------------------------------------------------------- ember.multiprocessing.Queue


def test_queue_item_arrives_after_its_sender_is_killed():
    """The descriptors travel with the packet: the sender can be gone before the get
    (Python's queue would leave a ConnectionRefusedError here)."""
    before = _leaks.snapshot()
    q = emp.Queue()
    sender = FORK.Process(target=_workers.put_then_die, args=(q, [1.0, 2.0], "flushed"))
    sender.start()
    sender.join(30)
    assert sender.exitcode == -signal.SIGKILL
    assert [q.get(timeout=10).tolist() for _ in range(2)] == [[1.0] * 4, [2.0] * 4]
    assert q.empty()
    q.close()
    del q, sender
    _leaks.assert_clean(before)


def test_python_queue_tensor_from_an_exited_sender_raises_a_clear_error():
    q = FORK.Queue()
    sender = FORK.Process(target=_workers.put_on_python_queue_and_exit, args=(q,))
    sender.start()
    sender.join(30)
    with pytest.raises(RuntimeError, match="process that sent it exited"):
        q.get(timeout=10)


@pytest.mark.parametrize("how", ["now", "soon"])
def test_queue_sender_killed_mid_transfer_leaves_whole_items_or_none(how):
    before = _leaks.snapshot()
    q = emp.Queue()
    sender = FORK.Process(target=_workers.put_then_die, args=(q, [1.0, 2.0, 3.0], how))
    sender.start()
    sender.join(30)
    got = []
    while True:
        try:
            got.append(q.get(timeout=0.2).tolist())
        except queue.Empty:
            break
    assert got == [[v] * 4 for v in (1.0, 2.0, 3.0)][:len(got)]
    q.put(ember.full((4,), 7.0))  # the queue still works, nothing half-sent in it
    assert q.get(timeout=10).tolist() == [7.0] * 4
    q.close()
    del q, got, sender
    _leaks.assert_clean(before)


@pytest.mark.parametrize("how", ["after", "waiting"])
def test_queue_receiver_killed_mid_transfer_leaves_the_queue_working(how):
    before = _leaks.snapshot()
    q = emp.Queue()
    receiver = FORK.Process(target=_workers.get_then_die, args=(q, 1, how))
    receiver.start()
    q.put(ember.full((4,), 0.0))
    if how == "waiting":
        deadline = time.monotonic() + 30
        while q.qsize() and time.monotonic() < deadline:  # it took the first item
            time.sleep(0.01)
        time.sleep(0.05)  # and is blocked in its second get
        receiver.kill()
    receiver.join(30)
    assert receiver.exitcode == -signal.SIGKILL
    for value in (1.0, 2.0):
        q.put(ember.full((4,), value))
    assert [q.get(timeout=10).tolist() for _ in range(2)] == [[1.0] * 4, [2.0] * 4]
    q.close()
    del q, receiver
    _leaks.assert_clean(before)


def test_queue_behaves_as_pythons_when_full_empty_or_closed():
    for q in (emp.Queue(maxsize=1), FORK.Queue(maxsize=1)):
        q.put(1)
        with pytest.raises(queue.Full):
            q.put(2, timeout=0.05)
        assert (q.full(), q.qsize(), q.get(timeout=5)) == (True, 1, 1)
        with pytest.raises(queue.Empty):
            q.get_nowait()
        q.close()
        with pytest.raises(ValueError, match="is closed"):
            q.get()


def test_queue_items_larger_than_the_send_buffer_arrive_whole():
    """A packet must fit the socket's send buffer: larger pickles travel in a memfd."""
    import socket

    items = ["x" * 20_000, ["y"] * 50_000, ember.arange(6.0)]
    ours, pythons = emp.Queue(), FORK.Queue()
    ours._writer.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    for item in items:
        ours.put(item)
        pythons.put(item)
    for _ in items:
        got, expected = ours.get(timeout=10), pythons.get(timeout=10)
        if isinstance(expected, ember.Tensor):
            got, expected = got.tolist(), expected.tolist()
        assert got == expected
