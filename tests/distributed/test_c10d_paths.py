"""torch.distributed's remaining c10d names, run on gloo worlds and checked in closed form
(object transfer round-trips; sums and gathers of known inputs), plus the local queries
against torch."""

import warnings

import pytest
import torch.distributed as tdist
from _harness import world

import ember.distributed as dist


def test_send_and_recv_object_list_round_trip():
    results = world(2).run(_tasks_paths().objects_point_to_point)
    assert results[1] == [{"step": 3}, "text"]


def test_subgroups_coalesced_and_single_collectives():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        results = world(4).run(_tasks_paths().subgroups_and_coalesced)
    for rank, (members, reduced, gathered, count) in enumerate(results):
        pair = [rank - rank % 2, rank - rank % 2 + 1]
        assert members == pair and count == 2
        assert reduced == [[float(sum(pair))] * 2, [float(sum(pair) + 2)]]
        assert gathered == [float(pair[0])] * 2 + [float(pair[1])] * 2


def _tasks_paths():
    import _tasks_paths
    return _tasks_paths


def test_local_queries_match_torch(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    for D in (tdist, dist):
        assert D.get_node_local_rank(fallback_rank=2) == 2
        with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
            D.get_node_local_rank()
        assert [D.supports_complex(op) for op in (D.ReduceOp.SUM, D.ReduceOp.MAX,
                                                   D.ReduceOp.PRODUCT)] == [True, False, False]
        assert D.is_backend_available("gloo") and not D.is_ucc_available()
        assert [m for m in D.DebugLevel.__members__] == ["OFF", "INFO", "DETAIL"]
    monkeypatch.setenv("LOCAL_RANK", "5")
    assert dist.get_node_local_rank() == tdist.get_node_local_rank() == 5
