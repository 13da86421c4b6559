"""``ember.cpu.amp``: deprecated aliases of :mod:`ember.amp` for the CPU, as ``torch.cpu.amp``.

Example::

    >>> ember.cpu.amp.autocast()  # doctest: +SKIP  (FutureWarning: use ember.amp.autocast)
"""

from __future__ import annotations

import warnings

from ... import _dtype as dt
from ...amp import GradScaler as _GradScaler
from ...amp import autocast as _autocast

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """Deprecated: ``ember.amp.autocast('cpu', ...)``."""

    def __init__(self, enabled=True, dtype=dt.bfloat16, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """Deprecated: ``ember.amp.GradScaler('cpu', ...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


from . import autocast_mode, grad_scaler  # noqa: E402,F401  (torch's submodule paths)
