"""The :class:`Distribution` base class (batch/event shapes, validation, sampling API)."""

from __future__ import annotations

import warnings

import ember

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _size(shape):
    return shape if isinstance(shape, ember.Size) else ember.Size(tuple(shape))


class Distribution:
    """Base class of probability distributions, as ``torch.distributions.Distribution``.

    ``batch_shape`` is the shape over which parameters are batched, ``event_shape`` the shape
    of one sample. ``validate_args`` turns argument/sample checking on or off (default: on,
    see :meth:`set_default_validate_args`).

    Example::

        >>> d = ember.distributions.Normal(ember.zeros(3), 1.0)
        >>> d.batch_shape, d.event_shape
        (ember.Size([3]), ember.Size([]))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    # number of trailing dims each parameter has beyond the batch shape (for expand)
    _param_event_dims: dict = {}

    @staticmethod
    def set_default_validate_args(value):
        """Turn validation on or off for distributions made afterwards without
        ``validate_args``.

        Example::

            >>> ember.distributions.Distribution.set_default_validate_args(True)
        """
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and \
                        isinstance(getattr(type(self), param), lazy_property):
                    continue
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    # ------------------------------------------------------------------ shapes

    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return ember.Size(tuple(sample_shape) + tuple(self._batch_shape)
                          + tuple(self._event_shape))

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded (as views) to ``batch_shape``.

        Example::

            >>> ember.distributions.Normal(0.0, 1.0).expand([2]).batch_shape
            ember.Size([2])
        """
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = _size(batch_shape)
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                extra = tuple(value.shape[value.dim() - self._param_event_dims.get(name, 0):])
                setattr(new, name, value.expand(tuple(batch_shape) + extra))
        self._expand_extra(new, batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _expand_extra(self, new, batch_shape):
        """Hook for subclasses with state beyond their parameters."""

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    # ------------------------------------------------------------------ API

    @property
    def arg_constraints(self):
        """The constraint each parameter must satisfy, by name."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint the distribution's values satisfy."""
        raise NotImplementedError

    @property
    def mean(self):
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self):
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A ``sample_shape`` shaped sample (no gradient)."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised sample: gradients flow to the parameters."""
        raise NotImplementedError

    def sample_n(self, n):
        """``n`` samples (deprecated: use ``sample((n,))``)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value):
        """The log of the density/mass function at ``value``."""
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        """All values of a discrete distribution's support, along dim 0."""
        raise NotImplementedError

    def entropy(self):
        """The entropy, batched over ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self):
        """``exp(entropy())``."""
        return ember.exp(self.entropy())

    def _validate_sample(self, value):
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{value.shape} vs {self._event_shape}.")
        actual_shape = value.shape
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names)
        return f"{self.__class__.__name__}({args})"
