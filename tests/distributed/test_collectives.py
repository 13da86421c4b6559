"""Collectives on 2 and 3 gloo ranks against closed forms computed with NumPy from every
rank's known input; argument errors against torch's exception types."""

import functools
import zlib

import _tasks
import numpy as np
import pytest
from _harness import RankError, world
from _tasks import rank_input

import ember

TOL = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 1e-5, "float64": 1e-12,
       "complex64": 1e-5}


def check(actual, expected, dtype):
    expected = np.asarray(expected).astype(getattr(ember, dtype).np)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if dtype in TOL:
        np.testing.assert_allclose(actual.astype(np.complex128 if dtype.startswith("complex")
                                                 else np.float64),
                                   expected.astype(np.complex128 if dtype.startswith("complex")
                                                   else np.float64),
                                   rtol=TOL[dtype], atol=TOL[dtype])
    else:
        np.testing.assert_array_equal(actual, expected)


def closed_form(op, xs, dtype):
    wide = [x.astype(np.float64) if dtype in ("float16", "bfloat16") else x for x in xs]
    if op == "SUM":
        return np.any(xs, axis=0) if dtype == "bool" else functools.reduce(np.add, wide)
    if op == "PRODUCT":
        return np.all(xs, axis=0) if dtype == "bool" else functools.reduce(np.multiply, wide)
    if op == "MIN":
        return functools.reduce(np.minimum, wide)
    if op == "MAX":
        return functools.reduce(np.maximum, wide)
    if op == "AVG":
        return functools.reduce(np.add, wide) / len(xs)
    return functools.reduce({"BAND": np.bitwise_and, "BOR": np.bitwise_or,
                             "BXOR": np.bitwise_xor}[op], xs)


FLOATS = ["float32", "float64", "float16", "bfloat16"]
CASES = ([(op, d) for op in ["SUM", "PRODUCT", "MIN", "MAX", "AVG"] for d in FLOATS]
         + [(op, d) for op in ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
            for d in ["int32", "int64", "uint8", "bool"]]
         + [("SUM", "complex64"), ("PRODUCT", "complex64"), ("AVG", "complex64")])


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("op,dtype", CASES)
def test_all_reduce(n, op, dtype):
    for i, (shape, noncontig) in enumerate([((3, 4), True), ((), False), ((0, 2), False)]):
        seed = zlib.crc32(repr((op, dtype, i)).encode()) % 1000  # the same on every run
        results = world(n).run(_tasks.all_reduce, op, dtype, shape, noncontig, seed)
        expected = closed_form(op, [rank_input(seed, r, shape, dtype) for r in range(n)], dtype)
        for r in results:
            check(r, expected, dtype)
        # every rank holds the same bits
        for r in results[1:]:
            assert r.tobytes() == results[0].tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_all_reduce_ring_three_ranks(dtype):
    """Buffers over 256 KiB on 3 ranks take the ring algorithm."""
    size = 100_003
    results = world(3).run(_tasks.big_all_reduce, size, dtype, 5)
    expected = closed_form("SUM", [rank_input(5, r, (size,), dtype) for r in range(3)], dtype)
    for r in results:
        check(r, expected, dtype)
        assert r.tobytes() == results[0].tobytes()


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("dtype,shape,noncontig", [("float32", (2, 3), True),
                                                   ("int64", (), False),
                                                   ("bfloat16", (5,), False),
                                                   ("bool", (4,), True)])
def test_broadcast_reduce(n, dtype, shape, noncontig):
    for root in range(n):
        xs = [rank_input(root, r, shape, dtype) for r in range(n)]
        for r in world(n).run(_tasks.broadcast, root, dtype, shape, noncontig, root):
            check(r, xs[root], dtype)
        op = "MAX"
        results = world(n).run(_tasks.reduce, root, op, dtype, shape, noncontig, root)
        check(results[root], closed_form(op, xs, dtype), dtype)
        for rank, r in enumerate(results):  # the other ranks keep their input
            if rank != root:
                check(r, xs[rank], dtype)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("dtype,shape,noncontig", [("float64", (2, 3), True),
                                                   ("int32", (), False),
                                                   ("float16", (0,), False)])
def test_gather_family(n, dtype, shape, noncontig):
    xs = [rank_input(1, r, shape, dtype) for r in range(n)]
    for got in world(n).run(_tasks.all_gather, dtype, shape, noncontig, 1):
        for r in range(n):
            check(got[r], xs[r], dtype)
    dst = n - 1
    results = world(n).run(_tasks.gather, dst, dtype, shape, noncontig, 1)
    assert all(results[r] is None for r in range(n) if r != dst)
    for r in range(n):
        check(results[dst][r], xs[r], dtype)
    src = 1
    pieces = [rank_input(1, 100 + r, shape, dtype) for r in range(n)]
    for r, got in enumerate(world(n).run(_tasks.scatter, src, dtype, shape, noncontig, 1)):
        check(got, pieces[r], dtype)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("stacked", [False, True])
def test_all_gather_into_tensor(n, stacked):
    shape = (2, 3)
    xs = [rank_input(4, r, shape, "float32") for r in range(n)]
    expected = np.stack(xs) if stacked else np.concatenate(xs)
    for got in world(n).run(_tasks.all_gather_into_tensor, "float32", shape, stacked, 4):
        check(got, expected, "float32")


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("op,dtype", [("SUM", "float32"), ("MAX", "int64"), ("AVG", "float64"),
                                      ("BXOR", "int32")])
def test_reduce_scatter(n, op, dtype):
    shape = (2, 3)
    results = world(n).run(_tasks.reduce_scatter, op, dtype, shape, 6)
    for j, got in enumerate(results):
        xs = [rank_input(6, r * 10 + j, shape, dtype) for r in range(n)]
        check(got, closed_form(op, xs, dtype), dtype)
    results = world(n).run(_tasks.reduce_scatter_tensor, op, dtype, shape, 7)
    full = [rank_input(7, r, (n * 2, 3), dtype) for r in range(n)]
    for j, got in enumerate(results):
        check(got, closed_form(op, [x[2 * j:2 * j + 2] for x in full], dtype), dtype)


@pytest.mark.parametrize("n", [2, 3])
def test_all_to_all(n):
    shape = (3,)
    results = world(n).run(_tasks.all_to_all, "int64", shape, 8)
    for j, got in enumerate(results):
        for i in range(n):
            check(got[i], rank_input(8, i * 10 + j, shape, "int64"), "int64")
    # equal splits
    results = world(n).run(_tasks.all_to_all_single, "float32", None, None, 9)
    xs = [rank_input(9, r, (n * 2, 3), "float32") for r in range(n)]
    for j, got in enumerate(results):
        check(got, np.concatenate([x[2 * j:2 * j + 2] for x in xs]), "float32")
    # uneven splits: rank i sends i + j + 1 rows to rank j
    ins = [[i + j + 1 for j in range(n)] for i in range(n)]
    outs = [[i + j + 1 for i in range(n)] for j in range(n)]
    results = world(n).run(_tasks.all_to_all_single, "float32", ins, outs, 10)
    xs = [rank_input(10, r, (sum(ins[r]), 3), "float32") for r in range(n)]
    for j, got in enumerate(results):
        parts = [xs[i][sum(ins[i][:j]):sum(ins[i][:j + 1])] for i in range(n)]
        check(got, np.concatenate(parts), "float32")


def test_async_work():
    n = 2
    sums, waited, done, b, res, fut = world(n).run(_tasks.async_ops, 11)[1]
    for i in range(4):
        expected = sum(rank_input(11, r * 10 + i, (50,), "float64") for r in range(n))
        check(sums[i], expected, "float64")
    assert waited == [True] * 4 and done == [True] * 4
    check(b, np.arange(3.0), "float64")
    check(res, np.arange(3.0), "float64")
    check(fut, np.full(2, 2.0), "float32")


def test_groups():
    results = world(3).run(_tasks.subgroup, [0, 2])
    assert results[1][:4] == ("outside", -1, -1, None)
    check(results[1][4], np.full(3, 1.0), "float32")  # untouched
    for rank in (0, 2):
        kind, grank, gsize, t, b, objs, ranks, first = results[rank]
        assert (kind, grank, gsize) == ("inside", [0, 2].index(rank), 2)
        check(t, np.full(3, 1.0 + 3.0), "float32")
        check(b, np.full(2, 2.0), "float32")  # src is global rank 2
        assert objs == [0, 2] and ranks == [0, 2] and first == 0


def test_point_to_point():
    got = world(3).run(_tasks.p2p)
    assert got[1]["src"] == 0
    check(got[1]["a"], np.arange(4), "int32")
    check(got[1]["b"], np.full((2, 2), 7.0), "float32")
    assert got[0]["from"] == 1
    check(got[0]["any"], np.full(3, 5.0), "float32")
    check(got[0]["swap"], np.full(5, 1.0), "float64")
    check(got[1]["swap"], np.full(5, 0.0), "float64")
    check(got[0]["batch"], np.full(2, 11.0), "float32")
    check(got[1]["batch"], np.full(2, 10.0), "float32")


def test_objects():
    n = 3
    for rank, (objs, every, gathered, scattered) in enumerate(world(n).run(_tasks.objects)):
        assert objs == [{"a": [1, 2]}, "text", (3.5, None)]
        assert every == [{"rank": r, "payload": "x" * (r * 50)} for r in range(n)]
        assert gathered == ([("r", r) for r in range(n)] if rank == n - 1 else None)
        assert scattered == f"s{rank}"


def test_info_and_sampler():
    assert world(2).run(_tasks.info) == [(True, r, 2, "gloo", True) for r in range(2)]
    for r, (replicas, rank, indices) in enumerate(world(2).run(_tasks.sampler_defaults)):
        assert (replicas, rank, indices) == (2, r, list(range(r, 10, 2)))


def test_mismatch_across_ranks_raises_and_group_survives():
    import ember.distributed as dist

    w = world(2)
    errors = w.run(_tasks.mismatched_sizes, raises=True)
    assert all(isinstance(e, dist.DistBackendError) and "size mismatch" in str(e)
               for e in errors)
    errors = w.run(_tasks.mismatched_dtypes, raises=True)
    assert all(isinstance(e, dist.DistBackendError) and "dtype mismatch" in str(e)
               for e in errors)
    for r in w.run(_tasks.after_error):
        check(r, np.full(2, 2.0), "float32")


def test_recv_timeout():
    import ember.distributed as dist

    results = world(2).run(_tasks.recv_timeout, raises=True)
    assert isinstance(results[0], dist.DistBackendError)
    assert "Timed out" in str(results[0])
    assert results[1] < 0.3  # rank 1 had nothing to do


def test_rank_errors_reach_the_test():
    with pytest.raises(RankError, match="size mismatch"):
        world(2).run(_tasks.mismatched_sizes)
