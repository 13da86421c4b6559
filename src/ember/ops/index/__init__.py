"""Indexing operators: ``__getitem__``/``__setitem__``, gather/scatter, index_* and masks.

The primitives are few, each an :class:`~ember.ops._registry.Op` with kernel, meta rule and
derivative:

* ``_slice`` (a view: ints, slices and None) and its backward ``_slice_backward``;
* ``_index`` (advanced indexing with integer index tensors at given dims) and ``_index_put``
  (its transpose, with or without accumulation);
* ``gather``/``scatter``/``scatter_add``/``scatter_reduce`` along a dim;
* ``index_select``/``index_add``/``index_copy``/``index_fill`` along a dim.

``x[key]`` first applies the basic part of ``key`` as a view (ints select, slices, None, and
a full slice where an advanced index sits), then the advanced part (index tensors, bool masks
as their ``nonzero``) as one ``_index``: torch's layout rules follow from this order. ``x[key] =
v`` writes directly into memory when autograd is not recording, and otherwise computes the new
value out of place (differentiable w.r.t. ``x`` and ``v``) and writes it back with
``assign_inplace``.

The package's modules, one family each: ``_kernels`` (shared kernel helpers),
``gather_scatter``, ``index_ops``, ``masked``, ``advanced`` (``x[key]``) and ``take_put``; each
function is declared a Tensor method (``@tensor_method``, and its in-place form right under
it) where it is defined. Every public name is re-exported here (``ember.ops.index.gather``).
"""

from __future__ import annotations

from . import _kernels, advanced, gather_scatter, index_ops, masked, take_put  # noqa: F401
from ._kernels import (  # noqa: F401  (importers use these names)
    _short,
    _ufunc_at_rounds,
)
from .advanced import *  # noqa: F403
from .advanced import (  # noqa: F401  (importers use these names)
    _index_shape,
    _parse,
    _value_for,
    basic_put_op,
    index_op,
    index_put_op,
    nonzero_op,
    nonzero_tuple_op,
    slice_backward_op,
    slice_op,
)
from .gather_scatter import *  # noqa: F403
from .gather_scatter import (  # noqa: F401  (importers use these names)
    _gather_backward_op,
    gather_op,
    scatter_add_op,
    scatter_op,
    scatter_reduce_op,
    scatter_value_op,
)
from .index_ops import *  # noqa: F403
from .index_ops import (  # noqa: F401  (importers use these names)
    index_add_op,
    index_copy_op,
    index_fill_op,
    index_select_op,
)
from .masked import *  # noqa: F403
from .take_put import *  # noqa: F403

__all__ = [*gather_scatter.__all__, *index_ops.__all__, *masked.__all__, *advanced.__all__,
           *take_put.__all__]
