"""nn.parallel's helper modules and torch.cuda's CUDA-only names, against torch and closed
forms (split/concatenate/sum) on a machine without a GPU."""

import numpy as np
import pytest
import torch
from tests.conftest import to_ember

import ember
import ember.cuda.amp.autocast_mode
import ember.cuda.amp.grad_scaler
from ember.nn.parallel import comm, gather, parallel_apply, replicate, scatter
from ember.nn.parallel.parallel_apply import get_a_var
from ember.nn.parallel.scatter_gather import scatter_kwargs


def test_comm_split_join_and_sum_match_torch_ops():
    x = torch.arange(10.0).reshape(5, 2)
    e = to_ember(x)
    for got, want in zip(comm.scatter(e, ["cpu", "cpu"]), x.chunk(2)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for got, want in zip(comm.scatter(e, ["cpu", "cpu"], chunk_sizes=[1, 4], dim=0),
                         x.split([1, 4])):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(comm.gather(list(comm.scatter(e, ["cpu"] * 3)), 0, -1).numpy(),
                                  x.numpy())
    np.testing.assert_array_equal(comm.reduce_add([e, e, e], -1).numpy(), (3 * x).numpy())
    copies = comm.broadcast(e, ["cpu", "cpu"])
    assert copies[0] is not e and np.array_equal(copies[1].numpy(), x.numpy())
    with pytest.raises(ValueError, match="invalid size"):
        comm.reduce_add([e, e[:2]], -1)


def test_replicate_scatter_apply_gather_equals_the_module_and_its_gradient():
    torch.manual_seed(0)
    t_net = torch.nn.Linear(3, 2)
    net = ember.nn.Linear(3, 2)
    net.load_state_dict({k: to_ember(v) for k, v in t_net.state_dict().items()})
    x = torch.randn(5, 3)
    replicas = replicate(net, ["cpu", "cpu"])
    inputs, kwargs = scatter_kwargs((to_ember(x),), {}, ["cpu", "cpu"])
    outputs = parallel_apply(replicas, inputs, kwargs)
    y = gather(outputs, -1)
    t_y = t_net(x)
    np.testing.assert_allclose(y.detach().numpy(), t_y.detach().numpy(), atol=1e-6)
    y.sum().backward()
    t_y.sum().backward()
    np.testing.assert_allclose(net.weight.grad.numpy(), t_net.weight.grad.numpy(), atol=1e-5)
    assert get_a_var([1, {"k": to_ember(x)}]) is not None
    assert scatter({"a": 1}, ["cpu", "cpu"]) == [{"a": 1}, {"a": 1}]


def test_cuda_only_names_fail_like_torchs_cpu_build():
    for name in ("current_blas_handle", "get_sync_debug_mode", "caching_allocator_alloc"):
        with pytest.raises(AssertionError):
            getattr(torch.cuda, name)(*([1] if name == "caching_allocator_alloc" else []))
        with pytest.raises(AssertionError):
            getattr(ember.cuda, name)(*([1] if name == "caching_allocator_alloc" else []))
    for name in ("temperature", "utilization", "power_draw"):
        with pytest.raises(ModuleNotFoundError) as expected:
            getattr(torch.cuda, name)()
        with pytest.raises(ModuleNotFoundError, match=str(expected.value)[:30]):
            getattr(ember.cuda, name)()
    for name in ("host_memory_stats", "host_memory_stats_as_nested_dict",
                 "memory_stats_as_nested_dict", "list_gpu_processes", "is_tf32_supported"):
        assert getattr(ember.cuda, name)() == getattr(torch.cuda, name)()
    assert (ember.cuda.has_half, ember.cuda.has_magma) == (torch.cuda.has_half,
                                                           torch.cuda.has_magma)
    assert ember.cuda.cudaStatus.ERROR_NOT_READY == torch.cuda.cudaStatus.ERROR_NOT_READY
    assert ember.cuda.amp.common.amp_definitely_not_available() == \
        torch.cuda.amp.common.amp_definitely_not_available()
    assert not ember.cuda.nccl.is_available([ember.ones(1)])
