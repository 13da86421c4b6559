"""Compiled code around a graph break after its pieces settle: the split's prefix and suffix
and the routed submodules are timed compiled and plain on their first calls (breaks._Trial)
and each keeps the faster way, and a call whose pieces all run eagerly calls the function
itself. Whatever is chosen, results, gradients and random draws stay eager code's and
torch's, and the guards still see changes."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("fresh_compile_state")

_CALLS = 14   # past the trials (4 timed calls each way) of the pieces and of the modules


def _net(nn, dropout=0.0):
    functional = nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 16)
            self.b = nn.Linear(16, 16)
            self.c = nn.Linear(16, 2)
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            h = functional.gelu(self.a(x)) * 0.5 + 0.1
            scale = float(h.abs().mean().item())      # a graph break
            h = self.drop(self.b(h) / scale).tanh()
            return self.c(h)

    return Net()


def _pair(dropout=0.0):
    e_model, t_model = _net(ember.nn, dropout), _net(torch.nn, dropout)
    rng = np.random.default_rng(0)
    for e_p, t_p in zip(e_model.parameters(), t_model.parameters()):
        array = rng.standard_normal(tuple(e_p.shape)).astype(np.float32) * 0.4
        with ember.no_grad():
            e_p.copy_(ember.tensor(array))
        with torch.no_grad():
            t_p.copy_(torch.from_numpy(array))
    return e_model, t_model


def _batch(step):
    array = np.random.default_rng(step).standard_normal((4, 8)).astype(np.float32)
    return ember.tensor(array), torch.from_numpy(array.copy())


def test_results_and_gradients_match_torch_through_the_trials_and_after():
    e_model, t_model = _pair()
    compiled = ember.compile(e_model)
    for step in range(_CALLS):
        x, tx = _batch(step % 3)
        e_model.zero_grad(set_to_none=True)
        t_model.zero_grad(set_to_none=True)
        got, want = compiled(x), t_model(tx)
        assert_same(got, want, rtol=1e-4, atol=1e-5)
        got.square().sum().backward()
        want.square().sum().backward()
        for e_p, t_p in zip(e_model.parameters(), t_model.parameters()):
            assert_same(e_p.grad, t_p.grad, rtol=1e-4, atol=1e-5)


def test_dropout_draws_are_eager_codes_on_every_call():
    e_model, _ = _pair(dropout=0.3)
    compiled = ember.compile(e_model)
    x, _ = _batch(0)
    for step in range(_CALLS):
        ember.manual_seed(step)
        got = compiled(x)
        ember.manual_seed(step)
        assert_same(got, torch.from_numpy(e_model(x).detach().numpy()))


def test_a_plain_function_with_a_break_matches_torch():
    def f(x, w):
        y = (x @ w).tanh() * 2 + 1
        s = y.sum().item()
        return ((y * s).sigmoid() - 0.5).mean()

    compiled = ember.compile(f)
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    for _ in range(_CALLS):
        x = rng.standard_normal((3, 8)).astype(np.float32)
        want = f(torch.from_numpy(x), torch.from_numpy(w))
        assert_same(compiled(ember.tensor(x), ember.tensor(w)), want, rtol=1e-5, atol=1e-6)


def test_a_split_functions_arguments_bind_however_they_are_passed():
    # all positionally (bound by name without inspect), by keyword, defaults left out
    def f(x, w, shift=0.5, scale=2.0):
        y = (x @ w).tanh() * scale + shift
        s = y.sum().item()
        return ((y * s).sigmoid() - shift).mean()

    compiled = ember.compile(f)
    rng = np.random.default_rng(2)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    calls = [((0.25, 3.0), {}), ((), {}), ((), {"shift": -0.5}), ((0.1,), {"scale": 3.0})]
    for i in range(_CALLS):
        x = rng.standard_normal((3, 8)).astype(np.float32)
        args, kwargs = calls[i % len(calls)]
        want = f(torch.from_numpy(x), torch.from_numpy(w), *args, **kwargs)
        got = compiled(ember.tensor(x), ember.tensor(w), *args, **kwargs)
        assert_same(got, want, rtol=1e-5, atol=1e-6)


def test_guards_still_fail_after_the_pieces_settle():
    e_model, t_model = _pair()
    compiled = ember.compile(e_model)
    x, tx = _batch(0)
    for _ in range(_CALLS):
        compiled(x)
    array = np.full((16, 16), 0.05, dtype=np.float32)
    e_model.b.weight = ember.nn.Parameter(ember.tensor(array))
    t_model.b.weight = torch.nn.Parameter(torch.from_numpy(array.copy()))
    assert_same(compiled(x), t_model(tx), rtol=1e-4, atol=1e-5)
    e_model.eval()
    t_model.eval()
    assert_same(compiled(x), t_model(tx), rtol=1e-4, atol=1e-5)
