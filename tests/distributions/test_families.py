"""ember.distributions vs torch.distributions: values, gradients, samples, shapes, errors."""

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as D
from conftest import assert_grads_match, assert_same, make_pair

RNG = np.random.default_rng(0)


def _pos(*shape, low=0.5, high=2.0):
    return RNG.uniform(low, high, shape)


def _real(*shape):
    return RNG.standard_normal(shape)


def _unit(*shape):
    return RNG.uniform(0.05, 0.95, shape)


# name -> (param arrays, value array, has icdf/cdf)
# parameters are batched with broadcasting: (3, 1) against (4,)
FAMILIES = {
    "Normal": (lambda: [_real(3, 1), _pos(4)], lambda: _real(2, 3, 4)),
    "Laplace": (lambda: [_real(3, 1), _pos(4)], lambda: _real(2, 3, 4)),
    "Cauchy": (lambda: [_real(3, 1), _pos(4)], lambda: _real(2, 3, 4)),
    "Gumbel": (lambda: [_real(3, 1), _pos(4)], lambda: _real(2, 3, 4)),
    "LogNormal": (lambda: [_real(3, 1), _pos(4)], lambda: _pos(2, 3, 4)),
    "Uniform": (lambda: [_real(3, 1) - 3, _pos(4) + 1], lambda: _unit(2, 3, 4)),
    "Exponential": (lambda: [_pos(3, 4)], lambda: _pos(2, 3, 4)),
    "Gamma": (lambda: [_pos(3, 1), _pos(4)], lambda: _pos(2, 3, 4)),
    "Beta": (lambda: [_pos(3, 1), _pos(4)], lambda: _unit(2, 3, 4)),
    "Poisson": (lambda: [_pos(3, 4)], lambda: RNG.integers(0, 5, (2, 3, 4)).astype(float)),
}
CDF = {"Gamma", "Normal", "Laplace", "Cauchy", "Gumbel", "LogNormal", "Uniform", "Exponential"}
ICDF = {"Normal", "Laplace", "Cauchy", "Gumbel", "LogNormal", "Uniform", "Exponential"}
NO_MODE = {"Uniform"}


def _pairs(name, arrays, dtype):
    e = [ember.tensor(a.astype(dtype)) for a in arrays]
    t = [torch.from_numpy(a.astype(dtype)) for a in arrays]
    return getattr(D, name)(*e), getattr(TD, name)(*t)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_values_match_torch(name, dtype):
    params, values = FAMILIES[name]
    arrays = params()
    e, t = _pairs(name, arrays, dtype)
    assert e.batch_shape == t.batch_shape and e.event_shape == t.event_shape
    v = values().astype(dtype)
    ev, tv = ember.tensor(v), torch.from_numpy(v)
    tol = {} if dtype == np.float64 else {"rtol": 1e-4, "atol": 1e-5}
    assert_same(e.log_prob(ev), t.log_prob(tv), **tol)
    for prop in ("mean", "variance", "stddev") + (() if name in NO_MODE else ("mode",)):
        assert_same(getattr(e, prop), getattr(t, prop), **tol)
    if name == "Poisson":   # torch has no closed form
        with pytest.raises(NotImplementedError):
            t.entropy()
        with pytest.raises(NotImplementedError):
            e.entropy()
    else:
        assert_same(e.entropy(), t.entropy(), **tol)
    if name in CDF:
        assert_same(e.cdf(ev), t.cdf(tv), **tol)
    if name in ICDF:
        q = _unit(2, 3, 4).astype(dtype)
        assert_same(e.icdf(ember.tensor(q)), t.icdf(torch.from_numpy(q)), **tol)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_log_prob_gradients(name):
    params, values = FAMILIES[name]
    arrays = params()
    v = values()

    def ef(*ps):
        return getattr(D, name)(*ps).log_prob(ember.tensor(v))

    def tf(*ps):
        return getattr(TD, name)(*ps).log_prob(torch.from_numpy(v))

    assert_grads_match(ef, tf, *arrays, double_backward=name not in ("Gamma", "Beta"))


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Gumbel", "LogNormal",
                                  "Uniform", "Exponential"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_samples_equal_torch_after_seed(name, dtype):
    arrays = FAMILIES[name][0]()
    e, t = _pairs(name, arrays, dtype)
    for method in ("sample", "rsample"):
        ember.manual_seed(7)
        torch.manual_seed(7)
        es = getattr(e, method)((2, 5))
        ts = getattr(t, method)((2, 5))
        assert_same(es, ts, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Gumbel", "LogNormal",
                                  "Uniform", "Exponential"])
def test_rsample_gradients(name):
    arrays = FAMILIES[name][0]()

    def ef(*ps):
        ember.manual_seed(3)
        return getattr(D, name)(*ps).rsample((2,))

    def tf(*ps):
        torch.manual_seed(3)
        return getattr(TD, name)(*ps).rsample((2,))

    assert_grads_match(ef, tf, *arrays, double_backward=True)


def test_gamma_cdf_gradient():
    a, r, v = _pos(3, 1), _pos(4), _pos(2, 3, 4)
    assert_grads_match(lambda x: D.Gamma(ember.tensor(a), x).cdf(ember.tensor(v)),
                       lambda x: TD.Gamma(torch.from_numpy(a), x).cdf(torch.from_numpy(v)),
                       r)


def test_support_edges():
    for name, v in [("Exponential", [0.0, 1.0]), ("Uniform", [-3.0, 0.0])]:
        arrays = [np.array([1.0, 2.0])] if name == "Exponential" else \
            [np.array([-3.0, -1.0]), np.array([0.0, 1.0])]
        e, t = _pairs(name, arrays, np.float64)
        vv = np.array(v)
        assert_same(e.log_prob(ember.tensor(vv)), t.log_prob(torch.from_numpy(vv)))
    e, t = _pairs("Beta", [np.array([1.0]), np.array([1.0])], np.float64)
    vv = np.array([0.0, 1.0])
    assert_same(e.log_prob(ember.tensor(vv)), t.log_prob(torch.from_numpy(vv)))
    e, t = _pairs("Gamma", [np.array([1.0, 2.0]), np.array([1.0])], np.float64)
    vv = np.array([0.0, 0.0])
    assert_same(e.log_prob(ember.tensor(vv)), t.log_prob(torch.from_numpy(vv)))
    e, t = D.Poisson(ember.tensor([0.0, 1.0])), TD.Poisson(torch.tensor([0.0, 1.0]))
    assert_same(e.log_prob(ember.tensor([0.0, 0.0])), t.log_prob(torch.tensor([0.0, 0.0])))


def test_scalar_parameters():
    for name, args in [("Normal", (0.5, 2.0)), ("Exponential", (1.5,)), ("Gamma", (2.0, 3.0)),
                       ("Beta", (2.0, 3.0)), ("Uniform", (0.0, 2.0)), ("Laplace", (0.0, 1.0)),
                       ("Gumbel", (1.0, 2.0)), ("LogNormal", (0.0, 1.0)),
                       ("Poisson", (3.0,))]:
        e, t = getattr(D, name)(*args), getattr(TD, name)(*args)
        assert e.batch_shape == t.batch_shape == ember.Size([])
        assert_same(e.mean, t.mean)
        if name != "Poisson":
            assert_same(e.entropy(), t.entropy())
        ember.manual_seed(1)
        assert tuple(e.sample((2, 3)).shape) == (2, 3)


# ------------------------------------------------------------------ discrete


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_logits", [False, True])
def test_bernoulli_geometric(dtype, use_logits):
    p = _unit(3, 4).astype(dtype)
    for name in ("Bernoulli", "Geometric"):
        kw = "logits" if use_logits else "probs"
        arr = np.log(p / (1 - p)).astype(dtype) if use_logits else p
        e = getattr(D, name)(**{kw: ember.tensor(arr)})
        t = getattr(TD, name)(**{kw: torch.from_numpy(arr)})
        v = (RNG.integers(0, 2, (2, 3, 4)) if name == "Bernoulli"
             else RNG.integers(0, 6, (2, 3, 4))).astype(dtype)
        tol = {} if dtype == np.float64 else {"rtol": 1e-4, "atol": 1e-5}
        assert_same(e.log_prob(ember.tensor(v)), t.log_prob(torch.from_numpy(v)), **tol)
        for prop in ("mean", "variance", "mode", "probs", "logits"):
            assert_same(getattr(e, prop), getattr(t, prop), **tol)
        assert_same(e.entropy(), t.entropy(), **tol)
        ember.manual_seed(11)
        torch.manual_seed(11)
        assert_same(e.sample((2, 5)), t.sample((2, 5)))


@pytest.mark.parametrize("name", ["Bernoulli", "Geometric", "Categorical"])
@pytest.mark.parametrize("kw", ["probs", "logits"])
def test_discrete_gradients(name, kw):
    if name == "Categorical":
        p = RNG.uniform(0.1, 1.0, (3, 4))
        v = RNG.integers(0, 4, (2, 3))
    else:
        p = _unit(3, 4)
        v = RNG.integers(0, 3 if name == "Geometric" else 2, (2, 3, 4)).astype(float)
    arr = np.log(p) if kw == "logits" else p

    def ef(x):
        d = getattr(D, name)(**{kw: x})
        return d.log_prob(ember.tensor(v)), d.entropy()

    def tf(x):
        d = getattr(TD, name)(**{kw: x})
        return d.log_prob(torch.from_numpy(v)), d.entropy()

    assert_grads_match(ef, tf, arr, double_backward=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_categorical(dtype):
    p = RNG.uniform(0.0, 1.0, (2, 3, 5)).astype(dtype)
    p[0, 0, 1] = 0.0
    for kw, arr in (("probs", p), ("logits", np.log(p + 0.1).astype(dtype))):
        e = D.Categorical(**{kw: ember.tensor(arr)})
        t = TD.Categorical(**{kw: torch.from_numpy(arr)})
        assert e.batch_shape == t.batch_shape
        v = RNG.integers(0, 5, (4, 2, 3))
        tol = {} if dtype == np.float64 else {"rtol": 1e-5, "atol": 1e-6}
        assert_same(e.log_prob(ember.tensor(v)), t.log_prob(torch.from_numpy(v)), **tol)
        assert_same(e.log_prob(ember.tensor(v[:, :1])), t.log_prob(torch.from_numpy(v[:, :1])),
                    **tol)
        for prop in ("mean", "variance", "mode", "probs", "logits"):
            assert_same(getattr(e, prop), getattr(t, prop), **tol)
        assert_same(e.entropy(), t.entropy(), **tol)
        assert_same(e.enumerate_support(), t.enumerate_support())
        assert_same(e.enumerate_support(False), t.enumerate_support(False))
        ember.manual_seed(5)
        torch.manual_seed(5)
        assert_same(e.sample((4, 3)), t.sample((4, 3)))
        oe = D.OneHotCategorical(**{kw: ember.tensor(arr)})
        ot = TD.OneHotCategorical(**{kw: torch.from_numpy(arr)})
        assert oe.event_shape == ot.event_shape == ember.Size([5])
        ember.manual_seed(5)
        torch.manual_seed(5)
        s = ot.sample((4,))
        assert_same(oe.sample((4,)), s)
        assert_same(oe.log_prob(ember.tensor(s.numpy())), ot.log_prob(s), **tol)
        for prop in ("mean", "variance", "mode"):
            assert_same(getattr(oe, prop), getattr(ot, prop), **tol)
        assert_same(oe.entropy(), ot.entropy(), **tol)


def test_poisson_sample_and_grad():
    r = _pos(3, 4, low=0.5, high=20)
    e, t = D.Poisson(ember.tensor(r)), TD.Poisson(torch.from_numpy(r))
    ember.manual_seed(2)
    torch.manual_seed(2)
    assert_same(e.sample((2,)), t.sample((2,)))
    v = RNG.integers(0, 10, (3, 4)).astype(float)
    assert_grads_match(lambda x: D.Poisson(x).log_prob(ember.tensor(v)),
                       lambda x: TD.Poisson(x).log_prob(torch.from_numpy(v)), r,
                       double_backward=True)


@pytest.mark.parametrize("kw", ["probs", "logits"])
def test_binomial(kw):
    n = np.array([[5.0], [10.0], [0.0]])
    p = _unit(3, 4)
    arr = np.log(p / (1 - p)) if kw == "logits" else p
    e = D.Binomial(ember.tensor(n), **{kw: ember.tensor(arr)})
    t = TD.Binomial(torch.from_numpy(n), **{kw: torch.from_numpy(arr)})
    assert e.batch_shape == t.batch_shape
    v = np.minimum(RNG.integers(0, 6, (2, 3, 4)), n).astype(float)
    assert_same(e.log_prob(ember.tensor(v)), t.log_prob(torch.from_numpy(v)))
    for prop in ("mean", "variance", "mode"):
        assert_same(getattr(e, prop), getattr(t, prop))
    with pytest.raises(NotImplementedError):
        t.entropy()
    with pytest.raises(NotImplementedError):
        e.entropy()
    e5 = D.Binomial(5, **{kw: ember.tensor(arr)})
    t5 = TD.Binomial(5, **{kw: torch.from_numpy(arr)})
    assert_same(e5.entropy(), t5.entropy())
    assert_same(e5.enumerate_support(), t5.enumerate_support())
    assert_grads_match(lambda x: D.Binomial(ember.tensor(n), **{kw: x}).log_prob(
        ember.tensor(v)), lambda x: TD.Binomial(torch.from_numpy(n), **{kw: x}).log_prob(
        torch.from_numpy(v)), arr, double_backward=True)
    ember.manual_seed(0)
    s = D.Binomial(ember.tensor(n), probs=ember.tensor(p)).sample((2000,))
    assert tuple(s.shape) == (2000, 3, 4)
    assert bool((s <= ember.tensor(n)).all()) and bool((s >= 0).all())
    np.testing.assert_allclose(s.mean(0).numpy(), n * p, atol=0.25)


# ------------------------------------------------------------------ Dirichlet, Gamma, Beta


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dirichlet_values(dtype):
    c = _pos(2, 3, 4, low=0.3, high=3.0).astype(dtype)
    c[0, 0] = [0.5, 0.6, 0.7, 0.8]      # all < 1: mode is one-hot
    e, t = D.Dirichlet(ember.tensor(c)), TD.Dirichlet(torch.from_numpy(c))
    assert e.batch_shape == t.batch_shape and e.event_shape == t.event_shape
    v = RNG.dirichlet(np.ones(4), (5, 2, 3)).astype(dtype)
    tol = {} if dtype == np.float64 else {"rtol": 1e-4, "atol": 1e-5}
    assert_same(e.log_prob(ember.tensor(v)), t.log_prob(torch.from_numpy(v)), **tol)
    for prop in ("mean", "variance", "mode"):
        assert_same(getattr(e, prop), getattr(t, prop), **tol)
    assert_same(e.entropy(), t.entropy(), **tol)
    assert_grads_match(lambda x: D.Dirichlet(x).log_prob(ember.tensor(v.astype(float))),
                       lambda x: TD.Dirichlet(x).log_prob(torch.from_numpy(v.astype(float))),
                       c.astype(float), double_backward=True)


def test_gamma_beta_dirichlet_sample_statistics():
    from scipy import stats
    ember.manual_seed(0)
    n = 20000
    g = D.Gamma(ember.tensor([0.5, 3.0]), ember.tensor([2.0, 0.5])).sample((n,)).numpy()
    for i, (a, r) in enumerate([(0.5, 2.0), (3.0, 0.5)]):
        assert stats.kstest(g[:, i], stats.gamma(a, scale=1 / r).cdf).pvalue > 1e-3
    b = D.Beta(ember.tensor([0.7, 4.0]), ember.tensor([2.0, 4.0])).sample((n,)).numpy()
    for i, (a, c) in enumerate([(0.7, 2.0), (4.0, 4.0)]):
        assert stats.kstest(b[:, i], stats.beta(a, c).cdf).pvalue > 1e-3
    alpha = np.array([0.5, 1.0, 3.0])
    x = D.Dirichlet(ember.tensor(alpha)).sample((n,)).numpy()
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    for i in range(3):   # Dirichlet marginals are Beta(alpha_i, sum - alpha_i)
        marg = stats.beta(alpha[i], alpha.sum() - alpha[i])
        assert stats.kstest(x[:, i], marg.cdf).pvalue > 1e-3
    for dtype in (ember.float32, ember.float64):
        s = D.Gamma(ember.ones(2, dtype=dtype), 1.0).sample((2, 3))
        assert s.dtype is dtype and tuple(s.shape) == (2, 3, 2)
    ember.manual_seed(4)
    a = D.Gamma(ember.tensor([2.0]), 1.0).sample((3,))
    ember.manual_seed(4)
    assert_same(D.Gamma(ember.tensor([2.0]), 1.0).sample((3,)), torch.from_numpy(a.numpy()))


def test_gamma_rsample_gradient_is_torchs_implicit_gradient():
    a = _pos(6, low=0.2, high=30.0)
    r = _pos(6)
    ea, ta = make_pair(a, requires_grad=True)
    er, tr = make_pair(r, requires_grad=True)
    ember.manual_seed(0)
    x = D.Gamma(ea, er).rsample()
    g = RNG.standard_normal(6)
    ga, gr = ember.autograd.grad(x, [ea, er], ember.tensor(g))
    std = torch.from_numpy((x.detach() * er.detach()).numpy())
    t_da = torch._standard_gamma_grad(ta.detach(), std) / tr.detach()
    assert_same(ga, torch.from_numpy(g) * t_da, rtol=2e-3, atol=1e-8)
    assert_same(gr, torch.from_numpy(g) * -torch.from_numpy(x.detach().numpy()) / tr.detach())


def test_dirichlet_beta_rsample_gradient_is_torchs():
    c = _pos(2, 4, low=0.3, high=5.0)
    ec, tc = make_pair(c, requires_grad=True)
    ember.manual_seed(0)
    x = D.Dirichlet(ec).rsample()
    g = RNG.standard_normal((2, 4))
    (gc,) = ember.autograd.grad(x, [ec], ember.tensor(g))
    xt = torch.from_numpy(x.detach().numpy())
    total = tc.detach().sum(-1, True).expand_as(tc)
    gt = torch._dirichlet_grad(xt, tc.detach(), total)
    gt = gt * (torch.from_numpy(g) - (xt * torch.from_numpy(g)).sum(-1, True))
    assert_same(gc, gt, rtol=2e-3, atol=1e-8)   # torch approximates, ember is exact
    a, b = _pos(3), _pos(3)
    (ea, ta), (eb, tb) = make_pair(a, True), make_pair(b, True)
    ember.manual_seed(1)
    y = D.Beta(ea, eb).rsample()
    ga, gb = ember.autograd.grad(y.sum(), [ea, eb])
    yt = torch.from_numpy(y.detach().numpy())
    xt = torch.stack([yt, 1 - yt], -1)
    ct = torch.stack([ta, tb], -1).detach()
    gt = torch._dirichlet_grad(xt, ct, ct.sum(-1, True).expand_as(ct))
    gt = gt * (torch.tensor([1.0, 0.0], dtype=torch.float64) - xt[..., :1])
    assert_same(ga, gt[..., 0], rtol=2e-3, atol=1e-8)
    assert_same(gb, gt[..., 1], rtol=2e-3, atol=1e-8)


def test_beta_dirichlet_rsample_gradient_unbiased():
    # d/da E[x] for Beta(a, b): b / (a + b)^2; d/db: -a / (a + b)^2 (Monte Carlo of the
    # implicit reparameterisation gradient)
    ember.manual_seed(0)
    a = ember.tensor([2.0], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([3.0], dtype=ember.float64, requires_grad=True)
    x = D.Beta(a, b).rsample((40000,))
    ga, gb = ember.autograd.grad(x.mean(), [a, b])
    np.testing.assert_allclose(ga.numpy(), [3 / 25], rtol=0.05)
    np.testing.assert_allclose(gb.numpy(), [-2 / 25], rtol=0.05)
    c = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    x = D.Dirichlet(c).rsample((40000,))
    (gc,) = ember.autograd.grad(x[:, 2].mean(), [c])   # E[x_3] = c3 / sum
    np.testing.assert_allclose(gc.numpy(), [-3 / 36, -3 / 36, 3 / 36], rtol=0.08)


# ------------------------------------------------------------------ multivariate normal


def _spd(batch, n):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn(param):
    loc = _real(2, 1, 3)
    m = _spd((4,), 3)
    if param == "scale_tril":
        m = np.linalg.cholesky(m)
    e = D.MultivariateNormal(ember.tensor(loc), **{param: ember.tensor(m)})
    t = TD.MultivariateNormal(torch.from_numpy(loc), **{param: torch.from_numpy(m)})
    assert e.batch_shape == t.batch_shape == ember.Size([2, 4])
    assert e.event_shape == t.event_shape
    v = _real(5, 2, 4, 3)
    assert_same(e.log_prob(ember.tensor(v)), t.log_prob(torch.from_numpy(v)))
    for prop in ("mean", "mode", "variance", "covariance_matrix", "precision_matrix",
                 "scale_tril"):
        assert_same(getattr(e, prop), getattr(t, prop), rtol=1e-10, atol=1e-10)
    assert_same(e.entropy(), t.entropy())
    ember.manual_seed(9)
    torch.manual_seed(9)
    assert_same(e.rsample((2,)), t.rsample((2,)))
    ember.manual_seed(9)
    torch.manual_seed(9)
    assert_same(e.sample(), t.sample())

    def ef(lc, mm):
        d = D.MultivariateNormal(lc, **{param: mm})
        ember.manual_seed(1)
        return d.log_prob(ember.tensor(v)), d.entropy(), d.rsample()

    def tf(lc, mm):
        d = TD.MultivariateNormal(lc, **{param: mm})
        torch.manual_seed(1)
        return d.log_prob(torch.from_numpy(v)), d.entropy(), d.rsample()

    assert_grads_match(ef, tf, loc, m, rtol=1e-8, atol=1e-9)


# ------------------------------------------------------------------ composites


def test_independent_and_transformed():
    loc, scale = _real(2, 3), _pos(2, 3)
    e = D.Independent(D.Normal(ember.tensor(loc), ember.tensor(scale)), 1)
    t = TD.Independent(TD.Normal(torch.from_numpy(loc), torch.from_numpy(scale)), 1)
    assert e.batch_shape == t.batch_shape and e.event_shape == t.event_shape
    v = _real(4, 2, 3)
    assert_same(e.log_prob(ember.tensor(v)), t.log_prob(torch.from_numpy(v)))
    assert_same(e.entropy(), t.entropy())
    ember.manual_seed(1)
    torch.manual_seed(1)
    assert_same(e.rsample((2,)), t.rsample((2,)))
    assert repr(e.support) == repr(t.support)
    for et, tt in [
        ([D.ExpTransform()], [TD.ExpTransform()]),
        ([D.AffineTransform(ember.tensor(loc), ember.tensor(scale))],
         [TD.AffineTransform(torch.from_numpy(loc), torch.from_numpy(scale))]),
        ([D.SigmoidTransform()], [TD.SigmoidTransform()]),
        ([D.TanhTransform(), D.AffineTransform(1.0, -2.0)],
         [TD.TanhTransform(), TD.AffineTransform(1.0, -2.0)]),
        ([D.ComposeTransform([D.ExpTransform(), D.AffineTransform(0.5, 3.0)])],
         [TD.ComposeTransform([TD.ExpTransform(), TD.AffineTransform(0.5, 3.0)])]),
    ]:
        be = D.Normal(ember.tensor(loc), ember.tensor(scale))
        bt = TD.Normal(torch.from_numpy(loc), torch.from_numpy(scale))
        de, dt = D.TransformedDistribution(be, et), TD.TransformedDistribution(bt, tt)
        assert de.batch_shape == dt.batch_shape and de.event_shape == dt.event_shape
        ember.manual_seed(4)
        torch.manual_seed(4)
        se, st = de.rsample((3,)), dt.rsample((3,))
        assert_same(se, st)
        y = st.detach()
        assert_same(de.log_prob(ember.tensor(y.numpy())), dt.log_prob(y), rtol=1e-6,
                    atol=1e-8)
        assert_same(de.cdf(ember.tensor(y.numpy())), dt.cdf(y), rtol=1e-6, atol=1e-8)
        q = _unit(2, 3)
        assert_same(de.icdf(ember.tensor(q)), dt.icdf(torch.from_numpy(q)))
    # transforms: inverse, log-det, caching
    x = _real(3, 4)
    for et, tt in [(D.TanhTransform(), TD.TanhTransform()),
                   (D.SigmoidTransform(), TD.SigmoidTransform()),
                   (D.AffineTransform(ember.tensor(2.0), ember.tensor(-3.0), event_dim=1),
                    TD.AffineTransform(torch.tensor(2.0), torch.tensor(-3.0), event_dim=1))]:
        ye, yt = et(ember.tensor(x)), tt(torch.from_numpy(x))
        assert_same(ye, yt)
        assert_same(et.inv(ye), tt.inv(yt))
        assert_same(et.log_abs_det_jacobian(ember.tensor(x), ye),
                    tt.log_abs_det_jacobian(torch.from_numpy(x), yt))
        assert et.inv.inv is et
    c = D.ExpTransform(cache_size=1)
    xe = ember.tensor(x)
    assert c.inv(c(xe)) is xe


def test_mixture_same_family():
    logits = _real(2, 3)
    loc, scale = _real(2, 3, 4), _pos(2, 3, 4)

    def build(mod, lg, lc, sc):
        comp = mod.Independent(mod.Normal(lc, sc), 1)
        return mod.MixtureSameFamily(mod.Categorical(logits=lg), comp)

    e = build(D, ember.tensor(logits), ember.tensor(loc), ember.tensor(scale))
    t = build(TD, torch.from_numpy(logits), torch.from_numpy(loc), torch.from_numpy(scale))
    assert e.batch_shape == t.batch_shape and e.event_shape == t.event_shape
    v = _real(5, 2, 4)
    assert_same(e.log_prob(ember.tensor(v)), t.log_prob(torch.from_numpy(v)))
    assert_same(e.mean, t.mean)
    assert_same(e.variance, t.variance)
    ember.manual_seed(3)
    torch.manual_seed(3)
    assert_same(e.sample((4,)), t.sample((4,)))
    assert_grads_match(lambda a, b, c: build(D, a, b, c).log_prob(ember.tensor(v)),
                       lambda a, b, c: build(TD, a, b, c).log_prob(torch.from_numpy(v)),
                       logits, loc, scale, double_backward=True)
    u = D.MixtureSameFamily(D.Categorical(logits=ember.tensor(logits)),
                            D.Normal(ember.tensor(loc[..., 0]), ember.tensor(scale[..., 0])))
    ut = TD.MixtureSameFamily(TD.Categorical(logits=torch.from_numpy(logits)),
                              TD.Normal(torch.from_numpy(loc[..., 0]),
                                        torch.from_numpy(scale[..., 0])))
    w = _real(2)
    assert_same(u.cdf(ember.tensor(w)), ut.cdf(torch.from_numpy(w)))
    with pytest.raises(ValueError, match="Mixture distribution"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(ember.zeros(2), 1.0))
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(D.Categorical(logits=ember.zeros(3)), D.Normal(ember.zeros(2), 1.0))


# ------------------------------------------------------------------ shapes, expand, meta


CASES = [
    (lambda m, T: m.Normal(T(_real(3)), T(_pos(3))), ()),
    (lambda m, T: m.Dirichlet(T(_pos(3, 4))), (4,)),
    (lambda m, T: m.Categorical(logits=T(_real(3, 5))), ()),
    (lambda m, T: m.OneHotCategorical(logits=T(_real(3, 5))), (5,)),
    (lambda m, T: m.MultivariateNormal(T(_real(3, 2)), scale_tril=T(np.eye(2))), (2,)),
    (lambda m, T: m.Independent(m.Normal(T(_real(3, 2)), T(_pos(3, 2))), 1), (2,)),
    (lambda m, T: m.Beta(T(_pos(3)), T(_pos(3))), ()),
    (lambda m, T: m.Gamma(T(_pos(3)), T(_pos(3))), ()),
    (lambda m, T: m.Binomial(4, T(_unit(3))), ()),
    (lambda m, T: m.Bernoulli(logits=T(_real(3))), ()),
    (lambda m, T: m.Poisson(T(_pos(3))), ()),
    (lambda m, T: m.LogNormal(T(_real(3)), T(_pos(3))), ()),
    (lambda m, T: m.Gumbel(T(_real(3)), T(_pos(3))), ()),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_sample_shapes_and_expand(i):
    make, event = CASES[i]
    state = RNG.bit_generator.state
    e = make(D, ember.tensor)
    RNG.bit_generator.state = state
    t = make(TD, torch.from_numpy)
    assert e.batch_shape == t.batch_shape == ember.Size([3])
    assert e.event_shape == t.event_shape == ember.Size(event)
    ember.manual_seed(0)
    s = e.sample((2, 3))
    assert tuple(s.shape) == (2, 3, 3) + event == tuple(t.sample((2, 3)).shape)
    assert s.dtype.name == str(t.sample().dtype).removeprefix("torch.")
    assert not s.requires_grad
    x = e.expand((4, 3))
    y = t.expand((4, 3))
    assert x.batch_shape == y.batch_shape and x.event_shape == y.event_shape
    v = y.sample()
    assert_same(x.log_prob(ember.tensor(v.numpy())), y.log_prob(v))
    assert tuple(x.sample((2,)).shape) == (2, 4, 3) + event
    assert e.has_rsample == t.has_rsample


def test_meta_device():
    loc = ember.empty((3, 4), device="meta")
    d = D.Normal(loc, ember.empty((4,), device="meta"), validate_args=False)
    lp = d.log_prob(ember.empty((2, 3, 4), device="meta"))
    assert tuple(lp.shape) == (2, 3, 4) and lp.device.type == "meta"
    s = d.rsample((5,))
    assert tuple(s.shape) == (5, 3, 4) and s.device.type == "meta"
    g = D.Gamma(ember.empty((3,), device="meta"), 1.0, validate_args=False).rsample((2,))
    assert tuple(g.shape) == (2, 3)


# ------------------------------------------------------------------ validation


def _raises_like_torch(fe, ft, exc=ValueError, match=None):
    with pytest.raises(exc) as te:
        ft()
    with pytest.raises(exc, match=match) as ee:
        fe()
    return str(te.value), str(ee.value)


def test_validation_errors():
    t_msg, e_msg = _raises_like_torch(lambda: D.Normal(ember.tensor([0.0]), ember.tensor([-1.0])),
                                      lambda: TD.Normal(torch.tensor([0.0]), torch.tensor([-1.0])),
                                      match="Expected parameter scale")
    assert "GreaterThan(lower_bound=0.0)" in t_msg and "GreaterThan(lower_bound=0.0)" in e_msg
    d, td = D.Normal(0.0, 1.0), TD.Normal(0.0, 1.0)
    _raises_like_torch(lambda: d.log_prob(0.5), lambda: td.log_prob(0.5), match="Tensor")
    _raises_like_torch(lambda: D.Uniform(1.0, 0.0), lambda: TD.Uniform(1.0, 0.0),
                       match="low>= high")
    _raises_like_torch(lambda: D.Exponential(ember.tensor([1.0])).log_prob(ember.tensor([-1.])),
                       lambda: TD.Exponential(torch.tensor([1.0])).log_prob(torch.tensor([-1.])),
                       match="within the support")
    _raises_like_torch(lambda: D.Bernoulli(), lambda: TD.Bernoulli(), match="Either")
    _raises_like_torch(lambda: D.Categorical(ember.tensor(1.0)),
                       lambda: TD.Categorical(torch.tensor(1.0)), match="one-dimensional")
    _raises_like_torch(lambda: D.Categorical(ember.tensor([0.5, -0.1])),
                       lambda: TD.Categorical(torch.tensor([0.5, -0.1])), match="Simplex")
    _raises_like_torch(lambda: D.Normal(ember.zeros(3), 1.0).log_prob(ember.zeros(2)),
                       lambda: TD.Normal(torch.zeros(3), 1.0).log_prob(torch.zeros(2)),
                       match="not broadcastable")
    _raises_like_torch(lambda: D.Dirichlet(ember.ones(3)).log_prob(ember.ones(2)),
                       lambda: TD.Dirichlet(torch.ones(3)).log_prob(torch.ones(2)),
                       match="right-most size")
    _raises_like_torch(lambda: D.Geometric(ember.tensor([0.0])),
                       lambda: TD.Geometric(torch.tensor([0.0])), match="positive")
    _raises_like_torch(lambda: D.MultivariateNormal(ember.zeros(2)),
                       lambda: TD.MultivariateNormal(torch.zeros(2)), match="Exactly one")
    _raises_like_torch(
        lambda: D.MultivariateNormal(ember.zeros(2), ember.tensor([[1.0, 2.0], [2.0, 1.0]])),
        lambda: TD.MultivariateNormal(torch.zeros(2), torch.tensor([[1.0, 2.0], [2.0, 1.0]])),
        match="PositiveDefinite")
    _raises_like_torch(lambda: D.Independent(D.Normal(0.0, 1.0), 1),
                       lambda: TD.Independent(TD.Normal(0.0, 1.0), 1),
                       match="reinterpreted_batch_ndims")
    _raises_like_torch(lambda: D.Binomial(ember.tensor(2.5), ember.tensor(0.5)),
                       lambda: TD.Binomial(torch.tensor(2.5), torch.tensor(0.5)),
                       match="total_count")
    # validate_args=False and the class default
    D.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_constraints_check():
    C, TC = D.constraints, TD.constraints
    x = np.array([[-1.0, 0.0, 0.5, 1.0], [2.0, 3.0, float("nan"), 0.25]])
    for name in ("real", "positive", "nonnegative", "unit_interval", "boolean",
                 "nonnegative_integer", "positive_integer", "simplex", "real_vector",
                 "one_hot"):
        assert_same(getattr(C, name).check(ember.tensor(x)),
                    getattr(TC, name).check(torch.from_numpy(x)))
        assert repr(getattr(C, name)) == repr(getattr(TC, name))
    for ec, tc in [(C.interval(-1.0, 0.5), TC.interval(-1.0, 0.5)),
                   (C.half_open_interval(-1.0, 0.5), TC.half_open_interval(-1.0, 0.5)),
                   (C.greater_than(0.0), TC.greater_than(0.0)),
                   (C.greater_than_eq(0.0), TC.greater_than_eq(0.0)),
                   (C.less_than(1.0), TC.less_than(1.0)),
                   (C.integer_interval(0, 2), TC.integer_interval(0, 2)),
                   (C.independent(C.positive, 1), TC.independent(TC.positive, 1))]:
        assert_same(ec.check(ember.tensor(x)), tc.check(torch.from_numpy(x)))
        assert repr(ec) == repr(tc)
        assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete
    m = np.stack([_spd((), 3), -np.eye(3), np.tril(_pos(3, 3))])
    for name in ("positive_definite", "lower_cholesky", "lower_triangular", "symmetric",
                 "square"):
        assert_same(getattr(C, name).check(ember.tensor(m)),
                    getattr(TC, name).check(torch.from_numpy(m)))
    assert C.is_dependent(D.Uniform.support) and C.is_dependent(D.Uniform.arg_constraints["low"])
    with pytest.raises(ValueError):
        C.dependent.check(ember.zeros(1))


def test_transposed_and_zero_size_parameters():
    loc, scale = _real(4, 3), _pos(3, 4)
    e = D.Normal(ember.tensor(loc).T, ember.tensor(scale))
    t = TD.Normal(torch.from_numpy(loc).T, torch.from_numpy(scale))
    v = _real(2, 3, 4)
    assert_same(e.log_prob(ember.tensor(v)), t.log_prob(torch.from_numpy(v)))
    ember.manual_seed(0)
    torch.manual_seed(0)
    assert_same(e.sample((2,)), t.sample((2,)))
    c = _pos(4, 3)
    e, t = D.Dirichlet(ember.tensor(c).T.contiguous().T), TD.Dirichlet(torch.from_numpy(c))
    assert_same(e.entropy(), t.entropy())
    for name, args in [("Normal", (np.zeros((0, 2)), np.ones((0, 2)))),
                       ("Gamma", (np.ones((0, 2)), np.ones((0, 2)))),
                       ("Categorical", (np.ones((0, 3)),))]:
        e = getattr(D, name)(*[ember.tensor(a) for a in args])
        t = getattr(TD, name)(*[torch.from_numpy(a) for a in args])
        assert e.batch_shape == t.batch_shape
        ember.manual_seed(0)
        torch.manual_seed(0)
        s, st = e.sample((2,)), t.sample((2,))
        assert tuple(s.shape) == tuple(st.shape)
        assert_same(e.log_prob(s), t.log_prob(st))
        assert_same(e.entropy(), t.entropy())
