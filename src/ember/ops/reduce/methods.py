"""Tensor's reduction methods (``x.sum()``, ``x.cumsum_()``...): the family functions
themselves."""

from __future__ import annotations

from .._methods import tensor_method
from .._registry import inplace
from . import _common, extrema, histograms, norms, scans, sorting, sums
from .scans import cumprod, cumsum

_FAMILIES = (_common, sums, norms, extrema, scans, sorting, histograms)


def _public(name):
    """The public function ``name`` of the reduce family that defines it."""
    return next(vars(family)[name] for family in _FAMILIES if name in vars(family))


# ---------------------------------------------------------------- methods


for _name in ("sum", "nansum", "mean", "nanmean", "prod", "std", "var", "max", "min", "amax",
              "amin", "aminmax", "argmax", "argmin", "all", "any", "norm", "logsumexp",
              "median", "nanmedian", "mode", "quantile", "nanquantile", "count_nonzero",
              "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff", "sort",
              "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive",
              "bincount", "histc", "histogram", "sum_to_size"):
    tensor_method(_public(_name), _name)
tensor_method(lambda self, dim, *, dtype=None: inplace(cumsum, self, dim, dtype=dtype), "cumsum_")
tensor_method(lambda self, dim, *, dtype=None: inplace(cumprod, self, dim, dtype=dtype), "cumprod_")
del _name
