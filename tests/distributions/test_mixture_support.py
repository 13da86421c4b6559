"""MixtureSameFamily's support is torch's MixtureSameFamilyConstraint: a value is valid when
every component accepts it."""

import pytest
import torch

import ember


@pytest.mark.parametrize("value", [1.5, 0.5, 2.5])
def test_mixture_support_validates_like_torch(value):
    outcomes = []
    for lib in (torch, ember):
        D = lib.distributions
        mix = D.MixtureSameFamily(D.Categorical(lib.ones(2)),
                                  D.Uniform(lib.tensor([0.0, 1.0]), lib.tensor([2.0, 3.0])),
                                  validate_args=True)
        try:
            outcomes.append(round(float(mix.log_prob(lib.tensor(value))), 6))
        except ValueError:
            outcomes.append("invalid")
        assert type(mix.support).__name__ == "MixtureSameFamilyConstraint"
    assert outcomes[0] == outcomes[1]
    check = ember.distributions.constraints.MixtureSameFamilyConstraint(
        ember.distributions.constraints.positive)
    t_check = torch.distributions.constraints.MixtureSameFamilyConstraint(
        torch.distributions.constraints.positive)
    assert check.check(ember.tensor([1.0, -1.0])).tolist() == t_check.check(
        torch.tensor([1.0, -1.0])).tolist()
