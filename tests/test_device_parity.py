"""A broad sweep of operators and layers run on every available device (cpu, cuda when a
GPU is present, webgpu when an adapter is), forward and backward, compared with torch on the
CPU. On webgpu the inputs are float32 (WGSL has no f64) and strict mode proves that every case
runs in WGSL kernels, with no CPU fallback.

Most operator tests compare on the CPU only; this file is what makes a GPU session
(`scripts/gpu_check.sh`) exercise the CuPy paths of every family at once.
"""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, float_for

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 5))
B = RNG.standard_normal((4, 5))
M = RNG.standard_normal((5, 3))
POS = RNG.uniform(0.5, 2.0, (4, 5))
IMG = RNG.standard_normal((2, 3, 8, 8))
IDX = np.array([3, 0, 2, 2])

# (name, function of the library and the inputs, inputs, differentiable)
CASES = [
    ("add", lambda L, a, b: a + b * 2, (A, B), True),
    ("mul_div", lambda L, a, b: a * b / (b.abs() + 1), (A, B), True),
    ("exp_log", lambda L, a, p: a.exp() + p.log(), (A, POS), True),
    ("trig", lambda L, a: a.sin() * a.cos() + a.tanh(), (A,), True),
    ("pow_sqrt", lambda L, p: p ** 1.5 + p.sqrt(), (POS,), True),
    ("sigmoid_erf", lambda L, a: L.sigmoid(a) + L.erf(a), (A,), True),
    ("where_clamp", lambda L, a, b: L.where(a > b, a, b).clamp(-0.5, 0.5), (A, B), True),
    ("compare", lambda L, a, b: (a > b) & (a < 1.0), (A, B), False),
    ("sum_mean", lambda L, a: a.sum(1) + a.mean(0).sum(), (A,), True),
    ("var_std", lambda L, a: a.var(1) + a.std(0, keepdim=True).sum(), (A,), True),
    ("amax_logsumexp", lambda L, a: a.amax(1) + a.logsumexp(1), (A,), True),
    ("max_dim", lambda L, a: a.max(1).values, (A,), True),
    ("argmax", lambda L, a: a.argmax(1), (A,), False),
    ("cumsum_prod", lambda L, p: p.cumsum(1) + p.cumprod(0).sum(0), (POS,), True),
    ("sort", lambda L, a: a.sort(1).values, (A,), True),
    ("topk", lambda L, a: a.topk(2, 1).values, (A,), True),
    ("norm", lambda L, a: L.linalg.vector_norm(a, dim=1), (A,), True),
    ("matmul", lambda L, a, m: a @ m, (A, M), True),
    ("bmm", lambda L, a: L.bmm(a.view(2, 2, 5), a.view(2, 5, 2)), (A,), True),
    ("einsum", lambda L, a, b: L.einsum("ij,ij->i", a, b), (A, B), True),
    ("transpose_reshape", lambda L, a: a.t().reshape(2, 10).flip(0), (A,), True),
    ("cat_stack", lambda L, a, b: L.cat([a, L.stack([b[0], b[1]])]), (A, B), True),
    ("getitem", lambda L, a: a[1:, ::2] + a[[0, 2]].sum(), (A,), True),
    ("index_select", lambda L, a: a.index_select(0, L.tensor([2, 0]).to(a.device)), (A,), True),
    ("gather", lambda L, a: a.gather(1, L.tensor([[0], [1], [2], [4]]).to(a.device)), (A,), True),
    ("masked_fill", lambda L, a: a.masked_fill(a > 0.5, 0.0), (A,), True),
    ("pad", lambda L, a: L.nn.functional.pad(a, (1, 2), mode="reflect"), (A,), True),
    ("softmax", lambda L, a: L.softmax(a, 1) * L.log_softmax(a, 0), (A,), True),
    ("cross_entropy", lambda L, a, i: L.nn.functional.cross_entropy(a, i), (A, IDX), True),
    ("conv2d", lambda L, x: L.nn.functional.conv2d(x, x[:2, :, :3, :3], padding=1), (IMG,), True),
    ("max_pool", lambda L, x: L.nn.functional.max_pool2d(x, 2), (IMG,), True),
    ("avg_pool", lambda L, x: L.nn.functional.avg_pool2d(x, 3, stride=2, padding=1), (IMG,), True),
    ("interpolate", lambda L, x: L.nn.functional.interpolate(x, scale_factor=2,
                                                              mode="bilinear"), (IMG,), True),
    ("layer_norm", lambda L, a: L.nn.functional.layer_norm(a, (5,)), (A,), True),
    ("batch_norm", lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True),
     (IMG,), True),
    ("gelu_silu", lambda L, a: L.nn.functional.gelu(a) + L.nn.functional.silu(a), (A,), True),
    ("sdpa", lambda L, x: L.nn.functional.scaled_dot_product_attention(
        x[0], x[1], x[0], is_causal=True), (IMG,), True),
]


def _inputs(lib, arrays, device, float_dtype):
    out = []
    for a in arrays:
        t = lib.tensor(a.astype(float_dtype) if a.dtype.kind == "f" else a)
        if lib is ember:
            t = t.to(device)
        if a.dtype.kind == "f":
            t.requires_grad_()
        out.append(t)
    return out


@pytest.mark.parametrize("name,fn,arrays,differentiable", CASES, ids=[c[0] for c in CASES])
def test_operator_on_device_matches_torch(device, name, fn, arrays, differentiable, monkeypatch):
    float_dtype, rtol, atol = float_for(device)
    rtol, atol = rtol or 1e-6, atol or 1e-8
    e_in = _inputs(ember, arrays, device, float_dtype)
    t_in = _inputs(torch, arrays, "cpu", float_dtype)
    if device == "webgpu":  # every case runs in WGSL kernels: a CPU fallback would raise
        before = ember.webgpu.fallback_ops()
        monkeypatch.setenv("EMBER_WEBGPU_STRICT", "1")
    e_out, t_out = fn(ember, *e_in), fn(torch, *t_in)
    assert e_out.device.type == device
    assert_same(e_out.cpu(), t_out, rtol=rtol, atol=atol)
    if differentiable:
        cotangent = np.random.default_rng(1).standard_normal(tuple(t_out.shape))
        cotangent = cotangent.astype(float_dtype)
        e_grads = ember.autograd.grad(e_out, [t for t in e_in if t.requires_grad],
                                      ember.tensor(cotangent).to(device), allow_unused=True)
        t_grads = torch.autograd.grad(t_out, [t for t in t_in if t.requires_grad],
                                      torch.tensor(cotangent), allow_unused=True)
        for e_g, t_g in zip(e_grads, t_grads):
            if t_g is None:
                assert e_g is None or float(e_g.abs().sum()) == 0
            else:
                assert e_g.device.type == device
                assert_same(e_g.cpu(), t_g, rtol=rtol, atol=atol)
    if device == "webgpu":
        assert ember.webgpu.fallback_ops() == before


def test_training_step_on_device(device, monkeypatch):
    if device == "webgpu":  # the whole step in WGSL kernels
        monkeypatch.setenv("EMBER_WEBGPU_STRICT", "1")
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.ReLU(), ember.nn.Flatten(),
                                ember.nn.Linear(4 * 6 * 6, 2)).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    x = ember.tensor(IMG).float().to(device)
    y = ember.tensor([0, 1]).to(device)
    losses = []
    for _ in range(20):
        loss = ember.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.5
    assert all(p.device.type == device for p in model.parameters())
