"""kl_divergence vs torch: values, gradients, dispatch, unregistered pairs."""

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as D
from conftest import assert_grads_match, assert_same

RNG = np.random.default_rng(1)


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def _spd(n):
    a = RNG.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


# name -> (builder(mod, *params), p arrays, q arrays); q is broadcast against p
PAIRS = {
    "Normal": (lambda m, a, b: m.Normal(a, b), [RNG.standard_normal((2, 3)), _pos(2, 3)],
               [RNG.standard_normal(3), _pos(3)]),
    "Laplace": (lambda m, a, b: m.Laplace(a, b), [RNG.standard_normal((2, 3)), _pos(2, 3)],
                [RNG.standard_normal(3), _pos(3)]),
    "Exponential": (lambda m, a: m.Exponential(a), [_pos(2, 3)], [_pos(3)]),
    "Gamma": (lambda m, a, b: m.Gamma(a, b), [_pos(2, 3), _pos(2, 3)], [_pos(3), _pos(3)]),
    "Beta": (lambda m, a, b: m.Beta(a, b), [_pos(2, 3), _pos(2, 3)], [_pos(3), _pos(3)]),
    "Poisson": (lambda m, a: m.Poisson(a), [_pos(2, 3)], [_pos(3)]),
    "Dirichlet": (lambda m, a: m.Dirichlet(a), [_pos(2, 4)], [_pos(4)]),
    # torch's Bernoulli KL indexes with unbroadcast masks: same shapes for p and q
    "Bernoulli": (lambda m, a: m.Bernoulli(logits=a), [RNG.standard_normal((2, 3))],
                  [RNG.standard_normal((2, 3))]),
    "Categorical": (lambda m, a: m.Categorical(logits=a), [RNG.standard_normal((2, 4))],
                    [RNG.standard_normal(4)]),
    "OneHotCategorical": (lambda m, a: m.OneHotCategorical(probs=a), [_pos(2, 4)], [_pos(4)]),
    "Uniform": (lambda m, a, b: m.Uniform(a, b), [np.array([-1.0, 0.5]), np.array([1.0, 2.0])],
                [np.array([-2.0, 0.0]), np.array([3.0, 2.5])]),
    "Independent": (lambda m, a, b: m.Independent(m.Normal(a, b), 1),
                    [RNG.standard_normal((2, 3)), _pos(2, 3)],
                    [RNG.standard_normal(3), _pos(3)]),
    "MultivariateNormal": (lambda m, a, b: m.MultivariateNormal(a, covariance_matrix=b),
                           [RNG.standard_normal((2, 3)), _spd(3)],
                           [RNG.standard_normal(3), _spd(3)]),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_kl_values_and_gradients(name):
    build, pa, qa = PAIRS[name]
    n = len(pa)

    def ef(*arrays):
        return D.kl_divergence(build(D, *arrays[:n]), build(D, *arrays[n:]))

    def tf(*arrays):
        return TD.kl_divergence(build(TD, *arrays[:n]), build(TD, *arrays[n:]))

    arrays = pa + qa
    if name == "Uniform":   # the bounds' gradients: where finite
        assert_grads_match(ef, tf, *arrays)
        return
    assert_grads_match(ef, tf, *arrays, double_backward=name not in ("MultivariateNormal",))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kl_edge_values(dtype):
    p = np.array([0.0, 1.0, 0.3, 0.0], dtype)
    q = np.array([0.5, 0.0, 0.0, 0.0], dtype)
    assert_same(D.kl_divergence(D.Bernoulli(ember.tensor(p)), D.Bernoulli(ember.tensor(q))),
                TD.kl_divergence(TD.Bernoulli(torch.from_numpy(p)),
                                 TD.Bernoulli(torch.from_numpy(q))))
    pc = np.array([[0.0, 0.5, 0.5], [0.2, 0.8, 0.0]], dtype)
    qc = np.array([[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]], dtype)
    assert_same(D.kl_divergence(D.Categorical(ember.tensor(pc)), D.Categorical(ember.tensor(qc))),
                TD.kl_divergence(TD.Categorical(torch.from_numpy(pc)),
                                 TD.Categorical(torch.from_numpy(qc))))
    lo, hi = np.array([0.0, 0.0], dtype), np.array([1.0, 1.0], dtype)
    lo2, hi2 = np.array([0.5, -1.0], dtype), np.array([2.0, 1.0], dtype)
    assert_same(D.kl_divergence(D.Uniform(ember.tensor(lo), ember.tensor(hi)),
                                D.Uniform(ember.tensor(lo2), ember.tensor(hi2))),
                TD.kl_divergence(TD.Uniform(torch.from_numpy(lo), torch.from_numpy(hi)),
                                 TD.Uniform(torch.from_numpy(lo2), torch.from_numpy(hi2))))


def test_kl_unregistered_and_register():
    with pytest.raises(NotImplementedError):
        TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Cauchy(0.0, 1.0))
    with pytest.raises(NotImplementedError, match="Normal"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Cauchy(0.0, 1.0))
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Independent(D.Normal(ember.zeros(2, 2), 1.0), 1),
                        D.Independent(D.Normal(ember.zeros(2, 2), 1.0), 2))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(D.MultivariateNormal(ember.zeros(2), ember.eye(2)),
                        D.MultivariateNormal(ember.zeros(3), ember.eye(3)))

    class MyNormal(D.Normal):
        pass

    # a subclass dispatches to its parent's rule until a more specific one is registered
    assert_same(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)),
                TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Normal(1.0, 1.0)))

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ember.tensor(42.0)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0))) == 42.0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)
