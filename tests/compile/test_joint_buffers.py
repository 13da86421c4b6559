"""Buffer reuse in the joint graph's generated code (``_inductor/buffers.py``): compiled
training with the reuse switched on, several steps so that reused arrays are written again,
against torch and eager ember; the plan must have reused something, and temporaries that
are returned, viewed or read later must keep their memory."""

import numpy as np
import pytest
import torch
import torch._dynamo

import ember
from conftest import assert_same as _assert_same
from conftest import to_torch
from ember._inductor import buffers


def assert_same(actual, expected, rtol=None, atol=None):
    if isinstance(expected, ember.Tensor):
        expected = to_torch(expected)
    _assert_same(actual, expected, rtol=rtol, atol=atol)


@pytest.fixture(autouse=True)
def _reuse_on(monkeypatch):
    monkeypatch.setattr(buffers, "REUSE_BUFFERS", True)
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _reuses(kind="reused"):
    return buffers.stats[kind]


def _pair(make, seed=0, scale=0.2):
    """The same model in ember (twice: compiled and eager) and torch, same weights."""
    models = [make(ember.nn), make(ember.nn), make(torch.nn)]
    rng = np.random.default_rng(seed)
    state = {name: rng.standard_normal(tuple(value.shape)).astype(np.float32) * scale
             if value.dtype.is_floating_point else value.numpy()
             for name, value in models[0].state_dict().items()}
    for model in models[:2]:
        model.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    models[2].load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    return models


def _train(make, batches, steps=4, lr=0.1, rtol=1e-4, atol=1e-5):
    """Train compiled ember, eager ember and torch side by side with SGD; compare the loss
    and every gradient each step and the parameters at the end."""
    compiled_model, eager_model, torch_model = _pair(make)
    compiled = ember.compile(compiled_model)
    optimisers = [ember.optim.SGD(compiled_model.parameters(), lr=lr),
                  ember.optim.SGD(eager_model.parameters(), lr=lr),
                  torch.optim.SGD(torch_model.parameters(), lr=lr)]
    for step in range(steps):
        x, target = batches(step)
        tx, t_target = torch.from_numpy(x.copy()), torch.from_numpy(target.copy())
        ex, e_target = ember.tensor(x), ember.tensor(target)
        out = compiled(ex)
        if step:  # the first call captures
            assert out.grad_fn.name() == "CompiledFunctionBackward"
        losses = [((out - e_target) ** 2).mean(),
                  ((eager_model(ex) - e_target) ** 2).mean(),
                  ((torch_model(tx) - t_target) ** 2).mean()]
        for loss, optimiser in zip(losses, optimisers):
            optimiser.zero_grad()
            loss.backward()
        assert_same(losses[0], losses[2], rtol=rtol, atol=atol)
        assert_same(losses[0], losses[1], rtol=rtol, atol=atol)
        for p, e, t in zip(compiled_model.parameters(), eager_model.parameters(),
                           torch_model.parameters()):
            assert_same(p.grad, t.grad, rtol=rtol, atol=atol)
            assert_same(p.grad, e.grad, rtol=rtol, atol=atol)
        for optimiser in optimisers:
            optimiser.step()
    for p, t in zip(compiled_model.parameters(), torch_model.parameters()):
        assert_same(p, t, rtol=rtol, atol=atol)


def _batches(shape, out_shape):
    def batch(step):
        rng = np.random.default_rng(100 + step)
        return (rng.standard_normal(shape).astype(np.float32),
                rng.standard_normal(out_shape).astype(np.float32))
    return batch


def _mlp(nn):
    # products large enough for oneDNN's GEMM, which then writes into a dead array
    return nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Sigmoid(),
                         nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 8))


def test_mlp_training_reuses_dead_temporaries():
    before = {kind: _reuses(kind) for kind in ("reused", "elementwise", "product")}
    _train(_mlp, _batches((64, 64), (64, 8)))
    assert _reuses() > before["reused"]
    assert _reuses("elementwise") > before["elementwise"]
    assert _reuses("product") > before["product"]


def _small_mlp(nn):
    # products too small for oneDNN: matmul writes into the dead array
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 7), nn.Tanh(),
                         nn.Linear(7, 7), nn.Sigmoid(), nn.Linear(7, 3))


def test_small_mlp_training_with_reused_buffers():
    before = _reuses()
    _train(_small_mlp, _batches((6, 5), (6, 3)))
    assert _reuses() > before


def test_a_product_writes_into_a_dead_temporary():
    # ``s`` (6 x 6) is dead once summed; the product of the same shape gets its array
    # (too small for oneDNN: matmul writes it)
    def fn(lib, x, w):
        s = (x * 2.0).sin()
        t = s.sum(1, keepdim=True)
        return (x @ w) * t
    before = _reuses("product")
    _compare_function(fn, [(6, 6), (6, 6)])
    assert _reuses("product") > before


class _Block:
    """A transformer block (attention, layer norms, GELU MLP) on 3-D input."""

    def __new__(cls, nn):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(16), nn.LayerNorm(16)
                self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
                self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

            def forward(self, x):
                h = self.ln1(x)
                x = x + self.attn(h, h, h, need_weights=False)[0]
                return x + self.mlp(self.ln2(x))
        return Block()


def test_transformer_block_training_with_reused_buffers():
    before = _reuses()
    _train(_Block, _batches((3, 5, 16), (3, 5, 16)), rtol=1e-4, atol=1e-5)
    assert _reuses() > before


def _compare_function(fn, shapes, steps=3):
    """``fn(ember, *tensors)`` compiled against torch, values and gradients, on fresh
    inputs each step; returns how many reuses compiling it planned."""
    compiled = ember.compile(lambda *args: fn(ember, *args))
    before = _reuses()
    for step in range(steps):
        rng = np.random.default_rng(step)
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        ours = [ember.tensor(a, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        out, expected = compiled(*ours), fn(torch, *theirs)
        assert_same(out, expected, rtol=1e-4, atol=1e-5)
        out.sum().backward()
        expected.sum().backward()
        for a, b in zip(ours, theirs):
            assert_same(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    return _reuses() - before


def test_a_view_of_a_dead_temporary_keeps_its_memory():
    # ``a`` is last read by ``.t()``; its transpose is read after ``b`` (same shape) is made
    def fn(lib, x, w):
        a = (x * w).exp()
        at = a.t()
        b = (x + 1.0).tanh()
        c = (b * 2.0).sin()
        return at * c + b
    assert _compare_function(fn, [(6, 6), (6, 6)]) > 0


def test_a_fused_chain_does_not_write_into_what_its_later_steps_read():
    def fn(lib, x, w):
        d = (x * w).exp()
        return ((((x * 3.0) + d) * d).tanh() * 0.5).cos()
    _compare_function(fn, [(4, 8), (4, 8)])


def test_returned_temporaries_keep_their_memory():
    def fn(lib, x, w):
        h = (x @ w).tanh()
        g = (h @ w).sigmoid()
        return lib.stack([h, g, (g @ w).exp()])
    assert _compare_function(fn, [(8, 8), (8, 8)]) > 0


def test_a_transposed_operand_keeps_eager_layout():
    # the element-wise step reads a transposed parameter: it makes a new array (as eager
    # code does) instead of writing into the product's C-ordered one
    w = ember.randn(8, 8, requires_grad=True)
    p = ember.randn(8, 8, requires_grad=True)
    compiled = ember.compile(lambda x: (x @ w).tanh() + p.t())
    for _ in range(3):
        x = ember.randn(8, 8)
        out = compiled(x)
        with ember.no_grad():
            eager = (x @ w).tanh() + p.t()
        assert out.stride() == eager.stride()
        assert_same(out, eager, rtol=1e-6, atol=1e-6)


def test_switched_off_plans_nothing(monkeypatch):
    monkeypatch.setattr(buffers, "REUSE_BUFFERS", False)
    before = _reuses()
    _train(_small_mlp, _batches((6, 5), (6, 3)), steps=2)
    assert _reuses() == before
