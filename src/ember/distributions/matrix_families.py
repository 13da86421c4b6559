"""Distributions over matrices: Wishart (positive definite) and LKJCholesky (Cholesky
factors of correlation matrices).

Both sample through ember's gamma/beta samplers (reproducible with ``ember.manual_seed``, not
torch's numbers).
"""

from __future__ import annotations

import math
import numbers
import warnings

import ember

from . import constraints
from .continuous import Beta
from .distribution import Distribution
from .gamma_families import Chi2
from .multivariate_normal import _precision_to_scale_tril
from .utils import broadcast_all, lazy_property

__all__ = ["Wishart", "LKJCholesky"]


def _multivariate_digamma(x, p):
    """``sum_{i < p} digamma(x - i / 2)``, the derivative of ``mvlgamma(x, p)``."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    offsets = ember.arange(p, dtype=x.dtype, device=x.device).div(2)
    return ember.digamma(x.unsqueeze(-1) - offsets.expand(tuple(x.shape) + (-1,))).sum(-1)


class Wishart(Distribution):
    """The Wishart distribution over ``p x p`` positive definite matrices with ``df`` degrees
    of freedom and one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``.

    Example::

        >>> ember.distributions.Wishart(ember.tensor(3.0), ember.eye(2)).mean
        tensor([[3., 0.],
                [0., 3.]])
    """

    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = tuple(ember.broadcast_shapes(tuple(param.shape[:-2]),
                                                       tuple(df.shape)))
            self.df = df.expand(batch_shape)
        p = param.shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{p - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        else:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, tuple(param.shape[-2:]), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2()

    def _bartlett_chi2(self):
        """The chi-squared laws of the squared diagonal of the Bartlett factor:
        ``df - i`` degrees of freedom on row ``i``."""
        p = self._event_shape[-1]
        offsets = ember.arange(p, dtype=self._unbroadcasted_scale_tril.dtype,
                               device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=self.df.unsqueeze(-1)
                    - offsets.expand(tuple(self._batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = ember.Size(tuple(batch_shape))
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2()
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = ember.eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return ember.cholesky_solve(eye.expand_as(L), L).expand(self._matrix_shape())

    def _df_as_matrix(self, df):
        return df.view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_as_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor <= 0, ember.full_like(factor, math.nan), factor)
        return self._df_as_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag = V.diagonal(dim1=-2, dim2=-1)
        return self._df_as_matrix(self.df) * (V.pow(2) + diag.unsqueeze(-1)
                                              * diag.unsqueeze(-2))

    def _bartlett_sample(self, sample_shape):
        """``L A A^T L^T`` with ``A`` lower triangular: chi variables on the diagonal and
        standard normals below it (Bartlett's decomposition)."""
        p = self._event_shape[-1]
        eps = ember.finfo(self.df.dtype).eps
        chi = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        below = ember.randn(tuple(sample_shape) + tuple(self._batch_shape)
                            + (p * (p - 1) // 2,), dtype=chi.dtype, device=chi.device)
        rows, cols = ember.tril_indices(p, p, offset=-1)
        flat_index = (rows * p + cols).to(ember.long)
        lower = ember.zeros(tuple(below.shape[:-1]) + (p * p,), dtype=chi.dtype,
                            device=chi.device)
        lower = lower.index_copy(-1, flat_index, below).reshape(tuple(below.shape[:-1])
                                                                + (p, p))
        A = lower + chi.diag_embed()
        factor = self._unbroadcasted_scale_tril @ A
        return factor @ factor.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """A reparameterised sample; samples that come out singular (possible for
        ``df < p``) are redrawn up to ``max_try_correction`` (default 10) times."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = tuple(sample_shape)
        sample = self._bartlett_sample(sample_shape)
        is_singular = ~self.support.check(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sample(sample_shape)
                mask = is_singular.reshape(tuple(is_singular.shape) + (1, 1))
                sample = ember.where(mask, fresh, sample)
                is_singular = ~self.support.check(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        log_det_L = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace_term = ember.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * math.log(2) / 2 + log_det_L) - ember.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet - trace_term / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        log_det_L = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * math.log(2) / 2 + log_det_L) + ember.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _multivariate_digamma(nu / 2, p) + nu * p / 2)


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors of ``dim x dim`` correlation matrices, with
    density proportional to ``det(L L^T) ** (concentration - 1)``; sampled by the onion
    method.

    Example::

        >>> ember.distributions.LKJCholesky(3, 1.0).event_shape
        ember.Size([3, 3])
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # row i's squared off-diagonal norm is Beta(i / 2, concentration + (dim - 2 - i) / 2)
        marginal = self.concentration + 0.5 * (dim - 2)
        offset = ember.arange(dim - 1, dtype=self.concentration.dtype,
                              device=self.concentration.device)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = ember.Size(tuple(batch_shape))
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype,
                                 device=y.device).tril(-1)
            norm = normal.norm(dim=-1, keepdim=True)
            # row 0 has no entries below the diagonal: its zero vector stays zero
            direction = normal / ember.where(norm > 0, norm, ember.ones_like(norm))
            w = ember.sqrt(y) * direction
            tiny = ember.finfo(w.dtype).tiny
            diagonal = ember.clamp(1 - ember.sum(w ** 2, dim=-1), min=tiny).sqrt()
            return w + ember.diag_embed(diagonal)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalised = ember.sum(order * diagonal.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        log_normaliser = (0.5 * dm1 * math.log(math.pi) + ember.mvlgamma(alpha - 0.5, dm1)
                          - ember.lgamma(alpha) * dm1)
        return unnormalised - log_normaliser
