"""GeneralizedPareto: the limit law of threshold exceedances.

Samples are the inverse cdf of a uniform draw, equal to torch's after the same seed.
"""

from __future__ import annotations

import math
import numbers

import ember

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution with ``loc``, ``scale`` and shape
    ``concentration`` (``xi``); ``xi = 0`` is the exponential, ``xi < 0`` has a bounded support.

    Example::

        >>> d = ember.distributions.GeneralizedPareto(0.0, 1.0, 0.0)
        >>> d.cdf(ember.tensor(1.0))
        tensor(0.6321)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, numbers.Number) for v in (loc, scale, concentration))
        batch_shape = ember.Size(()) if scalar else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def _safe_concentration(self):
        """``xi`` with the (near-)zero entries replaced by 1, and the mask of those entries:
        their results come from the exponential limit instead."""
        xi = self.concentration
        is_zero = ember.isclose(xi, ember.zeros_like(xi))
        return ember.where(is_zero, ember.ones_like(xi), xi), is_zero

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        xi, is_zero = self._safe_concentration()
        exponent = 1 / xi + ember.ones_like(z)
        general = ember.where(exponent == 0, exponent, exponent * ember.log1p(xi * z))
        return -self.scale.log() - ember.where(is_zero, z, general)

    def log_survival_function(self, value):
        """``log(1 - cdf(value))``."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        xi, is_zero = self._safe_concentration()
        return ember.where(is_zero, -z, -ember.log1p(xi * z) / xi)

    def log_cdf(self, value):
        """``log(cdf(value))``."""
        return ember.log1p(-ember.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return ember.exp(self.log_cdf(value))

    def icdf(self, value):
        xi, is_zero = self._safe_concentration()
        log_u = ember.log1p(-value)
        general = self.loc + self.scale / xi * ember.expm1(-xi * log_u)
        return ember.where(is_zero, self.loc - self.scale * log_u, general)

    @property
    def mean(self):
        xi = self.concentration
        finite = xi < 1
        safe = ember.where(finite, xi, ember.full_like(xi, 0.5))
        mean = self.loc + self.scale / (1 - safe)
        return ember.where(finite, mean, ember.full_like(mean, math.nan))

    @property
    def variance(self):
        xi = self.concentration
        finite = xi < 0.5
        safe = ember.where(finite, xi, ember.full_like(xi, 0.25))
        var = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return ember.where(finite, var, ember.full_like(var, math.nan))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).broadcast_to(self._batch_shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        bounded = self.concentration < 0
        xi = ember.where(bounded, self.concentration, -ember.ones_like(self.concentration))
        upper = ember.where(bounded, lower - self.scale / xi, ember.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
