"""swa_utils against torch.optim.swa_utils: AveragedModel (SWA/EMA), SWALR, update_bn."""

import numpy as np
import pytest
import torch
from torch.optim import swa_utils as T

import ember
from conftest import assert_same
from ember.optim import swa_utils as E


def _pair(with_bn=False):
    def build(lib):
        layers = [lib.nn.Linear(4, 5)]
        if with_bn:
            layers.append(lib.nn.BatchNorm1d(5))
        layers.append(lib.nn.Linear(5, 2))
        return lib.nn.Sequential(*layers).double()
    e, t = build(ember), build(torch)
    with torch.no_grad():
        for ep, tp in zip(e.parameters(), t.parameters()):
            tp.copy_(torch.from_numpy(ep.detach().numpy().copy()))
    return e, t


def _perturb(e, t, rng):
    with torch.no_grad(), ember.no_grad():
        for ep, tp in zip(e.parameters(), t.parameters()):
            delta = rng.standard_normal(tuple(tp.shape))
            ep.add_(ember.tensor(delta))
            tp.add_(torch.from_numpy(delta))


def _assert_models(e, t, rtol=1e-10, atol=1e-12):
    e_state, t_state = e.state_dict(), t.state_dict()
    assert list(e_state) == list(t_state)
    for key in t_state:
        assert_same(e_state[key], t_state[key], rtol=rtol, atol=atol)


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_avg_fn", "swa_avg_fn",
                                  "ema_buffers"])
def test_averaged_model_matches_torch(kind):
    rng = np.random.default_rng(0)
    e, t = _pair(with_bn=kind == "ema_buffers")
    options = {
        "swa": ({}, {}),
        "ema_multi": ({"multi_avg_fn": E.get_ema_multi_avg_fn(0.9)},
                      {"multi_avg_fn": T.get_ema_multi_avg_fn(0.9)}),
        "ema_avg_fn": ({"avg_fn": E.get_ema_avg_fn(0.8)}, {"avg_fn": T.get_ema_avg_fn(0.8)}),
        "swa_avg_fn": ({"avg_fn": E.get_swa_avg_fn()}, {"avg_fn": T.get_swa_avg_fn()}),
        "ema_buffers": ({"multi_avg_fn": E.get_ema_multi_avg_fn(0.7), "use_buffers": True},
                        {"multi_avg_fn": T.get_ema_multi_avg_fn(0.7), "use_buffers": True}),
    }[kind]
    e_avg, t_avg = E.AveragedModel(e, **options[0]), T.AveragedModel(t, **options[1])
    x = rng.standard_normal((8, 4))
    for _ in range(6):
        _perturb(e, t, rng)
        if kind == "ema_buffers":  # change the BN running stats through a forward pass
            e(ember.tensor(x))
            t(torch.from_numpy(x))
        e_avg.update_parameters(e)
        t_avg.update_parameters(t)
        _assert_models(e_avg, t_avg)
    assert e_avg.n_averaged.item() == t_avg.n_averaged.item() == 6
    assert e_avg.n_averaged.dtype is ember.int64
    assert_same(e_avg(ember.tensor(x)).detach(), t_avg(torch.from_numpy(x)).detach(),
                rtol=1e-10, atol=1e-12)
    assert repr(e_avg) == repr(t_avg)


def test_averaged_model_copies_and_keeps_buffers_in_sync():
    e, t = _pair(with_bn=True)
    e_avg, t_avg = E.AveragedModel(e), T.AveragedModel(t)
    assert e_avg.module is not e and e_avg.module[0].weight is not e[0].weight
    x = np.random.default_rng(1).standard_normal((8, 4))
    e(ember.tensor(x))
    t(torch.from_numpy(x))
    e_avg.update_parameters(e)
    t_avg.update_parameters(t)
    _assert_models(e_avg, t_avg)


def test_averaging_functions_errors_like_torch():
    for mod in (E, T):
        with pytest.raises(ValueError, match="Invalid decay value"):
            mod.get_ema_avg_fn(1.5)
        with pytest.raises(ValueError, match="Invalid decay value"):
            mod.get_ema_multi_avg_fn(-0.1)
    e, t = _pair()
    for mod, model in ((E, e), (T, t)):
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
            mod.AveragedModel(model, avg_fn=mod.get_swa_avg_fn(),
                              multi_avg_fn=mod.get_swa_multi_avg_fn())


def test_swa_multi_avg_fn_on_integer_tensors_refused_like_torch():
    with pytest.raises(RuntimeError) as t_err:
        T.get_swa_multi_avg_fn()([torch.tensor([0, 10])], [torch.tensor([4, 2])],
                                 torch.tensor(1))
    with pytest.raises(type(t_err.value)):
        E.get_swa_multi_avg_fn()([ember.tensor([0, 10])], [ember.tensor([4, 2])],
                                 ember.tensor(1))
    e_avg, t_avg = [ember.tensor([0, 10])], [torch.tensor([0, 10])]
    E.get_ema_multi_avg_fn(0.5)(e_avg, [ember.tensor([4, 2])], None)
    T.get_ema_multi_avg_fn(0.5)(t_avg, [torch.tensor([4, 2])], None)
    assert_same(e_avg[0], t_avg[0])


@pytest.mark.parametrize("kwargs", [
    {"swa_lr": 0.05}, {"swa_lr": [0.01, 0.2], "anneal_epochs": 4, "anneal_strategy": "linear"},
    {"swa_lr": 0.5, "anneal_epochs": 0}, {"swa_lr": 0.02, "anneal_epochs": 7},
])
def test_swalr_sequence_and_resume_match_torch(kwargs):
    opts = []
    for lib, mod in ((ember, ember.optim), (torch, torch.optim)):
        groups = [{"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.1},
                  {"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.3}]
        opts.append(mod.SGD(groups, lr=0.1))
    e_opt, t_opt = opts
    e_sched, t_sched = E.SWALR(e_opt, **kwargs), T.SWALR(t_opt, **kwargs)
    assert e_sched.get_last_lr() == t_sched.get_last_lr()
    for i in range(30):
        e_opt.step()
        t_opt.step()
        e_sched.step()
        t_sched.step()
        assert e_sched.get_last_lr() == t_sched.get_last_lr(), i
        if i == 10:
            state = e_sched.state_dict()
            assert set(state) == set(t_sched.state_dict())
            e_sched = E.SWALR(e_opt, **kwargs)
            e_sched.load_state_dict(state)


def test_swalr_errors_like_torch():
    for lib, mod, sched in ((ember, ember.optim, E), (torch, torch.optim, T)):
        opt = mod.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of"):
            sched.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
            sched.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)
        with pytest.raises(ValueError, match="same length as optimizer.param_groups"):
            sched.SWALR(opt, swa_lr=[0.1, 0.2])


def test_update_bn_matches_torch():
    e, t = _pair(with_bn=True)
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((6, 4)) * (i + 1) for i in range(4)]
    e.eval()
    t.eval()
    E.update_bn([(ember.tensor(b), 0) for b in batches], e)
    T.update_bn([(torch.from_numpy(b), 0) for b in batches], t)
    _assert_models(e, t, rtol=1e-10, atol=1e-12)
    assert not e.training and e[1].momentum == t[1].momentum == 0.1
    # a loader of bare tensors, and a model without BatchNorm (a no-op)
    E.update_bn([ember.tensor(b) for b in batches], e)
    T.update_bn([torch.from_numpy(b) for b in batches], t)
    _assert_models(e, t, rtol=1e-10, atol=1e-12)
    plain = ember.nn.Linear(2, 2)
    before = plain.weight.detach().clone()
    E.update_bn([ember.ones(1, 2)], plain)
    assert plain.weight.tolist() == before.tolist()
