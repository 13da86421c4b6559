"""``nn.init``: fill tensors in place from the distributions torch's initialisers use.

All functions run under ``no_grad`` and return the tensor they filled.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as dt
from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (torch's table).

    Example::

        >>> ember.nn.init.calculate_gain("relu")
        1.4142135623730951
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with values drawn uniformly from ``[a, b)``.

    Example::

        >>> ember.nn.init.uniform_(ember.empty(3, 5), -0.1, 0.1).abs().max() <= 0.1
        tensor(True)
    """
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with values drawn from N(mean, std**2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill from N(mean, std**2) truncated to ``[a, b]`` (inverse-CDF sampling)."""
    from scipy.special import erf, erfinv

    def norm_cdf(x):
        return (1.0 + erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        low, high = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
        tensor.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        values = erfinv(tensor.detach().cpu().double().numpy()) * std * math.sqrt(2.0) + mean
        values = np.clip(values, a, b)
        tensor.copy_(_like(tensor, values))
        return tensor


def _like(tensor, array):
    from .._tensor import tensor as make

    return make(np.asarray(array), dtype=tensor.dtype, device=tensor.device)


def constant_(tensor, val):
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def eye_(tensor):
    """Fill a 2-D tensor with the identity (ones on the diagonal)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        array = np.eye(*tensor.shape)
        tensor.copy_(_like(tensor, array))
    return tensor


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-D conv weight so that the convolution keeps its input (per group)."""
    dims = tensor.ndimension()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    channels = min(out_per_group, sizes[1])
    array = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(channels):
            array[(g * out_per_group + d, d) + centre] = 1
    with no_grad():
        tensor.copy_(_like(tensor, array))
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: ``U(-a, a)`` with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: ``N(0, std**2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``.

    Example::

        >>> w = ember.nn.init.kaiming_uniform_(ember.empty(3, 5), mode="fan_in")
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: ``N(0, std**2)`` with ``std = gain / sqrt(fan)``."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix from the QR decomposition of a normal draw."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    from ..ops.random import randn

    # drawn in the tensor's dtype as torch does (same numbers, same generator advance); the
    # QR runs in float64
    draw_dtype = tensor.dtype if tensor.dtype.is_floating_point else dt.float64
    flat = randn(rows, cols, generator=generator, dtype=draw_dtype).double().numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        tensor.copy_(_like(tensor, (q * gain).reshape(tensor.shape)))
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor from N(0, std**2) with a fraction ``sparsity`` of each column zeroed."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    from ..ops.random import randperm

    with no_grad():
        tensor.normal_(0, std, generator=generator)
        values = tensor.detach().cpu().numpy().copy()
        for col in range(cols):
            rows_to_zero = randperm(rows, generator=generator).numpy()[:num_zeros]
            values[rows_to_zero, col] = 0
        tensor.copy_(_like(tensor, values))
    return tensor


# ---------------------------------------------------------------- deprecated spellings


def _deprecated_alias(initialiser):
    """The pre-0.4 name of ``initialiser`` (no trailing underscore): warns, then delegates.

    Example::

        >>> ember.nn.init.uniform(ember.empty(2))  # FutureWarning: use nn.init.uniform_
        tensor([...])
    """
    new_name = initialiser.__name__
    old_name = new_name[:-1]

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return initialiser(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    alias.__doc__ = (f"{old_name}(...): deprecated spelling of :func:`{new_name}`, which it "
                     f"calls after a ``FutureWarning``.\n\nExample::\n\n"
                     f"    >>> {new_name}(t)  # instead of {old_name}(t)\n")
    return alias


# The names torch 2.13 still exports (there is no ``ones``, ``zeros`` or ``trunc_normal``).
uniform = _deprecated_alias(uniform_)
normal = _deprecated_alias(normal_)
constant = _deprecated_alias(constant_)
eye = _deprecated_alias(eye_)
dirac = _deprecated_alias(dirac_)
xavier_uniform = _deprecated_alias(xavier_uniform_)
xavier_normal = _deprecated_alias(xavier_normal_)
kaiming_uniform = _deprecated_alias(kaiming_uniform_)
kaiming_normal = _deprecated_alias(kaiming_normal_)
orthogonal = _deprecated_alias(orthogonal_)
sparse = _deprecated_alias(sparse_)
