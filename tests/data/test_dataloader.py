"""DataLoader, datasets, samplers and collation, against torch where torch is deterministic."""

import collections
import gc
import multiprocessing
import os
import random
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
    # this test's own leaks: processes other tests of this worker keep are not its (the
    # distributed tests' ranks, tests/distributed/_harness.py, are cached for the session:
    # worlds of 2 and 3 spawned daemons, closed at exit)
    shm_before, others = _shm_files(), set(_children())
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
    while set(_children()) - others and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(_children()) - others == set()
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


# ---------------------------------------------------------------- fast paths keep torch's results


def _batches(loader):
    return [_to_list(b) for b in loader]


class _KeepsGetitem(edata.TensorDataset):
    """A subclass that inherits __getitem__: the batched gather still applies."""


def _overriding_pair():
    calls = []

    class Overrides(edata.TensorDataset):
        def __getitem__(self, index):
            calls.append(index)
            x, y = super().__getitem__(index)
            return x * 2, y

    class TorchOverrides(tdata.TensorDataset):
        def __getitem__(self, index):
            x, y = super().__getitem__(index)
            return x * 2, y

    return Overrides, TorchOverrides, calls


@pytest.mark.parametrize("kind", ["exact", "subclass", "overrides"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool", "int64"])
def test_tensor_dataset_batches_match_torch(kind, dtype):
    rng = np.random.default_rng(3)
    values = rng.standard_normal((11, 2, 3)) > 0 if dtype == "bool" else (
        rng.standard_normal((11, 2, 3)) * 5)
    t_x = torch.from_numpy(values).to(getattr(torch, dtype))
    t_y = torch.from_numpy(rng.integers(0, 10, 11))
    e_x, e_y = ember.tensor(t_x.float().numpy()).to(getattr(ember, dtype)), ember.tensor(
        t_y.numpy())
    e_cls, t_cls, calls = {"exact": (edata.TensorDataset, tdata.TensorDataset, None),
                           "subclass": (_KeepsGetitem, tdata.TensorDataset, None),
                           "overrides": _overriding_pair()}[kind]
    sampler = [[3, 0, -1, 7], [10, 10], [5]]  # negative and repeated indices, a short batch
    e_loader = edata.DataLoader(e_cls(e_x, e_y), batch_sampler=sampler)
    t_loader = tdata.DataLoader(t_cls(t_x, t_y), batch_sampler=sampler)
    assert _batches(e_loader) == _batches(t_loader)
    for e_batch, t_batch in zip(e_loader, t_loader):
        assert e_batch[0].shape == tuple(t_batch[0].shape)
        assert e_batch[0].is_contiguous() and e_batch[1].dtype is ember.int64
    if calls is not None:  # an overriding __getitem__ is called once per index, as torch does
        assert calls == [3, 0, -1, 7, 10, 10, 5] * 2


@pytest.mark.parametrize("batches", [[[True, False]], [[(0, 1), (1, 2)]], [[]], [[np.int64(2), 1]],
                                     [[11]], [[ember.tensor(4), ember.tensor(1)]]])
def test_tensor_dataset_odd_indices_behave_like_torch(batches):
    # indices that are not a plain list of ints take the per-sample path (and its errors)
    rng = np.random.default_rng(4)
    values = rng.standard_normal((11, 3))
    e_ds = edata.TensorDataset(ember.tensor(values), ember.arange(11))
    t_ds = tdata.TensorDataset(torch.tensor(values), torch.arange(11))
    t_batches = [[torch.tensor(i.item()) if isinstance(i, ember.Tensor) else i for i in b]
                 for b in batches]
    try:
        expected = _batches(tdata.DataLoader(t_ds, batch_sampler=t_batches))
    except Exception as error:
        with pytest.raises(type(error)):
            list(edata.DataLoader(e_ds, batch_sampler=batches))
        return
    assert _batches(edata.DataLoader(e_ds, batch_sampler=batches)) == expected


def test_tensor_dataset_with_grad_and_custom_collate():
    x = ember.arange(12.0).view(4, 3).requires_grad_()
    t_x = torch.arange(12.0).view(4, 3).requires_grad_()
    batch, _ = next(iter(edata.DataLoader(edata.TensorDataset(x, ember.arange(4)),
                                          batch_size=3)))
    t_batch, _ = next(iter(tdata.DataLoader(tdata.TensorDataset(t_x, torch.arange(4)),
                                            batch_size=3)))
    assert batch.requires_grad and batch.tolist() == t_batch.tolist()
    batch.sum().backward()
    t_batch.sum().backward()
    assert x.grad.tolist() == t_x.grad.tolist()
    # a custom collate_fn gets the per-sample tuples, as in torch
    seen = {"ember": [], "torch": []}
    for name, lib, data in (("ember", edata, ember), ("torch", tdata, torch)):
        loader = lib.DataLoader(lib.TensorDataset(data.arange(5)), batch_size=2,
                                collate_fn=lambda samples, name=name: seen[name].append(samples))
        assert list(loader) == [None] * 3
    assert [[(type(s).__name__, len(s), s[0].item()) for s in b] for b in seen["ember"]] == \
        [[(type(s).__name__, len(s), s[0].item()) for s in b] for b in seen["torch"]]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "complex64", "bool",
                                   "int64", "uint8"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 0), (2, 3)])
def test_default_collate_stack_matches_torch(dtype, shape):
    rng = np.random.default_rng(5)
    values = [np.asarray(rng.standard_normal(shape) * 3) for _ in range(4)]
    t_samples = [torch.from_numpy(v).to(getattr(torch, dtype)) for v in values]
    e_samples = [ember.tensor(t.to(torch.complex64 if t.is_complex() else torch.float64)
                              .numpy()).to(getattr(ember, dtype)) for t in t_samples]
    e_out = edata.default_collate(e_samples)
    t_out = tdata.default_collate(t_samples)
    assert _to_list(e_out) == _to_list(t_out) and e_out.shape == tuple(t_out.shape)
    transposed = [ember.tensor(np.ascontiguousarray(v.T)).t() if v.ndim == 2 else
                  ember.tensor(v) for v in values]  # non-contiguous samples
    assert edata.default_collate(transposed).tolist() == [v.tolist() for v in values]


def test_default_collate_mixed_samples_fall_back_to_stack():
    with pytest.raises(RuntimeError, match="equal size"):
        edata.default_collate([ember.ones(2), ember.ones(3)])
    mixed = edata.default_collate([ember.ones(2), ember.ones(2, dtype=ember.float64)])
    t_mixed = tdata.default_collate([torch.ones(2), torch.ones(2, dtype=torch.float64)])
    assert _to_list(mixed) == _to_list(t_mixed)
    w = ember.ones(2, requires_grad=True)
    stacked = edata.default_collate([w, ember.zeros(2)])
    assert stacked.requires_grad and stacked.grad_fn is not None
    meta = edata.default_collate([ember.ones(2, device="meta")] * 3)
    assert meta.device.type == "meta" and meta.shape == (3, 2)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_shuffle_order_and_worker_seeds_are_torchs(num_workers):
    """After one manual_seed, ember's loader gives torch's batches: the shuffled order, each
    worker's seed, and the numbers its ``random``, NumPy and ember generators then draw."""
    import torch

    runs = []
    for lib in (ember, torch):
        lib.manual_seed(1234)
        random.seed(5)  # the main process's own generators (used with 0 workers)
        np.random.seed(5)
        loader = lib.utils.data.DataLoader(
            _workers.SeedProbe(lib.__name__), batch_size=3, shuffle=True,
            num_workers=num_workers, collate_fn=lambda batch: batch)
        runs.append([list(epoch) for epoch in (loader, loader)])
    assert runs[0] == runs[1]


def test_pin_memory_without_a_gpu_warns_and_loads_unpinned_as_torch():
    if ember.cuda.is_available():
        pytest.skip("the machine has a GPU: pinning is tested in test_pin_memory_pins_batches")
    batches = []
    for lib in (ember, torch):
        dataset = lib.utils.data.TensorDataset(lib.arange(6.0).view(3, 2))
        loader = lib.utils.data.DataLoader(dataset, batch_size=2, pin_memory=True)
        with pytest.warns(UserWarning, match="no accelerator is found"):
            batches.append([b[0].tolist() for b in loader])
        assert loader.pin_memory and not any(b[0].is_pinned() for b in loader)
    assert batches[0] == batches[1]


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a GPU and CuPy")
@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory_pins_batches(num_workers):
    Pair = collections.namedtuple("Pair", "x y")
    data = [Pair(ember.full((2,), float(i)), {"label": ember.tensor(i)}) for i in range(4)]
    loader = ember.utils.data.DataLoader(data, batch_size=2, pin_memory=True,
                                         num_workers=num_workers)
    for batch in loader:
        assert isinstance(batch, Pair)
        assert batch.x.is_pinned() and batch.y["label"].is_pinned()
