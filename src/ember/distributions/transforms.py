"""Invertible transforms with log-abs-det-Jacobians, for :class:`TransformedDistribution`."""

from __future__ import annotations

import math
import numbers
import weakref

import ember
import ember.nn.functional as F

from . import constraints
from .utils import broadcast_all, sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
           "Transform", "identity_transform"]


class Transform:
    """An invertible map ``y = t(x)`` with ``t.inv(y)`` and ``log_abs_det_jacobian(x, y)``.

    ``cache_size=1`` remembers the last ``(x, y)`` pair, so that the inverse of a value just
    produced is the exact input (as torch's transforms).

    Example::

        >>> t = ExpTransform()
        >>> t.inv(t(ember.tensor([0.0])))
        tensor([0.])
    """

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = None, None

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform (cached)."""
        inv = None if self._inv is None else self._inv()
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self):
        """The sign of the Jacobian determinant (for monotone transforms)."""
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """``log |dy/dx|`` at the pair ``(x, y)``."""
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Several transforms applied in order.

    Example::

        >>> t = ComposeTransform([ExpTransform(), AffineTransform(1.0, 2.0)])
        >>> t(ember.tensor([0.0]))
        tensor([3.])
    """

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = None if self._inv is None else self._inv()
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(sum_rightmost(part.log_abs_det_jacobian(a, b),
                                       event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        result = terms[0]
        for t in terms[1:]:
            result = result + t
        return result

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{self.__class__.__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class _ParameterFree(Transform):
    """A transform without parameters: it equals every instance of its class, as torch's
    parameter-free transforms compare (a subclass's instances too: ``ExpTransform()`` equals an
    instance of a user's subclass of it, whichever side asks).

    Example::

        >>> ExpTransform() == ExpTransform(), ExpTransform() == TanhTransform()
        (True, False)
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if _ParameterFree in cls.__bases__:  # ExpTransform itself, not a subclass of it
            cls._equal_to = cls

    def __eq__(self, other):
        return isinstance(other, self._equal_to)

    __hash__ = object.__hash__


class ExpTransform(_ParameterFree):
    """``y = exp(x)``.

    Example::

        >>> ExpTransform()(ember.tensor([0.0]))
        tensor([1.])
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(_ParameterFree):
    """``y = sigmoid(x)``, clamped into ``(0, 1)`` of the dtype.

    Example::

        >>> SigmoidTransform()(ember.tensor([0.0]))
        tensor([0.5000])
    """

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        f = ember.finfo(x.dtype)
        return ember.sigmoid(x).clamp(min=f.tiny, max=1.0 - f.eps)

    def _inverse(self, y):
        f = ember.finfo(y.dtype)
        y = y.clamp(min=f.tiny, max=1.0 - f.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(_ParameterFree):
    """``y = tanh(x)``.

    Example::

        >>> TanhTransform()(ember.tensor([0.0]))
        tensor([0.])
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AffineTransform(Transform):
    """``y = loc + scale * x`` (``event_dim`` rightmost dims form one event).

    Example::

        >>> AffineTransform(1.0, 2.0)(ember.tensor([1.0]))
        tensor([3.])
    """

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @property
    def codomain(self):
        return self.domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                if a != b:
                    return False
            elif not bool((ember.as_tensor(a) == ember.as_tensor(b)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        scale = self.scale
        if isinstance(scale, numbers.Real):
            result = ember.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self.event_dim])
                                    + (-1,)).sum(-1)
            shape = shape[:len(shape) - self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return tuple(ember.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                            tuple(getattr(self.scale, "shape", ()))))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


# ---------------------------------------------------------------------- elementwise


class AbsTransform(_ParameterFree):
    """``y = |x|`` (not bijective: the inverse returns the nonnegative root).

    Example::

        >>> AbsTransform()(ember.tensor([-2.0]))
        tensor([2.])
    """

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals.

    Example::

        >>> PowerTransform(2.0)(ember.tensor([3.0]))
        tensor([9.])
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        if not isinstance(other, PowerTransform):
            return False
        return bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        # d(x^p)/dx = p x^(p-1) = p y / x
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return tuple(ember.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class SoftplusTransform(_ParameterFree):
    """``y = log(1 + exp(x))``.

    Example::

        >>> SoftplusTransform()(ember.tensor([0.0]))
        tensor([0.6931])
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        # log(exp(y) - 1) = y + log(1 - exp(-y)), stable for large y
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: maps the distribution's support onto ``[0, 1]``.

    Example::

        >>> from ember.distributions import Normal
        >>> CumulativeDistributionTransform(Normal(0.0, 1.0))(ember.tensor([0.0]))
        tensor([0.5000])
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


# ---------------------------------------------------------------------- shape and events


class IndependentTransform(Transform):
    """``base_transform`` with its ``reinterpreted_batch_ndims`` rightmost batch dims treated
    as event dims (the log-det-Jacobian sums over them).

    Example::

        >>> t = IndependentTransform(ExpTransform(), 1)
        >>> t.log_abs_det_jacobian(ember.tensor([1.0, 2.0]), None)
        tensor(3.)
    """

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return (f"{self.__class__.__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dims to ``out_shape`` (Jacobian 1).

    Example::

        >>> ReshapeTransform((4,), (2, 2))(ember.zeros(3, 4)).shape
        ember.Size([3, 2, 2])
    """

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = ember.Size(tuple(in_shape))
        self.out_shape = ember.Size(tuple(out_shape))
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    @staticmethod
    def _replace_tail(shape, old, new):
        shape = tuple(shape)
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if shape[cut:] != tuple(old):
            raise ValueError(f"Shape mismatch: expected {ember.Size(shape[cut:])} but got "
                             f"{old}")
        return shape[:cut] + tuple(new)

    def forward_shape(self, shape):
        return self._replace_tail(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._replace_tail(shape, self.out_shape, self.in_shape)


def _check_vector_shape(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")


class SoftmaxTransform(_ParameterFree):
    """``y = softmax(x)`` over the last dim (not bijective: the inverse is ``log``).

    Example::

        >>> SoftmaxTransform()(ember.tensor([0.0, 0.0]))
        tensor([0.5000, 0.5000])
    """

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        unnormalised = (x - x.max(-1, True)[0]).exp()
        return unnormalised / unnormalised.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        _check_vector_shape(shape)
        return shape

    def inverse_shape(self, shape):
        _check_vector_shape(shape)
        return shape


def _clipped_sigmoid(x):
    f = ember.finfo(x.dtype)
    return ember.sigmoid(x).clamp(min=f.tiny, max=1.0 - f.eps)


def _stick_offsets(x):
    """``K, K-1, ..., 1`` for a vector of ``K`` entries: each logit is shifted by the log of
    its offset so that ``x = 0`` maps to the uniform point of the simplex."""
    k = x.shape[-1]
    return k + 1 - x.new_ones(k).cumsum(-1)


class StickBreakingTransform(_ParameterFree):
    """Real vectors of length ``K`` onto the ``K + 1`` simplex by breaking a stick: each
    entry's sigmoid is the fraction taken from what remains.

    Example::

        >>> StickBreakingTransform()(ember.zeros(2))
        tensor([0.3333, 0.3333, 0.3333])
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        fractions = _clipped_sigmoid(x - _stick_offsets(x).log())
        remaining = (1 - fractions).cumprod(-1)
        return F.pad(fractions, [0, 1], value=1) * F.pad(remaining, [1, 0], value=1)

    def _inverse(self, y):
        head = y[..., :-1]
        offsets = y.shape[-1] - y.new_ones(head.shape[-1]).cumsum(-1)
        remaining = (1 - head.cumsum(-1)).clamp(min=ember.finfo(y.dtype).tiny)
        return head.log() - remaining.log() + offsets.log()

    def log_abs_det_jacobian(self, x, y):
        shifted = x - _stick_offsets(x).log()
        return (-shifted + F.logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        _check_vector_shape(shape)
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        _check_vector_shape(shape)
        return tuple(shape[:-1]) + (shape[-1] - 1,)


# ---------------------------------------------------------------------- matrices


class LowerCholeskyTransform(_ParameterFree):
    """Unconstrained square matrices onto lower triangular ones with a positive diagonal:
    the strict lower triangle is kept and the diagonal exponentiated.

    Example::

        >>> LowerCholeskyTransform()(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_ParameterFree):
    """Unconstrained square matrices onto positive definite ones: ``L L^T`` of the
    :class:`LowerCholeskyTransform` of the input.

    Example::

        >>> PositiveDefiniteTransform()(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        factor = LowerCholeskyTransform()(x)
        return factor @ factor.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


class CorrCholeskyTransform(_ParameterFree):
    """Real vectors of length ``D (D - 1) / 2`` onto Cholesky factors of ``D x D``
    correlation matrices: ``tanh`` gives partial correlations in ``(-1, 1)``, and each row
    is completed by stick breaking so that it has unit norm.

    Example::

        >>> CorrCholeskyTransform()(ember.zeros(1))
        tensor([[1., 0.],
                [0., 1.]])
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = ember.finfo(x.dtype).eps
        partial = ember.tanh(x).clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(partial, diag=-1)
        # the part of each row's unit length still free after the entries to its left
        remaining = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * F.pad(remaining[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        remaining = 1 - ember.cumsum(y * y, dim=-1)
        remaining_before = F.pad(remaining[..., :-1], [1, 0], value=1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        partial = y_vec / tril_matrix_to_vec(remaining_before, diag=-1).sqrt()
        return (partial.log1p() - partial.neg().log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        remaining = 1 - (y * y).cumsum(-1)
        stick_breaking = 0.5 * tril_matrix_to_vec(remaining, diag=-2).log().sum(-1)
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x))
        tanh_term = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh_term

    def forward_shape(self, shape):
        _check_vector_shape(shape)
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


# ---------------------------------------------------------------------- combinators


def _check_slice_dim(dim, name, value, expected, what):
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for {name} with {value.dim()} "
                             "dimensions")
    if value.shape[dim] != expected:
        raise AssertionError(f"{name}.size({dim}) = {value.shape[dim]} must equal {what} "
                             f"{expected}")


class CatTransform(Transform):
    """Transforms ``tseq`` applied to consecutive slices (of ``lengths``) along ``dim``, as
    ``ember.cat`` joins them.

    Example::

        >>> t = CatTransform([ExpTransform(), AffineTransform(0.0, 2.0)], 0, [1, 1])
        >>> t(ember.tensor([0.0, 3.0]))
        tensor([1., 6.])
    """

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _slices(self, value):
        start = 0
        for length in self.lengths:
            yield value.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        _check_slice_dim(self.dim, "x", x, self.length, "length")
        return ember.cat([t(part) for t, part in zip(self.transforms, self._slices(x))],
                         self.dim)

    def _inverse(self, y):
        _check_slice_dim(self.dim, "y", y, self.length, "length")
        return ember.cat([t.inv(part) for t, part in zip(self.transforms, self._slices(y))],
                         self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_slice_dim(self.dim, "x", x, self.length, "length")
        _check_slice_dim(self.dim, "y", y, self.length, "length")
        terms = []
        for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y)):
            terms.append(sum_rightmost(t.log_abs_det_jacobian(xs, ys),
                                       self.event_dim - t.event_dim))
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim += self.event_dim
        # a cat dim inside the batch survives in the result; one inside the event is summed
        if dim < 0:
            return ember.cat(terms, dim)
        return sum(terms)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transform ``tseq[i]`` applied to the ``i``-th slice along ``dim``, as ``ember.stack``
    joins them.

    Example::

        >>> t = StackTransform([ExpTransform(), AffineTransform(0.0, 2.0)], 0)
        >>> t(ember.tensor([0.0, 3.0]))
        tensor([1., 6.])
    """

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, value):
        return [value.select(self.dim, i) for i in range(value.shape[self.dim])]

    def _call(self, x):
        _check_slice_dim(self.dim, "x", x, len(self.transforms), "len(transforms)")
        return ember.stack([t(part) for part, t in zip(self._slices(x), self.transforms)],
                           self.dim)

    def _inverse(self, y):
        _check_slice_dim(self.dim, "y", y, len(self.transforms), "len(transforms)")
        return ember.stack([t.inv(part) for part, t in zip(self._slices(y), self.transforms)],
                           self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_slice_dim(self.dim, "x", x, len(self.transforms), "len(transforms)")
        _check_slice_dim(self.dim, "y", y, len(self.transforms), "len(transforms)")
        terms = [t.log_abs_det_jacobian(xs, ys) for xs, ys, t in
                 zip(self._slices(x), self._slices(y), self.transforms)]
        return ember.stack(terms, self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
