"""torch.optim's functional forms (``torch.optim.adam.adam``, ...), SparseAdam, Muon and
``swap_in_optimizer_params_and_state``, each against torch."""

import copy
import importlib

import numpy as np
import pytest
import torch
from tests.conftest import to_ember

import ember
from ember.optim.sparse_adam import _update_rows


def zeros(lib, ps):
    return [lib.zeros_like(p) for p in ps]


def scalars(lib, ps, value=0.0):
    return [lib.tensor(value, dtype=lib.float64) for _ in ps]


CASES = {
    "adam": (lambda L, ps: [zeros(L, ps), zeros(L, ps), zeros(L, ps), scalars(L, ps)],
             dict(amsgrad=True, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.1, eps=1e-8,
                  maximize=False)),
    "adamw": (lambda L, ps: [zeros(L, ps), zeros(L, ps), [], scalars(L, ps)],
              dict(amsgrad=False, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.1, eps=1e-8,
                   maximize=False)),
    "sgd": (lambda L, ps: [[None for _ in ps]],
            dict(weight_decay=0.01, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True,
                 maximize=False)),
    "adadelta": (lambda L, ps: [zeros(L, ps), zeros(L, ps), scalars(L, ps)],
                 dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.01, maximize=False)),
    "adagrad": (lambda L, ps: [zeros(L, ps), scalars(L, ps)],
                dict(lr=0.1, weight_decay=0.01, lr_decay=0.01, eps=1e-10, maximize=True)),
    "adamax": (lambda L, ps: [zeros(L, ps), zeros(L, ps), scalars(L, ps)],
               dict(eps=1e-8, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.01)),
    "asgd": (lambda L, ps: [zeros(L, ps), scalars(L, ps, 1.0), scalars(L, ps, 0.01),
                            scalars(L, ps)],
             dict(lambd=1e-4, lr=0.01, t0=1.0, alpha=0.75, weight_decay=0.01)),
    "nadam": (lambda L, ps: [zeros(L, ps), zeros(L, ps), scalars(L, ps, 1.0), scalars(L, ps)],
              dict(beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.01, momentum_decay=4e-3,
                   eps=1e-8)),
    "radam": (lambda L, ps: [zeros(L, ps), zeros(L, ps), scalars(L, ps)],
              dict(beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.01, eps=1e-8)),
    "rmsprop": (lambda L, ps: [zeros(L, ps), zeros(L, ps), zeros(L, ps), scalars(L, ps)],
                dict(lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.01, momentum=0.5,
                     centered=True)),
    "rprop": (lambda L, ps: [zeros(L, ps), [L.full_like(p, 0.01) for p in ps], scalars(L, ps)],
              dict(step_size_min=1e-6, step_size_max=50.0, etaminus=0.5, etaplus=1.2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_form_updates_params_and_state_like_torch(name):
    make_state, hyper = CASES[name]
    torch.manual_seed(0)
    t_params = [torch.randn(4, 3, dtype=torch.float64), torch.randn(5, dtype=torch.float64)]
    grads = [[torch.randn_like(p) for p in t_params] for _ in range(3)]
    e_params = [to_ember(p) for p in t_params]
    t_state, e_state = make_state(torch, t_params), make_state(ember, e_params)
    t_fn = getattr(importlib.import_module(f"torch.optim.{name}"), name)
    e_fn = getattr(importlib.import_module(f"ember.optim.{name}"), name)
    for step_grads in grads:
        t_fn(t_params, step_grads, *t_state, **hyper)
        e_fn(e_params, [to_ember(g) for g in step_grads], *e_state, **hyper)
    for t, e in zip(t_params, e_params):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-7, atol=1e-8)
    for t_list, e_list in zip(t_state, e_state):
        for t, e in zip(t_list, e_list):
            np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-7, atol=1e-8)


def test_sparse_adam_row_update_matches_torch_and_refuses_dense_grads():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(6, 3, sparse=True)
    param = to_ember(emb.weight.detach())
    opt = torch.optim.SparseAdam(emb.parameters(), lr=0.1)
    state, group = {}, {"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "maximize": False}
    for rows in ([1, 2, 2], [0, 2], [5]):
        opt.zero_grad()
        (emb(torch.tensor(rows)) ** 2).sum().backward()
        opt.step()
        grad = emb.weight.grad.coalesce()
        _update_rows(param, state, to_ember(grad.indices()[0]), to_ember(grad.values()), group)
    np.testing.assert_allclose(emb.weight.detach().numpy(), param.numpy(), atol=1e-6)
    model = ember.nn.Linear(2, 2)
    model(ember.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        ember.optim.SparseAdam(model.parameters()).step()
    for kwargs in ({"lr": 0.0}, {"eps": 0.0}, {"betas": (1.0, 0.9)}):
        with pytest.raises(ValueError) as expected:
            torch.optim.SparseAdam(torch.nn.Linear(2, 2).parameters(), **kwargs)
        with pytest.raises(ValueError, match=str(expected.value)[:25]):
            ember.optim.SparseAdam(model.parameters(), **kwargs)


@pytest.mark.parametrize("shape,nesterov,adjust", [((6, 4), True, None),
                                                   ((3, 5), False, "match_rms_adamw"),
                                                   ((32, 16), True, "original")])
def test_muon_matches_torch(shape, nesterov, adjust):
    torch.manual_seed(0)
    weight = torch.randn(*shape)
    tp, ep = torch.nn.Parameter(weight.clone()), ember.nn.Parameter(to_ember(weight))
    t_opt = torch.optim.Muon([tp], lr=0.02, nesterov=nesterov, adjust_lr_fn=adjust)
    e_opt = ember.optim.Muon([ep], lr=0.02, nesterov=nesterov, adjust_lr_fn=adjust)
    for _ in range(3):
        grad = torch.randn(*shape)
        tp.grad, ep.grad = grad.clone(), to_ember(grad)
        t_opt.step()
        e_opt.step()
    np.testing.assert_allclose(tp.detach().numpy(), ep.detach().numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        ember.optim.Muon([ember.nn.Parameter(ember.ones(3))])


def test_swap_in_optimizer_params_and_state_matches_torch():
    results = []
    for lib in (torch, ember):
        model = lib.nn.Linear(2, 1)
        with lib.no_grad():
            model.weight.fill_(1.0)
            model.bias.fill_(0.0)
        opt = lib.optim.Adam(model.parameters(), lr=0.1)
        model(lib.ones(1, 2)).sum().backward()
        opt.step()
        saved = opt.state_dict()
        other = {n: p.detach().clone() for n, p in model.named_parameters()}
        for p in other.values():
            p.grad = lib.ones_like(p) * 3
        swapped = {"state": {k: {kk: vv.clone() for kk, vv in v.items()}
                             for k, v in saved["state"].items()},
                   "param_groups": copy.deepcopy(saved["param_groups"])}
        with lib.optim.swap_in_optimizer_params_and_state(opt, other, swapped):
            opt.step()
        results.append([p.detach().numpy().copy() for p in other.values()]
                       + [p.detach().numpy().copy() for p in model.parameters()]
                       + [swapped["state"][0]["exp_avg"].numpy(),
                          opt.state_dict()["state"][0]["exp_avg"].numpy()])
    for t, e in zip(*results):
        np.testing.assert_allclose(t, e, atol=1e-7)
