"""Named tuples returned by operators with several results, like ``torch.return_types``.

Example::

    >>> values, indices = ember.tensor([[1, 5], [7, 2]]).max(dim=1)
    >>> ember.tensor([[1, 5], [7, 2]]).max(dim=1).indices
    tensor([1, 0])
"""

from __future__ import annotations

import collections

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax",
           "cummin", "aminmax", "histogram"]


def _make(name, fields):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "ember.return_types"
    cls.__qualname__ = name

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"ember.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    return cls


max = _make("max", ["values", "indices"])
min = _make("min", ["values", "indices"])
sort = _make("sort", ["values", "indices"])
topk = _make("topk", ["values", "indices"])
kthvalue = _make("kthvalue", ["values", "indices"])
median = _make("median", ["values", "indices"])
nanmedian = _make("nanmedian", ["values", "indices"])
mode = _make("mode", ["values", "indices"])
cummax = _make("cummax", ["values", "indices"])
cummin = _make("cummin", ["values", "indices"])
aminmax = _make("aminmax", ["min", "max"])
histogram = _make("histogram", ["hist", "bin_edges"])
