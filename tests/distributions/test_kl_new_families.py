"""kl_divergence for every pair torch registers that involves a newer family, against torch:
values (finite and infinite) and gradients."""

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as D
from conftest import assert_grads_match, assert_same

RNG = np.random.default_rng(3)
SHAPE = (2, 3)


def _pos(low=0.5, high=2.0):
    return RNG.uniform(low, high, SHAPE)


def _spd(n):
    a = RNG.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


# family -> (builder(module, *arrays), parameter arrays); all share one batch shape, since
# torch's Pareto KLs index with unbroadcast masks
FAMILIES = {
    "Normal": (lambda m, a, b: m.Normal(a, b), lambda: [RNG.standard_normal(SHAPE), _pos()]),
    "Laplace": (lambda m, a, b: m.Laplace(a, b), lambda: [RNG.standard_normal(SHAPE), _pos()]),
    "Gumbel": (lambda m, a, b: m.Gumbel(a, b), lambda: [RNG.standard_normal(SHAPE), _pos()]),
    "Exponential": (lambda m, a: m.Exponential(a), lambda: [_pos()]),
    "Gamma": (lambda m, a, b: m.Gamma(a, b), lambda: [_pos(), _pos()]),
    "Beta": (lambda m, a, b: m.Beta(a, b), lambda: [_pos(), _pos()]),
    "Uniform": (lambda m, a, b: m.Uniform(a, b),
                lambda: [RNG.uniform(0.05, 0.3, SHAPE), RNG.uniform(0.6, 0.95, SHAPE)]),
    "WideUniform": (lambda m, a, b: m.Uniform(a, b),
                    lambda: [RNG.uniform(-2.0, -1.0, SHAPE), RNG.uniform(1.5, 3.0, SHAPE)]),
    "HighUniform": (lambda m, a, b: m.Uniform(a, b),
                    lambda: [RNG.uniform(2.0, 3.0, SHAPE), RNG.uniform(4.0, 5.0, SHAPE)]),
    "Pareto": (lambda m, a, b: m.Pareto(a, b),
               lambda: [RNG.uniform(0.5, 1.5, SHAPE), RNG.uniform(1.5, 4.0, SHAPE)]),
    "ContinuousBernoulli": (lambda m, a: m.ContinuousBernoulli(logits=a),
                            lambda: [RNG.standard_normal(SHAPE)]),
    "HalfNormal": (lambda m, a: m.HalfNormal(a), lambda: [_pos()]),
}
PAIRS = [
    ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"), ("Pareto", "Exponential"),
    ("Pareto", "Gamma"), ("Pareto", "Normal"), ("HighUniform", "Pareto"),
    ("Uniform", "Pareto"), ("ContinuousBernoulli", "ContinuousBernoulli"),
    ("ContinuousBernoulli", "Exponential"), ("ContinuousBernoulli", "Normal"),
    ("ContinuousBernoulli", "Uniform"), ("ContinuousBernoulli", "WideUniform"),
    ("Beta", "ContinuousBernoulli"), ("Uniform", "ContinuousBernoulli"),
    ("WideUniform", "ContinuousBernoulli"),
    ("Beta", "Pareto"), ("ContinuousBernoulli", "Pareto"), ("Exponential", "Pareto"),
    ("Exponential", "ContinuousBernoulli"), ("Gamma", "Pareto"),
    ("Gamma", "ContinuousBernoulli"), ("Gumbel", "Pareto"), ("Gumbel", "ContinuousBernoulli"),
    ("Laplace", "Pareto"), ("Laplace", "ContinuousBernoulli"), ("Normal", "Pareto"),
    ("Normal", "ContinuousBernoulli"), ("Pareto", "Beta"), ("Pareto", "ContinuousBernoulli"),
    ("Pareto", "Uniform"),
]


@pytest.mark.parametrize("p_name,q_name", PAIRS)
def test_kl_pairs_match_torch(p_name, q_name):
    build_p, make_p = FAMILIES[p_name]
    build_q, make_q = FAMILIES[q_name]
    pa, qa = make_p(), make_q()
    n = len(pa)

    def ef(*arrays):
        return D.kl_divergence(build_p(D, *arrays[:n]), build_q(D, *arrays[n:]))

    def tf(*arrays):
        return TD.kl_divergence(build_p(TD, *arrays[:n]), build_q(TD, *arrays[n:]))

    expected = tf(*[torch.from_numpy(a) for a in pa + qa])
    if bool(torch.isinf(expected).all()):
        assert_same(ef(*[ember.tensor(a) for a in pa + qa]), expected)
    else:
        assert_grads_match(ef, tf, *(pa + qa))


def _lowrank(m, loc, factor, diag):
    return m.LowRankMultivariateNormal(loc, factor, diag)


def _mvn(m, loc, cov):
    return m.MultivariateNormal(loc, covariance_matrix=cov)


@pytest.mark.parametrize("kinds", [("lowrank", "lowrank"), ("mvn", "lowrank"),
                                   ("lowrank", "mvn")])
def test_kl_low_rank_pairs(kinds):
    def params(kind, batch):
        loc = RNG.standard_normal(batch + (3,))
        if kind == "mvn":
            return [loc, _spd(3)]
        return [loc, RNG.standard_normal(batch + (3, 2)), RNG.uniform(0.5, 2.0, batch + (3,))]

    builders = {"lowrank": _lowrank, "mvn": _mvn}
    pa, qa = params(kinds[0], (2,)), params(kinds[1], ())
    n = len(pa)

    def ef(*arrays):
        return D.kl_divergence(builders[kinds[0]](D, *arrays[:n]),
                               builders[kinds[1]](D, *arrays[n:]))

    def tf(*arrays):
        return TD.kl_divergence(builders[kinds[0]](TD, *arrays[:n]),
                                builders[kinds[1]](TD, *arrays[n:]))

    assert_grads_match(ef, tf, *(pa + qa), rtol=1e-6, atol=1e-8)


def test_kl_low_rank_event_shape_mismatch():
    p = D.LowRankMultivariateNormal(ember.zeros(2), ember.ones(2, 1), ember.ones(2))
    q = D.LowRankMultivariateNormal(ember.zeros(3), ember.ones(3, 1), ember.ones(3))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(p, q)
