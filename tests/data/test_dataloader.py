"""DataLoader, datasets, samplers and collation, against torch where torch is deterministic."""

import collections
import gc
import multiprocessing
import os
import sys
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
from ember.utils import data as edata

sys.path.insert(0, os.path.dirname(__file__))
import _workers  # noqa: E402


def _children():
    return multiprocessing.active_children()


def _shm_files():
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


# ---------------------------------------------------------------- collate


Point = collections.namedtuple("Point", ["x", "y"])


def _to_list(value):
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        return ("tensor", str(value.dtype).split(".")[-1], value.tolist())
    if isinstance(value, dict):
        return {k: _to_list(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_to_list(v) for v in value])
    return value


@pytest.mark.parametrize("samples", [
    [1, 2, 3],
    [1.5, 2.5],
    [True, False],
    ["a", "b"],
    [np.array([1, 2]), np.array([3, 4])],
    [np.float64(1.5), np.float64(2.5)],
    [{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}],
    [(1, "x"), (2, "y")],
    [Point(1, 2.0), Point(3, 4.0)],
    [[np.zeros(2, np.float32), 1], [np.ones(2, np.float32), 2]],
])
def test_default_collate_matches_torch(samples):
    ours = edata.default_collate(samples)
    theirs = tdata.default_collate(samples)
    assert _to_list(ours) == _to_list(theirs)
    assert type(ours).__name__ == type(theirs).__name__


def test_default_collate_stacks_tensors_and_convert_turns_arrays():
    batch = edata.default_collate([ember.ones(2), ember.zeros(2)])
    assert batch.shape == (2, 2)
    converted = edata.default_convert({"a": np.arange(3), "b": "s"})
    assert isinstance(converted["a"], ember.Tensor) and converted["b"] == "s"
    assert _to_list(edata.default_convert((np.arange(2), 1))) == \
        _to_list(tdata.default_convert((np.arange(2), 1)))


# ---------------------------------------------------------------- datasets and samplers


def test_datasets_and_random_split():
    ds = edata.TensorDataset(ember.arange(6).float(), ember.arange(6))
    assert len(ds) == 6 and ds[2][1].item() == 2
    concat = edata.ConcatDataset([range(3), range(10, 14)])
    assert [concat[i] for i in range(len(concat))] == [0, 1, 2, 10, 11, 12, 13]
    assert concat[-1] == 13
    subset = edata.Subset(range(10), [1, 3])
    assert list(subset) == [1, 3]
    stacked = edata.StackDataset(a=range(3), b=range(3, 6))
    assert stacked[1] == {"a": 1, "b": 4}
    g = ember.Generator().manual_seed(0)
    parts = edata.random_split(range(10), [0.5, 0.3, 0.2], generator=g)
    assert [len(p) for p in parts] == [len(p) for p in tdata.random_split(range(10), [0.5, 0.3, 0.2])]
    assert sorted(sum((list(p) for p in parts), [])) == list(range(10))
    with pytest.raises(ValueError):
        edata.random_split(range(10), [3, 3])
    chained = edata.ChainDataset([_workers.Stream(3), _workers.Stream(2)])
    assert list(chained) == [0, 1, 2, 0, 1]


def test_samplers_orders_and_lengths():
    assert list(edata.SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = ember.Generator().manual_seed(3)
    first = list(edata.RandomSampler(range(10), generator=g))
    assert sorted(first) == list(range(10))
    g.manual_seed(3)
    assert list(edata.RandomSampler(range(10), generator=g)) == first
    with_replacement = list(edata.RandomSampler(range(5), replacement=True, num_samples=70))
    assert len(with_replacement) == 70 and set(with_replacement) <= set(range(5))
    assert len(list(edata.RandomSampler(range(4), num_samples=10))) == 10
    for drop_last in (True, False):
        e = list(edata.BatchSampler(range(10), 3, drop_last))
        t = list(tdata.BatchSampler(range(10), 3, drop_last))
        assert e == t and len(edata.BatchSampler(range(10), 3, drop_last)) == len(t)
    for rank in range(3):
        for drop_last in (True, False):
            e = edata.DistributedSampler(range(10), num_replicas=3, rank=rank, shuffle=False,
                                         drop_last=drop_last)
            t = tdata.DistributedSampler(range(10), num_replicas=3, rank=rank, shuffle=False,
                                         drop_last=drop_last)
            assert list(e) == list(t) and len(e) == len(t)
    with pytest.raises(ValueError):
        tdata.RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError):
        edata.RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError):
        edata.BatchSampler(range(3), 0, False)


def test_weighted_random_sampler_distribution():
    g = ember.Generator().manual_seed(0)
    weights = [0.1, 0.0, 0.6, 0.3]
    draws = list(edata.WeightedRandomSampler(weights, 20000, generator=g))
    counts = np.bincount(draws, minlength=4) / len(draws)
    assert counts[1] == 0
    np.testing.assert_allclose(counts, weights, atol=0.015)
    no_repeat = list(edata.WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False))
    assert sorted(no_repeat) == [0, 1, 2, 3]


def test_subset_random_sampler_is_a_permutation_of_indices():
    indices = [3, 7, 9, 11]
    assert sorted(edata.SubsetRandomSampler(indices)) == indices


# ---------------------------------------------------------------- loading


def _batches(loader):
    return [(x.tolist(), y.tolist()) for x, y in loader]


def test_single_process_matches_torch_batching():
    values = np.arange(20, dtype=np.float32).reshape(10, 2)
    e = edata.DataLoader(edata.TensorDataset(ember.tensor(values)), batch_size=4, drop_last=True)
    t = tdata.DataLoader(tdata.TensorDataset(torch.tensor(values)), batch_size=4, drop_last=True)
    assert [b[0].tolist() for b in e] == [b[0].tolist() for b in t]
    assert len(e) == len(t) == 2
    no_batch = edata.DataLoader(range(3), batch_size=None)
    assert [int(v) for v in no_batch] == [0, 1, 2]


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_same_seed_same_batches_with_any_worker_count(num_workers):
    g = ember.Generator().manual_seed(123)
    loader = edata.DataLoader(_workers.Squares(20), batch_size=3, shuffle=True,
                              num_workers=num_workers, generator=g)
    reference = edata.DataLoader(_workers.Squares(20), batch_size=3, shuffle=True,
                                 generator=ember.Generator().manual_seed(123))
    assert _batches(loader) == _batches(reference)


def test_workers_get_distinct_reproducible_seeds():
    def run():
        g = ember.Generator().manual_seed(7)
        loader = edata.DataLoader(_workers.RandomDraws(), batch_size=2, num_workers=2,
                                  generator=g)
        return [row for batch in loader for row in zip(*[v.tolist() for v in batch])]
    first, second = run(), run()
    assert first == second
    by_worker = collections.defaultdict(list)
    for worker_id, *draws in first:
        by_worker[worker_id].append(tuple(draws))
    assert set(by_worker) == {0, 1}
    assert by_worker[0][0] != by_worker[1][0]


def test_iterable_dataset_sharded_by_worker_info():
    loader = edata.DataLoader(_workers.Stream(10), batch_size=2, num_workers=2)
    values = sorted(v for batch in loader for v in batch.tolist())
    assert values == list(range(10))
    assert [b.tolist() for b in edata.DataLoader(_workers.Stream(5), batch_size=2)] == \
        [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
def test_multiprocessing_contexts(context):
    loader = edata.DataLoader(_workers.Squares(6), batch_size=2, num_workers=2,
                              multiprocessing_context=context)
    assert [y.tolist() for _, y in loader] == [[0, 1], [2, 3], [4, 5]]


def test_persistent_workers_and_out_of_order():
    loader = edata.DataLoader(_workers.Squares(8), batch_size=2, num_workers=2,
                              persistent_workers=True)
    first = [y.tolist() for _, y in loader]
    pids = [w.pid for w in loader._iterator._workers]
    second = [y.tolist() for _, y in loader]
    assert first == second == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [w.pid for w in loader._iterator._workers] == pids
    loader._iterator._shutdown_workers()
    unordered = edata.DataLoader(_workers.Squares(8), batch_size=2, num_workers=2,
                                 in_order=False)
    assert sorted(v for _, y in unordered for v in y.tolist()) == list(range(8))


def test_batches_arrive_in_shared_memory():
    import ember.multiprocessing as emp

    loader = edata.DataLoader(_workers.Squares(4), batch_size=2, num_workers=1)
    x, _ = next(iter(loader))
    assert emp.is_shared(x)


# ---------------------------------------------------------------- failures


def test_worker_exception_is_reraised_with_worker_id_and_traceback():
    loader = edata.DataLoader(_workers.Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as error:
        list(loader)
    message = str(error.value)
    assert "DataLoader worker process" in message and "bad sample 5" in message
    assert "Traceback" in message and "_workers.py" in message


def test_worker_init_fn_error_is_reraised():
    loader = edata.DataLoader(range(8), batch_size=2, num_workers=2,
                              worker_init_fn=_workers.record_init)
    with pytest.raises(RuntimeError, match="init failed in worker 1"):
        list(loader)


def test_killed_worker_raises_instead_of_hanging():
    loader = edata.DataLoader(_workers.Suicidal(), batch_size=1, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)
    assert time.monotonic() - start < 30


def test_timeout_raises():
    loader = edata.DataLoader(_workers.Slow(), batch_size=1, num_workers=1, timeout=0.5)
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        next(iter(loader))


def test_argument_errors_match_torch():
    for lib in (edata, tdata):
        with pytest.raises(ValueError):
            lib.DataLoader(range(3), num_workers=-1)
        with pytest.raises(ValueError):
            lib.DataLoader(range(3), sampler=lib.SequentialSampler(range(3)), shuffle=True)
        with pytest.raises(ValueError):
            lib.DataLoader(range(3), batch_sampler=lib.BatchSampler(range(3), 2, False),
                           batch_size=2)
        with pytest.raises(ValueError):
            lib.DataLoader(range(3), prefetch_factor=2)


def test_no_leaks_after_many_loader_lifetimes():
    shm_before = _shm_files()
    for i in range(100):
        loader = edata.DataLoader(_workers.Squares(6), batch_size=2, num_workers=2)
        iterator = iter(loader)
        next(iterator)
        if i % 2:
            del iterator  # abandoned mid-epoch
        else:
            list(iterator)
    gc.collect()
    deadline = time.monotonic() + 10
    while _children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _children() == []
    assert _shm_files() <= shm_before


def test_tensor_dataset_batches_equal_per_sample_collation():
    x = ember.arange(30.0).view(10, 3)
    y = ember.arange(10)
    ds = edata.TensorDataset(x, y)
    g = ember.Generator().manual_seed(5)
    fast = list(edata.DataLoader(ds, batch_size=4, shuffle=True, generator=g))
    g.manual_seed(5)
    slow = list(edata.DataLoader(ds, batch_size=4, shuffle=True, generator=g,
                                 collate_fn=lambda batch: edata.default_collate(batch)))
    assert [[t.tolist() for t in b] for b in fast] == [[t.tolist() for t in b] for b in slow]
    assert all(isinstance(b, list) and b[0].dtype is ember.float32 for b in fast)
    t_batches = list(tdata.DataLoader(tdata.TensorDataset(torch.arange(30.0).view(10, 3),
                                                          torch.arange(10)), batch_size=4))
    e_batches = list(edata.DataLoader(ds, batch_size=4))
    assert [[t.tolist() for t in b] for b in e_batches] == \
        [[t.tolist() for t in b] for b in t_batches]
