"""Tensor's indexing methods and in-place forms, ``__getitem__`` and ``__setitem__``."""

from __future__ import annotations

from ..._tensor import Tensor
from .._registry import inplace
from .advanced import _getitem, _setitem, argwhere, index_put, nonzero, nonzero_static
from .gather_scatter import (
    _gather_method,
    _scatter_method,
    as_strided_scatter,
    diagonal_scatter,
    scatter_add,
    scatter_reduce,
    select_scatter,
    slice_scatter,
)
from .index_ops import index_add, index_copy, index_fill, index_reduce, index_select
from .masked import masked_fill, masked_scatter, masked_select
from .take_put import put, take, take_along_dim

# ---------------------------------------------------------------- methods


def _inplace_method(fn, name):
    def method(self, *args, **kwargs):
        return inplace(fn, self, *args, **kwargs)
    method.__name__ = name + "_"
    method.__doc__ = f"In-place version of :func:`{name}`."
    return method


Tensor.gather = _gather_method
Tensor.scatter = _scatter_method
Tensor.scatter_ = _inplace_method(_scatter_method, "scatter")
for _fn in (scatter_add, scatter_reduce, index_select, index_add, index_copy, index_fill,
            masked_fill, index_put, masked_scatter, masked_select, take, take_along_dim, put,
            nonzero, nonzero_static, argwhere):
    setattr(Tensor, _fn.__name__, _fn)
for _fn in (scatter_add, scatter_reduce, index_add, index_copy, index_fill, masked_fill,
            index_put, masked_scatter, put):
    setattr(Tensor, _fn.__name__ + "_", _inplace_method(_fn, _fn.__name__))
Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem


Tensor.index_reduce = index_reduce
Tensor.index_reduce_ = _inplace_method(index_reduce, "index_reduce")
for _fn in (slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter):
    setattr(Tensor, _fn.__name__, _fn)
del _fn
