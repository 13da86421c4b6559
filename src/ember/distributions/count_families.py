"""Count families: NegativeBinomial, Multinomial.

Multinomial samples equal torch's after the same seed (the same categorical draws);
NegativeBinomial draws a gamma-Poisson mixture through ember's gamma sampler (reproducible,
not torch's numbers).
"""

from __future__ import annotations

import math

import ember
import ember.nn.functional as F

from . import constraints
from .continuous import Gamma
from .discrete import Binomial, Categorical, _one_of, _ProbsOrLogits
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["NegativeBinomial", "Multinomial"]


class NegativeBinomial(_ProbsOrLogits):
    """The number of successes before ``total_count`` failures of Bernoulli(``probs``) trials.

    Example::

        >>> ember.distributions.NegativeBinomial(4.0, probs=ember.tensor(0.5)).mean
        tensor(4.)
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            gamma = Gamma(self.total_count, ember.exp(-self.logits), validate_args=False)
            return ember.poisson(gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalised = n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normaliser = -ember.lgamma(n + value) + ember.lgamma(1.0 + value) + ember.lgamma(n)
        # the mass at 0 of a zero-count distribution is 1 (lgamma(0) would give inf - inf)
        log_normaliser = log_normaliser.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalised - log_normaliser


class Multinomial(Distribution):
    """Counts of ``total_count`` draws from a categorical with ``probs`` or ``logits``.

    Example::

        >>> ember.distributions.Multinomial(4, probs=ember.tensor([0.25, 0.75])).mean
        tensor([1., 3.])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = ember.Size(tuple(batch_shape))
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        with ember.no_grad():
            draws = self._categorical.sample((self.total_count,) + sample_shape)
            # the draw index becomes the last dim, then each draw adds one to its category
            draws = draws.permute(tuple(range(1, draws.dim())) + (0,))
            counts = ember.zeros(self._extended_shape(sample_shape), dtype=draws.dtype,
                                 device=draws.device)
            counts.scatter_add_(-1, draws, ember.ones_like(draws))
            return counts.type_as(self.probs)

    def entropy(self):
        n = ember.tensor(float(self.total_count), dtype=self.probs.dtype)
        term1 = n * self._categorical.entropy() - ember.lgamma(n + 1)
        counts = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = ember.exp(self._binomial.log_prob(counts))
        term2 = (binomial_probs * ember.lgamma(counts + 1)).sum((0, -1))
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # 0 * log(0) counts as 0: a category never drawn may have probability 0
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0.0)
        log_factorial_n = ember.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ember.lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
