"""distributions.ExponentialFamily against torch: the class relations, natural parameters, log
normalisers, and the generic (Bregman) entropy and KL divergence."""

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as ED

FAMILIES = {
    "Normal": lambda lib: (lib.tensor([0.3, -1.2]), lib.tensor([0.7, 2.0])),
    "Exponential": lambda lib: (lib.tensor([0.5, 3.0]),),
    "Gamma": lambda lib: (lib.tensor([2.5, 0.8]), lib.tensor([1.5, 0.3])),
    "Beta": lambda lib: (lib.tensor([2.5, 0.8]), lib.tensor([1.5, 4.0])),
    "Dirichlet": lambda lib: (lib.tensor([[2.5, 0.8, 1.0], [0.4, 3.0, 2.0]]),),
    "Bernoulli": lambda lib: (lib.tensor([0.2, 0.9]),),
    "Poisson": lambda lib: (lib.tensor([0.5, 4.0]),),
}


def _both(name, make=None):
    make = make or FAMILIES[name]
    return (getattr(ED, name)(*make(ember)), getattr(TD, name)(*make(torch)))


def test_subclass_relations_match_torch():
    for name in dir(TD):
        theirs = getattr(TD, name)
        if isinstance(theirs, type) and issubclass(theirs, TD.Distribution) and hasattr(ED, name):
            expected = issubclass(theirs, TD.ExponentialFamily)
            if name in ("ContinuousBernoulli", "Wishart"):  # knowingly not yet members in ember
                continue
            assert issubclass(getattr(ED, name), ED.ExponentialFamily) == expected, name
    assert isinstance(ED.Chi2(ember.tensor(3.0)), ED.ExponentialFamily)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_natural_params_and_log_normalizer_match_torch(name):
    mine, theirs = _both(name)
    params, expected = mine._natural_params, theirs._natural_params
    assert len(params) == len(expected)
    for param, want in zip(params, expected):
        np.testing.assert_allclose(param.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(mine._log_normalizer(*params).numpy(),
                               theirs._log_normalizer(*expected).numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["Normal", "Exponential", "Gamma", "Bernoulli"])
def test_generic_entropy_equals_torch(name):
    mine, theirs = _both(name)
    generic = ED.ExponentialFamily.entropy(mine).detach()
    np.testing.assert_allclose(generic.numpy(), TD.ExponentialFamily.entropy(theirs).detach(),
                               rtol=1e-5)
    np.testing.assert_allclose(generic.numpy(), theirs.entropy().numpy(), rtol=1e-5)


def test_poisson_entropy_raises_as_torch():
    mine, theirs = _both("Poisson")
    with pytest.raises(NotImplementedError):
        theirs.entropy()
    with pytest.raises(NotImplementedError):
        mine.entropy()


def test_generic_kl_for_poisson_pair_equals_closed_form_and_torch():
    p_mine, p_theirs = _both("Poisson")
    q_rates = [1.5, 2.0]
    q_mine, q_theirs = ED.Poisson(ember.tensor(q_rates)), TD.Poisson(torch.tensor(q_rates))
    generic = ED.kl.kl_divergence.__globals__["_kl_exponential_family"](p_mine, q_mine).detach()
    reference = TD.kl._kl_expfamily_expfamily(p_theirs, q_theirs).detach()
    np.testing.assert_allclose(generic.numpy(), reference.numpy(), rtol=1e-5)
    np.testing.assert_allclose(generic.numpy(), ED.kl_divergence(p_mine, q_mine).numpy(),
                               rtol=1e-5)


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Beta", "Dirichlet"])
def test_generic_kl_equals_torch_generic_kl(name):
    p_mine, p_theirs = _both(name)
    q_make = {"Normal": lambda lib: (lib.tensor([1.0, 0.0]), lib.tensor([1.5, 0.5])),
              "Gamma": lambda lib: (lib.tensor([1.0, 2.0]), lib.tensor([0.5, 1.0])),
              "Beta": lambda lib: (lib.tensor([1.0, 2.0]), lib.tensor([0.5, 1.0])),
              "Dirichlet": lambda lib: (lib.tensor([[1.0, 2.0, 0.5], [1.0, 1.0, 1.0]]),)}[name]
    q_mine, q_theirs = _both(name, q_make)
    generic = ED.kl.kl_divergence.__globals__["_kl_exponential_family"](p_mine, q_mine).detach()
    reference = TD.kl._kl_expfamily_expfamily(p_theirs, q_theirs).detach()
    np.testing.assert_allclose(generic.numpy(), reference.numpy(), rtol=1e-4)


def test_generic_kl_refuses_different_families_as_torch():
    normal, exponential = ED.Normal(0.0, 1.0), ED.Exponential(1.0)
    kl = ED.kl.kl_divergence.__globals__["_kl_exponential_family"]
    with pytest.raises(NotImplementedError, match="different exponential families"):
        kl(normal, exponential)
