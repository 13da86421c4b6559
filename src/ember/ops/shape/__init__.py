"""Shape operators: views that share memory (view, reshape, transpose, expand, narrow, split,
diagonal, as_strided, unfold, ...) and the ops that rearrange data into new memory (cat, stack,
flip, roll, repeat, tril, pad, ...).

A view op is declared with ``view=True``: the dispatcher then makes the result share its input's
base and version counter, so writes through either are seen by both and by autograd. View
kernels build their result with :func:`_strided` from explicit strides (in elements), computed
here exactly as torch computes them, so ``stride()``/``storage_offset()`` match torch's.

Derivatives of views that pick elements (slices, diagonals, windows, ``as_strided``) scatter the
gradient back with :data:`strided_scatter_op`, whose derivative is :data:`strided_gather_op` and
vice versa, so higher-order gradients work.

The package's modules, one family each: ``_geometry`` (strides and shared checks), ``views``,
``slicing``, ``joins``, ``rearrange``, ``padding`` and ``copies`` (the ``*_copy`` forms); each
public function is declared a Tensor method (``@tensor_method``) where it is defined.
Every public name is re-exported here (``ember.ops.shape.cat``).
"""

from __future__ import annotations

from . import _geometry, copies, joins, padding, rearrange, slicing, views  # noqa: F401
from .copies import *  # noqa: F403
from .joins import *  # noqa: F403
from .joins import (  # noqa: F401  (importers use these names)
    cat_op,
    split_op,
    unbind_op,
)
from .padding import (  # noqa: F401  (importers use these names)
    pad,
    pad_constant_op,
    pad_gather_op,
    pad_scatter_op,
)
from .rearrange import *  # noqa: F403
from .rearrange import (  # noqa: F401  (importers use these names)
    flip_op,
    repeat_interleave_op,
    repeat_op,
    roll_op,
    segment_sum_op,
    tril_op,
    triu_op,
)
from .slicing import *  # noqa: F403
from .slicing import (  # noqa: F401  (importers use these names)
    as_strided_op,
    diagonal_op,
    select_op,
    slice_backward_op,
    slice_op,
    strided_gather_op,
    strided_scatter_op,
    unfold_op,
)
from .views import *  # noqa: F403
from .views import (  # noqa: F401  (importers use these names)
    _alias,
    _alias_op,
    alias_op,
    expand_op,
    permute_op,
    squeeze_op,
    unsqueeze_op,
    view_dtype_op,
    view_op,
)

__all__ = [*views.__all__, *slicing.__all__, *joins.__all__, *rearrange.__all__, *copies.__all__]
