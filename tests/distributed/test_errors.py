"""Argument errors of ember.distributed against torch.distributed's exception types (both with
a one-rank gloo group in this process: these checks never need another rank)."""

import datetime

import pytest
import torch
import torch.distributed as tdist

import ember
import ember.distributed as edist

NOT_INIT = ("Default process group has not been initialized, please make sure to call "
            "init_process_group.")


@pytest.mark.parametrize("call", [
    lambda d, T: d.all_reduce(T.ones(2)),
    lambda d, T: d.get_rank(),
    lambda d, T: d.get_world_size(),
    lambda d, T: d.barrier(),
    lambda d, T: d.new_group([0]),
    lambda d, T: d.broadcast(T.ones(2), src=0),
])
def test_before_init(call):
    assert not edist.is_initialized()
    with pytest.raises(ValueError) as theirs:
        call(tdist, torch)
    with pytest.raises(ValueError, match="has not been initialized") as ours:
        call(edist, ember)
    assert str(ours.value) == NOT_INIT == str(theirs.value)


def test_distributed_sampler_before_init():
    import torch.utils.data as tdata

    import ember.utils.data as edata

    with pytest.raises(ValueError) as theirs:
        tdata.DistributedSampler(range(4))
    with pytest.raises(ValueError) as ours:
        edata.DistributedSampler(range(4))
    assert str(ours.value) == str(theirs.value)
    # explicit arguments need no process group
    assert list(edata.DistributedSampler(range(4), 2, 1, shuffle=False)) == [1, 3]


def test_ddp_before_init():
    with pytest.raises(ValueError, match="has not been initialized"):
        ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, 2))


def test_init_needs_world_size_with_store():
    with pytest.raises(AssertionError) as theirs:
        tdist.init_process_group("gloo", store=tdist.HashStore())
    with pytest.raises(type(theirs.value), match="world_size"):
        edist.init_process_group("gloo", store=edist.HashStore())
    assert not edist.is_initialized()


def test_env_init_needs_variables(monkeypatch):
    for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError) as theirs:
        tdist.init_process_group("gloo", init_method="env://",
                                 timeout=datetime.timedelta(seconds=1))
    with pytest.raises(ValueError, match="RANK expected") as ours:
        edist.init_process_group("gloo", init_method="env://")
    assert str(ours.value) == str(theirs.value)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ValueError) as theirs:
        tdist.init_process_group("gloo", init_method="env://")
    with pytest.raises(ValueError, match="MASTER_ADDR expected") as ours:
        edist.init_process_group("gloo", init_method="env://")
    assert str(ours.value) == str(theirs.value)
    assert not edist.is_initialized()


@pytest.fixture(scope="module")
def single():
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    edist.init_process_group("gloo", store=edist.HashStore(), rank=0, world_size=1)
    yield
    edist.destroy_process_group()
    tdist.destroy_process_group()


CASES = {
    "not a tensor": lambda d, T: d.all_reduce([1, 2]),
    "band float": lambda d, T: d.all_reduce(T.ones(2), op=d.ReduceOp.BAND),
    "avg int": lambda d, T: d.all_reduce(T.ones(2, dtype=T.int64), op=d.ReduceOp.AVG),
    "avg bool": lambda d, T: d.all_reduce(T.ones(2, dtype=T.bool), op=d.ReduceOp.AVG),
    "bxor float": lambda d, T: d.all_reduce(T.ones(2, dtype=T.float64), op=d.ReduceOp.BXOR),
    "all_gather list length": lambda d, T: d.all_gather([T.ones(2), T.ones(2)], T.ones(2)),
    "all_gather size": lambda d, T: d.all_gather([T.ones(3)], T.ones(2)),
    "all_gather dtype": lambda d, T: d.all_gather([T.ones(2, dtype=T.float64)], T.ones(2)),
    "all_gather_into_tensor size": lambda d, T: d.all_gather_into_tensor(T.ones(3), T.ones(2)),
    "broadcast root": lambda d, T: d.broadcast(T.ones(2), src=3),
    "reduce root": lambda d, T: d.reduce(T.ones(2), dst=2),
    "scatter list missing": lambda d, T: d.scatter(T.ones(2), None, src=0),
    "gather list size": lambda d, T: d.gather(T.ones(2), [T.ones(3)], dst=0),
    "send to self": lambda d, T: d.send(T.ones(2), dst=0),
    "new_group too big": lambda d, T: d.new_group([0, 3]),
    "init twice": lambda d, T: d.init_process_group("gloo", store=d.HashStore(), rank=0,
                                                    world_size=1),
    "bad init backend": lambda d, T: d.init_process_group("foo", store=d.HashStore(), rank=0,
                                                          world_size=1),
}


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("name", list(CASES))
def test_error_types_match_torch(single, name):
    call = CASES[name]
    with pytest.raises(Exception) as theirs:
        call(tdist, torch)
    with pytest.raises(type(theirs.value)):
        call(edist, ember)


def test_single_rank_collectives_match_torch(single):
    for op in ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]:
        a, b = torch.arange(4.0), ember.arange(4.0)
        tdist.all_reduce(a, op=getattr(tdist.ReduceOp, op))
        edist.all_reduce(b, op=getattr(edist.ReduceOp, op))
        assert b.tolist() == a.tolist()
    a, b = torch.tensor([True, False]), ember.tensor([True, False])
    tdist.all_reduce(a)
    edist.all_reduce(b)
    assert b.tolist() == a.tolist() and b.dtype == ember.bool
    assert str(edist.get_backend()) == str(tdist.get_backend()) == "gloo"
    assert edist.get_rank() == tdist.get_rank() == 0
    assert edist.is_initialized() and edist.is_available()
    assert repr(edist.ReduceOp.SUM) == repr(tdist.ReduceOp.SUM)
    g = edist.new_group([0])
    assert (edist.get_rank(g), edist.get_world_size(g)) == (0, 1)
    w = edist.all_reduce(ember.ones(2), async_op=True)
    assert w.wait() is True and w.is_completed() and w.is_success()
    assert edist.barrier() is None


@pytest.mark.parametrize("name", [
    "init_process_group", "destroy_process_group", "new_group", "get_rank", "get_world_size",
    "get_backend", "barrier", "broadcast", "all_reduce", "reduce", "all_gather",
    "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
    "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv",
    "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
])
def test_signatures_match_torch(name):
    import inspect

    ours = inspect.signature(getattr(edist, name)).parameters
    theirs = inspect.signature(getattr(tdist, name)).parameters
    # torch's parameters, in torch's order (torch's private ``_ranks`` aside), same defaults
    theirs = {k: v for k, v in theirs.items() if not k.startswith("_")}
    assert list(ours)[:len(theirs)] == list(theirs)
    for k, p in theirs.items():
        if p.default is not inspect.Parameter.empty and not k.endswith("op") and k != "timeout":
            assert ours[k].default == p.default, k


def test_ddp_signature_matches_torch():
    import inspect

    ours = list(inspect.signature(ember.nn.parallel.DistributedDataParallel).parameters)
    theirs = list(inspect.signature(torch.nn.parallel.DistributedDataParallel).parameters)
    assert ours[:11] == theirs[:11]
