"""Window functions: ``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window`` (torch's top-level forms, ``periodic`` by default) and
the ``ember.signal.windows`` family (``sym``-metric by default).

A periodic window of length ``L`` is the symmetric window of length ``L + 1`` without its last
sample (the form spectral analysis wants). Values are computed in float64 on the host and
placed on the device in the requested floating dtype.

Example::

    >>> ember.hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._tensor import tensor

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def _check_length(length, name):
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={length}")


def _floating_dtype(dtype, name):
    dtype = dt.get_default_dtype() if dtype is None else dt.to_dtype(dtype)
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{_C_TYPE_NAMES.get(dtype.name, dtype.name)}, device=cpu, "
                           f"layout=Strided (default), requires_grad=false (default), "
                           f"pinned_memory=false, memory_format=(nullopt))")
    return dtype


_C_TYPE_NAMES = {"int64": "long int", "int32": "int", "int16": "short int",
                 "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
                 "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _window(samples, length, sym, dtype, device, requires_grad):
    """Evaluate ``samples(n, M)`` (``M``: the symmetric length) as a tensor of ``length``."""
    if length == 0:
        values = np.zeros(0)
    elif length == 1:
        values = np.ones(1)
    else:
        m = length if sym else length + 1
        values = samples(np.arange(m, dtype=np.float64), m)[:length]
    return tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def _cosine_sum(coefficients):
    """``sum_k (-1)^k a_k cos(2 pi k n / (M - 1))``: the general cosine window."""
    def samples(n, m):
        phase = 2 * math.pi * n / (m - 1)
        return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))
    return samples


def _bartlett(n, m):
    return 1 - np.abs(2 * n / (m - 1) - 1)


def _kaiser(beta):
    def samples(n, m):
        half = (m - 1) / 2
        return np.i0(beta * np.sqrt(np.clip(1 - ((n - half) / half) ** 2, 0, None))) / \
            np.i0(beta)
    return samples


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False, pin_memory=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))``; ``periodic`` (default) gives the
    form for spectral analysis.

    Example::

        >>> ember.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    _check_length(window_length, "hann_window")
    dtype = _floating_dtype(dtype, "hann_window")
    return _window(_cosine_sum((0.5, 0.5)), window_length, not periodic, dtype, device,
                   requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False, pin_memory=False):
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))``.

    Example::

        >>> ember.hamming_window(3, False)
        tensor([0.0800, 1.0000, 0.0800])
    """
    _check_length(window_length, "hamming_window")
    dtype = _floating_dtype(dtype, "hamming_window")
    return _window(_cosine_sum((alpha, beta)), window_length, not periodic, dtype, device,
                   requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False, pin_memory=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``.

    Example::

        >>> ember.blackman_window(5, False, dtype=ember.float64)[2]
        tensor(1., dtype=ember.float64)
    """
    _check_length(window_length, "blackman_window")
    dtype = _floating_dtype(dtype, "blackman_window")
    return _window(_cosine_sum((0.42, 0.5, 0.08)), window_length, not periodic, dtype, device,
                   requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False, pin_memory=False):
    """The triangular Bartlett window ``1 - |2n / (N - 1) - 1|``.

    Example::

        >>> ember.bartlett_window(5, False)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    _check_length(window_length, "bartlett_window")
    dtype = _floating_dtype(dtype, "bartlett_window")
    return _window(_bartlett, window_length, not periodic, dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False, pin_memory=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)`` (``I0``: the
    modified Bessel function of order 0).

    Example::

        >>> ember.kaiser_window(3, False, 2.0)
        tensor([0.4387, 1.0000, 0.4387])
    """
    _check_length(window_length, "kaiser_window")
    dtype = _floating_dtype(dtype, "kaiser_window")
    return _window(_kaiser(beta), window_length, not periodic, dtype, device, requires_grad)


# ---------------------------------------------------------------- ember.signal.windows


def _check_m(m, name):
    if m < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={m}")


def _family_window(name, samples, m, sym, dtype, device, requires_grad):
    _check_m(m, name)
    dtype = _floating_dtype(dtype, name)
    return _window(samples, m, sym, dtype, device, requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window of length ``M`` (symmetric unless ``sym=False``).

    Example::

        >>> ember.signal.windows.hann(3)
        tensor([0., 1., 0.])
    """
    return _family_window("general_cosine", _cosine_sum((0.5, 0.5)), M, sym, dtype, device,
                          requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (``0.54 - 0.46 cos``).

    Example::

        >>> ember.signal.windows.hamming(3)
        tensor([0.0800, 1.0000, 0.0800])
    """
    return _family_window("general_cosine", _cosine_sum((0.54, 0.46)), M, sym, dtype, device,
                          requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The generalised Hamming window ``alpha - (1 - alpha) cos(2 pi n / (M - 1))``.

    Example::

        >>> ember.signal.windows.general_hamming(3, alpha=0.5)
        tensor([0., 1., 0.])
    """
    return _family_window("general_cosine", _cosine_sum((alpha, 1 - alpha)), M, sym, dtype,
                          device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """The general cosine window ``sum_k (-1)^k a[k] cos(2 pi k n / (M - 1))``.

    Example::

        >>> ember.signal.windows.general_cosine(3, a=[0.5, 0.5])
        tensor([0., 1., 0.])
    """
    if not isinstance(a, (list, tuple)):
        raise TypeError(f"Coefficients must be a list/tuple, got {type(a).__name__}")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    return _family_window("general_cosine", _cosine_sum(tuple(a)), M, sym, dtype, device,
                          requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window.

    Example::

        >>> ember.signal.windows.blackman(3, dtype=ember.float64)
        tensor([-1.3878e-17,  1.0000e+00, -1.3878e-17], dtype=ember.float64)
    """
    return _family_window("blackman", _cosine_sum((0.42, 0.5, 0.08)), M, sym, dtype, device,
                          requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall.

    Example::

        >>> ember.signal.windows.nuttall(3)
        tensor([3.6280e-04, 1.0000e+00, 3.6280e-04])
    """
    coefficients = (0.3635819, 0.4891775, 0.1365995, 0.0106411)
    return _family_window("general_cosine", _cosine_sum(coefficients), M, sym, dtype, device,
                          requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular Bartlett window.

    Example::

        >>> ember.signal.windows.bartlett(5)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return _family_window("bartlett", _bartlett, M, sym, dtype, device, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None,
           requires_grad=False):
    """The Kaiser window with shape parameter ``beta``.

    Example::

        >>> ember.signal.windows.kaiser(3, beta=2.0)
        tensor([0.4387, 1.0000, 0.4387])
    """
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _family_window("kaiser", _kaiser(beta), M, sym, dtype, device, requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The cosine (sine) window ``sin(pi (n + 0.5) / M)``.

    Example::

        >>> ember.signal.windows.cosine(2)
        tensor([0.7071, 0.7071])
    """
    def samples(n, m):
        return np.sin(math.pi * (n + 0.5) / m)
    return _family_window("cosine", samples, M, sym, dtype, device, requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None,
             requires_grad=False):
    """The Gaussian window ``exp(-((n - (M - 1) / 2) / std)^2 / 2)``.

    Example::

        >>> ember.signal.windows.gaussian(3)
        tensor([0.6065, 1.0000, 0.6065])
    """
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    def samples(n, m):
        return np.exp(-((n - (m - 1) / 2) / std) ** 2 / 2)
    return _family_window("gaussian", samples, M, sym, dtype, device, requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    """The exponential (Poisson) window ``exp(-|n - center| / tau)``, centred by default.

    Example::

        >>> ember.signal.windows.exponential(3)
        tensor([0.3679, 1.0000, 0.3679])
    """
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def samples(n, m):
        middle = (m - 1) / 2 if center is None else center
        return np.exp(-np.abs(n - middle) / tau)
    return _family_window("exponential", samples, M, sym, dtype, device, requires_grad)
