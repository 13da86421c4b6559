"""Families defined as a base distribution pushed through transforms: HalfNormal, HalfCauchy,
Weibull, Pareto, Kumaraswamy, InverseGamma, LogisticNormal.

All but InverseGamma sample exactly as torch after the same seed (the same base draws and the
same transforms); InverseGamma samples through ember's gamma sampler.
"""

from __future__ import annotations

import math

import ember

from . import constraints
from .continuous import Cauchy, Exponential, Gamma, Normal, Uniform
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    ExpTransform,
    PowerTransform,
    StickBreakingTransform,
)
from .utils import broadcast_all

__all__ = ["HalfNormal", "HalfCauchy", "Weibull", "Pareto", "Kumaraswamy", "InverseGamma",
           "LogisticNormal"]

_EULER_GAMMA = 0.57721566490153286060


class _Folded(TransformedDistribution):
    """``|X|`` for a base ``X`` symmetric about 0 with scale ``scale``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = ember.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        # both x and -x fold onto |x|: twice the base density
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, log_prob, ember.full_like(log_prob, -math.inf))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """``|X|`` for ``X ~ Normal(0, scale)``.

    Example::

        >>> ember.distributions.HalfNormal(ember.tensor(1.0)).cdf(ember.tensor(0.0))
        tensor(0.)
    """

    def __init__(self, scale, validate_args=None):
        base_dist = Normal(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """``|X|`` for ``X ~ Cauchy(0, scale)``.

    Example::

        >>> ember.distributions.HalfCauchy(ember.tensor(1.0)).icdf(ember.tensor(0.5))
        tensor(1.0000)
    """

    def __init__(self, scale, validate_args=None):
        base_dist = Cauchy(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.inf, dtype=self.scale.dtype,
                          device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance


class Weibull(TransformedDistribution):
    """The Weibull distribution with ``scale`` and shape ``concentration``:
    ``scale * E ** (1 / concentration)`` for ``E ~ Exponential(1)``.

    Example::

        >>> ember.distributions.Weibull(ember.tensor(2.0), ember.tensor(1.0)).mean
        tensor(2.)
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(ember.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new.concentration_reciprocal = new.concentration.reciprocal()
        transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                      AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, self.base_dist.expand(batch_shape), transforms,
                                         validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * ember.exp(ember.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        inv = self.concentration_reciprocal
        return self.scale.pow(2) * (ember.exp(ember.lgamma(1 + 2 * inv))
                                    - ember.exp(2 * ember.lgamma(1 + inv)))

    def entropy(self):
        inv = self.concentration_reciprocal
        return _EULER_GAMMA * (1 - inv) + ember.log(self.scale * inv) + 1


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution with minimum ``scale`` and tail index ``alpha``:
    ``scale * exp(E)`` for ``E ~ Exponential(alpha)``.

    Example::

        >>> ember.distributions.Pareto(ember.tensor(1.0), ember.tensor(3.0)).mean
        tensor(1.5000)
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


def _kumaraswamy_moment(a, b, n):
    """``E[X^n]`` of Kumaraswamy(a, b): ``b B(1 + n/a, b)``."""
    arg = 1 + n / a
    return b * ember.exp(ember.lgamma(arg) + ember.lgamma(b) - ember.lgamma(arg + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on ``(0, 1)`` with ``concentration1`` (a) and
    ``concentration0`` (b): ``(1 - U ** (1 / b)) ** (1 / a)`` for ``U ~ Uniform(0, 1)``.

    Example::

        >>> ember.distributions.Kumaraswamy(ember.tensor(1.0), ember.tensor(1.0)).mean
        tensor(0.5000)
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        base_dist = Uniform(ember.full_like(self.concentration0, 0),
                            ember.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        undefined = (a < 1) | (b < 1)
        # ((a - 1) / (a b - 1)) ** (1 / a) where a, b >= 1; NaN elsewhere (computed on a
        # harmless stand-in there, so no 0/0 is ever evaluated)
        a = ember.where(undefined, ember.full_like(a, 2.0), a)
        b = ember.where(undefined, ember.full_like(b, 2.0), b)
        mode = ((a - 1) / (a * b - 1)) ** a.reciprocal()
        return ember.where(undefined, ember.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        return (_kumaraswamy_moment(self.concentration1, self.concentration0, 2)
                - self.mean.pow(2))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = ember.digamma(b + 1) + _EULER_GAMMA
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - a.log() - b.log()


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``.

    Example::

        >>> ember.distributions.InverseGamma(ember.tensor(3.0), ember.tensor(4.0)).mean
        tensor(2.)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        minus_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(minus_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        a = self.concentration
        mean = self.rate / (a - 1)
        return ember.where(a > 1, mean, ember.full_like(mean, math.inf))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        var = self.rate.square() / ((a - 1).square() * (a - 2))
        return ember.where(a > 2, var, ember.full_like(var, math.inf))

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()


class LogisticNormal(TransformedDistribution):
    """A distribution on the simplex: the stick-breaking image of a normal vector with
    ``loc`` and ``scale`` (one more entry than the normal's last dim).

    Example::

        >>> d = ember.distributions.LogisticNormal(ember.zeros(2), ember.ones(2))
        >>> d.event_shape
        ember.Size([3])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
