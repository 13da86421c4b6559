"""optim.Adafactor against torch.optim.Adafactor: trajectories, state dicts, options, errors."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same


class _Net:
    """The same parameters in both libraries: a matrix, a 3-D tensor, a vector and a scalar."""

    def __init__(self, dtype, seed=0):
        rng = np.random.default_rng(seed)
        shapes = [(6, 5), (2, 3, 4), (5,), ()]
        self.arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
        self.ember = [ember.tensor(a.copy(), requires_grad=True) for a in self.arrays]
        self.torch = [torch.tensor(a.copy(), requires_grad=True) for a in self.arrays]
        self.x = rng.standard_normal((8, 6)).astype(dtype)

    @staticmethod
    def loss(lib, params, x, sign):
        w, cube, v, s = params
        h = (lib.tensor(x) @ w).tanh()
        return sign * (((h - v) ** 2).mean() + (cube ** 2).mean() * 0.5 + (s - 1.0) ** 2
                       + (cube.sum(0) ** 3).mean() * 0.01)


def _closure(lib, opt, params, x, sign):
    def closure():
        opt.zero_grad()
        loss = _Net.loss(lib, params, x, sign)
        loss.backward()
        return loss
    return closure


def _run_both(kwargs, dtype, steps=20, groups=None):
    net = _Net(dtype)
    sign = -1.0 if kwargs.get("maximize") else 1.0
    make_groups = groups or (lambda ps: ps)
    e_opt = ember.optim.Adafactor(make_groups(net.ember), **kwargs)
    t_opt = torch.optim.Adafactor(make_groups(net.torch), **kwargs)
    e_cl = _closure(ember, e_opt, net.ember, net.x, sign)
    t_cl = _closure(torch, t_opt, net.torch, net.x, sign)
    for _ in range(steps):
        e_opt.step(e_cl)
        t_opt.step(t_cl)
    return net, e_opt, t_opt


TOL = {"float64": (1e-9, 1e-11), "float32": (1e-4, 1e-5)}
CASES = [
    {},
    {"lr": 0.1},
    {"lr": 0.05, "weight_decay": 0.1},
    {"beta2_decay": -0.5, "d": 2.0, "eps": (1e-4, 1e-2)},
    {"lr": 0.02, "maximize": True},
    {"eps": (0.5, 1e-3)},
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kwargs", CASES, ids=lambda kw: "-".join(f"{k}={v}" for k, v in
                                                                 kw.items()) or "defaults")
def test_trajectory_matches_torch_over_20_steps(kwargs, dtype):
    net, _, _ = _run_both(kwargs, dtype)
    rtol, atol = TOL[dtype]
    for ep, tp in zip(net.ember, net.torch):
        assert_same(ep.detach(), tp.detach(), rtol=rtol, atol=atol)


def test_parameter_groups_with_their_own_options():
    def groups(params):
        return [{"params": params[:2], "lr": 0.1}, {"params": params[2:], "weight_decay": 0.5}]

    net, e_opt, t_opt = _run_both({"lr": 0.03}, "float64", steps=10, groups=groups)
    for ep, tp in zip(net.ember, net.torch):
        assert_same(ep.detach(), tp.detach(), rtol=1e-9, atol=1e-11)


def _assert_state_dicts_equal(e_sd, t_sd):
    assert e_sd["param_groups"] == t_sd["param_groups"]
    assert list(e_sd["state"]) == list(t_sd["state"])
    for key, t_state in t_sd["state"].items():
        e_state = e_sd["state"][key]
        assert list(e_state) == list(t_state)
        for name, value in t_state.items():
            assert_same(e_state[name], value, rtol=1e-9, atol=1e-11)


def test_state_dict_layout_and_round_trip_both_ways(tmp_path):
    net, e_opt, t_opt = _run_both({"lr": 0.05}, "float64", steps=3)
    e_sd, t_sd = e_opt.state_dict(), t_opt.state_dict()
    _assert_state_dicts_equal(e_sd, t_sd)
    assert list(e_sd["state"][0]) == ["step", "row_var", "col_var"]
    assert list(e_sd["state"][2]) == ["step", "variance"]
    assert e_sd["state"][0]["step"].dtype is ember.float32

    ember.save(e_sd, tmp_path / "e.pt")
    torch.save(t_sd, tmp_path / "t.pt")
    t_opt2 = torch.optim.Adafactor(net.torch, lr=0.05)
    t_opt2.load_state_dict(torch.load(tmp_path / "e.pt"))
    e_opt2 = ember.optim.Adafactor(net.ember, lr=0.05)
    e_opt2.load_state_dict(ember.load(tmp_path / "t.pt"))
    e_cl = _closure(ember, e_opt2, net.ember, net.x, 1.0)
    t_cl = _closure(torch, t_opt2, net.torch, net.x, 1.0)
    for _ in range(5):
        e_opt2.step(e_cl)
        t_opt2.step(t_cl)
    _assert_state_dicts_equal(e_opt2.state_dict(), t_opt2.state_dict())
    for ep, tp in zip(net.ember, net.torch):
        assert_same(ep.detach(), tp.detach(), rtol=1e-9, atol=1e-11)


def test_defaults_and_repr_keys_match_torch():
    e = ember.optim.Adafactor([ember.zeros(2, requires_grad=True)])
    t = torch.optim.Adafactor([torch.zeros(2, requires_grad=True)])
    assert e.defaults == t.defaults
    assert repr(e) == repr(t)


@pytest.mark.parametrize("lr", [0.1, 1.0])
def test_tensor_learning_rate(lr):
    e_p = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    t_p = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    e_opt = ember.optim.Adafactor([e_p], lr=ember.tensor(lr), weight_decay=0.1)
    t_opt = torch.optim.Adafactor([t_p], lr=torch.tensor(lr), weight_decay=0.1)
    for _ in range(6):
        for p, opt in ((e_p, e_opt), (t_p, t_opt)):
            opt.zero_grad()
            (p ** 2).sum().backward()
            opt.step()
    assert_same(e_p.detach(), t_p.detach(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kwargs", [
    {"lr": -0.1}, {"beta2_decay": 0.5}, {"eps": (-1.0, 1e-3)}, {"eps": (None, -1e-3)},
    {"d": 0.5}, {"weight_decay": -1.0},
])
def test_invalid_options_raise_torchs_errors(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.optim.Adafactor([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        ember.optim.Adafactor([ember.zeros(2, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_complex_parameters_are_refused():
    p = ember.zeros(2, dtype=ember.complex64, requires_grad=True)
    p.grad = ember.ones(2, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
        ember.optim.Adafactor([p]).step()
