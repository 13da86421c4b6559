"""LR schedulers against torch.optim.lr_scheduler: exact LR sequences, resume, state dicts."""

import math
import warnings

import pytest
import torch
from torch.optim import lr_scheduler as T

import ember
from ember.optim import lr_scheduler as E

STEPS = 60


def _opts(opt_name="SGD", groups=2, **kwargs):
    """The same optimiser in both frameworks, with ``groups`` parameter groups."""
    kwargs.setdefault("lr", 0.1)
    pairs = []
    for lib, mod in ((ember, ember.optim), (torch, torch.optim)):
        params = [{"params": [lib.nn.Parameter(lib.ones(2))], "lr": kwargs["lr"] * (i + 1)}
                  for i in range(groups)]
        pairs.append(getattr(mod, opt_name)(params, **kwargs))
    return pairs


def _lambda(epoch):
    return 0.95 ** epoch


def _mult(epoch):
    return 0.9 if epoch % 3 else 1.05


SCHEDULERS = [
    ("LambdaLR", {"lr_lambda": _lambda}),
    ("LambdaLR", {"lr_lambda": [_lambda, lambda e: 1 / (e + 1)]}),
    ("MultiplicativeLR", {"lr_lambda": _mult}),
    ("StepLR", {"step_size": 7, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [5, 20, 20, 41], "gamma": 0.3}),
    ("ConstantLR", {"factor": 0.25, "total_iters": 9}),
    ("ConstantLR", {}),
    ("LinearLR", {"start_factor": 0.2, "end_factor": 0.9, "total_iters": 13}),
    ("LinearLR", {}),
    ("ExponentialLR", {"gamma": 0.93}),
    ("PolynomialLR", {"total_iters": 30, "power": 2.0}),
    ("PolynomialLR", {}),
    ("CosineAnnealingLR", {"T_max": 17, "eta_min": 0.001}),
    ("CosineAnnealingLR", {"T_max": 10}),
    ("CosineAnnealingWarmRestarts", {"T_0": 7}),
    ("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2, "eta_min": 0.01}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 5}),
    ("CyclicLR", {"base_lr": [0.01, 0.02], "max_lr": 0.2, "step_size_up": 4,
                  "step_size_down": 7, "mode": "triangular2", "base_momentum": 0.7}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 6, "mode": "exp_range",
                  "gamma": 0.97, "cycle_momentum": False}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 6,
                  "scale_fn": lambda x: 1 / (x + 1), "scale_mode": "iterations"}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": STEPS + 1}),
    ("OneCycleLR", {"max_lr": [0.5, 1.0], "epochs": 6, "steps_per_epoch": 11,
                    "anneal_strategy": "linear", "pct_start": 0.25}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": STEPS + 3, "three_phase": True,
                    "div_factor": 10.0, "final_div_factor": 100.0}),
]
IDS = [f"{i}-{name}" for i, (name, _) in enumerate(SCHEDULERS)]


def _momenta(opt):
    return [(g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def _run(e_opt, t_opt, e_sched, t_sched, steps, metric=None):
    for i in range(steps):
        e_opt.step()
        t_opt.step()
        if metric is None:
            e_sched.step()
            t_sched.step()
        else:
            e_sched.step(metric(i))
            t_sched.step(metric(i))
        assert e_sched.get_last_lr() == t_sched.get_last_lr(), f"step {i}"
        assert [g["lr"] for g in e_opt.param_groups] == [g["lr"] for g in t_opt.param_groups]
        assert _momenta(e_opt) == _momenta(t_opt)


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=IDS)
def test_lr_sequence_equals_torch(name, kwargs, opt_name):
    extra = {"momentum": 0.9} if opt_name == "SGD" else {}
    e_opt, t_opt = _opts(opt_name, **extra)
    e_sched = getattr(E, name)(e_opt, **kwargs)
    t_sched = getattr(T, name)(t_opt, **kwargs)
    assert e_sched.get_last_lr() == t_sched.get_last_lr()
    assert _momenta(e_opt) == _momenta(t_opt)
    _run(e_opt, t_opt, e_sched, t_sched, STEPS)
    assert set(e_sched.state_dict()) == set(t_sched.state_dict())


@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=IDS)
def test_resume_from_state_dict(name, kwargs):
    e_opt, t_opt = _opts(momentum=0.9)
    e_sched = getattr(E, name)(e_opt, **kwargs)
    t_sched = getattr(T, name)(t_opt, **kwargs)
    _run(e_opt, t_opt, e_sched, t_sched, 25)
    opt_state, sched_state = e_opt.state_dict(), e_sched.state_dict()
    # a fresh optimiser and scheduler, resumed from the saved states
    e_opt2, _ = _opts(momentum=0.9)
    e_opt2.load_state_dict(opt_state)
    e_sched2 = getattr(E, name)(e_opt2, **kwargs)
    e_sched2.load_state_dict(sched_state)
    e_opt2.load_state_dict(opt_state)
    _run(e_opt2, t_opt, e_sched2, t_sched, STEPS - 25)


@pytest.mark.parametrize("name,kwargs", [
    ("StepLR", {"step_size": 4, "gamma": 0.5}),
    ("CosineAnnealingLR", {"T_max": 9, "eta_min": 0.01}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 40}),
    ("LinearLR", {"start_factor": 0.5, "total_iters": 6}),
])
def test_state_dict_loads_across_frameworks(name, kwargs, tmp_path):
    e_opt, t_opt = _opts(momentum=0.9)
    e_sched = getattr(E, name)(e_opt, **kwargs)
    t_sched = getattr(T, name)(t_opt, **kwargs)
    _run(e_opt, t_opt, e_sched, t_sched, 10)
    ember.save(e_sched.state_dict(), tmp_path / "e.pt")
    torch.save(t_sched.state_dict(), tmp_path / "t.pt")
    t_opt2, e_opt2 = _opts(momentum=0.9)[1], _opts(momentum=0.9)[0]
    t_opt2.load_state_dict(t_opt.state_dict())
    e_opt2.load_state_dict(e_opt.state_dict())
    t_sched2 = getattr(T, name)(t_opt2, **kwargs)
    e_sched2 = getattr(E, name)(e_opt2, **kwargs)
    t_sched2.load_state_dict(torch.load(tmp_path / "e.pt"))
    e_sched2.load_state_dict(ember.load(tmp_path / "t.pt"))
    t_opt2.load_state_dict(t_opt.state_dict())
    e_opt2.load_state_dict(e_opt.state_dict())
    _run(e_opt2, t_opt2, e_sched2, t_sched2, 20)


def _composites(lib, mod, opt):
    warm = mod.LinearLR(opt, start_factor=0.1, total_iters=5)
    cos = mod.CosineAnnealingLR(opt, T_max=20, eta_min=0.001)
    step = mod.StepLR(opt, step_size=6, gamma=0.5)
    seq = mod.SequentialLR(opt, schedulers=[warm, cos, step], milestones=[5, 25])
    return seq


def test_sequential_lr_equals_torch_and_resumes():
    e_opt, t_opt = _opts(momentum=0.9)
    e_sched = _composites(ember, E, e_opt)
    t_sched = _composites(torch, T, t_opt)
    assert e_sched.get_last_lr() == t_sched.get_last_lr()
    _run(e_opt, t_opt, e_sched, t_sched, 30)
    state = e_sched.state_dict()
    assert set(state) == set(t_sched.state_dict())
    e_opt2 = _opts(momentum=0.9)[0]
    e_opt2.load_state_dict(e_opt.state_dict())
    e_sched2 = _composites(ember, E, e_opt2)
    e_sched2.load_state_dict(state)
    e_opt2.load_state_dict(e_opt.state_dict())
    _run(e_opt2, t_opt, e_sched2, t_sched, 30)


def test_chained_scheduler_equals_torch():
    scheds = []
    for mod, opt in zip((E, T), _opts(momentum=0.9)):
        a = mod.ConstantLR(opt, factor=0.5, total_iters=4)
        b = mod.ExponentialLR(opt, gamma=0.9)
        c = mod.MultiStepLR(opt, milestones=[10, 30], gamma=0.2)
        scheds.append((opt, mod.ChainedScheduler([a, b, c])))
    (e_opt, e_sched), (t_opt, t_sched) = scheds
    assert e_sched.get_last_lr() == t_sched.get_last_lr()
    _run(e_opt, t_opt, e_sched, t_sched, STEPS)
    assert set(e_sched.state_dict()) == set(t_sched.state_dict())


def _metric(i):
    return [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.8, 0.8, 0.8, 0.8][i % 10] + (i // 10) * 0.05


@pytest.mark.parametrize("kwargs", [
    {}, {"mode": "max", "patience": 1}, {"patience": 2, "threshold_mode": "abs",
                                         "threshold": 0.06},
    {"mode": "max", "threshold_mode": "abs", "factor": 0.5, "cooldown": 3, "patience": 0},
    {"patience": 1, "cooldown": 2, "min_lr": [0.05, 0.001], "factor": 0.3},
    {"patience": 0, "min_lr": 0.02, "eps": 1e-3},
])
def test_reduce_lr_on_plateau_equals_torch(kwargs):
    e_opt, t_opt = _opts(momentum=0.9)
    e_sched = E.ReduceLROnPlateau(e_opt, **kwargs)
    t_sched = T.ReduceLROnPlateau(t_opt, **kwargs)
    _run(e_opt, t_opt, e_sched, t_sched, 40, metric=_metric)
    for key in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch"):
        assert getattr(e_sched, key) == getattr(t_sched, key)
    state = e_sched.state_dict()
    assert set(state) == set(t_sched.state_dict())
    e_sched2 = E.ReduceLROnPlateau(e_opt, **kwargs)
    e_sched2.load_state_dict(state)
    _run(e_opt, t_opt, e_sched2, t_sched, 20, metric=_metric)


def test_closed_form_with_epoch_argument_warns_like_torch():
    for name, kwargs in [("StepLR", {"step_size": 3}), ("MultiStepLR", {"milestones": [2, 5]}),
                         ("ExponentialLR", {"gamma": 0.9}), ("CosineAnnealingLR", {"T_max": 7}),
                         ("LinearLR", {}), ("ConstantLR", {}), ("PolynomialLR", {}),
                         ("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2})]:
        e_opt, t_opt = _opts(groups=1)
        e_sched, t_sched = getattr(E, name)(e_opt, **kwargs), getattr(T, name)(t_opt, **kwargs)
        for epoch in (4, 1, 9, 9.5 if name == "CosineAnnealingWarmRestarts" else 2):
            e_opt.step()
            t_opt.step()
            if name == "CosineAnnealingWarmRestarts":  # takes (fractional) epochs silently
                t_sched.step(epoch)
                e_sched.step(epoch)
            else:
                with pytest.warns(UserWarning, match="epoch parameter"):
                    t_sched.step(epoch)
                with pytest.warns(UserWarning, match="epoch parameter"):
                    e_sched.step(epoch)
            assert e_sched.get_last_lr() == t_sched.get_last_lr(), (name, epoch)


def test_warnings_like_torch():
    for mod, opt in zip((E, T), _opts(groups=1)):
        sched = mod.StepLR(opt, step_size=2)
        with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
            sched.step()
        with pytest.warns(UserWarning, match="get_last_lr"):
            sched.get_lr()
    for mod, opt in zip((E, T), _opts(groups=1)):
        sched = mod.ExponentialLR(opt, gamma=0.5)
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sched.step()


def test_initial_lr_and_last_epoch_like_torch():
    for mod, opt in zip((E, T), _opts()):
        with pytest.raises(KeyError, match="initial_lr"):
            mod.StepLR(opt, step_size=3, last_epoch=4)
    e_opt, t_opt = _opts()
    e_opt.param_groups[0]["initial_lr"] = t_opt.param_groups[0]["initial_lr"] = 1.0
    e_opt.param_groups[1]["initial_lr"] = t_opt.param_groups[1]["initial_lr"] = 2.0
    e_sched = E.CosineAnnealingLR(e_opt, T_max=10, last_epoch=4)
    t_sched = T.CosineAnnealingLR(t_opt, T_max=10, last_epoch=4)
    assert e_sched.base_lrs == t_sched.base_lrs == [1.0, 2.0]
    _run(e_opt, t_opt, e_sched, t_sched, 12)


def test_tensor_lr_is_filled_in_place():
    p = ember.nn.Parameter(ember.ones(1))
    lr = ember.tensor(0.1)
    opt = ember.optim.SGD([p], lr=lr)
    sched = E.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and math.isclose(lr.item(), 0.05, rel_tol=1e-6)


BAD = [
    ("ConstantLR", {"factor": 1.5}), ("LinearLR", {"start_factor": 0}),
    ("LinearLR", {"end_factor": 2.0}), ("CosineAnnealingWarmRestarts", {"T_0": 0}),
    ("CosineAnnealingWarmRestarts", {"T_0": 2, "T_mult": 0}),
    ("CosineAnnealingWarmRestarts", {"T_0": 2.0}),
    ("CosineAnnealingWarmRestarts", {"T_0": 2, "eta_min": "0"}),
    ("CyclicLR", {"base_lr": 0.1, "max_lr": 1.0, "mode": "bogus"}),
    ("CyclicLR", {"base_lr": [0.1], "max_lr": 1.0}),
    ("OneCycleLR", {"max_lr": 0.1}), ("OneCycleLR", {"max_lr": 0.1, "total_steps": 0}),
    ("OneCycleLR", {"max_lr": 0.1, "epochs": 0, "steps_per_epoch": 3}),
    ("OneCycleLR", {"max_lr": 0.1, "epochs": 2, "steps_per_epoch": -3}),
    ("OneCycleLR", {"max_lr": 0.1, "total_steps": 10, "pct_start": 1}),
    ("OneCycleLR", {"max_lr": 0.1, "total_steps": 10, "anneal_strategy": "exp"}),
    ("LambdaLR", {"lr_lambda": [_lambda]}), ("MultiplicativeLR", {"lr_lambda": 0.9}),
    ("ReduceLROnPlateau", {"factor": 1.0}), ("ReduceLROnPlateau", {"mode": "avg"}),
    ("ReduceLROnPlateau", {"threshold_mode": "pct"}),
    ("ReduceLROnPlateau", {"min_lr": [0.1]}),
]


@pytest.mark.parametrize("name,kwargs", BAD, ids=[f"{i}-{n}" for i, (n, _) in enumerate(BAD)])
def test_bad_arguments_raise_like_torch(name, kwargs):
    e_opt, t_opt = _opts()
    with pytest.raises(Exception) as t_err:
        getattr(T, name)(t_opt, **kwargs)
    with pytest.raises(type(t_err.value)) as e_err:
        getattr(E, name)(e_opt, **kwargs)
    assert str(e_err.value) == str(t_err.value)


def test_other_errors_like_torch():
    e_opt, t_opt = _opts(groups=1)
    for mod, opt in ((E, e_opt), (T, t_opt)):
        with pytest.raises(TypeError, match="is not an Optimizer"):
            mod.StepLR(object(), step_size=1)
        sched = mod.OneCycleLR(opt, max_lr=0.1, total_steps=2)
        opt.step()
        sched.step()
        sched.step()
        with pytest.raises(ValueError, match="Tried to step 3 times"):
            sched.step()
        with pytest.raises(ValueError, match="at least one scheduler"):
            mod.SequentialLR(opt, schedulers=[], milestones=[])
        with pytest.raises(ValueError, match="number of milestone points"):
            mod.SequentialLR(opt, schedulers=[mod.StepLR(opt, 2)], milestones=[3])
        with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
            mod.ChainedScheduler([mod.ReduceLROnPlateau(opt)])
        with pytest.raises(ValueError, match="optimizer must support momentum"):
            mod.CyclicLR(mod.__dict__["Optimizer"](opt.param_groups[0]["params"], {"lr": 0.1}),
                         base_lr=0.1, max_lr=1.0)
        with pytest.raises(ValueError, match="non-negative epoch"):
            mod.CosineAnnealingWarmRestarts(opt, T_0=2).step(-1)
