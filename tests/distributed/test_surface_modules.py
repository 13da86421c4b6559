"""torch.distributed's smaller modules and names (constants, config, rendezvous,
collective_utils, remote_device, the DDP internals' names, breakpoint) against torch's."""

import datetime
import os
import subprocess
import sys
import tempfile
import types
import warnings

import pytest
import torch.distributed as tdist
from _harness import world

import ember.distributed as dist

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "src")


def test_constants_hold_torch_values():
    import torch.distributed.constants as theirs

    import ember.distributed.constants as ours

    assert ours.default_pg_timeout == theirs.default_pg_timeout == datetime.timedelta(minutes=30)
    assert ours.default_pg_nccl_timeout == theirs.default_pg_nccl_timeout


def _config_in_fresh_interpreter(package, env):
    code = (f"import {package}.distributed.config as c; "
            "print(bool(c.compile_on_one_rank), bool(c.use_torchcomms))")
    environment = dict(os.environ, PYTHONPATH=SRC, **env)
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True, check=True).stdout.split()


@pytest.mark.parametrize("env", [{}, {"TORCH_DISTRIBUTED_USE_TORCHCOMMS": "1",
                                      "TORCH_DISTRIBUTED_COMPILE_ON_ONE_RANK": "1"}])
def test_config_reads_the_environment_as_torch(env):
    assert _config_in_fresh_interpreter("ember", env) == \
        _config_in_fresh_interpreter("torch", env)


def _torch_name(name):
    """A public name of torch.distributed that is torch's own (not an imported stdlib module,
    class or function)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        value = getattr(tdist, name)
        home = value.__name__ if isinstance(value, types.ModuleType) else \
            getattr(value, "__module__", None) or "torch"
    return not name.startswith("_") and home.startswith("torch.")


def test_every_public_name_of_torch_distributed_exists():
    missing = [name for name in dir(tdist) if _torch_name(name) and not hasattr(dist, name)
               and name not in ("argparse_util", "debug", "elastic", "flight_recorder",
                                "launcher", "pipelining")]
    assert missing == []


def test_internal_names_match_torch():
    assert [m for m in dist.BuiltinCommHookType.__members__] == \
        [m for m in tdist.BuiltinCommHookType.__members__]
    assert issubclass(dist.QueueEmptyError, dist.DistStoreError)
    assert issubclass(tdist.QueueEmptyError, tdist.DistStoreError)
    assert dist.RankType is int
    with pytest.raises(NotImplementedError, match="DistributedDataParallel"):
        dist.Reducer([], [[0]], [0])
    with pytest.raises(NotImplementedError, match="DistributedDataParallel"):
        dist.Logger(None)


def test_rendezvous_argument_errors_match_torch():
    import torch.distributed.rendezvous  # noqa: F401  (the module; the package's name is the function)

    import ember.distributed.rendezvous  # noqa: F401

    for module in (sys.modules["torch.distributed.rendezvous"],
                   sys.modules["ember.distributed.rendezvous"]):
        with pytest.raises(RuntimeError, match="No rendezvous handler for nope://"):
            module.rendezvous("nope://x")
        with pytest.raises(RuntimeError, match="`url` must be a string"):
            module.rendezvous(3)
        with pytest.raises(RuntimeError, match="`rank` must be an integer"):
            module.rendezvous("env://", rank="0")
        with pytest.raises(RuntimeError, match="already registered"):
            module.register_rendezvous_handler("env", lambda url: iter(()))
        with pytest.raises(AssertionError, match="node-specific arguments"):
            next(module.rendezvous("file:///tmp/x?rank=0&world_size=1", rank=0, world_size=1))


def test_file_rendezvous_gives_a_working_store():
    with tempfile.TemporaryDirectory() as folder:
        url = f"file://{folder}/store"
        assert callable(dist.rendezvous) and callable(tdist.rendezvous)
        store, rank, world_size = next(dist.rendezvous(url, rank=0, world_size=1))
        store.set("key", "value")
        assert (rank, world_size, store.get("key")) == (0, 1, b"value")


def test_registered_handler_serves_init_process_group():
    seen = []

    def one_rank(url, **kwargs):
        seen.append((url, sorted(kwargs)))
        yield dist.HashStore(), 0, 1

    dist.register_rendezvous_handler("ember-test-solo", one_rank)
    dist.init_process_group("gloo", init_method="ember-test-solo://here")
    try:
        assert dist.get_world_size() == 1
        tensor = dist.distributed_c10d.get_rank()
        assert tensor == 0
    finally:
        dist.destroy_process_group()
    assert seen == [("ember-test-solo://here", ["timeout"])]


def test_collective_utils_without_a_group_match_torch():
    from torch.distributed import collective_utils as theirs

    from ember.distributed import collective_utils as ours

    for module in (theirs, ours):
        assert module.broadcast(lambda: 5) == 5
        assert module.broadcast([1, 2]) == [1, 2]
        assert module.all_gather("x") == ["x"]
        with pytest.raises(RuntimeError, match="Rank 0 failed: stage s: exception boom"):
            module.broadcast(_boom, stage_name="s")
        with pytest.raises(RuntimeError, match="all_gather failed with exception boom"):
            module.all_gather(_boom)
        with pytest.raises(AssertionError, match="expected to be None if not successful"):
            module.broadcast(1, success=False)
        with pytest.raises(RuntimeError, match="Rank 0 failed"):
            module.broadcast(None, success=False)
    payload = ours.SyncPayload(stage_name="a", success=True, payload=1)
    assert payload.exception is None and payload.payload == 1


def _boom():
    raise ValueError("boom")


def test_collective_utils_across_two_ranks():
    import _tasks_surface

    results = world(2).run(_tasks_surface.collective_utils_round)
    for shared, values, gathered, failure, bcast, type_error in results:
        assert shared == "from 1"
        assert values == [0, 1]
        assert gathered == [{"rank": 0}, {"rank": 1}]
        assert failure == ("ValueError", [1])
        assert bcast == "Rank 1 failed: stage load: exception no data on this rank"
        assert type_error == ("Object type at index 1 is <class 'int'>, while first object "
                              "type is <class 'str'>")


@pytest.mark.parametrize("text", ["worker0/cpu", "rank:1/cpu", "cpu", "worker1", "a/b/c",
                                  "rank:x/cpu", "worker/foo"])
def test_remote_device_matches_torch(text):
    from torch.distributed.remote_device import _remote_device as theirs

    from ember.distributed.remote_device import _remote_device as ours

    try:
        expected = theirs(text)
    except Exception as error:  # noqa: BLE001 - the same error type is the expectation
        with pytest.raises(type(error)) as got:
            ours(text)
        assert str(got.value) == str(error)
        return
    mine = ours(text)
    assert (repr(mine), mine.worker_name(), mine.rank(), str(mine.device())) == \
        (repr(expected), expected.worker_name(), expected.rank(), str(expected.device()))
    assert mine == ours(text) and hash(mine) == hash(ours(text))


def test_breakpoint_skips_then_waits_in_a_barrier(monkeypatch):
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        calls = []
        monkeypatch.setattr(dist._breakpoint._RankPdb, "set_trace",
                            lambda self, frame=None: calls.append(frame.f_code.co_name))
        dist.breakpoint(skip=1)  # the first call passes
        dist.breakpoint(skip=1)
        assert calls == ["test_breakpoint_skips_then_waits_in_a_barrier"]
        assert dist.group.WORLD._timeout == 3600
    finally:
        dist.destroy_process_group()


def test_ddp_communication_hooks_across_two_ranks():
    import _tasks_surface

    for results, twice in world(2).run(_tasks_surface.ddp_comm_hooks):
        for name in ("none", "allreduce", "fp16", "builtin_fp16"):
            assert results[name][0] == [[1.5, 1.5, 1.5]], name
        grads, seen = results["sum"]
        assert grads == [[3.0, 3.0, 3.0]]  # the hook summed without averaging
        (index, is_last, shapes, count, buffer), = seen
        assert (index, is_last, shapes, count) == (0, True, [(1, 3)], 1)
        assert buffer in ([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
        assert twice == ("register_comm_hook or register_builtin_comm_hook can only be called "
                         "once.")


def test_work_future_is_torchs_future_type():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        import ember

        future = dist.all_reduce(ember.ones(2), async_op=True).get_future()
        chained = future.then(lambda done: done.value()[0] * 2)
        assert chained.wait().tolist() == [2.0, 2.0]
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("schedule", ["GPipe", "1F1B"])
def test_pipeline_schedules_match_the_unsplit_model(schedule):
    import _tasks_surface

    first, last = world(2).run(_tasks_surface.pipeline_step, schedule)
    assert first == [True, True] or first == (True, True)
    assert tuple(last) == (True, True, True, 4)


def test_pipelining_names_torch_builds_by_tracing_are_refused():
    import torch.distributed.pipelining as theirs

    from ember.distributed import pipelining as ours
    from ember.distributed.pipelining.schedules import get_schedule_class

    assert set(theirs.__all__) <= set(dir(ours))
    assert [m for m in ours.SplitPoint.__members__] == \
        [m for m in theirs.SplitPoint.__members__]
    assert ours.pipe_split() is None
    with pytest.raises(NotImplementedError, match="split the model by hand"):
        ours.pipeline(None, ())
    with pytest.raises(NotImplementedError, match="ScheduleGPipe or Schedule1F1B"):
        ours.ScheduleInterleaved1F1B([], 4)
    assert get_schedule_class("gpipe") is ours.ScheduleGPipe
    assert theirs.schedules.get_schedule_class("gpipe").__name__ == "ScheduleGPipe"
    with pytest.raises(NotImplementedError, match="py-spy"):
        dist.debug.start_debug_server()
    from ember.distributed.flight_recorder import fr_trace

    with pytest.raises(NotImplementedError, match="flight-recorder"):
        fr_trace.main([])
