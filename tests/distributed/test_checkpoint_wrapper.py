"""Activation-checkpointing wrappers against torch's: names, gradients, state dicts."""

import numpy as np
import pytest
import torch
import torch.distributed.algorithms._checkpoint.checkpoint_wrapper as tcw

import ember
import ember.distributed.algorithms._checkpoint.checkpoint_wrapper as ecw


def build(lib, cw, impl):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 6), nn.Sequential(nn.Linear(6, 6), nn.Tanh()),
                          nn.Linear(6, 2)).double()
    cw.apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=lambda m: cw.checkpoint_wrapper(
            m, checkpoint_impl=getattr(cw.CheckpointImpl, impl)),
        check_fn=lambda m: isinstance(m, nn.Linear))
    return model


@pytest.mark.parametrize("impl", ["NO_REENTRANT", "REENTRANT"])
def test_wrapped_model_matches_torch(impl):
    e, t = build(ember, ecw, impl), build(torch, tcw, impl)
    with torch.no_grad():  # the same weights
        for tp, ep in zip(t.parameters(), e.parameters()):
            tp.copy_(torch.from_numpy(ep.detach().numpy().copy()))
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e[0]).__name__ == type(t[0]).__name__ == "CheckpointWrapper"
    x = np.random.default_rng(0).normal(size=(3, 4))
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    (e(xe) ** 2).sum().backward()
    (t(xt) ** 2).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    for (name, ep), (_, tp) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-12, err_msg=name)
    # state dicts load back through the wrappers, in both directions
    e.load_state_dict({k: ember.tensor(v.numpy()) * 2 for k, v in t.state_dict().items()})
    np.testing.assert_array_equal(e[0].weight.detach().numpy(), 2 * t[0].weight.detach().numpy())
