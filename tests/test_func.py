"""ember.func against torch.func: functional_call (swapping, restoring, tying, strictness,
gradients to the substituted tensors), grad/grad_and_value/vjp/jacrev."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, to_ember, to_torch
from ember import nn


def _pair(build, dtype=ember.float64):
    ember.manual_seed(0)
    e, t = build(nn), build(torch.nn)
    e.to(dtype)
    t.to(torch.float64 if dtype is ember.float64 else torch.float32)
    t.load_state_dict({k: to_torch(v) for k, v in e.state_dict().items()})
    return e, t


def _mlp(mod):
    return mod.Sequential(mod.Linear(4, 5), mod.Tanh(), mod.BatchNorm1d(5), mod.Linear(5, 2))


@pytest.mark.parametrize("dtype", [ember.float64, ember.float32])
def test_functional_call_values_grads_and_restore(dtype):
    e, t = _pair(_mlp, dtype)
    rng = np.random.default_rng(0)
    np_dtype = np.float64 if dtype is ember.float64 else np.float32
    new = {name: rng.standard_normal(tuple(p.shape)).astype(np_dtype)
           for name, p in e.named_parameters()}
    pe = {k: ember.tensor(v, requires_grad=True) for k, v in new.items()}
    pt = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in new.items()}
    x = rng.standard_normal((6, 4)).astype(np_dtype)
    before = {k: v.clone() for k, v in e.state_dict().items()}
    ids = {k: id(p) for k, p in e.named_parameters()}
    ye = ember.func.functional_call(e, pe, (ember.tensor(x),))
    yt = torch.func.functional_call(t, pt, (torch.from_numpy(x),))
    tol = {} if dtype is ember.float64 else {"rtol": 1e-5, "atol": 1e-5}
    assert_same(ye, yt, **tol)
    ye.sum().backward()
    yt.sum().backward()
    for k in new:
        assert_same(pe[k].grad, pt[k].grad, **tol)
    # the module's own parameters are back and untouched (no grads); buffers were updated in
    # training mode exactly as torch updates its own
    assert {k: id(p) for k, p in e.named_parameters()} == ids
    assert all(p.grad is None for p in e.parameters())
    for k, v in e.state_dict().items():
        if "weight" in k or "bias" in k:
            assert bool((v == before[k]).all())
    assert_same(e.state_dict()["2.running_mean"], t.state_dict()["2.running_mean"], **tol)


def test_functional_call_buffers_kwargs_and_sequence_of_dicts():
    e, t = _pair(_mlp)
    e.eval()
    t.eval()
    rm = np.arange(5.0)
    x = np.random.default_rng(1).standard_normal((3, 4))
    dicts_e = ({"2.running_mean": ember.tensor(rm)}, {"0.bias": ember.zeros(5, dtype=ember.float64)})
    dicts_t = ({"2.running_mean": torch.from_numpy(rm)}, {"0.bias": torch.zeros(5, dtype=torch.float64)})
    assert_same(ember.func.functional_call(e, dicts_e, ember.tensor(x)),
                torch.func.functional_call(t, dicts_t, torch.from_numpy(x)))
    assert float(e[2].running_mean.abs().sum()) == 0

    class WithKw(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(2))

        def forward(self, x, *, scale=1.0):
            return self.w * x * scale

    m = WithKw()
    out = ember.func.functional_call(m, {"w": ember.tensor([2.0, 3.0])}, (ember.ones(2),),
                                     {"scale": 10.0})
    assert out.tolist() == [20.0, 30.0]
    for fc, lib, mod in ((ember.func.functional_call, ember, nn),
                         (torch.func.functional_call, torch, torch.nn)):
        lin = mod.Linear(2, 2)
        with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
            fc(lin, ({"weight": lib.zeros(2, 2)}, {"weight": lib.zeros(2, 2)}), lib.ones(2))
        with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts"):
            fc(lin, 3, lib.ones(2))


def _tied(mod, lib):
    class Tied(mod.Module):
        def __init__(self):
            super().__init__()
            self.a = mod.Linear(3, 3, bias=False)
            self.b = mod.Linear(3, 3, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))
    return Tied()


def test_functional_call_tie_weights_and_strict():
    for fc, lib, mod in ((ember.func.functional_call, ember, nn),
                         (torch.func.functional_call, torch, torch.nn)):
        m = _tied(mod, lib)
        w = lib.eye(3) * 2
        x = lib.ones(1, 3)
        # tied: giving one name replaces both
        assert float(fc(m, {"a.weight": w}, x).sum()) == 12.0
        # untied: only a.weight replaced
        untied = fc(m, {"a.weight": w}, x, tie_weights=False)
        assert float((untied - m.b((w @ x.T).T)).abs().max().detach()) < 1e-6
        with pytest.raises(ValueError, match="which are tied"):
            fc(m, {"a.weight": w, "b.weight": w + 1}, x)
        assert float(fc(m, {"a.weight": w, "b.weight": w}, x).sum()) == 12.0
        with pytest.raises(RuntimeError, match=r"Unexpected key\(s\): 'c'.*\n\tMissing key"):
            fc(m, {"c": w}, x, strict=True)
        with pytest.raises(RuntimeError, match=r"Missing key\(s\)"):
            fc(mod.Linear(3, 3), {"weight": w}, x, strict=True)
        fc(mod.Linear(3, 3), {"weight": w, "bias": lib.zeros(3)}, x, strict=True)


def test_functional_call_restores_after_error_and_extra_names():
    m = nn.Linear(2, 2)
    w = m.weight

    def boom(module, args):
        raise KeyError("boom")

    h = m.register_forward_pre_hook(boom)
    with pytest.raises(KeyError):
        ember.func.functional_call(m, {"weight": ember.zeros(2, 2)}, ember.ones(2))
    h.remove()
    assert m.weight is w
    # a name that is not a parameter/buffer is set for the call and removed afterwards
    out = ember.func.functional_call(m, {"extra": ember.ones(1)}, ember.ones(2))
    assert out.shape == (2,) and not hasattr(m, "extra")


# ---------------------------------------------------------------- grad / vjp / jacrev


def test_grad_and_value_vs_torch_func():
    rng = np.random.default_rng(0)
    x_np, y_np = rng.standard_normal(4), rng.standard_normal(4)

    def f(lib):
        return lambda x, y: (x.sin() * y).sum() + (x ** 2).sum()

    ge = ember.func.grad(f(ember), argnums=(0, 1))(ember.tensor(x_np), ember.tensor(y_np))
    gt = torch.func.grad(f(torch), argnums=(0, 1))(torch.from_numpy(x_np),
                                                   torch.from_numpy(y_np))
    assert_same(ge, gt)
    assert all(g.grad_fn is None and not g.requires_grad for g in ge)
    (g, v) = ember.func.grad_and_value(f(ember))(ember.tensor(x_np), ember.tensor(y_np))
    (g2, v2) = torch.func.grad_and_value(f(torch))(torch.from_numpy(x_np),
                                                   torch.from_numpy(y_np))
    assert_same(g, g2)
    assert_same(v, v2)
    # second derivatives by composition
    d2e = ember.func.grad(ember.func.grad(lambda x: x.sin() * x ** 3))(ember.tensor(0.7,
                                                                                dtype=ember.float64))
    d2t = torch.func.grad(torch.func.grad(lambda x: x.sin() * x ** 3))(torch.tensor(
        0.7, dtype=torch.float64))
    assert_same(d2e, d2t)


def test_grad_with_functional_call_dict_and_aux():
    e, t = _pair(lambda mod: mod.Linear(3, 2))
    x = np.random.default_rng(0).standard_normal((4, 3))

    def loss(fc, lib, mod):
        def f(params, x):
            out = fc(mod, params, (x,))
            return (out ** 2).mean(), out.detach()
        return f

    pe = {k: v.detach() for k, v in e.named_parameters()}
    pt = {k: v.detach() for k, v in t.named_parameters()}
    ge, aux_e = ember.func.grad(loss(ember.func.functional_call, ember, e), has_aux=True)(
        pe, ember.tensor(x))
    gt, aux_t = torch.func.grad(loss(torch.func.functional_call, torch, t), has_aux=True)(
        pt, torch.from_numpy(x))
    assert list(ge) == list(gt)
    for k in gt:
        assert_same(ge[k], gt[k])
    assert_same(aux_e, aux_t)


def test_grad_errors_and_unused_inputs():
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        ember.func.grad(lambda x: x * 2)(ember.ones(3))
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        torch.func.grad(lambda x: x * 2)(torch.ones(3))
    g = ember.func.grad(lambda x, y: (x * 2).sum(), argnums=1)(ember.ones(2), ember.ones(3))
    gt = torch.func.grad(lambda x, y: (x * 2).sum(), argnums=1)(torch.ones(2), torch.ones(3))
    assert_same(g, gt)
    with pytest.raises(RuntimeError, match="only 1 positional inputs"):
        ember.func.grad(lambda x: x.sum(), argnums=2)(ember.ones(2))


def test_grad_keeps_outer_graph_when_inputs_require_grad():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    g = ember.func.grad(lambda x: (x ** 3).sum())(x)
    g.sum().backward()
    xt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    gt = torch.func.grad(lambda x: (x ** 3).sum())(xt)
    gt.sum().backward()
    assert_same(g, gt)
    assert_same(x.grad, xt.grad)


def test_vjp_and_jacrev_vs_torch_func():
    rng = np.random.default_rng(2)
    a_np, b_np, c_np = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal(3)
    out_e, fn_e = ember.func.vjp(lambda a, b: (a @ b).exp(), ember.tensor(a_np),
                                 ember.tensor(b_np))
    out_t, fn_t = torch.func.vjp(lambda a, b: (a @ b).exp(), torch.from_numpy(a_np),
                                 torch.from_numpy(b_np))
    assert_same(out_e, out_t)
    assert_same(fn_e(ember.tensor(c_np)), fn_t(torch.from_numpy(c_np)))
    with pytest.raises(RuntimeError):
        fn_e(ember.ones(4, dtype=ember.float64))
    for argnums in (0, 1, (0, 1)):
        je = ember.func.jacrev(lambda a, b: (a @ b).tanh(), argnums=argnums)(
            ember.tensor(a_np), ember.tensor(b_np))
        jt = torch.func.jacrev(lambda a, b: (a @ b).tanh(), argnums=argnums)(
            torch.from_numpy(a_np), torch.from_numpy(b_np))
        assert_same(je, jt)
    je, aux = ember.func.jacrev(lambda b: (b.sin(), b.sum()), has_aux=True)(ember.tensor(b_np))
    jt, aux_t = torch.func.jacrev(lambda b: (b.sin(), b.sum()), has_aux=True)(
        torch.from_numpy(b_np))
    assert_same(je, jt)
    assert_same(aux, aux_t)
    assert to_ember(jt).shape == je.shape
