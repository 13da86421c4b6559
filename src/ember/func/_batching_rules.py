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
* the matmul family: one batched ``matmul`` (one GEMM when only the left side is batched);
* convolutions: the batch folds into the samples when the weight is unbatched, into the
  groups when it is batched (torch's two tricks), and per-element weight gradients are the
  groups of one grouped weight gradient;
* ops on trailing dims (pooling, linalg decompositions, tril): the batch is one more leading
  dim; ``einsum`` gets one more subscript;
* ops on independent samples or per channel (``im2col``/``col2im``, training batch norm): the
  batch joins the samples, or each element's channels become channels of one call;
* ``as_strided``: the batch is one more dim with the batch array's stride, so each element's
  storage offset counts from its own start (torch's rule);
* lookups with a per-element index (embedding, advanced indexing, ``index_select``/
  ``index_add``): each element's positions are offset into its own block, or indexed by an
  ``arange`` over the batch.

A rule raises :class:`Unbatchable` for operands it cannot handle; vmap then loops.

The functions here are builders: each op picks its rule where it is defined
(``softmax_op.defbatch(batching.along_dim)`` in its own module, see ``ember/ops/_vmap_rules.py``),
ops of a pointwise kind get :func:`pointwise` from their kind, and an op without a rule says why
(``op.opt_out("batch", reason)``). :func:`rule_for` reads only the op, never a table of names.

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

from ..ops._vmap_rules import DeferredRule

__all__ = ["Unbatchable", "guard", "rule_for"]


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
    """``index_select``/``index_add``...: with the index (operand 1) the same for all
    elements, the other operands are batched and the dim shifted."""
    if batched[1]:
        return _along_dim_batched_index(xp, step, arrays, batched, batch_size)
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
        # (the row count spelt out: -1 is ambiguous for an empty operand)
        rows = step.op.kernel(xp, a.reshape(_numel(a.shape[:-1]), shape_a[-1]), b)
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


# ---------------------------------------------------------------- convolutions
#
# Two ways to fold the vmap batch into one convolution, as torch's rules do: with an unbatched
# weight the batch joins the samples (B, N, C, ...) -> (B * N, C, ...); with a batched weight
# it joins the channels, (N, B * C, ...), and each element's weight becomes its own group of a
# convolution with B times the groups.


def _batch_into_samples(array):
    """(B, N, ...) -> (B * N, ...)."""
    return array.reshape((-1,) + array.shape[2:])


def _samples_into_batch(array, batch_size):
    """(B * N, ...) -> (B, N, ...)."""
    return array.reshape((batch_size, -1) + array.shape[1:])


def _batch_into_channels(array):
    """(B, N, C, ...) -> (N, B * C, ...): element b's channels become group b."""
    swapped = array.swapaxes(0, 1)
    return swapped.reshape(swapped.shape[:1] + (-1,) + swapped.shape[3:])


def _channels_into_batch(array, batch_size):
    """(N, B * C, ...) -> (B, N, C, ...)."""
    split = array.reshape(array.shape[:1] + (batch_size, -1) + array.shape[2:])
    return split.swapaxes(0, 1)


def _conv_ops():
    from ..nn._functional import conv

    return conv


def _grouped(params, batch_size):
    return dict(params, groups=params["groups"] * batch_size)


def convolution(xp, step, arrays, batched, batch_size):
    """``convolution(x, w)``: x (N, C, *S), w (Cout, C/G, *K) per element."""
    (x, w), (_, w_batched) = arrays, batched
    if not w_batched:
        out = step.op.kernel(xp, _batch_into_samples(x), w, **step.params)
        return _samples_into_batch(out, batch_size)
    x = _full(xp, x, batched[0], step.in_shapes[0], batch_size)
    out = step.op.kernel(xp, _batch_into_channels(x), _batch_into_samples(w),
                         **_grouped(step.params, batch_size))
    return _channels_into_batch(out, batch_size)


def _conv_input_grad(xp, gy, w, flags, shape, geom, batch_size, gy_shape):
    """The adjoint of the convolution in x (also conv_transpose's forward)."""
    kernel = _conv_ops().convolution_input_grad_op.kernel
    if not flags[1]:
        out = kernel(xp, _batch_into_samples(gy), w,
                     shape=(batch_size * shape[0],) + tuple(shape[1:]), **geom)
        return _samples_into_batch(out, batch_size)
    gy = _full(xp, gy, flags[0], gy_shape, batch_size)
    out = kernel(xp, _batch_into_channels(gy), _batch_into_samples(w),
                 shape=(shape[0], batch_size * shape[1]) + tuple(shape[2:]),
                 **_grouped(geom, batch_size))
    return _channels_into_batch(out, batch_size)


def _conv_weight_grad(xp, x, gy, flags, shapes, ksize, geom, batch_size):
    """The adjoint in w: one gradient per element, as the groups of one grouped adjoint."""
    x, gy = (_full(xp, a, b, s, batch_size) for a, b, s in zip((x, gy), flags, shapes))
    kernel = _conv_ops().convolution_weight_grad_op.kernel
    out = kernel(xp, _batch_into_channels(x), _batch_into_channels(gy), ksize=ksize,
                 **_grouped(geom, batch_size))
    return out.reshape((batch_size, -1) + out.shape[1:])


def convolution_input_grad(xp, step, arrays, batched, batch_size):
    """``convolution_input_grad(gy, w)``: the transposed convolution."""
    params = dict(step.params)
    shape = params.pop("shape")
    return _conv_input_grad(xp, *arrays, batched, shape, params, batch_size,
                            step.in_shapes[0])


def convolution_weight_grad(xp, step, arrays, batched, batch_size):
    """``convolution_weight_grad(x, gy)``: a weight gradient per element."""
    params = dict(step.params)
    ksize = params.pop("ksize")
    return _conv_weight_grad(xp, *arrays, batched, step.in_shapes, ksize, params, batch_size)


def convolution_backward(xp, step, arrays, batched, batch_size):
    """``convolution_backward(gy, x, w)``: both gradients, each through its own rule above."""
    (gy, x, w), (gy_b, x_b, w_b) = arrays, batched
    gy_shape, x_shape, w_shape = step.in_shapes
    gx = _conv_input_grad(xp, gy, w, (gy_b, w_b), x_shape, step.params, batch_size, gy_shape)
    gw = _conv_weight_grad(xp, x, gy, (x_b, gy_b), (x_shape, gy_shape), tuple(w_shape[2:]),
                           step.params, batch_size)
    return gx, gw


# ---------------------------------------------------------------- trailing-dim ops


def trailing_dims(xp, step, arrays, batched, batch_size):
    """Ops that work on their operands' trailing dims and loop over any leading ones (pooling
    over the last ``nd`` dims, the linalg decompositions over the last two): the batch is one
    more leading dim; a ``shape`` parameter gets it too."""
    full = [_full(xp, a, b, s, batch_size)
            for a, b, s in zip(arrays, batched, step.in_shapes)]
    params = dict(step.params)
    if "shape" in params:
        params["shape"] = (batch_size,) + tuple(params["shape"])
    return step.op.kernel(xp, *full, **params)


def diag_embed(xp, step, arrays, batched, batch_size):
    """``diag_embed``: the new dims (of the result) move past the batch dim."""
    params = dict(step.params)
    params["dim1"], params["dim2"] = params["dim1"] + 1, params["dim2"] + 1
    return step.op.kernel(xp, arrays[0], **params)


def strided(xp, step, arrays, batched, batch_size):
    """``strided_scatter``/``strided_gather`` address a contiguous element through (size,
    stride, offset): the batch is one more dim whose stride is an element's size."""
    params = dict(step.params)
    element = step.params["shape"] if "shape" in params else step.in_shapes[0]
    params["size"] = (batch_size,) + tuple(params["size"])
    params["stride"] = (_numel(element),) + tuple(params["stride"])
    if "shape" in params:
        params["shape"] = (batch_size,) + tuple(params["shape"])
    return step.op.kernel(xp, arrays[0], **params)


def broadcast_matrices(xp, step, arrays, batched, batch_size):
    """``linalg_solve(a, b)``-like ops whose kernel broadcasts the leading (batch) dims of
    matrix operands: the operands' ranks lined up as for pointwise ops."""
    rank = max(len(s) for s in step.in_shapes)
    lifted = [_lift(a, b, len(s), rank) for a, b, s in zip(arrays, batched, step.in_shapes)]
    return step.op.kernel(xp, *lifted, **step.params)


# ---------------------------------------------------------------- per-sample and per-channel ops


def samples(xp, step, arrays, batched, batch_size):
    """Ops that treat dim 0 of their first operand as independent samples and their other
    operands as parameters (``im2col``/``col2im``, the recurrent layers' ``h @ W^T + b``): the
    batch joins the samples, (B, N, ...) -> (B * N, ...), and a ``shape`` parameter grows with
    it. Parameters that differ per element loop."""
    if any(batched[1:]):
        raise Unbatchable(f"{step.op.name} with parameters that differ per element")
    params = dict(step.params)
    if "shape" in params:
        shape = tuple(params["shape"])
        params["shape"] = (batch_size * shape[0],) + shape[1:]
    out = step.op.kernel(xp, _batch_into_samples(arrays[0]), *arrays[1:], **params)
    return _samples_into_batch(out, batch_size)


def channels(xp, step, arrays, batched, batch_size):
    """Ops that compute per channel over the samples of (N, C, *) operands, with (C,)
    statistics and parameters (training-mode batch norm): element b's channels become
    channels b * C ... b * C + C - 1 of one call, as in the convolutions' grouped form."""
    folded = []
    for array, is_batched, shape in zip(arrays, batched, step.in_shapes):
        full = _full(xp, array, is_batched, shape, batch_size)
        folded.append(_batch_into_channels(full) if len(shape) >= 2 else full.reshape(-1))
    outs = step.op.kernel(xp, *folded, **step.params)
    unfolded = tuple(_channels_into_batch(out, batch_size) if len(shape) >= 2
                     else out.reshape((batch_size,) + tuple(shape))
                     for out, shape in zip(outs if step.op.multi_output else (outs,),
                                           step.out_shapes))
    return unfolded if step.op.multi_output else unfolded[0]


# ---------------------------------------------------------------- layer norm
#
# The fused layer-norm ops work on rows of ``size`` elements; their statistics are one value
# per row, so a batch of elements is simply more rows. Weight gradients sum over the rows of
# one element only, and a batched weight differs per element: those are written out with the
# batch dim kept apart.


def layer_norm_stats(xp, step, arrays, batched, batch_size):
    mean, rstd = step.op.kernel(xp, arrays[0], **step.params)
    return mean.reshape(batch_size, -1), rstd.reshape(batch_size, -1)


def _rows(xp, array, is_batched, shape, batch_size, size):
    """An operand as (B, rows, size); an unbatched weight as (1, 1, size)."""
    if not is_batched and _numel(shape) == size:
        return array.reshape(1, 1, size)
    return _full(xp, array, is_batched, shape, batch_size).reshape(batch_size, -1, size)


def _per_row(xp, array, is_batched, shape, batch_size):
    """A row statistic as (B, rows, 1)."""
    return _full(xp, array, is_batched, shape, batch_size).reshape(batch_size, -1, 1)


def _numel(shape):
    count = 1
    for s in shape:
        count *= s
    return count


def layer_norm(xp, step, arrays, batched, batch_size):
    """``_layer_norm(x, weight, bias, mean, rstd)``: the kernel on more rows, or with a
    batched weight or bias, the same formula with the batch dim kept apart."""
    (x, weight, bias, mean, rstd), flags = arrays, batched
    shapes, size = step.in_shapes, step.params["size"]
    mean, rstd = (_per_row(xp, a, flags[i], shapes[i], batch_size)
                  for i, a in ((3, mean), (4, rstd)))
    if not (flags[1] or flags[2]):
        x = _full(xp, x, flags[0], shapes[0], batch_size)
        return step.op.kernel(xp, x, weight, bias, mean.reshape(-1), rstd.reshape(-1),
                              **step.params)
    x3 = _rows(xp, x, flags[0], shapes[0], batch_size, size)
    w3, b3 = (_rows(xp, a, flags[i], shapes[i], batch_size, size).astype(x.dtype)
              for i, a in ((1, weight), (2, bias)))
    y = (x3 - mean) * rstd * w3 + b3
    return y.reshape((batch_size,) + tuple(step.out_shapes[0]))


def layer_norm_backward(xp, step, arrays, batched, batch_size):
    """``_layer_norm_backward(g, x, weight, mean, rstd)`` -> dx, and dweight, dbias summed
    over each element's own rows."""
    (g, x, weight, mean, rstd), flags = arrays, batched
    shapes, size = step.in_shapes, step.params["size"]
    g3, x3 = (_full(xp, a, flags[i], shapes[i], batch_size).reshape(batch_size, -1, size)
              for i, a in ((0, g), (1, x)))
    w3 = _rows(xp, weight, flags[2], shapes[2], batch_size, size).astype(x.dtype)
    mean, rstd = (_per_row(xp, a, flags[i], shapes[i], batch_size)
                  for i, a in ((3, mean), (4, rstd)))
    xhat = (x3 - mean) * rstd
    gw = g3 * w3
    dx = rstd * (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True))
    w_shape = (batch_size,) + tuple(shapes[2])
    dweight = (g3 * xhat).sum(1).reshape(w_shape).astype(weight.dtype)
    dbias = g3.sum(1).reshape(w_shape).astype(weight.dtype)
    return dx.reshape((batch_size,) + tuple(shapes[1])), dweight, dbias


# ---------------------------------------------------------------- lookups and einsum


def embedding(xp, step, arrays, batched, batch_size):
    """``embedding(weight, indices)``: a batched weight (B, V, D) is looked up as one table
    (B * V, D), each element's indices moved to its own block of rows."""
    (weight, indices), (weight_batched, _) = arrays, batched
    if not weight_batched:
        return step.op.kernel(xp, weight, indices, **step.params)
    index_rank = len(step.in_shapes[1])
    vocabulary = weight.shape[1]
    offsets = xp.arange(batch_size).reshape((batch_size,) + (1,) * index_rank) * vocabulary
    return step.op.kernel(xp, _batch_into_samples(weight), indices + offsets, **step.params)


_UNUSED_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def einsum(xp, step, arrays, batched, batch_size):
    """``einsum``: one more subscript, for the batch, on batched operands and the result."""
    equation = step.params["equation"]
    if "." in equation:
        raise Unbatchable("an einsum equation with an ellipsis")
    letter = next((c for c in _UNUSED_LETTERS if c not in equation), None)
    if letter is None:
        raise Unbatchable("an einsum equation that uses every letter")
    inputs, output = equation.split("->")
    subscripts = [letter + s if b else s for s, b in zip(inputs.split(","), batched)]
    return step.op.kernel(xp, *arrays, equation=",".join(subscripts) + "->" + letter + output,
                          shape=(batch_size,) + tuple(step.params["shape"]))


def _along_dim_batched_index(xp, step, arrays, batched, batch_size):
    """``index_select``/``index_add``/``index_copy``/``index_fill`` with an index that differs
    per element: the indexed dim is merged with the batch dim (element b's positions offset by
    b times its size) and the kernel runs along that one dim."""
    shape = step.in_shapes[0]
    if len(shape) == 0:
        raise Unbatchable(f"{step.op.name} of a 0-dim operand with a batched index")
    dim = step.params["dim"] % len(shape)
    size = shape[dim]
    index = arrays[1].reshape(batch_size, -1)
    if index.size and (bool((index < 0).any()) or bool((index >= size).any())):
        raise Unbatchable("an index out of range")   # the loop raises the element's error
    flat_index = (index + xp.arange(batch_size).reshape(-1, 1) * size).reshape(-1)
    merged = []
    for i, (a, b, s) in enumerate(zip(arrays, batched, step.in_shapes)):
        if i != 1:
            moved = xp.moveaxis(_full(xp, a, b, s, batch_size), dim + 1, 1)
            merged.append(moved.reshape((-1,) + moved.shape[2:]))
    params = dict(step.params, dim=0)
    out = step.op.kernel(xp, merged[0], flat_index, *merged[1:], **params)
    out = out.reshape((batch_size, -1) + out.shape[1:])
    return xp.moveaxis(out, 1, dim + 1)


# ---------------------------------------------------------------- advanced indexing
#
# ``a[i, j]`` on the batch is ``a[rows, i, j]`` with ``rows`` the batch positions, lined up
# with the (broadcast) index arrays. NumPy puts the indexed dims in front when the index
# arrays are not next to each other; the element's own result has them in place when its
# index arrays are adjacent and start past dim 0, so those results are permuted back.


def _batched_key(xp, step, index_arrays, index_flags, index_shapes, batch_size):
    """The index operands and positions for the batched array, and the permutation from
    NumPy's layout of the result to the element's (batch first)."""
    from ..ops.index import _index_shape

    positions = tuple(step.params["positions"])
    rank = len(np.broadcast_shapes(*index_shapes))
    rows = xp.arange(batch_size).reshape((batch_size,) + (1,) * rank)
    lifted = [_lift(i, b, len(s), rank) for i, b, s in zip(index_arrays, index_flags,
                                                            index_shapes)]
    first = positions[0]
    adjacent = positions[-1] - first + 1 == len(positions)
    result_rank = 1 + len(_index_shape(step.in_shapes[0], index_shapes, positions))
    order = list(range(result_rank))
    if adjacent and first > 0:   # NumPy: (B, *index, *before, *after)
        order = [0] + order[1 + rank:1 + rank + first] + order[1:1 + rank] \
            + order[1 + rank + first:]
    return [rows] + lifted, (0,) + tuple(p + 1 for p in positions), order


def advanced_index(xp, step, arrays, batched, batch_size):
    """``index(a, *indices)``: ``a[..., i, ...]`` with index tensors."""
    a = _full(xp, arrays[0], batched[0], step.in_shapes[0], batch_size)
    key, positions, order = _batched_key(xp, step, arrays[1:], batched[1:],
                                         step.in_shapes[1:], batch_size)
    out = step.op.kernel(xp, a, *key, positions=positions)
    return out.transpose(order)


def advanced_index_put(xp, step, arrays, batched, batch_size):
    """``index_put(a, values, *indices)``: the values broadcast to the element's indexed shape,
    then laid out as NumPy's batched key reads them."""
    from ..ops.index import _index_shape

    a = _full(xp, arrays[0], batched[0], step.in_shapes[0], batch_size)
    key, positions, order = _batched_key(xp, step, arrays[2:], batched[2:],
                                         step.in_shapes[2:], batch_size)
    indexed = _index_shape(step.in_shapes[0], step.in_shapes[2:], step.params["positions"])
    values = _lift(arrays[1], batched[1], len(step.in_shapes[1]), len(indexed))
    values = xp.broadcast_to(values, (batch_size,) + tuple(indexed))
    values = values.transpose(sorted(range(len(order)), key=order.__getitem__))  # inverse
    return step.op.kernel(xp, a, values, *key, positions=positions,
                          accumulate=step.params["accumulate"])


# ---------------------------------------------------------------- shape ops with their own params


def repeat(xp, step, arrays, batched, batch_size):
    """``repeat``: the element padded with size-1 dims to the repeats' length, and the batch
    dim repeated once."""
    repeats = tuple(step.params["repeats"])
    lifted = _lift(arrays[0], True, len(step.in_shapes[0]), len(repeats))
    return step.op.kernel(xp, lifted, repeats=(1,) + repeats)


def unfold(xp, step, arrays, batched, batch_size):
    """``unfold``: the windowed dim moves past the batch dim (the windows become the last dim
    as for one element)."""
    params = dict(step.params)
    params["dimension"] = _shift(params["dimension"], len(step.in_shapes[0]))
    return step.op.kernel(xp, arrays[0], **params)


def view_dtype(xp, step, arrays, batched, batch_size):
    """``view(dtype)``: the last dim is reinterpreted; a 0-dim element gets a dim of one."""
    array = arrays[0]
    if not step.in_shapes[0]:
        array = array[:, None]
    shape = (batch_size,) + tuple(step.params["shape"])
    return step.op.kernel(xp, array, dtype=step.params["dtype"], shape=shape).reshape(shape)


def _shift_pad_indices(indices, ndim):
    return tuple((_shift(d, ndim), index) for d, index in indices)


def pad_gather(xp, step, arrays, batched, batch_size):
    """Reflect/replicate/circular padding, a gather of positions along some dims: those dims
    move past the batch dim."""
    indices = _shift_pad_indices(step.params["indices"], len(step.in_shapes[0]))
    return step.op.kernel(xp, arrays[0], indices=indices)


def pad_scatter(xp, step, arrays, batched, batch_size):
    """The adjoint of :func:`pad_gather`: the same dims moved, the batch in the result shape."""
    shape = tuple(step.params["shape"])
    return step.op.kernel(xp, arrays[0], shape=(batch_size,) + shape,
                          indices=_shift_pad_indices(step.params["indices"], len(shape)))


def as_strided(xp, step, arrays, batched, batch_size):
    """``as_strided(size, stride, offset)``: as torch's rule, each element's storage offset
    counts from that element's own start, so the batch is one more dim whose stride is the
    batch array's. The element must keep the geometry it was recorded with, and the view may
    reach only the element's own memory (torch's error otherwise)."""
    array = arrays[0]
    shape, stride, own_offset = step.params["in_geometry"]
    item = array.dtype.itemsize
    if array.ndim != len(shape) + 1 or any(
            n > 1 and s != t * item for n, s, t in zip(shape, array.strides[1:], stride)):
        raise Unbatchable("as_strided of an element laid out unlike its recording")
    size, new_stride, offset = step.params["size"], step.params["stride"], step.params["offset"]
    _check_within_element(size, new_stride, offset, shape, stride, own_offset)
    params = dict(step.params, size=(batch_size,) + tuple(size),
                  stride=(array.strides[0] // item,) + tuple(new_stride))
    return step.op.kernel(xp, array, **params)


def _memory_range(size, stride, offset):
    """The storage positions a view reaches, as [start, end)."""
    return offset, offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1


def _check_within_element(size, stride, offset, shape, element_stride, element_offset):
    if not all(size) or not all(shape):
        return
    (lo, hi), (elo, ehi) = (_memory_range(size, stride, offset),
                            _memory_range(shape, element_stride, element_offset))
    if lo < elo or hi > ehi:
        raise RuntimeError(
            f"result = tensor.as_strided({list(size)}, {list(stride)}, {offset}) can access "
            f"memory outside of `tensor`. `result` can access some memory in range [{lo}, "
            f"{hi}], but `tensor` can only access some memory in range [{elo}, {ehi}]. This "
            "is not supported inside of vmap, please try to rewrite the `as_strided` call as "
            "a sequence of PyTorch view operations")


# ---------------------------------------------------------------- ops with operand-specific rules


def broadcast_along_dim(xp, step, arrays, batched, batch_size):
    """``cross(a, b, dim)``: operands broadcast together as for one element (ranks lined up
    as for pointwise ops), the dim counted in the broadcast rank and moved past the batch."""
    rank = len(step.out_shapes[0])
    lifted = [_lift(a, b, len(s), rank) for a, b, s in zip(arrays, batched, step.in_shapes)]
    return step.op.kernel(xp, *lifted, dim=_shift(step.params["dim"], rank))


def first_operand_batched(xp, step, arrays, batched, batch_size):
    """Ops elementwise in their first operand whose other operands are a lookup table
    (``isin``'s test elements): a batched table differs per element, so the call loops."""
    if any(batched[1:]):
        raise Unbatchable(f"{step.op.name} with a table that differs per element")
    return step.op.kernel(xp, *arrays, **step.params)


def quantile(xp, step, arrays, batched, batch_size):
    """``quantile(a, q, dim)``: the dim moves past the batch; the kernel puts the quantiles
    first, so they move back behind the batch dim."""
    if batched[1]:
        raise Unbatchable("quantiles that differ per element")
    params = dict(step.params)
    params["dim"] = _shift(params["dim"], len(step.in_shapes[0]))
    out = step.op.kernel(xp, arrays[0], arrays[1], **params)
    return out if params["scalar_q"] else xp.moveaxis(out, 0, 1)


def searchsorted(xp, step, arrays, batched, batch_size):
    """``searchsorted(seq, values[, sorter])``: a 1-D sequence shared by the batch serves any
    values as they are; otherwise every element's sequence is one row of an N-D sequence,
    whose values are that element's (flattened when its sequence is 1-D)."""
    seq_shape, value_shape = step.in_shapes[0], step.in_shapes[1]
    if len(seq_shape) == 1 and not batched[0] and not any(batched[2:]):
        return step.op.kernel(xp, *arrays, **step.params)
    full = [_full(xp, a, b, s, batch_size) for a, b, s in zip(arrays, batched, step.in_shapes)]
    if len(seq_shape) > 1:
        return step.op.kernel(xp, *full, **step.params)
    values = full[1].reshape(batch_size, _numel(value_shape))
    out = step.op.kernel(xp, full[0], values, *full[2:], **step.params)
    return out.reshape((batch_size,) + tuple(value_shape))


def lstsq(xp, step, arrays, batched, batch_size):
    """``lstsq(a, b)``: the batch is one more leading dim of both; the outputs a driver does
    not compute (rank, singular values: size 0) keep their logical shape per element."""
    full = [_full(xp, a, b, s, batch_size) for a, b, s in zip(arrays, batched, step.in_shapes)]
    outs = step.op.kernel(xp, *full, **step.params)
    return tuple(out if out.shape[:1] == (batch_size,) and out.ndim == len(shape) + 1
                 else xp.zeros((batch_size,) + tuple(shape), out.dtype)
                 for out, shape in zip(outs, step.out_shapes))


# ---------------------------------------------------------------- choosing an op's rule


def rule_for(op):
    """The batching rule of ``op``: its own (``op.defbatch``, attached next to the op), else
    the one its kind implies (an op of a pointwise kind with one output broadcasts over the
    batch dim). None when it has neither: the op declines one (``op.opt_out("batch", why)``)
    and vmap runs the call element by element.

    Example::

        >>> rule_for(ember.ops.pointwise.arithmetic.add_op) is pointwise
        True
    """
    rule = op.batch
    if rule is not None:
        return rule.resolve() if type(rule) is DeferredRule else rule
    if op.pointwise and not op.multi_output and "batch" not in op.opt_outs:
        return pointwise
    return None
