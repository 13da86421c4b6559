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
    """Through ember's Queue one way and Python's the other (each pickled into the child)."""
    context = emp.get_context(method)
    queue_in, queue_out = emp.Queue(ctx=context), context.Queue()
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


needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a GPU and CuPy")


@needs_gpu
def test_cuda_tensor_on_queue_is_shared_through_ipc():
    # spawn: a forked child cannot use CUDA once the parent has initialised it
    context = emp.get_context("spawn")
    queue_in, queue_out = context.Queue(), context.Queue()
    base = ember.zeros(6, device="cuda")
    view = base[2:5]
    process = context.Process(target=_workers.add_one_and_report, args=(queue_in, queue_out))
    process.start()
    queue_in.put(view)
    assert queue_out.get(timeout=60)
    process.join(timeout=60)
    assert process.exitcode == 0
    assert base.tolist() == [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]  # the child wrote into our memory


@needs_gpu
def test_cuda_tensor_pickled_in_its_own_process_is_the_same_memory():
    from multiprocessing.reduction import ForkingPickler

    t = ember.arange(4.0, device="cuda")
    back = ForkingPickler.loads(ForkingPickler.dumps(t))
    back.add_(10)
    assert t.tolist() == [10.0, 11.0, 12.0, 13.0]
    assert back.device == t.device and back.dtype == t.dtype


def test_pinning_without_a_gpu_raises_as_torch():
    if ember.cuda.is_available():
        pytest.skip("the machine has a GPU; the pinned path is tested below")
    t = ember.zeros(3)
    assert not t.is_pinned()
    with pytest.raises(RuntimeError, match="accelerator"):
        t.pin_memory()
    with pytest.raises(RuntimeError, match="pin_memory=True requires"):
        ember.zeros(3, pin_memory=True)


@needs_gpu
def test_pin_memory_page_locks_a_copy():
    t = ember.arange(6.0).view(2, 3)
    pinned = t.pin_memory()
    assert pinned.is_pinned() and not t.is_pinned()
    assert pinned.tolist() == t.tolist() and pinned.shape == t.shape
    assert pinned.pin_memory() is pinned
    assert ember.empty(4, pin_memory=True).is_pinned()
    assert ember.tensor([1, 2], pin_memory=True).is_pinned()
    assert pinned.to("cuda", non_blocking=True).tolist() == t.tolist()
