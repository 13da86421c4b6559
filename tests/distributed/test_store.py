"""Stores against torch's stores: the same operations give the same answers and errors."""

import datetime
import threading
import time

import _tasks
import pytest
import torch.distributed as tdist
from _harness import free_port, world

import ember.distributed as edist

SHORT = datetime.timedelta(seconds=0.2)


def make_stores(kind, tmp_path):
    if kind == "hash":
        return tdist.HashStore(), edist.HashStore()
    if kind == "file":
        return (tdist.FileStore(str(tmp_path / "torch_store"), 1),
                edist.FileStore(str(tmp_path / "ember_store"), 1))
    return (tdist.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=5)),
            edist.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=5)))


SCRIPT = [
    ("set", ("a", "1")),
    ("get", ("a",)),
    ("set", ("b", b"\x00\xff")),
    ("get", ("b",)),
    ("add", ("c", 3)),
    ("add", ("c", -5)),
    ("get", ("c",)),
    ("compare_set", ("k", "", "v")),
    ("compare_set", ("k", "zz", "w")),
    ("compare_set", ("k", "v", "w")),
    ("compare_set", ("missing", "x", "y")),
    ("get", ("k",)),
    ("delete_key", ("k",)),
    ("delete_key", ("k",)),
    ("check", (["a", "c"],)),
    ("check", (["a", "nope"],)),
]


@pytest.mark.parametrize("kind", ["hash", "file", "tcp"])
def test_store_semantics_match_torch(kind, tmp_path):
    theirs, ours = make_stores(kind, tmp_path)
    for name, args in SCRIPT:
        assert getattr(ours, name)(*args) == getattr(theirs, name)(*args), (name, args)
    # both TCPStores count an internal key of their own (and torch's FileStore one more);
    # the user's keys agree
    user_keys = 3
    assert ours.num_keys() - (1 if kind == "tcp" else 0) == user_keys
    assert theirs.num_keys() - (1 if kind in ("tcp", "file") else 0) == user_keys


@pytest.mark.parametrize("kind", ["hash", "file", "tcp"])
def test_get_and_wait_time_out(kind, tmp_path):
    theirs, ours = make_stores(kind, tmp_path)
    for store in (theirs, ours):
        store.set_timeout(SHORT)
    for call in (lambda s: s.get("never"), lambda s: s.wait(["never"]),
                 lambda s: s.wait(["a", "never"], SHORT)):
        with pytest.raises(RuntimeError) as their_error:
            call(theirs)
        # torch's DistStoreError is ember.distributed.DistStoreError; a plain RuntimeError
        # (torch's FileStore) is matched by ember's DistStoreError, a RuntimeError
        expected = getattr(edist, type(their_error.value).__name__, RuntimeError)
        start = time.monotonic()
        with pytest.raises(expected):
            call(ours)
        assert 0.15 < time.monotonic() - start < 3
    assert isinstance(ours.timeout, datetime.timedelta) and ours.timeout == SHORT


@pytest.mark.parametrize("kind", ["hash", "tcp"])
def test_get_blocks_until_set(kind, tmp_path):
    _, ours = make_stores(kind, tmp_path)
    threading.Timer(0.1, lambda: ours.set("late", "here")).start()
    assert ours.get("late") == b"here"


def test_prefix_store():
    base = edist.HashStore()
    p = edist.PrefixStore("pre", base)
    p.set("x", "1")
    assert base.get("pre/x") == b"1" and p.get("x") == b"1"
    assert p.add("n", 2) == 2 and base.get("pre/n") == b"2"


def test_tcp_store_across_processes():
    port = free_port()
    results = world(3, init=False).run(_tasks.tcp_store_clients, port)
    expected_values = [f"value{r}".encode() for r in range(3)]
    totals = sorted(r[0] for r in results)  # running sums of 1 + 2 + 3 in some order
    assert len(set(totals)) == 3 and totals[-1] == 6
    for _, values, counter in results:
        assert values == expected_values and counter == 6


def test_tcp_store_port_in_use():
    first = edist.TCPStore("127.0.0.1", 0, 1, True)
    with pytest.raises(edist.DistNetworkError, match="EADDRINUSE"):
        edist.TCPStore("127.0.0.1", first.port, 1, True)
    assert issubclass(edist.DistNetworkError, RuntimeError)
    assert issubclass(edist.DistStoreError, edist.DistError)


@pytest.mark.parametrize("method", ["env", "tcp", "file", "store"])
def test_init_methods(method, tmp_path):
    target = str(tmp_path / "rendezvous") if method == "file" else free_port()
    results = world(2, init=False).run(_tasks.init_and_reduce, method, target)
    for rank, (t, r, n, backend) in enumerate(results):
        assert t.tolist() == [3.0, 3.0] and (r, n, backend) == (rank, 2, "gloo")
