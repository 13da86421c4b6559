"""Families built from gamma variables: Chi2, StudentT, FisherSnedecor.

Their samples come from ember's gamma sampler (reproducible with ``ember.manual_seed``, not
torch's numbers); ``rsample`` is differentiable through the gamma's implicit gradient.
"""

from __future__ import annotations

import math
import numbers

import ember

from . import constraints
from .continuous import Gamma
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Chi2", "StudentT", "FisherSnedecor"]


def _nan_where(mask, value):
    return ember.where(mask, ember.full_like(value, math.nan), value)


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    Example::

        >>> ember.distributions.Chi2(ember.tensor(4.0)).mean
        tensor(4.)
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        batch_shape = ember.Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def df(self):
        """The degrees of freedom."""
        return self.concentration * 2


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale
    ``scale``.

    Example::

        >>> ember.distributions.StudentT(ember.tensor(3.0)).variance
        tensor(3.)
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def _expand_extra(self, new, batch_shape):
        new._chi2 = self._chi2.expand(batch_shape)

    @property
    def mean(self):
        return _nan_where(self.df <= 1, self.loc.clone())

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        var = ember.where(df > 2, finite, ember.full_like(df, math.inf))
        return _nan_where(df <= 1, var)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        normal = ember.empty(shape, dtype=self.df.dtype, device=self.df.device).normal_()
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * normal * ember.rsqrt(chi2 / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        df = self.df
        log_norm = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi)
                    + ember.lgamma(0.5 * df) - ember.lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * ember.log1p(y ** 2.0 / df) - log_norm

    def entropy(self):
        df = self.df
        log_beta = ember.lgamma(0.5 * df) + math.lgamma(0.5) - ember.lgamma(0.5 * (df + 1))
        return (self.scale.log()
                + 0.5 * (df + 1) * (ember.digamma(0.5 * (df + 1)) - ember.digamma(0.5 * df))
                + 0.5 * df.log() + log_beta)


class FisherSnedecor(Distribution):
    """The F distribution: the ratio of chi-squared variables with ``df1`` and ``df2`` degrees
    of freedom, each divided by its degrees of freedom.

    Example::

        >>> ember.distributions.FisherSnedecor(ember.tensor(3.0), ember.tensor(6.0)).mean
        tensor(1.5000)
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        scalar = isinstance(df1, numbers.Number) and isinstance(df2, numbers.Number)
        batch_shape = ember.Size(()) if scalar else self.df1.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def _expand_extra(self, new, batch_shape):
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)

    @property
    def mean(self):
        df2 = _nan_where(self.df2 <= 2, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        df1, df2 = self.df1, self.df2
        return _nan_where(df1 <= 2, (df1 - 2) / df1 * df2 / (df2 + 2))

    @property
    def variance(self):
        df1 = self.df1
        df2 = _nan_where(self.df2 <= 4, self.df2)
        return 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = ember.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_beta_inv = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return (log_beta_inv + half1 * ratio.log() + (half1 - 1) * ember.log(value)
                - (half1 + half2) * ember.log1p(ratio * value))
