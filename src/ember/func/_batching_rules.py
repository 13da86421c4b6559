"""Batching rules: how each recorded primitive runs on a whole batch at once.

A rule ``rule(xp, step, arrays, batched, batch_size)`` receives the step's operands as arrays
(``batched[i]``: ``arrays[i]`` has the batch as its first dim, after which come the logical
dims ``step.in_shapes[i]``; else it is the same for every element and has the logical shape)
and returns the step's result(s) with the batch dim first. Most rules adjust the operands or
the parameters and call the op's own kernel, so dtype handling stays the kernel's:

* pointwise ops: each batched operand gets size-1 dims after the batch dim up to the
  result's rank, so that broadcasting lines up the logical dims as in the element's call;
* reductions, softmax, scans, gather/scatter, cat...: dim parameters move up by one;
* view ops: the batch dim is prepended to shapes, keys and permutations;
* the matmul family: one batched ``matmul`` (one GEMM when only the left side is batched).

A rule raises :class:`Unbatchable` for operands it cannot handle; vmap then loops.

Example::

    >>> import numpy as np
    >>> from ember.func._batching import Step
    >>> step = Step(None, ember.ops.reduce.sum_op, [0], {"dims": (0,), "keepdim": False},
    ...             [1], [(3,)], [()])
    >>> reduction(np, step, [np.ones((2, 3))], [True], 2)
    array([3., 3.])
"""

from __future__ import annotations

import numpy as np

__all__ = ["RULES", "Unbatchable", "guard"]


class Unbatchable(Exception):
    """A step the batched replay cannot run; vmap falls back to its per-element loop."""


# ---------------------------------------------------------------- helpers


def _lift(array, batched, ndim, rank):
    """A batched operand of logical rank ``ndim`` with size-1 dims inserted after the batch dim
    up to logical rank ``rank`` (unbatched operands broadcast from the right already)."""
    if batched and ndim < rank:
        return array.reshape(array.shape[:1] + (1,) * (rank - ndim) + array.shape[1:])
    return array


def _full(xp, array, batched, shape, batch_size):
    """The operand with its batch dim, broadcast over the batch when it has none."""
    if batched:
        return array
    return xp.broadcast_to(array, (batch_size,) + tuple(shape))


def _shift(dim, ndim):
    """Logical dim ``dim`` of a rank-``ndim`` operand as a physical dim (after the batch)."""
    if ndim == 0:
        if dim in (0, -1):
            raise Unbatchable("a dim of a 0-dim operand")
        return dim
    return dim % ndim + 1


def _shift_all(dims, ndim):
    if dims is None:
        return tuple(range(1, ndim + 1))
    if isinstance(dims, int):
        return _shift(dims, ndim)
    return tuple(_shift(d, ndim) for d in dims)


# ---------------------------------------------------------------- rules


def guard(xp, step, arrays, batched, batch_size):
    """A Python value taken from a tensor (``bool(t)``, ``t.item()``): every element must give
    the value element 0 gave, or the branch taken on it might differ."""
    expected = step.params["expected"]
    values = arrays[0]
    if hasattr(values, "get"):   # CuPy: compare on the host
        values = values.get()
    same = values == expected
    if not (same.all() if hasattr(same, "all") else same):
        raise Unbatchable("a Python value differs across the batch")


def pointwise(xp, step, arrays, batched, batch_size):
    """Elementwise ops with broadcasting: line the logical dims up, run the kernel once."""
    rank = len(step.out_shapes[0])
    lifted = [_lift(a, b, len(s), rank) for a, b, s in zip(arrays, batched, step.in_shapes)]
    return step.op.kernel(xp, *lifted, **step.params)


def same_shape(xp, step, arrays, batched, batch_size):
    """Elementwise ops whose kernels want equal shapes (``_relu_backward`` writes into its
    mask): every operand at the full batched shape."""
    shape = (batch_size,) + tuple(step.out_shapes[0])
    rank = len(step.out_shapes[0])
    full = [xp.broadcast_to(_lift(a, b, len(s), rank), shape)
            for a, b, s in zip(arrays, batched, step.in_shapes)]
    return step.op.kernel(xp, *full, **step.params)


def clone(xp, step, arrays, batched, batch_size):
    if step.params.get("memory_format") in ("channels_last", "channels_last_3d"):
        raise Unbatchable("clone to a channels-last layout")
    return step.op.kernel(xp, arrays[0], **step.params)


def reduction(xp, step, arrays, batched, batch_size):
    """Ops with a ``dims`` parameter (sum, mean, amax, any, var, norm, flip...)."""
    params = dict(step.params)
    params["dims"] = _shift_all(params["dims"], len(step.in_shapes[0]))
    return step.op.kernel(xp, arrays[0], **params)


def reduce_all(xp, step, arrays, batched, batch_size):
    """``max``/``min`` of all elements: over every logical dim of each element."""
    array = arrays[0]
    return getattr(xp, step.op.name)(array, axis=tuple(range(1, array.ndim)))


def along_dim(xp, step, arrays, batched, batch_size):
    """Ops with one ``dim`` (softmax, cumsum, max(dim), sort, gather, scatter, cat, unbind...):
    every tensor operand batched, the dim moved past the batch dim."""
    params = dict(step.params)
    if params["dim"] is None:
        raise Unbatchable(f"{step.op.name} over all dims")
    params["dim"] = _shift(params["dim"], len(step.in_shapes[0]))
    full = [_full(xp, a, b, s, batch_size)
            for a, b, s in zip(arrays, batched, step.in_shapes)]
    return step.op.kernel(xp, *full, **params)


def index_along_dim(xp, step, arrays, batched, batch_size):
    """``index_select``/``index_add``...: the index (operand 1) must be the same for all
    elements; the other operands are batched and the dim shifted."""
    if batched[1]:
        raise Unbatchable(f"{step.op.name} with a batched index")
    params = dict(step.params)
    params["dim"] = _shift(params["dim"], len(step.in_shapes[0]))
    full = [a if i == 1 else _full(xp, a, b, s, batch_size)
            for i, (a, b, s) in enumerate(zip(arrays, batched, step.in_shapes))]
    return step.op.kernel(xp, *full, **params)


def diagonal(xp, step, arrays, batched, batch_size):
    params = dict(step.params)
    ndim = len(step.in_shapes[0])
    params["dim1"], params["dim2"] = _shift(params["dim1"], ndim), _shift(params["dim2"], ndim)
    return step.op.kernel(xp, arrays[0], **params)


def reshape_view(xp, step, arrays, batched, batch_size):
    """``view``/``squeeze``/``unsqueeze``/``alias``: the same elements in the same order, so
    each element is reshaped (a copy only where NumPy needs one)."""
    array = arrays[0]
    return array.reshape(array.shape[:1] + tuple(step.params["shape"]))


def expand(xp, step, arrays, batched, batch_size):
    shape = tuple(step.params["shape"])
    lifted = _lift(arrays[0], True, len(step.in_shapes[0]), len(shape))
    return xp.broadcast_to(lifted, (batch_size,) + shape)


def permute(xp, step, arrays, batched, batch_size):
    return xp.transpose(arrays[0], (0,) + tuple(d + 1 for d in step.params["dims"]))


_BASIC_KEY_TYPES = (int, slice, type(None), type(Ellipsis))


def basic_index(xp, step, arrays, batched, batch_size):
    """``_slice``: a NumPy basic-indexing key (ints, slices, None, Ellipsis); the batch dim is
    kept whole in front of it."""
    key = step.params["key"]
    if not isinstance(key, tuple) or not all(type(k) in _BASIC_KEY_TYPES or
                                             isinstance(k, (int, np.integer)) for k in key):
        raise Unbatchable("an indexing key other than ints, slices, None and Ellipsis")
    return step.op.kernel(xp, arrays[0], key=(slice(None),) + key)


def basic_index_backward(xp, step, arrays, batched, batch_size):
    key = step.params["key"]
    if not isinstance(key, tuple):
        raise Unbatchable("an indexing key that is not a tuple")
    return step.op.kernel(xp, arrays[0], shape=(batch_size,) + tuple(step.params["shape"]),
                          key=(slice(None),) + key)


def leading_key(xp, step, arrays, batched, batch_size):
    """``slice``/``select``/``slice_backward``: keys over the leading dims, one more in front."""
    params = dict(step.params)
    params["key"] = ((None, None, None),) + tuple(params["key"])
    if "shape" in params:
        params["shape"] = (batch_size,) + tuple(params["shape"])
    return step.op.kernel(xp, arrays[0], **params)


def matmul(xp, step, arrays, batched, batch_size):
    """The matmul family (matmul, mm, bmm, mv, dot): vectors become one-row/one-column
    matrices, batched operands are lined up, and the result loses the added dims again."""
    (a, b), (a_batched, b_batched) = arrays, batched
    shape_a, shape_b = step.in_shapes
    vector_a, vector_b = len(shape_a) == 1, len(shape_b) == 1
    if vector_a:
        a, shape_a = a[..., None, :], (1,) + tuple(shape_a)
    if vector_b:
        b, shape_b = b[..., None], tuple(shape_b) + (1,)
    if a_batched and not b_batched and len(shape_b) == 2:
        # one GEMM: the batch and a's rows stacked into one matrix
        rows = step.op.kernel(xp, a.reshape(-1, shape_a[-1]), b)
        out = rows.reshape(a.shape[:-1] + (shape_b[-1],))
    else:
        rank = max(len(shape_a), len(shape_b))
        out = step.op.kernel(xp, _lift(a, a_batched, len(shape_a), rank),
                             _lift(b, b_batched, len(shape_b), rank))
    if vector_a:
        out = out[..., 0, :] if not vector_b else out[..., 0, 0]
    elif vector_b:
        out = out[..., 0]
    return out


# ---------------------------------------------------------------- the table

_POINTWISE_EXTRA = ("where", "clamp", "lerp", "_relu", "_to_copy", "real", "imag",
                    "_gelu_factor")
_SAME_SHAPE = ("_relu_backward", "gelu", "_gelu_backward")
_REDUCTIONS = ("sum", "nansum", "prod", "mean", "var", "std", "amax", "amin", "all", "any",
               "logsumexp", "norm", "count_nonzero", "flip", "_norm_mean")
_ALONG_DIM = ("softmax", "log_softmax", "_safe_softmax", "cumsum", "cumprod", "logcumsumexp",
              "cummax", "cummin", "argmax", "argmin", "max_dim", "min_dim", "sort", "topk",
              "gather", "scatter", "scatter_value", "scatter_add", "cat", "unbind",
              "split_with_sizes")
_INDEX_ALONG_DIM = ("index_select", "index_add", "index_copy", "index_fill")
_MATMUL = ("matmul", "mm", "bmm", "mv", "dot")
_RESHAPE_VIEWS = ("view", "squeeze", "unsqueeze", "alias")


def _pointwise_names():
    """Every op whose meta rule is the broadcasting or unary-pointwise one."""
    from ..ops._registry import registry

    names = set(_POINTWISE_EXTRA)
    for name, ops in registry.items():
        qualname = getattr(ops[0].meta, "__qualname__", "")
        if qualname.startswith(("broadcast_meta.", "_unary_meta.")) and not ops[0].multi_output:
            names.add(name)
    return names


def _table():
    table = {name: pointwise for name in _pointwise_names()}
    table.update({name: same_shape for name in _SAME_SHAPE})
    table.update({name: reduction for name in _REDUCTIONS})
    table.update({name: along_dim for name in _ALONG_DIM})
    table.update({name: index_along_dim for name in _INDEX_ALONG_DIM})
    table.update({name: matmul for name in _MATMUL})
    table.update({name: reshape_view for name in _RESHAPE_VIEWS})
    table.update({"max": reduce_all, "min": reduce_all})
    table.update({"clone": clone, "expand": expand, "permute": permute, "diagonal": diagonal,
                  "_slice": basic_index, "_slice_backward": basic_index_backward,
                  "slice": leading_key, "select": leading_key, "slice_backward": leading_key})
    return table


class _LazyTable(dict):
    """The rule table, built on first use (after every op module has registered its ops)."""

    def get(self, name, default=None):
        if not self:
            self.update(_table())
        return dict.get(self, name, default)


RULES = _LazyTable()
