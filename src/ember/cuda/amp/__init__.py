"""``ember.cuda.amp``: deprecated aliases of :mod:`ember.amp` for CUDA, as
``torch.cuda.amp`` (each warns with torch's FutureWarning).

Example::

    >>> ember.cuda.amp.GradScaler()  # doctest: +SKIP  (FutureWarning: use ember.amp)
"""

from __future__ import annotations

import functools
import warnings

from ... import _dtype as dt
from ...amp import GradScaler as _GradScaler
from ...amp import autocast as _autocast
from ...amp import custom_bwd as _custom_bwd
from ...amp import custom_fwd as _custom_fwd

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "amp_definitely_not_available"]


class autocast(_autocast):
    """Deprecated: ``ember.amp.autocast('cuda', ...)``."""

    def __init__(self, enabled=True, dtype=dt.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """Deprecated: ``ember.amp.GradScaler('cuda', ...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: ``ember.amp.custom_fwd(device_type='cuda')``."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    if fwd is None:
        return functools.partial(_custom_fwd, device_type="cuda", cast_inputs=cast_inputs)
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """Deprecated: ``ember.amp.custom_bwd(device_type='cuda')``."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    if bwd is None:
        return functools.partial(_custom_bwd, device_type="cuda")
    return _custom_bwd(bwd, device_type="cuda")


from .common import amp_definitely_not_available  # noqa: E402
