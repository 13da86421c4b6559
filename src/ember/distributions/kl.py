"""``kl_divergence(p, q)`` with a registry of closed forms by (type(p), type(q))."""

from __future__ import annotations

import math
import warnings
from functools import total_ordering

import ember
import ember.nn.functional as F

from .continuous import Beta, Dirichlet, Exponential, Gamma, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _lowrank_logdet,
    _lowrank_mahalanobis,
    _solve_capacitance,
)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis, _tril_solve
from .transformed_distribution import Gumbel
from .transformed_families import HalfNormal, Pareto
from .utils import sum_rightmost

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}
_KL_MEMOIZE = {}


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence of ``type_p`` from ``type_q``.

    Example::

        >>> @register_kl(Normal, Normal)
        ... def kl_normal_normal(p, q):
        ...     ...
    """
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


@total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=2)
    return left_fun


def kl_divergence(p, q):
    """The Kullback-Leibler divergence ``KL(p || q)``, batched over the batch shape.

    Raises ``NotImplementedError`` for a pair with no registered closed form.

    Example::

        >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
        tensor(0.5000)
    """
    key = type(p), type(q)
    fun = _KL_MEMOIZE.get(key)
    if fun is None:
        fun = _dispatch_kl(*key)
        _KL_MEMOIZE[key] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


def _inf_where(mask, value):
    return ember.where(mask, ember.full_like(value, math.inf), value)


def _zero_where(mask, value):
    return ember.where(mask, ember.zeros_like(value), value)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_exponential_family(p, q):
    """The Bregman divergence of the log normaliser: ``F(theta_q) - F(theta_p) -
    <theta_q - theta_p, grad F(theta_p)>``, for two members of one family."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_params = [param.detach().requires_grad_() for param in p._natural_params]
    q_params = q._natural_params
    with ember.enable_grad():
        p_normalizer = p._log_normalizer(*p_params)
        gradients = ember.autograd.grad(p_normalizer.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - p_normalizer
    for p_param, q_param, gradient in zip(p_params, q_params, gradients):
        result = result - sum_rightmost((q_param - p_param) * gradient, len(q.event_shape))
    return result


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = _zero_where(p.probs == 0, _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = _zero_where(p.probs == 1, _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * ember.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * ember.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * ember.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _inf_where((q.probs == 0).expand_as(t), t)
    t = _zero_where((p.probs == 0).expand_as(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * ember.log(p.rate / q.rate)
    t2 = ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ember.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * ember.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    Lp = p._unbroadcasted_scale_tril
    Lq = q._unbroadcasted_scale_tril
    half_term1 = (Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    batch_shape = tuple(ember.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2])))
    n = p.event_shape[0]
    Lqb = Lq.expand(batch_shape + (n, n))
    term2 = _tril_solve(Lqb, Lp.expand(batch_shape + (n, n))).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc)
    shape = tuple(ember.broadcast_shapes(batch_shape, tuple(diff.shape[:-1])))
    term3 = _tril_solve(Lq.expand(shape + (n, n)),
                        diff.expand(shape + (n,)).unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return sum_rightmost(result, p.reinterpreted_batch_ndims)


# ---------------------------------------------------------------------- the newer families


def _infinite_like(tensor):
    return ember.full_like(tensor, math.inf)


def _batch_trace_XXT(bmat):
    """``trace(X X^T)`` of a batch of matrices: the sum of their squared entries."""
    return bmat.pow(2).sum((-2, -1))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    # q puts no mass below its scale
    return _inf_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate = p.scale * q.rate
    result = ((p.alpha / scale_rate).log() - p.alpha.reciprocal()
              + p.alpha * scale_rate / (p.alpha - 1) - 1)
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    return _inf_where(p.alpha <= 1, t1 + t2 + t3 + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    two_var = 2 * q.scale.pow(2)
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t2 = p.alpha.reciprocal()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    return _inf_where(p.alpha <= 2, t1 - t2 + (t3 + t4) / two_var - 1)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (ember.xlogy(p.high, p.high) - ember.xlogy(p.low, p.low) - width) / width
    return _inf_where(p.low < q.support.lower_bound, t2 * (q.alpha + 1) - t1)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + ember.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - ember.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - ember.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + ember.log(q.scale)
    t3 = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # torch's condition, kept as is: infinite unless q's interval strictly contains [0, 1]
    outside = (q.low >= p.support.lower_bound) | (q.high <= p.support.upper_bound)
    return _inf_where(outside, result)


def _kl_to_continuous_bernoulli(p, q):
    """``-H(p) - E_p[log q]`` for ``p`` supported inside ``[0, 1]``."""
    return -p.entropy() - p.mean * q.logits - ember.log1p(-q.probs) - q._cont_bern_log_norm()


register_kl(Beta, ContinuousBernoulli)(_kl_to_continuous_bernoulli)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = _kl_to_continuous_bernoulli(p, q)
    outside = (p.high >= q.support.upper_bound) | (p.low <= q.support.lower_bound)
    return _inf_where(outside, result)


def _register_infinite(pairs, parameter):
    """KL is infinite where p's support reaches outside q's: register that for each pair."""
    def infinite(p, q):
        return _infinite_like(getattr(p, parameter))
    for type_p, type_q in pairs:
        register_kl(type_p, type_q)(infinite)


_register_infinite([(Beta, Pareto)], "concentration1")
_register_infinite([(ContinuousBernoulli, Pareto)], "probs")
_register_infinite([(Exponential, ContinuousBernoulli), (Exponential, Pareto)], "rate")
_register_infinite([(Gamma, ContinuousBernoulli), (Gamma, Pareto)], "concentration")
_register_infinite([(Gumbel, ContinuousBernoulli), (Gumbel, Pareto),
                    (Laplace, ContinuousBernoulli), (Laplace, Pareto),
                    (Normal, ContinuousBernoulli), (Normal, Pareto)], "loc")
_register_infinite([(Pareto, Beta), (Pareto, ContinuousBernoulli), (Pareto, Uniform)],
                   "scale")


def _check_same_event_shape(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes "
                         "cannot be computed")


def _lowrank_terms(q, diff):
    """``log det Sigma_q`` and the Mahalanobis term of ``diff`` under a low-rank ``q``."""
    W, Dq, C = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril
    return _lowrank_logdet(W, Dq, C), _lowrank_mahalanobis(W, Dq, diff, C)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    _check_same_event_shape(p, q, "Low Rank Multivariate Normals")
    logdet_q, mahalanobis = _lowrank_terms(q, q.loc - p.loc)
    logdet_p = _lowrank_logdet(p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag,
                               p._capacitance_tril)
    # trace(Sigma_q^-1 Sigma_p), with Sigma_q^-1 = D^-1 - A^T A by Woodbury
    A = _solve_capacitance(q._capacitance_tril, q._unbroadcasted_cov_factor,
                           q._unbroadcasted_cov_diag)
    Wp, Dp, Dq = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, \
        q._unbroadcasted_cov_diag
    trace = ((Dp / Dq).sum(-1)
             + _batch_trace_XXT(Wp * Dq.rsqrt().unsqueeze(-1))
             - _batch_trace_XXT(A * Dp.sqrt().unsqueeze(-2))
             - _batch_trace_XXT(A.matmul(Wp)))
    return 0.5 * (logdet_q - logdet_p + trace + mahalanobis - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    _check_same_event_shape(p, q, "(Low Rank) Multivariate Normals")
    logdet_q, mahalanobis = _lowrank_terms(q, q.loc - p.loc)
    Lp = p._unbroadcasted_scale_tril
    logdet_p = 2 * Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    A = _solve_capacitance(q._capacitance_tril, q._unbroadcasted_cov_factor,
                           q._unbroadcasted_cov_diag)
    trace = (_batch_trace_XXT(Lp * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
             - _batch_trace_XXT(A.matmul(Lp)))
    return 0.5 * (logdet_q - logdet_p + trace + mahalanobis - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    _check_same_event_shape(p, q, "(Low Rank) Multivariate Normals")
    Lq = q._unbroadcasted_scale_tril
    logdet_q = 2 * Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    logdet_p = _lowrank_logdet(p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag,
                               p._capacitance_tril)
    mahalanobis = _batch_mahalanobis(Lq, q.loc - p.loc)
    batch = tuple(ember.broadcast_shapes(tuple(Lq.shape[:-2]),
                                         tuple(p._unbroadcasted_cov_factor.shape[:-2])))
    n = p.event_shape[0]
    Lq_b = Lq.expand(batch + (n, n))
    Wp = p._unbroadcasted_cov_factor.expand(batch + (n, p.cov_factor.shape[-1]))
    sqrt_Dp = ember.diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand(batch + (n, n))
    trace = _batch_trace_XXT(_tril_solve(Lq_b, Wp)) + _batch_trace_XXT(_tril_solve(Lq_b,
                                                                                   sqrt_Dp))
    return 0.5 * (logdet_q - logdet_p + trace + mahalanobis - p.event_shape[0])
