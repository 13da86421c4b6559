"""torch.multiprocessing's submodules (spawn, pool, queue, reductions) at their paths."""

import multiprocessing
import sys

import pytest
import torch
import torch.multiprocessing.reductions  # noqa: F401

import ember
import ember.multiprocessing  # noqa: F401


def _double(t):
    return t * 2


def _fail(index):
    raise ValueError(f"worker {index} failed")


def test_exception_hierarchy_matches_torch():
    for root in ("torch", "ember"):
        spawn = sys.modules[f"{root}.multiprocessing.spawn"]
        assert issubclass(spawn.ProcessRaisedException, spawn.ProcessException)
        assert issubclass(spawn.ProcessExitedException, spawn.ProcessException)
        assert issubclass(spawn.SpawnContext, spawn.ProcessContext)
    assert callable(ember.multiprocessing.spawn) and callable(torch.multiprocessing.spawn)


def test_start_processes_reraises_the_workers_error_like_torch():
    for root in ("torch", "ember"):
        spawn = sys.modules[f"{root}.multiprocessing.spawn"]
        with pytest.raises(spawn.ProcessRaisedException, match="worker 0 failed"):
            spawn.start_processes(_fail, nprocs=1, start_method="fork")


def test_pool_and_simple_queue_carry_tensors():
    with ember.multiprocessing.pool.Pool(2) as pool:
        results = pool.map(_double, [ember.ones(2), ember.arange(3)])
    # torch's own Pool cannot start on Python 3.11 (its SimpleQueue lacks ctx): closed form
    assert [r.tolist() for r in results] == [[2.0, 2.0], [0, 2, 4]]
    queue = ember.multiprocessing.queue.SimpleQueue(ctx=multiprocessing.get_context())
    queue.put(ember.arange(4.0))
    assert queue.get().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_reductions_round_trip_and_unsupported_names():
    from ember.multiprocessing import reductions
    rebuild, args = reductions.reduce_tensor(ember.arange(3.0))
    assert rebuild(*args).tolist() == [0.0, 1.0, 2.0]
    meta = reductions.rebuild_meta_tensor(ember.Tensor, (2, 3), (3, 1), 0, ember.float32, 24,
                                          False)
    t_meta = torch.multiprocessing.reductions.rebuild_meta_tensor(
        torch.Tensor, (2, 3), (3, 1), 0, torch.float32, 24, False)
    assert tuple(meta.shape) == tuple(t_meta.shape) and meta.device.type == t_meta.device.type
    with pytest.raises(NotImplementedError, match="reduce_storage"):
        reductions.reduce_storage(None)
