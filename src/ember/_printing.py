"""``repr`` of tensors, as torch prints them (placeholder until the full formatter lands)."""

from __future__ import annotations

import numpy as np

__all__ = ["tensor_repr", "set_printoptions"]


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print (precision, summarisation threshold, ...)."""


def tensor_repr(t):
    if t._device.type == "meta":
        body = "..."
    else:
        body = np.array2string(np.asarray(t._host_array(), dtype=np.float64)
                               if t._data.dtype.kind == "V" else t._host_array(),
                               separator=", ", prefix="tensor(")
    return f"tensor({body}, dtype={t.dtype})"
