"""torch.utils.checkpoint's selective-checkpoint API and helpers, against torch."""

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as TC
from tests.conftest import to_ember

import ember
import ember.utils.checkpoint as EC


def _policy(C):
    return lambda: C.create_selective_checkpoint_contexts(
        lambda ctx, op, *args, **kwargs: C.CheckpointPolicy.PREFER_RECOMPUTE)


def test_selective_checkpoint_gradients_match_torch():
    x = torch.randn(4, 3, dtype=torch.float64)
    w = torch.randn(3, 3, dtype=torch.float64)
    grads = []
    for lib, C, xs, ws in ((torch, TC, x, w), (ember, EC, to_ember(x), to_ember(w))):
        xs = xs.clone().requires_grad_()
        out = C.checkpoint(lambda a, b, lib=lib: (a @ b).tanh().sum(), xs, ws,
                           use_reentrant=False, context_fn=_policy(C))
        out.backward()
        grads.append(xs.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-12)


def test_checkpoint_helpers_match_torch():
    assert [p.value for p in EC.CheckpointPolicy] == [p.value for p in TC.CheckpointPolicy]
    assert [p.name for p in EC.CheckpointPolicy] == [p.name for p in TC.CheckpointPolicy]
    for lib, C in ((torch, TC), (ember, EC)):
        x = lib.ones(2, requires_grad=True)
        detached = C.detach_variable((x * 2, 5))
        assert detached[0].is_leaf and detached[0].requires_grad and detached[1] == 5
        with pytest.raises(RuntimeError, match="Only tuple of tensors is supported"):
            C.detach_variable([x])
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
            C.check_backward_validity([lib.ones(1)])
        with pytest.raises(TypeError, match="policy_fn_or_list must be"):
            C.create_selective_checkpoint_contexts(3)
        assert C.get_device_states(lib.ones(1)) == ([], [])
        assert C.DefaultDeviceType.get_device_type() == "cpu"
        with C.GraphExecGroup(), pytest.raises(RuntimeError, match="cannot be nested"):
            with C.GraphExecGroup():
                pass
        with C.set_checkpoint_early_stop(False), C.set_checkpoint_debug_enabled(None):
            pass
        assert len(C.noop_context_fn()) == 2
