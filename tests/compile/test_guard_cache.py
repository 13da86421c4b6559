"""ember.compile's cached module guard (guards.GuardedModules): a call reuses the module state
read on an earlier call, so each change that must fail the guard is made here between calls
of a compiled model with tens of parameters, and the compiled result and gradients are
compared with torch's eager model given the same change."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def _net(nn):
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0
            self.body = nn.Sequential(
                nn.Linear(6, 16), nn.BatchNorm1d(16), nn.GELU(), nn.Linear(16, 16),
                nn.LayerNorm(16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))

        def forward(self, x):
            return self.body(x) * self.scale

    return Scaled()


@pytest.fixture
def pair():
    """(ember model, its compiled form, torch model), with the same weights."""
    e_model, t_model = _net(ember.nn), _net(torch.nn)
    rng = np.random.default_rng(0)
    for (name, e_value), t_value in zip(e_model.state_dict().items(),
                                        t_model.state_dict().values()):
        if e_value.dtype.is_floating_point:
            array = rng.standard_normal(tuple(e_value.shape)).astype(np.float32) * 0.5
            if "running_var" in name:
                array = np.abs(array) + 0.5
            with ember.no_grad():
                e_value.copy_(ember.tensor(array))
            with torch.no_grad():
                t_value.copy_(torch.from_numpy(array))
    return e_model, ember.compile(e_model), t_model


def _inputs(shape=(5, 6), dtype=np.float32, seed=1):
    array = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(array), torch.from_numpy(array.copy())


def _check(e_model, compiled, t_model, shape=(5, 6), dtype=np.float32):
    """One training-style call of both: outputs and every parameter's gradient agree."""
    x, tx = _inputs(shape, dtype)
    for model in (e_model, t_model):
        model.zero_grad(set_to_none=True)
    got = compiled(x)
    want = t_model(tx)
    assert_same(got, want, rtol=1e-4, atol=1e-5)
    if want.requires_grad:
        got.sum().backward()
        want.sum().backward()
        for (name, p), tp in zip(e_model.named_parameters(), t_model.parameters()):
            if tp.grad is None:
                assert p.grad is None, name
            else:
                assert_same(p.grad, tp.grad, rtol=1e-4, atol=1e-5)


def _both(pair, change):
    e_model, compiled, t_model = pair
    _check(e_model, compiled, t_model)
    _check(e_model, compiled, t_model)   # served from the cache
    change(e_model, ember)
    change(t_model, torch)
    _check(e_model, compiled, t_model)
    _check(e_model, compiled, t_model)


def _new_weight(mod, shape, seed):
    array = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return mod.nn.Parameter(mod.tensor(array))


def test_parameter_replaced_by_assignment(pair):
    def change(model, mod):
        model.body[3].weight = _new_weight(mod, (16, 16), 5)
    _both(pair, change)


def test_parameter_replaced_in_the_parameters_dict(pair):
    def change(model, mod):
        model.body[6]._parameters["bias"] = _new_weight(mod, (16,), 6)
    _both(pair, change)


def test_child_replaced_in_a_sequential(pair):
    def change(model, mod):
        model.body[5] = mod.nn.Sigmoid()
    _both(pair, change)


@pytest.mark.parametrize("first", ["train", "eval"])
def test_training_flag_flipped(pair, first):
    def change(model, mod):
        model.train(first == "eval")
    getattr(pair[0], first)()
    getattr(pair[2], first)()
    _both(pair, change)


def test_plain_attribute_changed(pair):
    def change(model, mod):
        model.scale = 0.5
    _both(pair, change)


def test_requires_grad_switched_off_and_on(pair):
    def off(model, mod):
        model.body[0].weight.requires_grad_(False)
        model.body[8].bias.requires_grad_(False)
    _both(pair, off)

    def on(model, mod):
        model.body[0].weight.requires_grad_(True)
        model.body[8].bias.requires_grad_(True)
    on(pair[0], ember)
    on(pair[2], torch)
    _check(*pair)


def test_forward_hook_added_and_removed(pair):
    handles = []

    def add(model, mod):
        handles.append(model.body[4].register_forward_hook(lambda m, args, out: out * 3))
    _both(pair, add)
    for handle in handles:
        handle.remove()
    _check(*pair)


@pytest.mark.parametrize("shape, dtype", [((7, 6), np.float32), ((5, 6), np.float64)])
def test_input_shape_and_dtype_changes(pair, shape, dtype):
    e_model, compiled, t_model = pair
    _check(e_model, compiled, t_model)
    if dtype == np.float64:
        e_model.double()
        t_model.double()
    _check(e_model, compiled, t_model, shape, dtype)


def test_an_unchanged_model_reuses_the_state_it_read():
    net = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
    modules = ember._inductor.guards.GuardedModules(net.modules())
    first = modules.state()
    assert modules.state() is first
    assert first.state == ember._inductor.guards.module_state(tuple(net.modules()))
    net[0].weight = ember.nn.Parameter(ember.zeros(2, 2))
    assert modules.state() != first
    assert modules.state().state == ember._inductor.guards.module_state(tuple(net.modules()))
