"""The in-place samplers of :class:`Tensor`: ``uniform_``, ``normal_``, ``random_``,
``exponential_``, ``geometric_``, ``cauchy_``, ``log_normal_``, ``bernoulli_``.

Each draws as torch's CPU kernel for that distribution does (through the helpers of
:mod:`ember.ops.random`, which imports this module at its end) and overwrites the tensor in
place; autograd sees a zero gradient. Example::

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> ember.empty(2).uniform_(0, 1).shape
    ember.Size([2])
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._device import META
from .._tensor import Tensor
from ..autograd import grad_mode
from ._generator import (
    _to_storage,
)
from ._methods import tensor_method
from ._registry import _short_name, check_inplace_target, copyto
from .random import (
    _arrange,
    _bernoulli_sample,
    _check_float,
    _check_p_scalar,
    _check_probabilities,
    _check_random_range,
    _check_std_scalar,
    _compute_dtype,
    _dtype_range,
    _fmt,
    _generator_for,
    _memory_order,
    _new_tensor,
    _rand_array,
    _randn_array,
    bernoulli,
    multinomial,
)

# ---------------------------------------------------------------- in-place samplers


def _overwrite(self, array):
    """Write a freshly drawn ``array`` into ``self`` (autograd sees a zero gradient)."""
    check_inplace_target(self)
    if self._device is META:
        self._vc[0] += 1
        return self
    if grad_mode.state.enabled and self._rg:
        return self.copy_(_new_tensor(array, self._device))
    copyto(self._device, self._data, array)
    self._vc[0] += 1
    return self


def _draws_for(self, generator):
    return None if self._device is META else _generator_for(generator, self._device)


def _shape(self):
    return self._data.shape


def _cpu_fill(self, make):
    """``make(n)``'s float64 values (drawn in ``self``'s memory order) cast to its dtype."""
    shape = _shape(self)
    values = _to_storage(make(math.prod(shape)), self.dtype.np)
    return _arrange(values, shape, _memory_order(self._data))


def _fill(self, generator, cpu, other):
    """Overwrite ``self`` with draws of ``generator``: on the CPU ``cpu(draws, n)``'s float64
    values, drawn in ``self``'s memory order as torch's CPU kernel draws them; on another
    device ``other(draws, shape)``'s array; on ``meta`` nothing.

    Example::

        >>> x = ember.empty(3)
        >>> _fill(x, None, lambda d, n: d.exponential(n, 1.0),
        ...       lambda d, shape: d.exponential(shape, np.float64)) is x
        True
    """
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    if draws.xp is not np:
        return _overwrite(self, other(draws, _shape(self)))
    return _overwrite(self, _cpu_fill(self, lambda n: cpu(draws, n)))


def _check_continuous(dtype, distribution):
    if not dtype.is_floating_point:
        raise RuntimeError(f"{distribution} distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{_short_name(dtype)}")


@tensor_method("uniform_")
def _uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with uniform numbers in ``[from, to)``.

    Example::

        >>> ember.empty(3).uniform_(-1, 1).shape
        ember.Size([3])
    """
    from_ = kwargs.pop("from", from_)
    dtype = self.dtype
    _check_float(dtype, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_fmt(from_)} > to={_fmt(to)}")
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    return _overwrite(self, _rand_array(draws, _shape(self), dtype, from_, to,
                                        _memory_order(self._data)))


@tensor_method("normal_")
def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal numbers of the given ``mean`` and ``std``.

    Example::

        >>> ember.empty(3).normal_(0, 2).shape
        ember.Size([3])
    """
    dtype = self.dtype
    _check_float(dtype, "normal_kernel_cpu")
    _check_std_scalar(std)
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    return _overwrite(self, _randn_array(draws, _shape(self), dtype, mean, std,
                                         _memory_order(self._data), self.is_contiguous()))


@tensor_method("random_")
def _random_(self, *args, generator=None, **kwargs):
    """Fill with random integers: ``random_()`` over the dtype's exact range,
    ``random_(to)`` in ``[0, to)``, ``random_(from, to)`` in ``[from, to)``.

    Example::

        >>> ember.zeros(3, dtype=ember.int64).random_(5, 6)
        tensor([5, 5, 5])
    """
    dtype = self.dtype
    low, high = kwargs.pop("from", None), kwargs.pop("to", None)
    if len(args) == 1:
        low, high = (0, args[0]) if low is None and high is None else (args[0], high)
    elif len(args) == 2:
        low, high = args
    bounded = low is not None or high is not None
    if low is None:
        low = 0
    lo, hi = _dtype_range(dtype)
    if high is None:
        high = hi + 1
        if dtype is dt.bool:
            high = 2
    if dtype.is_complex:
        raise NotImplementedError(f"\"random_\" not implemented for '{_short_name(dtype)}'")
    _check_random_range(int(low), int(high), dtype)
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    shape = _shape(self)
    if draws.xp is not np:
        return _overwrite(self, draws.integers(int(low), int(high), shape))
    n, order = math.prod(shape), _memory_order(self._data)
    if not bounded:
        values = draws.random_full(n, dtype)
    else:
        values = draws.integers(int(low), int(high), n, dtype)
    return _overwrite(self, _arrange(values, shape, order))


@tensor_method("exponential_")
def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential numbers of rate ``lambd``.

    Example::

        >>> bool((ember.empty(5).exponential_() >= 0).all())
        True
    """
    dtype = self.dtype
    _check_continuous(dtype, "Exponential")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    return _fill(self, generator, lambda draws, n: draws.exponential(n, lambd),
                 lambda draws, shape: draws.exponential(shape, _compute_dtype(dtype)) / lambd)


@tensor_method("geometric_")
def _geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...).

    Example::

        >>> bool((ember.empty(5).geometric_(0.5) >= 1).all())
        True
    """
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")
    if self.dtype.is_complex:
        raise NotImplementedError(f"\"geometric_\" not implemented for "
                                  f"'{_short_name(self.dtype)}'")
    return _fill(self, generator, lambda draws, n: draws.geometric(n, p),
                 lambda draws, shape: draws.geometric(p, shape))


@tensor_method("cauchy_")
def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy numbers of the given ``median`` and scale ``sigma``.

    Example::

        >>> ember.empty(3).cauchy_().shape
        ember.Size([3])
    """
    _check_continuous(self.dtype, "Cauchy")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")
    return _fill(self, generator, lambda draws, n: draws.cauchy(n, median, sigma),
                 lambda draws, shape: draws.cauchy(shape) * sigma + median)


@tensor_method("log_normal_")
def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with ``exp(N(mean, std))`` numbers.

    Example::

        >>> bool((ember.empty(5).log_normal_() > 0).all())
        True
    """
    dtype = self.dtype
    _check_float(dtype, "log_normal_cpu")
    if dtype.is_complex:
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for "
                                  f"'{_short_name(dtype)}'")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")
    return _fill(self, generator, lambda draws, n: draws.log_normal(n, mean, std),
                 lambda draws, shape: draws.xp.exp(draws.normal(shape, np.float64) * std + mean))


@tensor_method("bernoulli_")
def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 draws, 1 with probability ``p`` (a number or a broadcastable tensor).

    Example::

        >>> ember.empty(3).bernoulli_(1.0)
        tensor([1., 1., 1.])
    """
    shape, device = _shape(self), self._device
    if isinstance(p, Tensor):
        if not (p.dtype.is_floating_point):
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                      f"'{_short_name(p.dtype)}'")
        _check_probabilities(p)
        if p._device is not device:
            p = p.to(device)
        if device is META:
            return _overwrite(self, None)
        from ._operands import broadcast_shapes

        if broadcast_shapes(shape, p._data.shape) != shape:
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast "
                               f"shape {list(broadcast_shapes(shape, p._data.shape))}")
        data = p._data
        if device.type != "webgpu":  # (webgpu has no float64: it compares in float32)
            data = data.astype(np.float64)
        return _overwrite(self, _bernoulli_sample(data, shape, dt.float64, device, generator,
                                                  p.dtype is dt.float64,
                                                  _memory_order(self._data)))
    _check_p_scalar(p)
    if device is META:
        return _overwrite(self, None)
    return _overwrite(self, _bernoulli_sample(p, shape, dt.float64, device, generator,
                                              order=_memory_order(self._data)))


tensor_method(bernoulli, "bernoulli")
tensor_method(multinomial, "multinomial")
