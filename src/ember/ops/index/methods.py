"""Tensor's indexing methods and in-place forms, ``__getitem__`` and ``__setitem__``."""

from __future__ import annotations

from .._methods import tensor_method
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


tensor_method(_gather_method, "gather")
tensor_method(_scatter_method, "scatter")
tensor_method(_inplace_method(_scatter_method, "scatter"), "scatter_")
for _fn in (scatter_add, scatter_reduce, index_select, index_add, index_copy, index_fill,
            masked_fill, index_put, masked_scatter, masked_select, take, take_along_dim, put,
            nonzero, nonzero_static, argwhere):
    tensor_method(_fn, _fn.__name__)
for _fn in (scatter_add, scatter_reduce, index_add, index_copy, index_fill, masked_fill,
            index_put, masked_scatter, put):
    tensor_method(_inplace_method(_fn, _fn.__name__), _fn.__name__ + "_")
tensor_method(_getitem, "__getitem__")
tensor_method(_setitem, "__setitem__")


tensor_method(index_reduce, "index_reduce")
tensor_method(_inplace_method(index_reduce, "index_reduce"), "index_reduce_")
for _fn in (slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter):
    tensor_method(_fn, _fn.__name__)
del _fn
