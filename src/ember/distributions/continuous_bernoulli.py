"""ContinuousBernoulli: the density ``C(p) p^x (1 - p)^(1 - x)`` on ``[0, 1]``.

Near ``p = 1/2`` the closed forms divide 0 by 0, so inside ``lims`` (torch's default
``(0.499, 0.501)``) the normaliser and moments are Taylor expansions about ``1/2``, as in torch.
Samples are the inverse cdf of a uniform draw, equal to torch's after the same seed.
"""

from __future__ import annotations

import math
import numbers

import ember
import ember.nn.functional as F

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(Distribution):
    """The continuous Bernoulli distribution with ``probs`` or ``logits``.

    Example::

        >>> ember.distributions.ContinuousBernoulli(probs=ember.tensor(0.5)).mean
        tensor(0.5000)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (probs,) = broadcast_all(probs)
            # torch checks the raw probs only when validate_args is given explicitly
            if validate_args is not None and \
                    not bool(self.arg_constraints["probs"].check(probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        batch_shape = ember.Size(()) if is_scalar else self._param.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def _expand_extra(self, new, batch_shape):
        new._lims = self._lims
        new._param = new.probs if "probs" in new.__dict__ else new.logits

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """``probs`` with the values near 1/2 replaced by a safe one (their results are
        taken from the Taylor branch)."""
        return ember.where(self._outside_unstable_region(), self.probs,
                           self._lims[0] * ember.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """``log C(p)`` with ``C(p) = 2 atanh(1 - 2p) / (1 - 2p)``."""
        p = self._cut_probs()
        p_below = ember.where(p <= 0.5, p, ember.zeros_like(p))
        p_above = ember.where(p >= 0.5, p, ember.ones_like(p))
        log_abs_1m2p = ember.where(p <= 0.5, ember.log1p(-2.0 * p_below),
                                   ember.log(2.0 * p_above - 1.0))
        log_norm = ember.log(ember.abs(ember.log1p(-p) - ember.log(p))) - log_abs_1m2p
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ember.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        p = self._cut_probs()
        exact = p / (2.0 * p - 1.0) + 1.0 / (ember.log1p(-p) - ember.log(p))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return ember.where(self._outside_unstable_region(), exact, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        p = self._cut_probs()
        exact = (p * (p - 1.0) / (1.0 - 2.0 * p).pow(2)
                 + 1.0 / (ember.log1p(-p) - ember.log(p)).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ember.where(self._outside_unstable_region(), exact, taylor)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with ember.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-F.binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        exact = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = ember.where(self._outside_unstable_region(), exact, value)
        return ember.where(value <= 0.0, ember.zeros_like(value),
                           ember.where(value >= 1.0, ember.ones_like(value), inside))

    def icdf(self, value):
        p = self._cut_probs()
        exact = ((ember.log1p(-p + value * (2.0 * p - 1.0)) - ember.log1p(-p))
                 / (ember.log(p) - ember.log1p(-p)))
        return ember.where(self._outside_unstable_region(), exact, value)

    def entropy(self):
        log_q = ember.log1p(-self.probs)
        log_p = ember.log(self.probs)
        return self.mean * (log_q - log_p) - self._cont_bern_log_norm() - log_q
