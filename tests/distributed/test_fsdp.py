"""DeviceMesh, DTensor and FSDP2's fully_shard on 2 gloo ranks, each with its share of the
batch, against torch training the same model on the full batch in one process (averaged
shard gradients are the full-batch gradient)."""

import _fsdp_tasks
import numpy as np
import pytest
from _harness import world


def torch_reference(steps, clip=None):
    """torch, one process, full batch, from the same initial weights as the ranks."""
    import torch

    net = _fsdp_tasks.make_model()
    tnet = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 4),
                               torch.nn.Tanh(), torch.nn.Linear(4, 3)).double()
    with torch.no_grad():
        for tp, p in zip(tnet.parameters(), net.parameters()):
            tp.copy_(torch.from_numpy(_fsdp_tasks.out(p)))
    opt = torch.optim.Adam(tnet.parameters(), lr=0.01)
    X, Y = (torch.from_numpy(a) for a in _fsdp_tasks.data())
    for _ in range(steps):
        opt.zero_grad()
        ((tnet(X) - Y) ** 2).mean().backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(tnet.parameters(), clip)
        opt.step()
    return {k: v.detach().numpy() for k, v in tnet.state_dict().items()}


def test_device_mesh_and_dtensor_layouts():
    results = world(2).run(_fsdp_tasks.dtensor_basics)
    x = np.arange(10.).reshape(5, 2)
    w = np.arange(12.).reshape(4, 3)
    for rank, r in enumerate(results):
        np.testing.assert_array_equal(r["local"], x[:3] if rank == 0 else x[3:])  # torch.chunk
        assert r["global_shape"] == (5, 2)
        np.testing.assert_array_equal(r["replicated"], x)
        np.testing.assert_array_equal(r["partial_full"], [3., 3.])  # 1 + 2 summed
        np.testing.assert_array_equal(r["partial_shard"], [3.])
        assert r["mesh"] == "DeviceMesh((dp=2), 'cpu', stride=(1,))"
        assert r["local_rank"] == rank
        # d(sum(w ** 2))/dw = 2 w, this rank's columns
        np.testing.assert_array_equal(r["d_grad"], 2 * (w[:, :2] if rank == 0 else w[:, 2:]))
        assert repr(r["placements"]) == "(Shard(dim=1),)"


@pytest.mark.parametrize("options,clip,accumulate", [
    ({}, None, 1),
    ({"reshard_after_forward": False}, 0.05, 1),   # clipping by the norm of the whole grads
    ({}, None, 3),                                  # no gradient sync on 2 of 3 micro-batches
])
def test_fully_shard_matches_full_batch_torch(options, clip, accumulate):
    steps = 3
    results = world(2).run(_fsdp_tasks.fsdp2_train, steps, options, clip, accumulate)
    expected = torch_reference(steps, clip)
    for rank, r in enumerate(results):
        assert r["keys"] == list(expected)
        for k in expected:
            np.testing.assert_allclose(r["params"][k], expected[k], rtol=1e-10, atol=1e-12,
                                       err_msg=k)
        assert r["class"] == "FSDPLinear" and r["is_fsdp"] and r["placements"]
        # torch.chunk shards of dim 0: rows 7 -> 4 + 3, 4 -> 2 + 2, 3 -> 2 + 1
        assert r["local_shapes"] == ([(4, 5), (4,), (2, 7), (2,), (2, 4), (2,)] if rank == 0
                                     else [(3, 5), (3,), (2, 7), (2,), (1, 4), (1,)])
