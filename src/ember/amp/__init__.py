"""``ember.amp``: automatic mixed precision (:class:`autocast`, :class:`GradScaler`), as
``torch.amp``.

Example::

    >>> with ember.amp.autocast("cpu"):
    ...     ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype
    ember.bfloat16
"""

from __future__ import annotations

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "GradScaler"]
