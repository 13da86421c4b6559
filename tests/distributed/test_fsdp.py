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
    import ember
    from ember.distributed.tensor import Shard

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
        # factories: the whole tensor after one seed, cut to this rank's piece
        ember.manual_seed(0)
        np.testing.assert_array_equal(r["noise"], ember.randn(5, 2).numpy())
        assert r["noise_local"] == ((3, 2) if rank == 0 else (2, 2))
        np.testing.assert_array_equal(r["ones"][0], np.ones((5, 1)))
        assert r["ones"][1] == (Shard(1),)


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
        # as torch: Adam's moments of a sharded parameter are DTensors, its step is not
        assert r["state_types"] == {"step": "Tensor", "exp_avg": "DTensor",
                                    "exp_avg_sq": "DTensor"}
        assert r["like"] == "DTensor"
        # unshard() puts the whole (plain) parameter in the module, reshard() the shard
        assert r["gathered"] == ((7, 5), "Parameter")
        assert r["resharded"] == ((4, 5) if rank == 0 else (3, 5))
        # torch.chunk shards of dim 0: rows 7 -> 4 + 3, 4 -> 2 + 2, 3 -> 2 + 1
        assert r["local_shapes"] == ([(4, 5), (4,), (2, 7), (2,), (2, 4), (2,)] if rank == 0
                                     else [(3, 5), (3,), (2, 7), (2,), (1, 4), (1,)])


def test_checkpoint_save_on_2_load_on_2_and_on_1(tmp_path):
    import ember
    from ember.distributed.checkpoint.state_dict import get_model_state_dict

    path = str(tmp_path / "ckpt")
    saved = world(2).run(_fsdp_tasks.dcp_save, path, 2, 2)
    at_save, after = saved[0][0], saved[0][1]
    assert saved[0][2] == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    expected = torch_reference(4)
    for k in expected:  # the uninterrupted run is torch's
        np.testing.assert_allclose(after[k], expected[k], rtol=1e-10, atol=1e-12, err_msg=k)
    # 2 ranks: a differently initialised model and optimiser (lr 0.5) resume exactly
    for loaded, resumed, lr in world(2).run(_fsdp_tasks.dcp_load, path, 2):
        for k in expected:
            np.testing.assert_array_equal(loaded[k], at_save[k])
            np.testing.assert_allclose(resumed[k], expected[k], rtol=1e-10, atol=1e-12)
        assert lr == 0.01
    # 1 process, no process group: an ordinary model on the full batch resumes exactly
    model = _fsdp_tasks.make_model(seed=7)
    opt = ember.optim.Adam(model.parameters(), lr=0.5)
    _fsdp_tasks.dcp_resume(model, opt, path, no_dist=True)
    loaded = get_model_state_dict(model)
    for k in expected:
        np.testing.assert_array_equal(_fsdp_tasks.out(loaded[k]), at_save[k])
    _fsdp_tasks.train_steps(model, opt, *_fsdp_tasks.data(), 2)
    for k, v in _fsdp_tasks.full_params(model).items():
        np.testing.assert_allclose(v, expected[k], rtol=1e-10, atol=1e-12, err_msg=k)


def test_full_state_dict_gathers_shards():
    expected = _fsdp_tasks.full_params(_fsdp_tasks.make_model())
    (full0, off0), (full1, off1) = world(2).run(_fsdp_tasks.full_state_dict)
    for k in expected:
        np.testing.assert_array_equal(full0[k], expected[k])
        np.testing.assert_array_equal(full1[k], expected[k])
    assert off0 == list(expected) and off1 == []  # cpu_offload: rank 0 only, as torch


@pytest.mark.parametrize("device_id", ["cpu", "cpu:0"])
def test_init_process_group_rejects_a_cpu_device_id(device_id):
    import torch
    import torch.distributed as tdist

    import ember
    import ember.distributed as dist

    for lib, d in ((tdist, torch.device(device_id)), (dist, ember.device(device_id))):
        store = lib.HashStore()
        with pytest.raises(ValueError, match="must be an accelerator with an index"):
            lib.init_process_group("gloo", store=store, rank=0, world_size=1, device_id=d)
        if lib.is_initialized():
            lib.destroy_process_group()
    assert not dist.is_initialized()


@pytest.mark.parametrize("policy,clip,accumulate,units", [
    ("module", None, 1, 4),    # the root and its 3 Linear layers
    ("size", 0.05, 1, 3),      # layers of >= 30 parameters: 0 (42) and 2 (32), not 4 (15)
    (None, None, 2, 1),        # one unit; no_sync on the first micro-batch
])
def test_fsdp1_matches_full_batch_torch(policy, clip, accumulate, units):
    steps = 3
    results = world(2).run(_fsdp_tasks.fsdp1_train, steps, policy, clip, accumulate)
    expected = torch_reference(steps, clip)
    for rank, r in enumerate(results):
        assert list(r["full"]) == list(expected)  # FULL_STATE_DICT: clean names, whole tensors
        for k in expected:
            np.testing.assert_allclose(r["full"][k], expected[k], rtol=1e-10, atol=1e-12,
                                       err_msg=k)
        assert r["sharded"]["0.weight"] == ("DTensor", (4, 5) if rank == 0 else (3, 5))
        assert r["summoned"] == (7, 5)
        assert r["units"] == units
        assert r["optim_keys"] == sorted(expected)
        assert r["exp_avg_shape"] == (7, 5)   # FULL optimiser state: whole tensors


def test_fully_shard_meta_model_loaded_with_assign_trains_as_torch():
    steps = 2
    expected = torch_reference(steps)
    for params, kinds in world(2).run(_fsdp_tasks.fsdp2_meta_load, steps):
        assert kinds == {("DTensorParameter", True, True)}  # nn.Parameter(DTensor) stays one
        for k in expected:
            np.testing.assert_allclose(params[k], expected[k], rtol=1e-10, atol=1e-12,
                                       err_msg=k)


def torch_tp_reference(steps):
    import torch

    net = _fsdp_tasks.tp_model()
    tnet = torch.nn.Sequential(torch.nn.Linear(5, 5), torch.nn.Linear(5, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 3)).double()
    with torch.no_grad():
        for tp, p in zip(tnet.parameters(), net.parameters()):
            tp.copy_(torch.from_numpy(_fsdp_tasks.out(p)))
    opt = torch.optim.Adam(tnet.parameters(), lr=0.01)
    X, Y = (torch.from_numpy(a) for a in _fsdp_tasks.data())
    for _ in range(steps):
        opt.zero_grad()
        ((tnet(X) - Y) ** 2).mean().backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in tnet.state_dict().items()}


@pytest.mark.parametrize("gather_colwise", [False, True])
def test_tensor_parallel_mlp_matches_torch(gather_colwise):
    steps = 3
    expected = torch_tp_reference(steps)
    for params, layouts in world(2).run(_fsdp_tasks.tp_train, steps, gather_colwise):
        for k in expected:
            np.testing.assert_allclose(params[k], expected[k], rtol=1e-10, atol=1e-12,
                                       err_msg=k)
        assert {k: repr(v) for k, v in layouts.items()} == {
            "1.weight": "(Shard(dim=0),)", "1.bias": "(Shard(dim=0),)",
            "3.weight": "(Shard(dim=1),)", "3.bias": "(Replicate(),)"}


def test_distributed_nn_functional_gradients_match_torch():
    from _harness import free_port

    ours = world(2).run(_fsdp_tasks.dnn_grads, "ember")
    theirs = world(2).run(_fsdp_tasks.torch_dnn_grads, free_port())
    for rank in range(2):
        assert list(ours[rank]) == list(theirs[rank])
        for name, (value, grad) in theirs[rank].items():
            if not (name == "reduce" and rank != 0):  # (torch leaves non-dst values undefined)
                assert ours[rank][name][0] == pytest.approx(value, rel=1e-12), (rank, name)
            np.testing.assert_allclose(ours[rank][name][1], grad, rtol=1e-12,
                                       err_msg=f"rank {rank} {name}")


def test_torch_paths_of_the_distributed_packages():
    import importlib

    import torch.distributed as tdist

    import ember.distributed as dist

    for name in ("fsdp", "tensor", "checkpoint", "nn", "algorithms", "launch", "_tensor"):
        assert getattr(dist, name).__name__ == f"ember.distributed.{name}"  # on first use
        importlib.import_module(f"torch.distributed.{name}")
    assert dist.DeviceMesh is dist.device_mesh.DeviceMesh and hasattr(tdist, "DeviceMesh")
    for path in ("_tensor.device_mesh", "tensor", "tensor.parallel", "device_mesh", "launch",
                 "checkpoint.state_dict", "checkpoint.default_planner", "fsdp.wrap",
                 "algorithms._checkpoint.checkpoint_wrapper", "nn.functional"):
        ours = importlib.import_module(f"ember.distributed.{path}")
        theirs = importlib.import_module(f"torch.distributed.{path}")
        public = [n for n in getattr(theirs, "__all__", []) if not n.startswith("_")]
        assert [n for n in public if not hasattr(ours, n)] == [], path


def test_fully_shard_mixed_precision_matches_torch_fsdp2():
    from _harness import free_port

    ours = world(2).run(_fsdp_tasks.fsdp2_mixed_precision, 3, "ember")
    theirs = world(2).run(_fsdp_tasks.fsdp2_mixed_precision, 3, "torch", free_port())
    for (params, pred, compute, grad), (tparams, tpred, tcompute, tgrad) in zip(ours, theirs):
        assert (pred, grad) == (tpred.replace("torch", "ember"), tgrad.replace("torch", "ember"))
        assert compute == tcompute.replace("torch", "ember")
        for k in tparams:  # float32 compute: equal to float32 rounding
            np.testing.assert_allclose(params[k], tparams[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_device_mesh_2d_groups_and_slices():
    for rank, r in enumerate(world(2).run(_fsdp_tasks.mesh_2d)):
        assert r["tp_sum"] == 3.0 and r["dp_sum"] == rank + 1  # dp groups hold one rank
        assert r["coordinate"] == (0, rank) and r["local"] == (0, rank)
        assert r["sizes"] == (2, 2, 1, (1, 2))
        assert "mesh_dim` needs to be specified" in r["error"]
        assert r["repr"] == "DeviceMesh((dp=1, tp=2), 'cpu', stride=(2, 1))"
        assert r["sub"] == [0, 1]


@pytest.mark.parametrize("shape,names,message", [
    ((2,), ("a", "b"), "mesh_shape and mesh_dim_names should have same length"),
    ((1, 2), ("a", "a"), "Each mesh_dim_name must be unique"),
])
def test_init_device_mesh_argument_errors_as_torch(shape, names, message):
    from torch.distributed.device_mesh import init_device_mesh as torch_init

    from ember.distributed.device_mesh import init_device_mesh

    for fn in (torch_init, init_device_mesh):
        with pytest.raises(RuntimeError, match=message):
            fn("cpu", shape, mesh_dim_names=names)


def test_fully_shard_under_activation_checkpointing_matches_torch():
    steps = 3
    expected = torch_reference(steps)
    for params, first_name in world(2).run(_fsdp_tasks.fsdp2_checkpointed, steps):
        assert first_name == ["0._checkpoint_wrapped_module.weight"]  # as torch's
        assert list(params) == list(expected)
        for k in expected:
            np.testing.assert_allclose(params[k], expected[k], rtol=1e-10, atol=1e-12,
                                       err_msg=k)
