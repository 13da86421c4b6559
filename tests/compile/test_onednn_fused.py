"""Inference convolutions with their bias, residual and ReLU fused into one oneDNN primitive
(``nn/_functional/_onednn_fused.py``), as ember.compile's inference passes use them: against
torch's convolution, and a compiled ResNet-style model against eager ember and torch, also
after its weights change in place."""

import itertools

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same
from ember.nn._functional import _onednn
from ember.nn._functional._onednn_fused import conv_bias_sum_relu

pytestmark = pytest.mark.skipif(not _onednn.available(),
                                reason="oneDNN (the onednn-cpu-gomp wheel) is not installed")

GEOMETRIES = [  # x shape, w shape, stride, padding
    ((2, 3, 9, 9), (8, 3, 3, 3), (1, 1), (1, 1)),
    ((2, 8, 10, 10), (16, 8, 3, 3), (2, 2), (1, 1)),
    ((3, 4, 7, 7), (6, 4, 1, 1), (2, 2), (0, 0)),
    ((2, 4, 11), (5, 4, 3), (1,), (2,)),
    ((1, 2, 5, 5, 5), (3, 2, 2, 2, 2), (1, 1, 1), (0, 0, 0)),
]


@pytest.mark.parametrize("geometry,with_bias,with_residual,relu",
                         [(g, *flags) for g in GEOMETRIES
                          for flags in itertools.product((False, True), repeat=3)])
def test_fused_step_matches_torch(geometry, with_bias, with_residual, relu):
    x_shape, w_shape, stride, padding = geometry
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    conv = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d,
            5: torch.nn.functional.conv3d}[len(x_shape)]
    want = conv(torch.from_numpy(x), torch.from_numpy(w),
                torch.from_numpy(b) if with_bias else None, stride=stride, padding=padding)
    residual = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    if with_residual:
        want = want + torch.from_numpy(residual)
    if relu:
        want = want.relu()
    for key in (None, "same weight", "same weight"):  # the last call reuses the reorder
        got = conv_bias_sum_relu(x, w, b if with_bias else None,
                                 residual if with_residual else None, relu, stride=stride,
                                 padding=tuple((p, p) for p in padding),
                                 dilation=(1,) * len(stride), groups=1, weight_key=key)
        assert_same(ember.tensor(got), want, rtol=1e-4, atol=1e-4)


def _resnet(nn, bias):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(4, 4, 3, padding=1, bias=bias), nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=bias)

        def forward(self, x):
            y = nn.functional.relu(self.bn1(self.conv1(x)))
            return nn.functional.relu(x + self.conv2(y))
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=bias), nn.ReLU(), Block(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5)).eval()


@pytest.mark.parametrize("bias", [False, True])
def test_compiled_resnet_inference_matches_eager_and_torch_after_weight_changes(bias,
                                                                              monkeypatch):
    from ember.nn._functional import _onednn_fused

    fused_calls = []

    def counted(*args, **kwargs):
        out = conv_bias_sum_relu(*args, **kwargs)
        fused_calls.append(None if out is None else type(out).__name__)
        return out
    monkeypatch.setattr(_onednn_fused, "conv_bias_sum_relu", counted)
    e_model, t_model = _resnet(ember.nn, bias), _resnet(torch.nn, bias)
    rng = np.random.default_rng(3)
    state = {}
    for name, value in e_model.state_dict().items():
        array = rng.standard_normal(tuple(value.shape)).astype(np.float32) * 0.5
        state[name] = np.abs(array) + 0.5 if "running_var" in name else array
    if "2.bn1.num_batches_tracked" in state:
        state["2.bn1.num_batches_tracked"] = np.array(0)
    e_model.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    t_model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    compiled = ember.compile(e_model)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    for step in range(4):
        if step == 2:  # a change in place: the folded and cached weights follow it
            with ember.no_grad():
                e_model[2].conv2.weight.mul_(-2.0)
                e_model[0].weight.add_(0.25)
            with torch.no_grad():
                t_model[2].conv2.weight.mul_(-2.0)
                t_model[0].weight.add_(0.25)
        with ember.no_grad():
            got, eager = compiled(ember.tensor(x)), e_model(ember.tensor(x))
        with torch.no_grad():
            want = t_model(torch.from_numpy(x))
        assert_same(got, torch.from_numpy(eager.numpy()), rtol=1e-5, atol=1e-5)
        assert_same(got, want, rtol=1e-4, atol=1e-4)
    # three convolutions per replay (the stem's with its ReLU, conv1 with the folded
    # BatchNorm and ReLU, conv2 with the residual and ReLU), all in oneDNN; only the last
    # one's result leaves oneDNN's layout (the stem's feeds conv1 and the residual, conv1's
    # feeds conv2)
    assert fused_calls == ["Blocked", "Blocked", "ndarray"] * 3


def test_a_step_that_declines_onednn_reads_a_kept_layout_back(monkeypatch):
    # the grouped convolution is not fused on oneDNN: it reads the first step's result,
    # kept in oneDNN's layout, back as a plain tensor
    from ember.nn._functional import _onednn_fused

    results = []

    def counted(*args, **kwargs):
        out = conv_bias_sum_relu(*args, **kwargs)
        results.append(None if out is None else type(out).__name__)
        return out
    monkeypatch.setattr(_onednn_fused, "conv_bias_sum_relu", counted)
    def make(nn):
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.ReLU(),
                             nn.Flatten()).eval()
    e_model, t_model = make(ember.nn), make(torch.nn)
    t_model.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                             for k, v in e_model.state_dict().items()})
    compiled = ember.compile(e_model)
    x = np.random.default_rng(4).standard_normal((2, 3, 6, 6)).astype(np.float32)
    for _ in range(3):
        with ember.no_grad():
            got = compiled(ember.tensor(x))
        with torch.no_grad():
            want = t_model(torch.from_numpy(x))
        assert_same(got, want, rtol=1e-4, atol=1e-5)
    assert results == ["Blocked", None] * 2
