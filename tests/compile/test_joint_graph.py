"""ember.compile's joint forward-backward graph (``_inductor/joint.py``): a compiled call that
trains runs its forward without autograd and one node whose backward is a traced graph.
Values and gradients against eager ember and torch, BatchNorm's statistics, dropout's masks,
hooks, retain_grad, double backward, and autograd's errors for a second backward and for
saved inputs changed in place."""

import logging

import numpy as np
import pytest
import torch
import torch._dynamo

import ember
from conftest import assert_same as _assert_same
from conftest import paired_models as _pair
from conftest import to_torch

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def assert_same(actual, expected, rtol=None, atol=None):
    if isinstance(expected, ember.Tensor):
        expected = to_torch(expected)
    _assert_same(actual, expected, rtol=rtol, atol=atol)


def _input(shape, seed, integers=None):
    rng = np.random.default_rng(seed)
    array = rng.integers(0, integers, shape) if integers else \
        rng.standard_normal(shape).astype(np.float32)
    return ember.tensor(array), torch.from_numpy(array.copy())


def _mlp(nn):
    return nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(),
                         nn.Linear(16, 3))


def _gpt_block(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(17, 16)
            self.ln1, self.ln2 = nn.LayerNorm(16), nn.LayerNorm(16)
            self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
            self.head = nn.Linear(16, 17)

        def forward(self, idx):
            x = self.embed(idx)
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            x = x + self.mlp(self.ln2(x))
            return self.head(x)
    return Block()


def _lstm(nn):
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(13, 6)
            self.rnn = nn.LSTM(6, 8, num_layers=2)
            self.head = nn.Linear(8, 13)

        def forward(self, idx):
            out, _ = self.rnn(self.embed(idx))
            return self.head(out)
    return LM()


def _cnn_bn(nn):
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 3, 3), nn.Flatten(), nn.Linear(3, 5))


MODELS = {"mlp": (_mlp, (5, 12), None), "gpt-block": (_gpt_block, (2, 7), 17),
          "lstm": (_lstm, (6, 3), 13), "cnn-batchnorm": (_cnn_bn, (2, 2, 6, 6), None)}


@pytest.mark.parametrize("name", list(MODELS))
def test_training_steps_run_the_joint_graph_and_match_eager_and_torch(name):
    make, shape, integers = MODELS[name]
    e_model, t_model = _pair(make, scale=0.2)  # steps that stay small: no chaos
    eager_model, _ = _pair(make, scale=0.2)
    compiled = ember.compile(e_model)
    models = (e_model, eager_model, t_model)
    optimizers = [ember.optim.SGD(e_model.parameters(), lr=0.05),
                  ember.optim.SGD(eager_model.parameters(), lr=0.05),
                  torch.optim.SGD(t_model.parameters(), lr=0.05)]
    for step in range(4):  # the first call captures, the next ones run the joint graph
        x, tx = _input(shape, step, integers)
        outs = [compiled(x), eager_model(x), t_model(tx)]
        if step:
            assert outs[0].grad_fn.name() == "CompiledFunctionBackward"
        assert_same(outs[0], outs[1], rtol=1e-5, atol=1e-6)
        assert_same(outs[0], outs[2], rtol=1e-3, atol=1e-4)
        for out, optimizer in zip(outs, optimizers):
            optimizer.zero_grad()
            out.pow(2).mean().backward()
        for got, eager, want in zip(*(m.parameters() for m in models)):
            assert_same(got.grad, eager.grad, rtol=1e-5, atol=1e-5)
            assert_same(got.grad, want.grad, rtol=5e-3, atol=1e-3)
        for optimizer in optimizers:
            optimizer.step()
    for got, want in zip(e_model.state_dict().values(), t_model.state_dict().values()):
        assert_same(got, want, rtol=1e-4, atol=1e-5)  # weights, BatchNorm's statistics


@pytest.mark.parametrize("c_loops", ["0", "1"])
def test_gradients_of_inputs_with_exactly_eager_kernels(c_loops, monkeypatch):
    # NumPy's calls: eager's kernels, the same bits; C loops (the element-wise steps in one
    # loop, glibc's vector math): float32 rounding apart
    monkeypatch.setenv("EMBER_C_LOOPS", c_loops)
    tolerance = dict(rtol=0, atol=0) if c_loops == "0" else dict(rtol=1e-6, atol=1e-7)
    w = ember.tensor(np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32),
                     requires_grad=True)

    def loss(x, target):
        return ((x @ w).tanh() - target).pow(2).mean()
    compiled = ember.compile(loss)
    for seed in range(3):
        x, _ = _input((5, 6), seed)
        target, _ = _input((5, 4), seed + 10)
        x.requires_grad_()
        compiled(x, target).backward()
        got = x.grad, w.grad
        x2 = x.detach().requires_grad_()
        w.grad = None
        loss(x2, target).backward()
        assert_same(got[0], x2.grad, **tolerance)
        assert_same(got[1], w.grad, **tolerance)
        w.grad = None


def test_dropout_draws_fresh_masks_and_its_backward_uses_the_same_mask():
    model = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.Dropout(0.5))
    eager_model = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.Dropout(0.5))
    eager_model.load_state_dict(model.state_dict())
    compiled = ember.compile(model)
    x = ember.ones(4, 8)
    masks = []
    for step in range(3):
        ember.manual_seed(step)
        out = compiled(x)
        ember.manual_seed(step)
        want = eager_model(x)
        assert_same(out, want, rtol=0, atol=0)
        model.zero_grad(), eager_model.zero_grad()
        out.sum().backward()
        want.sum().backward()
        assert_same(model[0].weight.grad, eager_model[0].weight.grad, rtol=1e-6, atol=1e-6)
        masks.append((out != 0).numpy())
    assert not (masks[1] == masks[2]).all()


def test_compiling_draws_no_extra_random_numbers():
    # the joint trace runs dropout again: the generator is put back, so a compiled model
    # seeded once draws the masks an eager model seeded alike draws, call after call
    model = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.Dropout(0.5))
    compiled = ember.compile(model)
    x = ember.ones(4, 8)
    ember.manual_seed(7)
    got = [compiled(x) for _ in range(3)]
    ember.manual_seed(7)
    want = [model(x) for _ in range(3)]
    for out, expected in zip(got, want):
        assert_same(out, expected, rtol=0, atol=0)
    assert got[2].grad_fn.name() == "CompiledFunctionBackward"


def test_a_second_backward_raises_and_retain_graph_allows_it():
    w = ember.ones(3, requires_grad=True)
    tw = torch.ones(3, requires_grad=True)
    compiled = ember.compile(lambda x: (x * w).exp().sum())
    x = ember.ones(3)
    compiled(x)
    loss, t_loss = compiled(x), (torch.ones(3) * tw).exp().sum()
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    loss.backward(retain_graph=True)
    loss.backward()
    t_loss.backward(retain_graph=True)
    t_loss.backward()
    assert_same(w.grad, tw.grad, rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        t_loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_a_saved_input_changed_in_place_raises_autograd_error():
    w = ember.ones(3, requires_grad=True)
    compiled = ember.compile(lambda x: (x * w).sum())
    x = ember.ones(3)
    compiled(x)
    loss = compiled(x)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    tw = torch.ones(3, requires_grad=True)
    tx = torch.ones(3)
    t_loss = (tx * tw).sum()
    tx.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        t_loss.backward()


def test_an_input_changed_in_place_through_a_saved_view_raises():
    # the backward of x.t() @ w reads x through a view: changing x must still be caught
    w = ember.ones(2, 3, requires_grad=True)
    compiled = ember.compile(lambda x: (x.t() @ w).sum())
    x = ember.ones(2, 4)
    compiled(x)
    loss = compiled(x)
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    tw, tx = torch.ones(2, 3, requires_grad=True), torch.ones(2, 4)
    t_loss = (tx.t() @ tw).sum()
    tx.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        t_loss.backward()


def test_an_input_in_another_layout_gets_its_own_joint_graph():
    # the trace saw a C-ordered input; a transposed view of the same shape fails the
    # stride guard and is captured again (view operators replay the traced strides)
    w = ember.arange(6.0, requires_grad=True)
    tw = torch.arange(6.0, requires_grad=True)
    compiled = ember.compile(lambda x: (x.reshape(-1) * w).sum())
    for step in range(5):
        x = ember.arange(6.0).reshape(2, 3) + step
        if step in (2, 3):
            x = (ember.arange(6.0).reshape(3, 2) + step).t()
        x.requires_grad_()
        tx = torch.from_numpy(x.detach().numpy().copy()).requires_grad_()
        loss, t_loss = compiled(x), (tx.reshape(-1) * tw).sum()
        if step not in (0, 2):  # calls 0 and 2 capture
            assert loss.grad_fn.name() == "CompiledFunctionBackward"
        assert_same(loss, t_loss)
        loss.backward()
        t_loss.backward()
        assert_same(x.grad, tx.grad)
        assert_same(w.grad, tw.grad)


def test_double_backward_differentiates_the_graph_again():
    def f(x, w):
        return ((x * w).tanh() ** 2 * w).sum()
    compiled = ember.compile(f)
    for seed in range(3):
        x, tx = _input((4,), seed)
        w, tw = _input((4,), seed + 5)
        for t in (x, tx, w, tw):
            t.requires_grad_()
        gx, = ember.autograd.grad(compiled(x, w), [x], create_graph=True)
        t_gx, = torch.autograd.grad(f(tx, tw), [tx], create_graph=True)
        assert_same(gx, t_gx, rtol=1e-5, atol=1e-6)
        (gx * gx).sum().backward()
        (t_gx * t_gx).sum().backward()
        assert_same(x.grad, tx.grad, rtol=1e-4, atol=1e-5)
        assert_same(w.grad, tw.grad, rtol=1e-4, atol=1e-5)


def test_double_backward_through_dropout_raises_as_torch_does():
    # a replay would draw another mask: the first order is the compiled one, and
    # differentiating it again raises torch's error for compiled graphs
    model = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.Dropout(0.5))
    compiled = ember.compile(model)
    x = ember.ones(3, 4, requires_grad=True)
    compiled(x)
    ember.manual_seed(3)
    gx, = ember.autograd.grad(compiled(x).pow(2).sum(), [x], create_graph=True)
    ember.manual_seed(3)
    want, = ember.autograd.grad(model(x).pow(2).sum(), [x])
    assert_same(gx, want, rtol=1e-6, atol=1e-6)
    assert gx.requires_grad
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        gx.sum().backward()
    t_model = torch.compile(torch.nn.Sequential(torch.nn.Linear(4, 4),
                                                torch.nn.Dropout(0.5)), backend="aot_eager")
    tx = torch.ones(3, 4, requires_grad=True)
    t_gx, = torch.autograd.grad(t_model(tx).pow(2).sum(), [tx], create_graph=True)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        t_gx.sum().backward()


def test_hooks_and_retain_grad_see_the_compiled_gradients():
    e_model, t_model = _pair(_mlp)
    compiled = ember.compile(e_model)
    seen = []
    for model in (e_model, t_model):
        model[0].weight.register_hook(lambda g: g * 3)
        model[2].bias.register_hook(lambda g, seen=seen: seen.append(g.sum().item()))
    for step in range(3):
        x, tx = _input((5, 12), step)
        x.requires_grad_(), tx.requires_grad_()
        x.register_hook(lambda g: g * 2)
        tx.register_hook(lambda g: g * 2)
        out, t_out = compiled(x), t_model(tx)
        out.retain_grad(), t_out.retain_grad()
        e_model.zero_grad(), t_model.zero_grad()
        (out ** 2).sum().backward()
        (t_out ** 2).sum().backward()
        assert_same(out.grad, t_out.grad, rtol=1e-5, atol=1e-5)
        assert_same(x.grad, tx.grad, rtol=1e-4, atol=1e-5)
        for p, tp in zip(e_model.parameters(), t_model.parameters()):
            assert_same(p.grad, tp.grad, rtol=1e-3, atol=1e-4)
    assert seen[0::2] == pytest.approx(seen[1::2], rel=1e-4)


def test_inputs_without_grad_and_no_grad_calls():
    e_model, t_model = _pair(_mlp)
    compiled = ember.compile(e_model)
    for step in range(3):
        x, tx = _input((5, 12), step)
        with ember.no_grad():
            assert compiled(x).grad_fn is None
        out = compiled(x)
        assert out.requires_grad
        e_model.zero_grad(), t_model.zero_grad()
        out.sum().backward()
        t_model(tx).sum().backward()
        assert_same(e_model[0].weight.grad, t_model[0].weight.grad, rtol=1e-4, atol=1e-5)


def test_a_parameter_that_stops_requiring_grad_gets_none():
    e_model, t_model = _pair(_mlp)
    compiled = ember.compile(e_model)
    for step in range(3):
        if step == 2:
            e_model[0].weight.requires_grad_(False)
            t_model[0].weight.requires_grad_(False)
        x, tx = _input((5, 12), step)
        e_model.zero_grad(), t_model.zero_grad()
        compiled(x).sum().backward()
        t_model(tx).sum().backward()
        for p, tp in zip(e_model.parameters(), t_model.parameters()):
            assert (p.grad is None) == (tp.grad is None)
            if tp.grad is not None:
                assert_same(p.grad, tp.grad, rtol=1e-4, atol=1e-5)


def test_what_the_joint_graph_cannot_serve_runs_eager_autograd_and_says_why(caplog,
                                                                            monkeypatch):
    monkeypatch.setenv("EMBER_LOGS", "aot")

    class Double(ember.autograd.Function):
        # (its forward computes in NumPy: the joint trace cannot record that)
        @staticmethod
        def forward(ctx, x):
            return ember.from_numpy(x.detach().numpy() * 2)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    compiled = ember.compile(lambda x: Double.apply(x).sin().sum())
    x = ember.ones(3, requires_grad=True)
    with caplog.at_level(logging.INFO, logger="ember._dynamo"):
        compiled(x)
        loss = compiled(x)
    assert loss.grad_fn.name() != "CompiledFunctionBackward"
    assert any("no joint forward-backward graph" in r.getMessage() for r in caplog.records)
    loss.backward()
    tx = torch.ones(3, requires_grad=True)
    (tx * 2).sin().sum().backward()
    assert_same(x.grad, tx.grad, rtol=1e-6, atol=1e-6)


def test_autocast_training_matches_eager_exactly_and_torch_closely():
    e_model, t_model = _pair(_mlp, scale=0.3)
    eager_model, _ = _pair(_mlp, scale=0.3)
    compiled = ember.compile(e_model)
    for step in range(3):
        x, tx = _input((5, 12), step)
        with ember.autocast("cpu", dtype=ember.bfloat16):
            out, eager = compiled(x), eager_model(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            want = t_model(tx)
        assert out.dtype == eager.dtype == ember.bfloat16 and want.dtype == torch.bfloat16
        for model in (e_model, eager_model, t_model):
            model.zero_grad()
        for o in (out, eager, want):
            o.float().pow(2).sum().backward()
        for p, q, tp in zip(e_model.parameters(), eager_model.parameters(),
                            t_model.parameters()):
            assert_same(p.grad, q.grad, rtol=0, atol=0)
            assert_same(p.grad, tp.grad, rtol=5e-2, atol=5e-2)
