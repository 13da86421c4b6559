"""Operators on sparse COO tensors, written with ember operators on indices and values so that
one definition serves NumPy and CuPy and autograd flows to the values and dense operands.

The common device: a *flat index*, each specified element's position in the row-major order
of the sparse dims. Sorting by it is coalescing's order; equal flat indices are duplicates.
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._tensor import Tensor
from ._base import is_strided
from ._base import wrap_dim as _wrap_dim
from ._coo import SparseCOOTensor, _is_scalar, _not_implemented, no_kernel_for_layout


def _ember():
    import ember

    return ember


def _dense_linalg():
    from ..ops import linalg

    return linalg


def flat_index(indices, sparse_size):
    """Row-major position of each column of ``indices`` within ``sparse_size``.

    Example::

        >>> flat_index(ember.tensor([[0, 1], [2, 0]]), (2, 3))
        tensor([2, 3])
    """
    strides = [math.prod(sparse_size[d + 1:]) for d in range(len(sparse_size))]
    stride_column = indices.new_tensor(strides).unsqueeze(1)
    return (indices * stride_column).sum(0)


def unflatten_index(flat, sparse_size):
    """The inverse of :func:`flat_index`: a sparse_dim x nnz index tensor.

    Example::

        >>> unflatten_index(ember.tensor([2, 3]), (2, 3))
        tensor([[0, 1],
                [2, 0]])
    """
    rows = []
    for d in range(len(sparse_size)):
        stride = math.prod(sparse_size[d + 1:])
        rows.append((flat // stride) % sparse_size[d])
    return _ember().stack(rows) if rows else flat.new_zeros((0, flat.shape[0]))


def _unique_positions(sparse):
    """The sorted distinct flat indices and, for each element, the slot of its position."""
    sparse_size = tuple(sparse.shape[:sparse.sparse_dim()])
    flat = flat_index(sparse._idx, sparse_size)
    unique, inverse = _ember().unique(flat, sorted=True, return_inverse=True)
    return sparse_size, unique, inverse


def coalesced(sparse):
    """``sparse.coalesce()``: indices sorted, values of duplicates summed.

    Example::

        >>> coalesced(ember.sparse_coo_tensor([[1, 1]], [1., 2.], (2,))).values()
        tensor([3.])
    """
    sparse_size, unique, inverse = _unique_positions(sparse)
    values = sparse._vals
    summed = values.new_zeros((unique.shape[0],) + tuple(values.shape[1:]))
    summed = summed.index_add(0, inverse, values)
    indices = unflatten_index(unique, sparse_size)
    return SparseCOOTensor(indices, summed, sparse.shape, is_coalesced=True)


def first_of_duplicates(indices, values, size):
    """A sparse tensor on the coalesced pattern holding, at each position, one of its
    duplicates' values (used for gradients, where duplicates agree).

    Example::

        >>> first_of_duplicates(ember.tensor([[1, 1]]), ember.tensor([5., 5.]), (2,))._values()
        tensor([5.])
    """
    pattern = SparseCOOTensor(indices, values, size)
    sparse_size, unique, inverse = _unique_positions(pattern)
    picked = values.new_zeros((unique.shape[0],) + tuple(values.shape[1:]))
    picked = picked.index_put((inverse,), values)
    # torch flags such a gradient uncoalesced although its indices are sorted and distinct
    return SparseCOOTensor(unflatten_index(unique, sparse_size), picked, size)


def to_dense(sparse):
    """The dense tensor of ``sparse``: duplicates add up.

    Example::

        >>> to_dense(ember.sparse_coo_tensor([[1, 1]], [1., 2.], (3,)))
        tensor([0., 3., 0.])
    """
    sparse_dim = sparse.sparse_dim()
    sparse_size = tuple(sparse.shape[:sparse_dim])
    values = sparse._vals
    rows = values.new_zeros((math.prod(sparse_size),) + tuple(values.shape[1:]))
    rows = rows.index_add(0, flat_index(sparse._idx, sparse_size), values)
    return rows.reshape(tuple(sparse.shape))


def dense_to_sparse(tensor, sparse_dim=None):
    """``Tensor.to_sparse(sparse_dim)``: the nonzero elements (or, with dense dims, the nonzero
    slices) of a dense tensor, coalesced.

    Example::

        >>> dense_to_sparse(ember.tensor([0., 7.]))._values()
        tensor([7.])
    """
    ndim = tensor.dim()
    sparse_dim = ndim if sparse_dim is None else sparse_dim
    if not 0 < sparse_dim <= ndim:
        raise RuntimeError(f"sparse_dim argument must be in [1, {ndim}] but got {sparse_dim}"
                           if ndim else "to_sparse: 0-dim tensors are not supported")
    nonzero = tensor != 0
    if sparse_dim < ndim:
        nonzero = nonzero.reshape(tuple(tensor.shape[:sparse_dim]) + (-1,)).any(-1)
    positions = nonzero.nonzero()  # nnz x sparse_dim, in row-major (coalesced) order
    values = tensor[tuple(positions.unbind(1))]
    return SparseCOOTensor(positions.t().contiguous(), values, tuple(tensor.shape),
                           is_coalesced=True)


# ---------------------------------------------------------------- products


def _check_sparse_matrix(sparse, name):
    if not isinstance(sparse, SparseCOOTensor):
        raise TypeError(f"{name}: expected a sparse COO tensor, got {type(sparse).__name__}")
    if sparse.sparse_dim() != 2 or sparse.dense_dim() != 0:
        raise RuntimeError(f"{name}: expected a 2-D sparse matrix (sparse_dim 2, dense_dim 0),"
                           f" got sparse_dim {sparse.sparse_dim()}, dense_dim "
                           f"{sparse.dense_dim()}")


def mm(mat1, mat2, reduce=None):
    """The product of two matrices, one of them (or both) sparse COO.

    sparse @ dense and dense @ sparse give a dense matrix, sparse @ sparse a coalesced sparse
    one. Gradients flow to the dense operand and to the sparse operands' values: a leaf gets a
    sparse gradient on its own pattern. With ``reduce`` ('sum', 'mean', 'amax', 'amin'),
    ``mat1`` must be CSR and each result row reduces its stored elements' products (see
    :func:`~ember.sparse._compressed.compressed_mm_reduce`).

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
        >>> ember.sparse.mm(s, ember.ones(2, 1))
        tensor([[2.],
                [3.]])
    """
    if reduce is not None:
        from ._compressed import compressed_mm_reduce

        if isinstance(mat1, SparseCOOTensor):
            raise NotImplementedError(_not_implemented("_sparse_mm_reduce_impl", mat1))
        return compressed_mm_reduce(mat1, mat2, reduce)
    if not isinstance(mat1, SparseCOOTensor):
        if isinstance(mat2, SparseCOOTensor) and is_strided(mat1):
            return dense_sparse_mm(mat1, mat2)
        return _dense_linalg().mm(mat1, mat2)
    _check_sparse_matrix(mat1, "mm")
    if isinstance(mat2, SparseCOOTensor):
        return sparse_sparse_mm(mat1, mat2)
    if not isinstance(mat2, Tensor):
        raise TypeError(f"mm(): argument 'mat2' must be Tensor, not {type(mat2).__name__}")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    rows, inner = mat1.shape
    if mat2.shape[0] != inner:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {inner}, got "
                           f"{mat2.shape[0]}")
    _check_same_dtype(mat1, mat2)
    row_index, column_index = mat1._idx[0], mat1._idx[1]
    contributions = mat1._vals.unsqueeze(1) * mat2.index_select(0, column_index)
    product = mat2.new_zeros((rows, mat2.shape[1]))
    return product.index_add(0, row_index, contributions)


def _check_same_dtype(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_cpp_name(a.dtype)} but found "
                           f"{_cpp_name(b.dtype)}")


def _shapes_text(a, b):
    return (f"({a.shape[0]}x{a.shape[1]} and "
            f"{'x'.join(str(s) for s in b.shape)})")


def dense_sparse_mm(dense, sparse):
    """A dense matrix times a sparse COO matrix, a dense matrix: ``(sparse.t() @ dense.t()).t()``.

    Example::

        >>> s = ember.sparse_coo_tensor([[0], [1]], [2.], (2, 2))
        >>> dense_sparse_mm(ember.ones(1, 2), s)
        tensor([[0., 2.]])
    """
    _check_sparse_matrix(sparse, "mm")
    if dense.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if dense.shape[1] != sparse.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"{_shapes_text(dense, sparse)}")
    return mm(sparse.t(), dense.t()).t()


def sparse_sparse_mm(a, b):
    """The product of two sparse COO matrices, a coalesced sparse matrix.

    Each element (i, k) of ``a`` meets the elements of row k of ``b``; their products are
    gathered as (i, j) elements and coalesced.

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
        >>> sparse_sparse_mm(s, s).to_dense()
        tensor([[6., 0.],
                [0., 6.]])
    """
    _check_sparse_matrix(b, "mm")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied {_shapes_text(a, b)}")
    _check_same_dtype(a, b)
    ember = _ember()
    b = b.coalesce()  # sorted by row: row k of b is one run of its elements
    b_rows = b._idx[0]
    run_starts = ember.searchsorted(b_rows, ember.arange(b.shape[0] + 1, device=b_rows.device))
    a_columns = a._idx[1]
    pairs_per_a = run_starts[a_columns + 1] - run_starts[a_columns]
    a_pick = ember.repeat_interleave(ember.arange(a._nnz(), device=a_columns.device),
                                     pairs_per_a)
    # The k-th pair of element e of ``a`` uses b's element run_starts[column(e)] + k.
    first_pair = pairs_per_a.cumsum(0) - pairs_per_a
    offset = ember.arange(a_pick.shape[0], device=a_pick.device) - first_pair[a_pick]
    b_pick = run_starts[a_columns[a_pick]] + offset
    indices = ember.stack([a._idx[0][a_pick], b._idx[1][b_pick]])
    values = a._vals[a_pick] * b._vals[b_pick]
    return SparseCOOTensor(indices, values, (a.shape[0], b.shape[1])).coalesce()


def _cpp_name(dtype):
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
             "int64": "Long", "int32": "Int", "complex64": "ComplexFloat",
             "complex128": "ComplexDouble"}
    return names.get(dtype.name, dtype.name)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` with ``mat1`` sparse; ``input`` broadcasts.

    Example::

        >>> s = ember.sparse_coo_tensor([[0], [0]], [2.], (1, 1))
        >>> ember.sparse.addmm(ember.ones(1, 1), s, ember.ones(1, 1), alpha=3)
        tensor([[7.]])
    """
    if not isinstance(mat1, SparseCOOTensor):
        return _dense_linalg().addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    product = mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # torch ignores input (even its NaNs) when beta is zero
        return product + input.new_zeros(()).expand(product.shape)
    return product + (input if beta == 1 else input * beta)


# ---------------------------------------------------------------- elementwise


def _check_same_size(a, b, op):
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"{op}: expected sizes of 'self' and 'other' to match, but "
                           f"{list(a.shape)} != {list(b.shape)}")


def add(a, b, *, alpha=1):
    """Sum of two sparse tensors of one size: the union of their patterns.

    Example::

        >>> a = ember.sparse_coo_tensor([[0]], [1.], (2,))
        >>> b = ember.sparse_coo_tensor([[1]], [2.], (2,))
        >>> (a + b).to_dense()
        tensor([1., 2.])
    """
    if is_strided(b):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if not isinstance(b, SparseCOOTensor):
        raise NotImplementedError(_not_implemented("add.Tensor", a))
    _check_same_size(a, b, "add")
    ember = _ember()
    other_values = b._vals if alpha == 1 else b._vals * alpha
    joined = SparseCOOTensor(ember.cat([a._idx, b._idx], 1),
                             ember.cat([a._vals, other_values]), a.shape)
    # Like torch: two coalesced operands give a coalesced sum; otherwise duplicates stay.
    return joined.coalesce() if a.is_coalesced() and b.is_coalesced() else joined


def mul(a, b):
    """Product with a scalar or a dense tensor of the same size (same pattern), or with a
    sparse tensor of one size (the intersection of the patterns, coalesced).

    Example::

        >>> a = ember.sparse_coo_tensor([[0, 1]], [2., 3.], (2,))
        >>> b = ember.sparse_coo_tensor([[1]], [4.], (2,))
        >>> (a * b).to_dense()
        tensor([ 0., 12.])
    """
    if _is_scalar(b):
        return SparseCOOTensor(a._idx, a._vals * b, a.shape, a.is_coalesced())
    if is_strided(b) and tuple(b.shape) == tuple(a.shape):
        # each stored element times the dense element at its place (a product distributes
        # over duplicates, so the pattern may stay uncoalesced)
        at_elements = b[tuple(a._idx)]
        return SparseCOOTensor(a._idx, a._vals * at_elements, a.shape, a.is_coalesced())
    if not isinstance(b, SparseCOOTensor):
        raise NotImplementedError(_not_implemented("mul.Tensor", a))
    if (a.shape[:a.sparse_dim()] != b.shape[:b.sparse_dim()] or a.dim() != b.dim()
            or a.sparse_dim() != b.sparse_dim()):
        raise RuntimeError("sparse_binary_op_intersection_cpu(): expects sparse inputs with "
                           "equal dimensionality, number of sparse dimensions, and shape of "
                           "sparse dimensions")
    a, b = a.coalesce(), b.coalesce()
    sparse_size = tuple(a.shape[:a.sparse_dim()])
    flat_a, flat_b = flat_index(a._idx, sparse_size), flat_index(b._idx, sparse_size)
    ember = _ember()
    if b._nnz() == 0:
        hits = ember.zeros_like(flat_a, dtype=dt.bool)
        where_in_b = ember.zeros_like(flat_a)
    else:
        where_in_b = ember.searchsorted(flat_b, flat_a).clamp(max=b._nnz() - 1)
        hits = flat_b[where_in_b] == flat_a
    values = a._vals[hits] * b._vals[where_in_b[hits]]
    return SparseCOOTensor(a._idx[:, hits], values, a.shape, is_coalesced=True)


def transpose(sparse, dim0, dim1):
    """Swap two sparse dims (the result is uncoalesced); like torch, dense dims cannot move.

    Example::

        >>> s = ember.sparse_coo_tensor([[0], [2]], [1.], (2, 3))
        >>> transpose(s, 0, 1).shape
        ember.Size([3, 2])
    """
    ndim, sparse_dim = sparse.dim(), sparse.sparse_dim()
    d0, d1 = _wrap_dim(dim0, ndim), _wrap_dim(dim1, ndim)
    size = list(sparse.shape)
    size[d0], size[d1] = size[d1], size[d0]
    if d0 < sparse_dim and d1 < sparse_dim:
        order = list(range(sparse_dim))
        order[d0], order[d1] = order[d1], order[d0]
        return SparseCOOTensor(sparse._idx[order], sparse._vals, size)
    raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got sparse_dim:"
                       f" {sparse_dim}, d0: {dim0}, d1: {dim1}")


def unsqueeze(sparse, dim):
    """A size-1 dim at ``dim``: a sparse dim (an index row of zeros) when it falls among or
    right after the sparse dims, else a dense dim of the values, as torch places it.

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.], (2, 3))
        >>> unsqueeze(s, 0).shape, unsqueeze(s, 0).sparse_dim()
        (ember.Size([1, 2, 3]), 3)
    """
    ember = _ember()
    sparse_dim = sparse.sparse_dim()
    dim = _wrap_dim(dim, sparse.dim() + 1)
    size = tuple(sparse.shape[:dim]) + (1,) + tuple(sparse.shape[dim:])
    if dim <= sparse_dim:
        zeros = ember.zeros((1, sparse._nnz()), dtype=dt.int64, device=sparse._idx.device)
        indices = ember.cat([sparse._idx[:dim], zeros, sparse._idx[dim:]])
        return SparseCOOTensor(indices, sparse._vals, size, sparse.is_coalesced())
    values = sparse._vals.unsqueeze(dim - sparse_dim + 1)
    return SparseCOOTensor(sparse._idx, values, size, sparse.is_coalesced())


def cat(tensors, dim=0):
    """Sparse COO tensors joined along ``dim`` (uncoalesced, as torch): along a sparse dim
    each one's indices shift by the sizes before it; along a dense dim each one's values are
    padded with zeros to the joined size.

    Example::

        >>> s = ember.sparse_coo_tensor([[0], [2]], [1.], (1, 3))
        >>> cat([s, s]).to_dense()
        tensor([[0., 0., 1.],
                [0., 0., 1.]])
    """
    tensors = list(tensors)
    _check_joinable(tensors, dim)
    ember = _ember()
    first = tensors[0]
    sparse_dim = first.sparse_dim()
    dim = _wrap_dim(dim, first.dim())
    sizes = [t.shape[dim] for t in tensors]
    joined = list(first.shape)
    joined[dim] = sum(sizes)
    indices, values, start = [], [], 0
    for t, length in zip(tensors, sizes):
        if dim < sparse_dim:
            shift = ember.zeros((sparse_dim, 1), dtype=dt.int64, device=t._idx.device)
            shift[dim] = start
            indices.append(t._idx + shift)
            values.append(t._vals)
        else:
            indices.append(t._idx)
            values.append(_padded(t._vals, dim - sparse_dim + 1, start, joined[dim]))
        start += length
    return SparseCOOTensor(ember.cat(indices, 1), ember.cat(values), tuple(joined))


def _padded(values, axis, start, total):
    """``values`` placed at ``start`` along ``axis`` in zeros of length ``total`` there."""
    ember = _ember()
    before = list(values.shape)
    after = list(values.shape)
    before[axis], after[axis] = start, total - start - values.shape[axis]
    return ember.cat([values.new_zeros(before), values, values.new_zeros(after)], axis)


def _check_joinable(tensors, dim):
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    first = tensors[0]
    for position, t in enumerate(tensors):
        if not isinstance(t, SparseCOOTensor):
            raise RuntimeError(f"Concatenating sparse tensors, but a dense tensor was found at "
                               f"position {position}.")
        same_rest = (t.dim() == first.dim() and t.sparse_dim() == first.sparse_dim() and all(
            a == b for d, (a, b) in enumerate(zip(t.shape, first.shape))
            if d != _wrap_dim(dim, first.dim())))
        if not same_rest:
            raise RuntimeError(f"All tensors must have the same shape: {list(first.shape)} "
                               f"(except in the concatenating dimension), but found shape: "
                               f"{list(t.shape)} at position {position}.")


def stack(tensors, dim=0):
    """Sparse COO tensors stacked along a new dim ``dim`` (``cat`` of each unsqueezed).

    Example::

        >>> s = ember.sparse_coo_tensor([[1]], [2.], (2,))
        >>> stack([s, s], 1).to_dense()
        tensor([[0., 0.],
                [2., 2.]])
    """
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    dim = _wrap_dim(dim, tensors[0].dim() + 1)
    return cat([unsqueeze(t, dim) if isinstance(t, SparseCOOTensor) else t for t in tensors],
               dim)


# ---------------------------------------------------------------- reductions


def sparse_sum(sparse, dim=None, dtype=None):
    """Sum over all elements (a dense 0-dim tensor) or over ``dim`` (sparse while sparse dims
    remain, dense once they are all summed).

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
        >>> ember.sparse.sum(s), ember.sparse.sum(s, 1).to_dense()
        (tensor(12.), tensor([3., 9.]))
    """
    values = sparse._vals if dtype is None else sparse._vals.to(dtype)
    if dim is None:
        return values.sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    ndim, sparse_dim = sparse.dim(), sparse.sparse_dim()
    dims = sorted({_wrap_dim(d, ndim) for d in dims})
    dense_dims = [d - sparse_dim + 1 for d in dims if d >= sparse_dim]
    if dense_dims:
        values = values.sum(dense_dims)
    kept = [d for d in range(sparse_dim) if d not in dims]
    if not kept:
        return values.sum(0)
    size = [s for d, s in enumerate(sparse.shape) if d not in dims]
    summed = SparseCOOTensor(sparse._idx[kept], values, size)
    return summed.coalesce()


def _softmax_parts(sparse, dim):
    """The values shifted by their group's maximum, each element's group, the group count.

    A group is the elements that share every sparse index but ``dim``'s: one softmax each.
    """
    if not isinstance(sparse, SparseCOOTensor):
        raise TypeError(f"expected a sparse COO tensor, got {type(sparse).__name__}")
    dim = _wrap_dim(dim, sparse.dim())
    if dim >= sparse.sparse_dim():
        raise NotImplementedError("ember.sparse.softmax over a dense dim is not supported")
    sparse = sparse.coalesce()
    group_size = list(sparse.shape[:sparse.sparse_dim()])
    group_size[dim] = 1
    group_indices = sparse._idx.clone()
    group_indices[dim] = 0
    distinct, group = _ember().unique(flat_index(group_indices, group_size), sorted=True,
                                      return_inverse=True)
    groups = distinct.shape[0]
    values = sparse._vals
    expanded_group = group.reshape((-1,) + (1,) * (values.dim() - 1)).expand(values.shape)
    group_max = values.new_zeros((groups,) + tuple(values.shape[1:])).scatter_reduce(
        0, expanded_group, values.detach(), "amax", include_self=False)
    # Softmax does not change when a group's values shift together, so the shift is constant.
    shifted = values - group_max[group]
    return sparse, shifted, group, groups


def _group_sums(values, group, groups):
    return values.new_zeros((groups,) + tuple(values.shape[1:])).index_add(0, group, values)


def softmax(input, dim, *, dtype=None):
    """Softmax over ``dim`` among the specified elements (unspecified ones count as -inf, so
    the pattern is kept).

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 0]], [1., 1.], (3,))
        >>> ember.sparse.softmax(s, 0).to_dense()
        tensor([1., 0., 0.])
    """
    if dtype is not None:
        input = input.to(dtype)
    sparse, shifted, group, groups = _softmax_parts(input, dim)
    exps = shifted.exp()
    values = exps / _group_sums(exps, group, groups)[group]
    return SparseCOOTensor(sparse._idx, values, sparse.shape, is_coalesced=True)


def log_softmax(input, dim, *, dtype=None):
    """The logarithm of :func:`softmax`, computed stably.

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1]], [0., 0.], (2,))
        >>> ember.sparse.log_softmax(s, 0).to_dense()
        tensor([-0.6931, -0.6931])
    """
    if dtype is not None:
        input = input.to(dtype)
    sparse, shifted, group, groups = _softmax_parts(input, dim)
    log_sums = _group_sums(shifted.exp(), group, groups).log()
    values = shifted - log_sums[group]
    return SparseCOOTensor(sparse._idx, values, sparse.shape, is_coalesced=True)


# ---------------------------------------------------------------- dense with sparse


def dense_add_sparse(dense, sparse, alpha=1):
    """``dense + alpha * sparse``, a dense tensor (the sparse operand broadcasts into it).

    Example::

        >>> s = ember.sparse_coo_tensor([[1]], [5.], (2,))
        >>> dense_add_sparse(ember.ones(2), s)
        tensor([1., 6.])
    """
    scaled = sparse.to_dense()
    return dense + (scaled if alpha == 1 else scaled * alpha)


def sparse_mask(dense, mask):
    """``dense.sparse_mask(mask)``: the dense tensor's elements at ``mask``'s specified
    positions, with ``mask``'s indices (as stored) and coalesced flag.

    Example::

        >>> mask = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1., 1.], (2, 2))
        >>> sparse_mask(ember.tensor([[1., 2.], [3., 4.]]), mask)._values()
        tensor([2., 3.])
    """
    if not isinstance(mask, SparseCOOTensor):
        raise no_kernel_for_layout("sparse_mask")
    if tuple(dense.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(dense.shape)} but mask has size {list(mask.shape)}")
    values = dense[tuple(mask._idx.unbind(0))]
    return SparseCOOTensor(mask._idx, values, mask.shape, mask.is_coalesced())


# ---------------------------------------------------------------- indexing


def index_select(sparse, dim, index):
    """The slices of ``sparse`` at ``index`` along a sparse ``dim``, in ``index``'s order
    (repeats allowed): for each entry of ``index``, the matching elements in stored order.

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
        >>> index_select(s, 0, ember.tensor([1, 1])).to_dense()
        tensor([[3., 0.],
                [3., 0.]])
    """
    ndim, sparse_dim = sparse.dim(), sparse.sparse_dim()
    dim = _wrap_dim(dim, ndim)
    if not isinstance(index, Tensor) or index.dim() > 1 or index.dtype not in (dt.int64,
                                                                               dt.int32):
        raise IndexError("index_select(): Expected dtype int32 or int64 for index")
    index = index.reshape(-1).to(dt.int64)
    length = sparse.shape[dim]
    if index.numel() and (int(index.amin()) < -length or int(index.amax()) >= length):
        raise IndexError(f"index_select(): index out of range for tensor of size "
                         f"{list(sparse.shape)} at dimension {dim}")
    index = index % max(length, 1)
    size = list(sparse.shape)
    size[dim] = index.shape[0]
    if dim >= sparse_dim:
        values = sparse._vals.index_select(dim - sparse_dim + 1, index)
        return SparseCOOTensor(sparse._idx, values, size, sparse.is_coalesced())
    # matches[p, e]: element e lies in the slice index[p]; nonzero() walks p, then e
    matches = index.unsqueeze(1) == sparse._idx[dim].unsqueeze(0)
    position, element = matches.nonzero().unbind(1)
    indices = sparse._idx[:, element].clone()
    indices[dim] = position
    # torch flags a result of at most one element coalesced
    return SparseCOOTensor(indices, sparse._vals[element], size, element.shape[0] <= 1)


def select(sparse, dim, index):
    """One slice along ``dim``: sparse while sparse dims remain, else the dense value slice.

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
        >>> select(s, 0, 1).to_dense()
        tensor([3., 0.])
    """
    ndim, sparse_dim = sparse.dim(), sparse.sparse_dim()
    dim = _wrap_dim(dim, ndim)
    length = sparse.shape[dim]
    if not -length <= index < length:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(sparse.shape)} at dimension {dim}")
    index %= length
    size = [s for d, s in enumerate(sparse.shape) if d != dim]
    if dim >= sparse_dim:
        values = sparse._vals.select(dim - sparse_dim + 1, index)
        return SparseCOOTensor(sparse._idx, values, size, sparse.is_coalesced())
    hits = sparse._idx[dim] == index
    kept_rows = [d for d in range(sparse_dim) if d != dim]
    values = sparse._vals[hits]
    if not kept_rows:  # the only sparse dim: the (summed) dense slice
        return values.sum(0)
    return SparseCOOTensor(sparse._idx[kept_rows][:, hits], values, size,
                           sparse.is_coalesced() or values.shape[0] <= 1)
