"""DistributedDataParallel on 2 (and 3) gloo ranks, each with its share of the batch, against a
single process training on the full batch (averaged gradients of the mean loss are the
full-batch gradient), and against torch's own gloo DDP on the same setup."""

import _tasks
import numpy as np
import pytest
from _harness import free_port, world

import ember


def reference(steps, optimizer="sgd", unused=False, n_rows=12):
    net = _tasks.make_net(100, unused)  # rank 0's initial weights
    opt = (ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9) if optimizer == "sgd"
           else ember.optim.Adam(net.parameters(), lr=0.01))
    X, Y = _tasks.ddp_data(n_rows)
    _tasks.train(net, opt, X, Y, steps, use_extra=lambda step: unused and step % 2 == 1)
    return _tasks.params_of(net)


def assert_params_close(a, b, rtol=1e-10):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("n,options,optimizer", [
    (2, {}, "sgd"),
    (2, {"bucket_cap_mb": 0.0005}, "adam"),  # several buckets
    (3, {"bucket_cap_mb": 0.001, "gradient_as_bucket_view": True}, "sgd"),
])
def test_ddp_matches_full_batch(n, options, optimizer):
    steps = 4
    results = world(n).run(_tasks.ddp_train, steps, options, optimizer)
    expected = reference(steps, optimizer)
    for params, _, keys, buckets, views in results:
        assert_params_close(params, expected)
        assert keys == ["module.fc1.weight", "module.fc1.bias", "module.fc2.weight",
                        "module.fc2.bias"]
        if options.get("bucket_cap_mb"):
            assert buckets > 1
        assert all(views) == bool(options.get("gradient_as_bucket_view"))
    for params, *_ in results[1:]:  # the same bits on every rank
        for k in params:
            assert params[k].tobytes() == results[0][0][k].tobytes()


def test_ddp_find_unused_parameters():
    steps = 4
    options = {"find_unused_parameters": True, "bucket_cap_mb": 0.0003}
    results = world(2).run(_tasks.ddp_train, steps, options, "sgd", True)
    expected = reference(steps, "sgd", unused=True)
    for params, grads, *_ in results:
        assert_params_close(params, expected)
        # the last step (odd) used the extra layer: it has a gradient
        assert grads["extra.weight"] is not None


def test_ddp_unused_parameter_without_detection_raises():
    messages = world(2).run(_tasks.ddp_unused_error)
    for m in messages:
        assert m is not None and "find_unused_parameters=True" in m


def test_no_sync_accumulates_locally():
    n = 2
    results = world(n).run(_tasks.ddp_no_sync)
    X, Y = _tasks.ddp_data()
    rows = len(X) // n
    half = rows // 2

    def grads_of(parts):
        net = _tasks.make_net(0)
        for x, y in parts:
            ((net(ember.tensor(x)) - ember.tensor(y)) ** 2).mean().backward()
        return {k: p.grad.numpy() for k, p in net.named_parameters()}

    per_rank_total = []
    for rank, (local, _) in enumerate(results):
        lx, ly = X[rank * rows:(rank + 1) * rows], Y[rank * rows:(rank + 1) * rows]
        assert_params_close(local, grads_of([(lx[:half], ly[:half])]))
        per_rank_total.append(grads_of([(lx[:half], ly[:half]), (lx[half:], ly[half:])]))
    average = {k: (per_rank_total[0][k] + per_rank_total[1][k]) / 2 for k in per_rank_total[0]}
    for _, synced in results:
        assert_params_close(synced, average)


@pytest.mark.parametrize("broadcast_buffers", [True, False])
def test_ddp_buffers(broadcast_buffers):
    (s0, p0), (s1, p1) = world(2).run(_tasks.ddp_buffers, broadcast_buffers)
    np.testing.assert_array_equal(s0[0], np.full(4, 1.0))  # rank 0's buffer everywhere
    np.testing.assert_array_equal(s1[0], np.full(4, 1.0))
    for k in p0:  # and rank 0's parameters
        np.testing.assert_array_equal(p0[k], p1[k])
    momentum = 0.1
    for rank, states in enumerate([s0, s1]):
        for step in range(2):
            x = np.random.default_rng([step, rank]).normal(size=(6, 3))
            batch_mean = (x @ p0["0.weight"].T + p0["0.bias"]).mean(0)
            # each forward starts from rank 0's buffers when they are broadcast
            start = [s0, s1][0 if broadcast_buffers else rank][step]
            np.testing.assert_allclose(states[step + 1],
                                       (1 - momentum) * start + momentum * batch_mean,
                                       rtol=1e-12)
    assert not np.array_equal(s0[2], s1[2])


def test_ddp_matches_torch_gloo_ddp():
    steps = 3
    results = world(2).run(_tasks.torch_ddp_compare, free_port(), steps)
    for ours, theirs, keys, their_keys in results:
        assert keys == ["module.fc1.weight", "module.fc1.bias", "module.fc2.weight",
                        "module.fc2.bias"]
        assert their_keys == ["module.0.weight", "module.0.bias", "module.2.weight",
                              "module.2.bias"]
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
