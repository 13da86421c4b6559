"""nn.utils.parametrize, nn.utils.parametrizations and the legacy weight/spectral norm hooks,
against torch on modules holding the same weights."""

import copy

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, to_ember, to_torch
from ember import nn
from ember.nn.utils import parametrizations as P
from ember.nn.utils import parametrize

pytestmark = pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated")

TP = torch.nn.utils.parametrizations
TZ = torch.nn.utils.parametrize


def _load_into_torch(e, t):
    """Copy every state-dict entry of ember module ``e`` into torch module ``t``."""
    t.load_state_dict({k: to_torch(v) for k, v in e.state_dict().items()})


def _pair_linear(in_f=4, out_f=3, dtype=ember.float64, seed=0):
    ember.manual_seed(seed)
    e = nn.Linear(in_f, out_f, dtype=dtype)
    t = torch.nn.Linear(in_f, out_f, dtype=torch.float64 if dtype is ember.float64 else None)
    _load_into_torch(e, t)
    return e, t


def _param_grads(e, t, x_np):
    """Run both modules on the same input, backprop the same cotangent, return outputs and
    (name, ember grad, torch grad) for every parameter and the input."""
    xe = ember.tensor(x_np).requires_grad_()
    xt = torch.from_numpy(x_np.copy()).requires_grad_()
    ye, yt = e(xe), t(xt)
    assert_same(ye, yt)
    cot = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    ye.backward(ember.tensor(cot).to(ye.dtype))
    yt.backward(torch.from_numpy(cot).to(yt.dtype))
    assert_same(xe.grad, xt.grad)
    tp = dict(t.named_parameters())
    names = [n for n, _ in e.named_parameters()]
    assert names == list(tp)
    for name, p in e.named_parameters():
        assert_same(p.grad, tp[name].grad)


class Symmetric:
    """The same parametrization module class in both frameworks."""

    @staticmethod
    def make(mod):
        class Sym(mod.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

            def right_inverse(self, A):
                return A.triu()
        return Sym()


class Scale:
    @staticmethod
    def make(mod, factor=2.0):
        class Sc(mod.Module):
            def forward(self, X):
                return X * factor

            def right_inverse(self, A):
                return A / factor
        return Sc()


class SplitSum:
    """A parametrization of one tensor by two (right_inverse returns a tuple)."""

    @staticmethod
    def make(mod):
        class Split(mod.Module):
            def forward(self, a, b):
                return a + b

            def right_inverse(self, X):
                return X * 0.25, X * 0.75
        return Split()


# ---------------------------------------------------------------- parametrize core


def test_register_parametrization_class_keys_values_grads():
    e, t = _pair_linear(4, 4)
    parametrize.register_parametrization(e, "weight", Symmetric.make(nn))
    TZ.register_parametrization(t, "weight", Symmetric.make(torch.nn))
    assert type(e).__name__ == type(t).__name__ == "ParametrizedLinear"
    assert isinstance(e, nn.Linear)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert_same(e.parametrizations.weight.original, t.parametrizations.weight.original)
    assert_same(e.weight, t.weight)
    assert parametrize.is_parametrized(e) and parametrize.is_parametrized(e, "weight")
    assert not parametrize.is_parametrized(e, "bias")
    assert parametrize.type_before_parametrizations(e) is nn.Linear
    assert repr(e) == repr(t)
    _param_grads(e, t, np.random.default_rng(0).standard_normal((5, 4)))


def test_parametrization_list_chain_and_assignment():
    e, t = _pair_linear(3, 3)
    for mod, m, reg in ((nn, e, parametrize), (torch.nn, t, TZ)):
        reg.register_parametrization(m, "weight", Symmetric.make(mod))
        reg.register_parametrization(m, "weight", Scale.make(mod, 3.0))
    assert len(e.parametrizations.weight) == 2
    assert_same(e.weight, t.weight)
    value = np.random.default_rng(3).standard_normal((3, 3))
    value = value + value.T
    e.weight = ember.tensor(value)
    t.weight = torch.from_numpy(value.copy())
    assert_same(e.parametrizations.weight.original, t.parametrizations.weight.original)
    assert_same(e.weight, t.weight)
    _param_grads(e, t, np.random.default_rng(0).standard_normal((2, 3)))


def test_original_keeps_identity_and_buffers_work():
    e = nn.Linear(3, 3, dtype=ember.float64)
    w = e.weight
    parametrize.register_parametrization(e, "weight", Scale.make(nn))
    assert e.parametrizations.weight.original is w
    # a buffer can be parametrized too and stays a buffer
    for mod, lib, reg in ((nn, ember, parametrize), (torch.nn, torch, TZ)):
        m = mod.Module()
        m.register_buffer("mask", lib.ones(2, 2, dtype=lib.float64))
        reg.register_parametrization(m, "mask", Scale.make(mod))
        assert [n for n, _ in m.named_buffers()] == ["parametrizations.mask.original"]
        assert float(m.mask.sum()) == 4.0  # right_inverse halves, forward doubles
        assert float(m.parametrizations.mask.original.sum()) == 2.0


def test_several_originals_and_state_dict_round_trip():
    e, t = _pair_linear(4, 3)
    parametrize.register_parametrization(e, "weight", SplitSum.make(nn))
    TZ.register_parametrization(t, "weight", SplitSum.make(torch.nn))
    assert list(e.state_dict()) == list(t.state_dict()) == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert_same(e.weight, t.weight)
    _param_grads(e, t, np.random.default_rng(2).standard_normal((3, 4)))
    # torch -> ember state dict
    with torch.no_grad():
        t.parametrizations.weight.original0.mul_(3)
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    assert_same(e.weight, t.weight)
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        parametrize.remove_parametrizations(e, "weight", leave_parametrized=False)
    with pytest.raises(ValueError):
        TZ.remove_parametrizations(t, "weight", leave_parametrized=False)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    e, t = _pair_linear(3, 3)
    for mod, m, reg in ((nn, e, parametrize), (torch.nn, t, TZ)):
        reg.register_parametrization(m, "weight", Symmetric.make(mod))
    original = e.parametrizations.weight.original
    parametrize.remove_parametrizations(e, "weight", leave_parametrized=leave)
    TZ.remove_parametrizations(t, "weight", leave_parametrized=leave)
    assert type(e) is nn.Linear and type(t) is torch.nn.Linear
    assert not hasattr(e, "parametrizations")
    assert e.weight is original and isinstance(e.weight, nn.Parameter)
    assert_same(e.weight, t.weight)
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight"]


def test_remove_several_originals_leaves_value():
    e, t = _pair_linear(4, 3)
    parametrize.register_parametrization(e, "weight", SplitSum.make(nn))
    TZ.register_parametrization(t, "weight", SplitSum.make(torch.nn))
    parametrize.remove_parametrizations(e, "weight")
    TZ.remove_parametrizations(t, "weight")
    assert isinstance(e.weight, nn.Parameter) and e.weight.requires_grad
    assert_same(e.weight, t.weight)


def test_cached_evaluates_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 2

    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", Counting())
    calls.clear()
    with parametrize.cached():
        a, b = m.weight, m.weight
        assert a is b
    assert len(calls) == 1
    assert m.weight is not m.weight


def test_errors_match_torch():
    class ChangesShape:
        @staticmethod
        def make(mod):
            class Bad(mod.Module):
                def forward(self, X):
                    return X[:1]
            return Bad()

    class ChangesDtype:
        @staticmethod
        def make(mod):
            class Bad(mod.Module):
                def forward(self, X):
                    return X.float()
            return Bad()

    for maker, kind in ((ChangesShape, "shape"), (ChangesDtype, "dtype")):
        for mod, m, reg in ((nn, _pair_linear()[0], parametrize),
                            (torch.nn, _pair_linear()[1], TZ)):
            with pytest.raises(ValueError, match=f"may not change the {kind}"):
                reg.register_parametrization(m, "weight", maker.make(mod))
            reg.register_parametrization(m, "weight", maker.make(mod), unsafe=True)
    for mod, m, reg in ((nn, nn.Linear(2, 2), parametrize),
                        (torch.nn, torch.nn.Linear(2, 2), TZ)):
        with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
            reg.register_parametrization(m, "nope", Symmetric.make(mod))
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            reg.remove_parametrizations(m, "weight")
        reg.register_parametrization(m, "weight", Symmetric.make(mod))
        with pytest.raises(ValueError, match="may not change the shape"):
            reg.register_parametrization(m, "weight", ChangesShape.make(mod))

    class NoInverse:
        @staticmethod
        def make(mod):
            class N(mod.Module):
                def forward(self, X):
                    return X
            return N()

    for mod, m, reg in ((nn, nn.Linear(2, 2), parametrize),
                        (torch.nn, torch.nn.Linear(2, 2), TZ)):
        reg.register_parametrization(m, "weight", NoInverse.make(mod))
        with pytest.raises(RuntimeError, match="does not implement right_inverse"):
            m.weight = (ember if mod is nn else torch).zeros(2, 2)


def test_deepcopy_and_pickle_rules():
    e = nn.Linear(3, 3)
    parametrize.register_parametrization(e, "weight", Symmetric.make(nn))
    c = copy.deepcopy(e)
    assert type(c).__name__ == "ParametrizedLinear"
    assert c.parametrizations.weight.original is not e.parametrizations.weight.original
    assert bool((c.weight == e.weight).all())
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        e.__getstate__()


# ---------------------------------------------------------------- weight_norm


@pytest.mark.parametrize("dim", [0, 1, None, -1, -2])
def test_parametrizations_weight_norm_linear(dim):
    e, t = _pair_linear(4, 3)
    P.weight_norm(e, dim=dim)
    TP.weight_norm(t, dim=dim)
    assert list(e.state_dict()) == list(t.state_dict())
    for (_, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
        assert_same(a, b)
    assert_same(e.weight, t.weight)
    _param_grads(e, t, np.random.default_rng(0).standard_normal((5, 4)))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_parametrizations_weight_norm_conv(dtype):
    ember.manual_seed(1)
    e = nn.Conv2d(2, 3, 3, dtype=dtype)
    t = torch.nn.Conv2d(2, 3, 3, dtype=torch.float32 if dtype is ember.float32 else
                        torch.float64)
    _load_into_torch(e, t)
    P.weight_norm(e)
    TP.weight_norm(t)
    assert e.parametrizations.weight.original0.shape == (3, 1, 1, 1)
    x = np.random.default_rng(0).standard_normal((2, 2, 5, 5)).astype(
        np.float32 if dtype is ember.float32 else np.float64)
    _param_grads(e, t, x)


def test_weight_norm_double_backward():
    # torch's fused _weight_norm has a wrong double backward (its own gradgradcheck fails), so
    # the oracle for second derivatives is the same formula written with torch ops; the first
    # derivatives are also checked against the fused op.
    rng = np.random.default_rng(4)
    v_np, g_np, x_np = rng.standard_normal((3, 4)), rng.standard_normal((3, 1)), \
        rng.standard_normal((2, 4))
    assert_grads_match(lambda v, g, x: x @ P._weight_norm(v, g, 0).T,
                       lambda v, g, x: x @ torch._weight_norm(v, g, 0).T, v_np, g_np, x_np)
    assert_grads_match(lambda v, g, x: x @ P._weight_norm(v, g, 0).T,
                       lambda v, g, x: x @ (v * (g / v.norm(dim=1, keepdim=True))).T,
                       v_np, g_np, x_np, double_backward=True)
    v, g = ember.tensor(v_np, requires_grad=True), ember.tensor(g_np, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda v, g: P._weight_norm(v, g, 0), (v, g))


def test_weight_norm_loads_legacy_state_dict():
    e, t = _pair_linear(4, 3)
    legacy = torch.nn.utils.weight_norm(copy.deepcopy(t))
    P.weight_norm(e)
    e.load_state_dict({k: to_ember(v) for k, v in legacy.state_dict().items()})
    assert_same(e.weight, legacy.weight)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_legacy_weight_norm(dim):
    e, t = _pair_linear(4, 3)
    nn.utils.weight_norm(e, dim=dim)
    torch.nn.utils.weight_norm(t, dim=dim)
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight_g", "weight_v"]
    for (_, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
        assert_same(a, b)
    _param_grads(e, t, np.random.default_rng(0).standard_normal((5, 4)))
    # after an update of g the hook recomputes the weight
    with torch.no_grad():
        t.weight_g.mul_(2)
    with ember.no_grad():
        e.weight_g.mul_(2)
    x = np.ones((1, 4))
    assert_same(e(ember.tensor(x)), t(torch.from_numpy(x)))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        nn.utils.weight_norm(e, dim=dim)
    nn.utils.remove_weight_norm(e)
    torch.nn.utils.remove_weight_norm(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert isinstance(e.weight, nn.Parameter)
    assert_same(e.weight, t.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(e)


def test_weight_norm_refuses_uninitialized():
    with pytest.warns(FutureWarning, match="deprecated in favor of"):
        nn.utils.weight_norm(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="uninitialized parameters"):
        nn.utils.weight_norm(nn.LazyLinear(3))
    with pytest.raises(ValueError, match="uninitialized parameters"):
        torch.nn.utils.weight_norm(torch.nn.LazyLinear(3))


# ---------------------------------------------------------------- spectral_norm


def _spectral_pair(build_e, build_t, **kw):
    ember.manual_seed(0)
    e, t = build_e(), build_t()
    _load_into_torch(e, t)
    P.spectral_norm(e, **kw)
    TP.spectral_norm(t, **kw)
    assert list(e.state_dict()) == list(t.state_dict())
    _load_into_torch(e, t)  # the same u, v
    return e, t


@pytest.mark.parametrize("n_iter", [1, 3])
def test_parametrizations_spectral_norm_train_and_eval(n_iter):
    e, t = _spectral_pair(lambda: nn.Linear(5, 4, dtype=ember.float64),
                          lambda: torch.nn.Linear(5, 4, dtype=torch.float64),
                          n_power_iterations=n_iter)
    assert "parametrizations.weight.0._u" in e.state_dict()
    x = np.random.default_rng(0).standard_normal((3, 5))
    for _ in range(2):
        _param_grads(e, t, x)
        assert_same(e.parametrizations.weight[0]._u, t.parametrizations.weight[0]._u)
        assert_same(e.parametrizations.weight[0]._v, t.parametrizations.weight[0]._v)
        for m in (e, t):
            m.zero_grad()
    e.eval()
    t.eval()
    _param_grads(e, t, x)
    # the normalised weight has spectral norm ~1 after enough iterations
    big = nn.Linear(6, 6, dtype=ember.float64)
    P.spectral_norm(big, n_power_iterations=50)
    sv = np.linalg.svd(big.weight.detach().numpy(), compute_uv=False)
    assert abs(sv[0] - 1) < 1e-6


def test_parametrizations_spectral_norm_conv_transpose_dim_and_1d():
    e, t = _spectral_pair(lambda: nn.ConvTranspose2d(3, 2, 2, dtype=ember.float64),
                          lambda: torch.nn.ConvTranspose2d(3, 2, 2, dtype=torch.float64))
    assert e.parametrizations.weight[0]._u.shape == (2,)  # dim=1 for transposed convs
    _param_grads(e, t, np.random.default_rng(5).standard_normal((1, 3, 3, 3)))
    # a 1-D weight is just normalised
    for mod, lib, sn in ((nn, ember, P.spectral_norm), (torch.nn, torch, TP.spectral_norm)):
        m = mod.Module()
        m.w = mod.Parameter(lib.tensor([3.0, 4.0], dtype=lib.float64))
        sn(m, "w")
        assert np.allclose(np.asarray(m.w.detach().numpy()), [0.6, 0.8])


def test_spectral_norm_errors_match_torch():
    for mod, sn in ((nn, P.spectral_norm), (torch.nn, TP.spectral_norm)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            sn(mod.Linear(2, 2), dim=2)
        with pytest.raises(ValueError, match="n_power_iterations to be positive"):
            sn(mod.Linear(2, 2), n_power_iterations=0)
        with pytest.raises(ValueError, match="has no parameter or buffer"):
            sn(mod.Linear(2, 2), name="nope")


def test_legacy_spectral_norm():
    ember.manual_seed(0)
    e = nn.Linear(5, 4, dtype=ember.float64)
    t = torch.nn.Linear(5, 4, dtype=torch.float64)
    _load_into_torch(e, t)
    nn.utils.spectral_norm(e)
    torch.nn.utils.spectral_norm(t)
    sd_e, sd_t = e.state_dict(), t.state_dict()
    assert list(sd_e) == list(sd_t) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert sd_e._metadata[""]["spectral_norm"] == sd_t._metadata[""]["spectral_norm"]
    t.load_state_dict({k: to_torch(v) for k, v in sd_e.items()})
    x = np.random.default_rng(0).standard_normal((3, 5))
    for _ in range(2):
        _param_grads(e, t, x)
        assert_same(e.weight_u, t.weight_u)
        assert_same(e.weight_v, t.weight_v)
        e.zero_grad()
        t.zero_grad()
    e.eval()
    t.eval()
    _param_grads(e, t, x)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(e)
    nn.utils.remove_spectral_norm(e)
    torch.nn.utils.remove_spectral_norm(t)
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    assert_same(e.weight, t.weight)
    assert "spectral_norm" not in e.state_dict()._metadata[""]
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(e)


def test_legacy_spectral_norm_state_dict_from_torch_and_errors():
    t = torch.nn.utils.spectral_norm(torch.nn.Conv1d(2, 3, 2, dtype=torch.float64))
    ember.manual_seed(0)
    e = nn.utils.spectral_norm(nn.Conv1d(2, 3, 2, dtype=ember.float64))
    sd = t.state_dict()
    e.load_state_dict({k: to_ember(v) for k, v in sd.items()})
    e.eval()
    t.eval()
    x = np.random.default_rng(0).standard_normal((1, 2, 4))
    assert_same(e(ember.tensor(x)), t(torch.from_numpy(x)))
    for mod, sn in ((nn, nn.utils.spectral_norm), (torch.nn, torch.nn.utils.spectral_norm)):
        with pytest.raises(ValueError, match="n_power_iterations to be positive"):
            sn(mod.Linear(2, 2), n_power_iterations=0)
        with pytest.raises(ValueError, match="is None"):
            sn(mod.Linear(2, 2, bias=False), name="bias")
        with pytest.raises(ValueError, match="uninitialized parameters"):
            sn(mod.LazyLinear(2))


# ---------------------------------------------------------------- orthogonal


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley"])
def test_orthogonal_square_matches_torch(orth_map):
    e, t = _pair_linear(4, 4)
    P.orthogonal(e, orthogonal_map=orth_map)
    TP.orthogonal(t, orthogonal_map=orth_map)
    assert list(e.state_dict()) == list(t.state_dict()) == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.0.base"]
    for (_, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
        assert_same(a, b, atol=1e-12, rtol=1e-10)
    w = e.weight.detach().numpy()
    assert np.allclose(w @ w.T, np.eye(4), atol=1e-12)
    _param_grads(e, t, np.random.default_rng(0).standard_normal((3, 4)))
    # assigning an orthogonal matrix goes through right_inverse (new base)
    q = np.linalg.qr(np.random.default_rng(1).standard_normal((4, 4)))[0]
    e.weight = ember.tensor(q)
    t.weight = torch.from_numpy(q.copy())
    assert_same(e.weight, t.weight)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_orthogonal_householder_rectangular(shape):
    ember.manual_seed(0)
    e = nn.Linear(shape[1], shape[0], dtype=ember.float64)
    P.orthogonal(e)
    t = TP.orthogonal(torch.nn.Linear(shape[1], shape[0], dtype=torch.float64))
    assert list(e.state_dict()) == list(t.state_dict())
    w = e.weight.detach().numpy()
    gram = w.T @ w if shape[0] > shape[1] else w @ w.T
    assert np.allclose(gram, np.eye(min(shape)), atol=1e-12)
    # with the same base and original, values and grads match torch's householder map
    _load_into_torch(e, t)
    _param_grads(e, t, np.random.default_rng(0).standard_normal((2, shape[1])))


def test_orthogonal_no_trivialization_and_errors():
    for mod, orth in ((nn, P.orthogonal), (torch.nn, TP.orthogonal)):
        m = orth(mod.Linear(3, 3, dtype=ember.float64 if mod is nn else torch.float64),
                 use_trivialization=False)
        assert "base" not in dict(m.named_buffers())
        w = m.weight.detach().numpy()
        assert np.allclose(w @ w.T, np.eye(3), atol=1e-10)
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
            orth(mod.Linear(3, 3), name="bias")
        with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
            orth(mod.Linear(3, 3), orthogonal_map="nope")
        with pytest.raises(NotImplementedError):
            m.weight = (ember if mod is nn else torch).eye(3, dtype=m.weight.dtype)


def test_transfer_parametrizations_and_params():
    e, t = _pair_linear(3, 3)
    e2, t2 = _pair_linear(3, 3, seed=5)
    parametrize.register_parametrization(e, "weight", Symmetric.make(nn))
    TZ.register_parametrization(t, "weight", Symmetric.make(torch.nn))
    parametrize.transfer_parametrizations_and_params(e, e2)
    TZ.transfer_parametrizations_and_params(t, t2)
    assert list(e2.state_dict()) == list(t2.state_dict())
    assert_same(e2.weight, t2.weight)
    assert_same(e2.weight, t.weight)
    assert e2.parametrizations.weight.original is e.parametrizations.weight.original
