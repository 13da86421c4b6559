"""ember.distributed.rpc / .autograd / .optim on 3 spawned workers over loopback TCP.

Values are compared with torch computing the same thing in this process; exception types and
messages with what torch's RPC raises (its messages, checked by hand against torch 2.13, are
quoted here); distributed gradients and optimizer trajectories with torch's local autograd and
optimizer on the same, unsplit computation.
"""

import _rpc_tasks as tasks
import numpy as np
import pytest
from _harness import free_port, world

torch = pytest.importorskip("torch")


def error_of(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - compared by type and message
        return type(e).__name__, str(e)
    return None


def test_before_init_rpc_errors_and_defaults_are_torchs():
    """Run first, while torch's RPC and distributed autograd are not initialised here."""
    import torch.distributed.autograd as torch_dist_autograd
    import torch.distributed.rpc as torch_rpc

    import ember.distributed.autograd as ember_dist_autograd
    import ember.distributed.rpc as ember_rpc

    for ours, theirs in ((ember_rpc, torch_rpc), (ember_dist_autograd, torch_dist_autograd)):
        calls = {
            "rpc_sync": lambda m: m.rpc_sync("w", print),
            "get_worker_info": lambda m: m.get_worker_info(),
            "shutdown": lambda m: m.shutdown(),
            "RRef": lambda m: m.RRef(1),
            "bad_options": lambda m: m.init_rpc("w", rpc_backend_options=3),
        } if ours is ember_rpc else {"context": lambda m: m.context().__enter__()}
        for name, call in calls.items():
            assert error_of(lambda: call(ours)) == error_of(lambda: call(theirs)), name
    a, b = ember_rpc.TensorPipeRpcBackendOptions(), torch_rpc.TensorPipeRpcBackendOptions()
    assert (a.num_worker_threads, a.rpc_timeout, a.init_method, a.device_maps, a.devices) == \
        (b.num_worker_threads, b.rpc_timeout, b.init_method, b.device_maps, b.devices)


def run(scenario):
    """Every scenario on one world of 3 workers (rank 0 drives; spawned once per session)."""
    return world(3, init=False).run(tasks.run, free_port(), scenario, timeout=60)


def t(array, grad=False):
    return torch.tensor(array, requires_grad=grad)


def test_calls_return_what_torch_computes():
    driver, late, _ = run("calls")
    x, w, b = tasks.data(0, 3, 4), tasks.data(1, 4, 2), tasks.data(2, 2)
    expected = (t(x) @ t(w) + t(b)).numpy()
    for key in ("sync", "async", "remote"):
        np.testing.assert_allclose(driver[key], expected, rtol=1e-6, err_msg=key)
    np.testing.assert_allclose(driver["sync_kwargs"], torch.add(t(x), other=2.0, alpha=3))
    assert driver["self"] == "worker0"
    assert driver["me"] == "WorkerInfo(id=0, name=worker0)"
    assert driver["info"] == ("worker1", 1, "WorkerInfo(id=1, name=worker1)")
    assert driver["future_type"] == "ember.futures"
    assert late == "worker0"  # served although worker0 had already called shutdown()


def test_rref_semantics():
    out, *_ = run("rrefs")
    assert out["to_here"] == [0, 1, 2]
    assert out["user"] == (False, "worker1", True, True)
    assert "WorkerInfo(id=1, name=worker1)" in out["local_value_error"]
    assert out["on_owner"] == [0, 1, 2]
    assert out["fork"] == (False, "worker1", [0, 1, 2])  # a user RRef forked to worker2
    assert out["proxies"] == (7, 10, 10)
    is_owner, same_object, fetched = out["local"]
    assert is_owner and same_object
    np.testing.assert_array_equal(fetched, torch.ones(2).numpy())
    assert out["pickle_error"] == ("Can not pickle rref in python pickler, rref can only be "
                                   "pickled when using RPC")
    before, during, after = out["counts"]
    assert during == before + 1 and after == before  # the owner let go of the deleted value


def test_remote_errors_have_torchs_type_and_message():
    out, *_ = run("errors")
    for key in ("sync", "async", "remote"):
        kind, message = out[key]
        assert kind == "ValueError", key
        # torch: "On {WorkerInfo}:\n{repr(e)}\n{traceback}"
        assert message.startswith("On WorkerInfo(id=1, name=worker1):\nValueError('boom 7')\n"
                                  "Traceback (most recent call last):"), message
        assert message.rstrip().endswith("ValueError: boom 7")
    kind, message = out["odd"]
    assert kind == "RuntimeError"
    assert message.startswith("Failed to create original exception type.")
    assert out["timeout"] == ("RuntimeError", "RPCErr:1:RPC ran for more than set timeout "
                                              "(200 ms) and will now be marked with an error")
    assert out["unknown"] == ("RuntimeError",
                              "name:worker0,rank:0 could not find destination name nobody")
    assert out["not_callable"] == ("TypeError", "function should be callable.")
    assert out["no_context"] == ("RuntimeError",
                                 "Could not find autograd context with id: 12345")
    assert out["nested"] == ("RuntimeError",
                             "Already have an autograd context id for this thread.")
    assert out["not_scalar"][1].endswith("is not a scalar, all roots need to be scalar")
    assert out["no_grad"] == ("RuntimeError", "requires_grad not set on root")


def test_async_execution():
    (direct, pushed, remote_sum), *_ = run("async")
    np.testing.assert_array_equal(direct, (torch.ones(2) + 4).numpy())
    assert pushed == [30, 30]  # both callers answered once the second update arrived
    assert remote_sum == 3


def torch_split_forward(w1, w2, w_local, x):
    """The same computation as tasks.split_forward, in one torch process."""
    h1 = torch.tanh(x @ w1)
    h2 = torch.sigmoid(h1 @ w_local)
    out = h2 @ w2
    again = (h2 * 2) @ w2
    return (out ** 2).mean() + 0.1 * h1.sum() + again.sum()


def torch_params():
    return (t(tasks.data(10, 4, 3), True), t(tasks.data(11, 3, 2), True),
            t(tasks.data(12, 3, 3), True))


def test_dist_autograd_matches_local_autograd():
    out, *_ = run("autograd")
    w1, w2, w_local = torch_params()
    loss = torch_split_forward(w1, w2, w_local, t(tasks.data(13, 5, 4)))
    loss.backward()
    assert out["loss"] == pytest.approx(loss.item(), rel=1e-6)
    for name, param in (("w1", w1), ("w2", w2), ("w_local", w_local)):
        np.testing.assert_allclose(out[name], param.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    assert out["keys"] == 1          # the trainer's context holds its own leaf only
    assert out["dot_grad"] is None   # distributed backward leaves .grad alone
    assert out["left"] == (0, 0)     # leaving the context released it on both workers


def test_distributed_optimizer_follows_local_optimizer():
    out, *_ = run("optimizer")
    w1, w2, w_local = torch_params()
    x = t(tasks.data(13, 5, 4))
    opt = torch.optim.SGD([w1, w2, w_local], lr=0.05, momentum=0.9)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = torch_split_forward(w1, w2, w_local, x)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(out["losses"], losses, rtol=1e-5)
    for name, param in (("w1", w1), ("w2", w2), ("w_local", w_local)):
        np.testing.assert_allclose(out[name], param.detach().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_values_travel_as_in_torch():
    ours, *_ = run("values")
    options = torch.distributed.rpc.TensorPipeRpcBackendOptions(
        init_method=f"tcp://127.0.0.1:{free_port()}")
    torch.distributed.rpc.init_rpc("solo", rank=0, world_size=1, rpc_backend_options=options)
    try:
        theirs = tasks.travel(torch, torch.distributed.rpc, "solo")
    finally:
        torch.distributed.rpc.shutdown()
    assert ours == theirs


def test_rpc_beside_a_process_group_on_the_same_port():
    results = world(3, init=False).run(tasks.run_beside_process_group, free_port(), timeout=60)
    assert results == [("worker1", 6.0), ("worker2", 6.0), ("worker0", 6.0)]


def test_rref_backward_runs_distributed_backward_on_the_owner():
    (w1_grad, x_grad), *_ = run("rref_backward")
    w1, _, _ = torch_params()
    x = t(tasks.data(13, 5, 4), True)
    torch.tanh(x @ w1).sum().backward()
    np.testing.assert_allclose(w1_grad, w1.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x_grad, x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_remote_module_trains_like_a_local_module():
    out, *_ = run("remote_module")
    lin = torch.nn.Linear(4, 2)
    with torch.no_grad():
        lin.weight.copy_(t(out["start"][0]))
        lin.bias.copy_(t(out["start"][1]))
    x, target = t(tasks.data(20, 6, 4)), t(tasks.data(21, 6, 2))
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = ((lin(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(out["losses"], losses, rtol=1e-5)
    np.testing.assert_allclose(out["end"][0], lin.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["end"][1], lin.bias.detach().numpy(), rtol=1e-5, atol=1e-6)
    expected = lin(x).detach().numpy()
    np.testing.assert_allclose(out["async"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["elsewhere"], expected, rtol=1e-5, atol=1e-6)
    assert out["errors"] == {
        "parameters": "Method ``parameters`` not supported for RemoteModule. Please use "
                      "``remote_parameters`` instead.",
        "to": "Method ``to`` not supported for RemoteModule"}
    assert out["on"] == ("worker1", "cpu")
