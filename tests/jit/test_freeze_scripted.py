"""``jit.freeze`` and ``jit.optimize_for_inference`` of modules made by ``jit.script``
(torch's common ``torch.jit.freeze(torch.jit.script(model.eval()))``), against torch."""

import numpy as np
import pytest
import torch

import ember


def _model(lib):
    class Tagger(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 4)
            self.scale = lib.nn.Parameter(lib.full((4,), 2.0))
            self.lstm = lib.nn.LSTM(4, 5, batch_first=True)

        def forward(self, x):
            y = self.lin(x)
            if bool(y.sum() > 0):
                y = y * self.scale  # read only inside a branch
            out, _ = self.lstm(y)
            return out

    return Tagger()


def _pair():
    theirs = _model(torch).eval()
    ours = _model(ember).eval()
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("shift", [5.0, -5.0])  # both branches
def test_freezing_a_scripted_module_keeps_its_results_as_torch(shift):
    ours, theirs = _pair()
    x = np.random.default_rng(0).standard_normal((2, 6, 3)).astype(np.float32) + shift
    frozen_e = ember.jit.freeze(ember.jit.script(ours))
    frozen_t = torch.jit.freeze(torch.jit.script(theirs))
    out_e, out_t = frozen_e(ember.tensor(x)), frozen_t(torch.tensor(x))
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert out_e.requires_grad is out_t.requires_grad is False
    # the branch's parameter became a constant of the graph, as in torch
    assert "scale" not in dict(frozen_e.named_parameters())
    assert "scale" not in dict(frozen_t.named_parameters())
    # freezing copies: the scripted module keeps its parameters and gradients
    assert ours.scale.requires_grad and ours.lin.weight.requires_grad


def test_freeze_keeps_preserved_attributes_and_refuses_training_mode():
    ours, _ = _pair()
    frozen = ember.jit.freeze(ember.jit.script(ours), preserved_attrs=["scale"])
    assert "scale" in dict(frozen.named_parameters())
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        ember.jit.freeze(ember.jit.script(_model(ember)))
    with pytest.raises(RuntimeError) as theirs:
        torch.jit.freeze(torch.jit.script(_model(torch)))
    assert "eval mode" in str(theirs.value)


def test_optimize_for_inference_of_a_scripted_conv_stack_matches_torch():
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                 torch.nn.ReLU()).eval()
    ours = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.BatchNorm2d(4),
                               ember.nn.ReLU()).eval()
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    out_e = ember.jit.optimize_for_inference(ember.jit.script(ours))(ember.tensor(x))
    out_t = torch.jit.optimize_for_inference(torch.jit.script(theirs))(torch.tensor(x))
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), rtol=1e-5, atol=1e-5)
