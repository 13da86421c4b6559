"""ExponentialFamily: the base of the families whose density is
``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``.

A member names its natural parameters ``theta`` (``_natural_params``), its log normaliser
``F`` (``_log_normalizer``) and the expected carrier measure ``E[k(x)]``
(``_mean_carrier_measure``); from these the entropy and the KL divergence between two members
of one family follow by automatic differentiation, since ``grad F(theta)`` is the mean of the
sufficient statistic (Bregman divergence of ``F``; Nielsen and Nock, "Entropies and
cross-entropies of exponential families").
"""

from __future__ import annotations

import ember

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Abstract base of the exponential families (Normal, Gamma, Poisson, ...).

    Example::

        >>> from ember.distributions import ExponentialFamily, Normal
        >>> isinstance(Normal(0.0, 1.0), ExponentialFamily)
        True
    """

    @property
    def _natural_params(self):
        """The natural parameters ``theta``, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normaliser ``F(theta)`` at the given natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """``E[k(x)]``, the expected carrier measure the entropy needs."""
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``, batched over ``batch_shape``.

        Example::

            >>> from ember.distributions import Normal
            >>> ExponentialFamily.entropy(Normal(0.0, 1.0)).detach()
            tensor(1.4189)
        """
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with ember.enable_grad():
            normalizer = self._log_normalizer(*params)
            gradients = ember.autograd.grad(normalizer.sum(), params, create_graph=True)
        result = normalizer - self._mean_carrier_measure
        for param, gradient in zip(params, gradients):
            result = result - (param * gradient).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
