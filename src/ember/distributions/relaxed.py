"""Continuous relaxations of discrete variables (the Concrete / Gumbel-softmax
distributions): RelaxedBernoulli, RelaxedOneHotCategorical, and the log-space bases they are
built on. Samples equal torch's after the same seed.
"""

from __future__ import annotations

import ember

from . import constraints
from .discrete import Categorical, _ProbsOrLogits
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical",
           "RelaxedOneHotCategorical"]


class LogitRelaxedBernoulli(_ProbsOrLogits):
    """The logit of a :class:`RelaxedBernoulli` sample: ``(logits + logistic noise) /
    temperature``.

    Example::

        >>> d = LogitRelaxedBernoulli(ember.tensor(0.5), logits=ember.tensor(0.0))
        >>> d.log_prob(ember.tensor(0.0))
        tensor(-2.0794)
    """

    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        batch_shape = self._init_param(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def _expand_extra(self, new, batch_shape):
        super()._expand_extra(new, batch_shape)
        new.temperature = self.temperature

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(ember.rand(shape, dtype=probs.dtype, device=probs.device))
        logistic_noise = uniforms.log() - (-uniforms).log1p()
        return (logistic_noise + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return ember.as_tensor(self.temperature).log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed Bernoulli on ``(0, 1)`` with ``temperature`` and ``probs`` or ``logits``:
    the sigmoid of a :class:`LogitRelaxedBernoulli` variable.

    Example::

        >>> d = ember.distributions.RelaxedBernoulli(ember.tensor(0.5), probs=ember.tensor(0.3))
        >>> d.probs
        tensor(0.3000)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class ExpRelaxedCategorical(Distribution):
    """The log of a :class:`RelaxedOneHotCategorical` sample (a log-softmax of Gumbel-perturbed
    logits divided by ``temperature``).

    Example::

        >>> d = ExpRelaxedCategorical(ember.tensor(1.0), logits=ember.zeros(2))
        >>> d.event_shape
        ember.Size([2])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = ember.Size(tuple(batch_shape))
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(ember.rand(shape, dtype=self.logits.dtype,
                                          device=self.logits.device))
        gumbels = -(-uniforms.log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        temperature = ember.as_tensor(self.temperature)
        logits, value = broadcast_all(self.logits, value)
        # (K - 1)! temperature^(K - 1) normalises the density of the log-simplex
        log_scale = ember.full_like(temperature, float(k)).lgamma() \
            + temperature.log() * (k - 1)
        score = logits - value.mul(temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A relaxed one-hot categorical on the simplex (Gumbel-softmax) with ``temperature`` and
    ``probs`` or ``logits``.

    Example::

        >>> d = ember.distributions.RelaxedOneHotCategorical(ember.tensor(0.5),
        ...                                                  probs=ember.tensor([0.2, 0.8]))
        >>> d.sample().sum()
        tensor(1.)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits,
                                          validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
