"""nn.init against torch.nn.init: exact for deterministic fills, statistical for random ones."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

import ember
from ember import nn


@pytest.fixture(autouse=True)
def _seeded():
    """Every statistical check sees the same draws on every run."""
    ember.manual_seed(1234)


@pytest.mark.parametrize("nonlinearity,param", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
    ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert nn.init.calculate_gain(nonlinearity, param) == \
        torch.nn.init.calculate_gain(nonlinearity, param)


def test_calculate_gain_errors():
    with pytest.raises(ValueError):
        torch.nn.init.calculate_gain("nope")
    with pytest.raises(ValueError):
        nn.init.calculate_gain("nope")


@pytest.mark.parametrize("shape", [(3, 5), (4, 4), (5, 2)])
def test_deterministic_fills_match_torch(shape):
    for e_fn, t_fn, args in [(nn.init.constant_, torch.nn.init.constant_, (0.3,)),
                             (nn.init.ones_, torch.nn.init.ones_, ()),
                             (nn.init.zeros_, torch.nn.init.zeros_, ()),
                             (nn.init.eye_, torch.nn.init.eye_, ())]:
        e, t = e_fn(ember.empty(*shape), *args), t_fn(torch.empty(*shape), *args)
        assert e.tolist() == t.tolist()


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 3, 3, 3), 1), ((4, 2, 3, 3, 3), 2),
                                          ((6, 2, 5), 3)])
def test_dirac_matches_torch(shape, groups):
    e = nn.init.dirac_(ember.empty(*shape), groups)
    t = torch.nn.init.dirac_(torch.empty(*shape), groups)
    assert e.tolist() == t.tolist()


def _values(t):
    return t.detach().numpy().ravel().astype(np.float64)


def test_uniform_and_normal_distributions():
    ember.manual_seed(0)
    u = _values(nn.init.uniform_(ember.empty(200, 200), -0.5, 1.5))
    assert u.min() >= -0.5 and u.max() < 1.5
    assert stats.kstest(u, stats.uniform(loc=-0.5, scale=2.0).cdf).pvalue > 1e-3
    n = _values(nn.init.normal_(ember.empty(200, 200), 1.0, 2.0))
    assert stats.kstest(n, stats.norm(loc=1.0, scale=2.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity", ["relu", "leaky_relu"])
def test_kaiming_bounds_and_std_follow_torchs_formulas(mode, nonlinearity):
    shape = (64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    fan = fan_in if mode == "fan_in" else fan_out
    std = torch.nn.init.calculate_gain(nonlinearity, 0) / math.sqrt(fan)
    u = _values(nn.init.kaiming_uniform_(ember.empty(*shape), a=0, mode=mode,
                                         nonlinearity=nonlinearity))
    bound = math.sqrt(3.0) * std
    assert np.abs(u).max() <= bound and np.abs(u).max() > 0.95 * bound
    assert stats.kstest(u, stats.uniform(loc=-bound, scale=2 * bound).cdf).pvalue > 1e-3
    n = _values(nn.init.kaiming_normal_(ember.empty(*shape), a=0, mode=mode,
                                        nonlinearity=nonlinearity))
    assert stats.kstest(n, stats.norm(scale=std).cdf).pvalue > 1e-3


def test_xavier_distributions():
    shape = (100, 300)
    bound = 1.7 * math.sqrt(6.0 / 400)
    u = _values(nn.init.xavier_uniform_(ember.empty(*shape), gain=1.7))
    assert np.abs(u).max() <= bound
    assert stats.kstest(u, stats.uniform(loc=-bound, scale=2 * bound).cdf).pvalue > 1e-3
    n = _values(nn.init.xavier_normal_(ember.empty(*shape), gain=1.7))
    assert stats.kstest(n, stats.norm(scale=1.7 * math.sqrt(2.0 / 400)).cdf).pvalue > 1e-3


def test_trunc_normal_stays_in_bounds_and_is_truncated_normal():
    t = _values(nn.init.trunc_normal_(ember.empty(300, 100), mean=0.5, std=1.0, a=-1.0, b=2.0))
    assert t.min() >= -1.0 and t.max() <= 2.0
    dist = stats.truncnorm((-1.0 - 0.5) / 1.0, (2.0 - 0.5) / 1.0, loc=0.5, scale=1.0)
    assert stats.kstest(t, dist.cdf).pvalue > 1e-3


@pytest.mark.parametrize("shape", [(6, 6), (4, 10), (10, 4), (3, 2, 4)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape):
    w = nn.init.orthogonal_(ember.empty(*shape), gain=2.0).detach().numpy()
    flat = w.reshape(shape[0], -1) / 2.0
    rows, cols = flat.shape
    product = flat @ flat.T if rows <= cols else flat.T @ flat
    np.testing.assert_allclose(product, np.eye(min(rows, cols)), atol=1e-5)


def test_sparse_zeroes_the_requested_fraction_per_column():
    w = nn.init.sparse_(ember.empty(20, 7), sparsity=0.3, std=0.5).detach().numpy()
    zeros_per_column = (w == 0).sum(axis=0)
    assert (zeros_per_column >= math.ceil(0.3 * 20)).all()


def test_errors_match_torch():
    for lib in (torch, ember):
        init = torch.nn.init if lib is torch else nn.init
        with pytest.raises(ValueError):
            init.xavier_uniform_(lib.empty(5))
        with pytest.raises(ValueError):
            init.eye_(lib.empty(2, 2, 2))
        with pytest.raises(ValueError):
            init.kaiming_uniform_(lib.empty(3, 3), mode="fan_sideways")
        with pytest.raises(ValueError):
            init.dirac_(lib.empty(3, 3))
