"""ember.multiprocessing: tensors cross processes through shared memory, Hogwild works."""

import multiprocessing
import os
import sys

import pytest

import ember
import ember.multiprocessing as emp

sys.path.insert(0, os.path.dirname(__file__))
import _workers  # noqa: E402


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_tensor_on_queue_is_shared_not_copied(method):
    context = emp.get_context(method)
    queue_in, queue_out = context.Queue(), context.Queue()
    t = ember.zeros(5)
    process = context.Process(target=_workers.add_one_and_report, args=(queue_in, queue_out))
    process.start()
    queue_in.put(t)
    assert queue_out.get(timeout=30)
    process.join(timeout=30)
    assert process.exitcode == 0
    assert t.tolist() == [1.0] * 5  # the child's in-place add is visible here
    assert t.is_shared()


def test_share_memory_keeps_values_and_views():
    base = ember.arange(12.0).view(3, 4)
    view = base.t()
    values = view.tolist()
    emp.share_memory_(view)
    assert view.is_shared() and view.tolist() == values
    assert view.stride() == (1, 4)


def test_non_leaf_requiring_grad_is_refused():
    x = ember.ones(2, requires_grad=True)
    queue = multiprocessing.get_context("fork").Queue()
    from multiprocessing.reduction import ForkingPickler

    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        ForkingPickler.dumps(x * 2)
    queue.close()


def test_hogwild_shared_model_learns():
    ember.manual_seed(0)
    model = ember.nn.Linear(4, 1)
    model.share_memory()
    assert all(p.is_shared() for p in model.parameters())
    x = ember.randn(64, 4)
    target = x.sum(1, keepdim=True)
    before = ((model(x) - target) ** 2).mean().item()
    context = emp.get_context("fork")
    processes = [context.Process(target=_workers.hogwild_train, args=(rank, model, 40))
                 for rank in range(2)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    after = ((model(x) - target) ** 2).mean().item()
    assert after < before * 0.1


def test_spawn_runs_and_reports_failures():
    shared = ember.zeros(2)
    shared.share_memory_()
    emp.spawn(_workers.spawn_target, args=(shared,), nprocs=2, start_method="fork")
    assert shared.tolist() == [10.0, 11.0]
    with pytest.raises(emp.ProcessRaisedException, match="rank 1 failed"):
        emp.spawn(_workers.spawn_fail, nprocs=2, start_method="fork")


def test_sharing_strategy_api():
    assert emp.get_sharing_strategy() in emp.get_all_sharing_strategies()
    with pytest.raises(ValueError):
        emp.set_sharing_strategy("file_system_nonexistent")
