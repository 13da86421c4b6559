"""Sparse compressed matrices, as torch's ``layout=torch.sparse_csr`` and ``torch.sparse_csc``.

A CSR matrix keeps, for each row, the slice of ``col_indices``/``values`` that holds the row's
specified elements: row ``i`` is ``crow_indices[i]:crow_indices[i + 1]``. CSC is the same with
rows and columns exchanged (``ccol_indices``, ``row_indices``). ember supports 2-D compressed
matrices with scalar values (no batch dims, no dense dims, no blocks).

Every operation goes through the equivalent COO tensor, which shares the ``values`` tensor, so
gradients reach the values given to :func:`sparse_csr_tensor`.
"""

from __future__ import annotations

from .. import _dtype as dt
from .._tensor import Size, Tensor, as_tensor, sparse_csc, sparse_csr
from ._base import SparseTensorBase, not_implemented
from ._coo import SparseCOOTensor, _inner_repr, _repr_suffixes

# What each layout calls its compressed and its plain indices, and its name in torch's errors.
_NAMES = {sparse_csr: ("crow_indices", "col_indices", "SparseCsr", "row"),
          sparse_csc: ("ccol_indices", "row_indices", "SparseCsc", "column")}


class SparseCompressedTensor(SparseTensorBase):
    """A 2-D sparse matrix in CSR or CSC form.

    Build one with :func:`ember.sparse_csr_tensor`, :func:`ember.sparse_csc_tensor`,
    ``Tensor.to_sparse_csr()`` or ``Tensor.to_sparse_csc()``.

    Example::

        >>> m = ember.tensor([[0., 2.], [3., 4.]]).to_sparse_csr()
        >>> m.crow_indices(), m.col_indices(), m.values()
        (tensor([0, 1, 3]), tensor([1, 0, 1]), tensor([2., 3., 4.]))
    """

    __slots__ = ("_compressed", "_plain", "_vals", "_size", "_layout", "_owns_values",
                 "_grad_fn_name")

    def __init__(self, compressed, plain, values, size, layout, owns_values=False,
                 grad_fn_name=None):
        self._compressed = compressed
        self._plain = plain
        self._vals = values
        self._size = Size(size)
        self._layout = layout
        self._owns_values = owns_values
        self._grad_fn_name = grad_fn_name

    # ------------------------------------------------------------ metadata

    @property
    def layout(self):
        return self._layout

    @property
    def is_sparse(self):  # torch's is_sparse means the COO layout only
        return False

    @property
    def is_sparse_csr(self):
        return self._layout is sparse_csr

    def _nnz(self):
        """The number of specified elements.

        Example::

            >>> ember.eye(3).to_sparse_csr()._nnz()
            3
        """
        return self._vals.shape[0]

    def sparse_dim(self):
        return 2

    def dense_dim(self):
        return 0

    def _indices_of(self, layout, which):
        if self._layout is not layout:
            wanted = "row" if layout is sparse_csr else "column"
            raise RuntimeError(f"{_NAMES[layout][which]} expected sparse {wanted} compressed "
                               f"tensor layout but got {_NAMES[self._layout][2]}")
        return self._compressed if which == 0 else self._plain

    def crow_indices(self):
        """Where each row's elements start (and, last, the nnz) in a CSR matrix.

        Example::

            >>> ember.eye(2).to_sparse_csr().crow_indices()
            tensor([0, 1, 2])
        """
        return self._indices_of(sparse_csr, 0)

    def col_indices(self):
        """The column of each element of a CSR matrix.

        Example::

            >>> ember.eye(2).to_sparse_csr().col_indices()
            tensor([0, 1])
        """
        return self._indices_of(sparse_csr, 1)

    def ccol_indices(self):
        """Where each column's elements start (and, last, the nnz) in a CSC matrix.

        Example::

            >>> ember.eye(2).to_sparse_csc().ccol_indices()
            tensor([0, 1, 2])
        """
        return self._indices_of(sparse_csc, 0)

    def row_indices(self):
        """The row of each element of a CSC matrix.

        Example::

            >>> ember.eye(2).to_sparse_csc().row_indices()
            tensor([0, 1])
        """
        return self._indices_of(sparse_csc, 1)

    def values(self):
        """The specified elements, in row order (CSR) or column order (CSC).

        Example::

            >>> ember.tensor([[0., 5.]]).to_sparse_csr().values()
            tensor([5.])
        """
        return self._vals

    def indices(self):
        raise RuntimeError(f"indices expected sparse coordinate tensor layout but got "
                           f"{_NAMES[self._layout][2]}")

    # ------------------------------------------------------------ autograd

    def detach(self):
        """The same indices and values, cut from the autograd graph."""
        return SparseCompressedTensor(self._compressed, self._plain, self._vals.detach(),
                                      self._size, self._layout)

    def requires_grad_(self, requires_grad=True):
        raise self._unsupported()  # ember gives a compressed leaf no .grad (see docs/sparse.md)

    @property
    def grad(self):
        raise self._unsupported()

    # torch gives a compressed leaf a strided gradient (non-zero off the pattern too), which
    # its values' gradient cannot give: ember refuses these, naming the operation

    def _autograd_stand_in(self):
        raise NotImplementedError(
            f"autograd.grad (or backward(inputs=...)) with respect to a sparse "
            f"{self._kind_name()} tensor is not supported by ember: differentiate with "
            f"respect to its values() or use a COO tensor (to_sparse())")

    def register_hook(self, hook):
        raise NotImplementedError(
            f"register_hook on a sparse {self._kind_name()} tensor is not supported by ember: "
            f"register it on its values() or use a COO tensor (to_sparse())")

    def _as_parameter(self, requires_grad):
        if requires_grad:
            raise NotImplementedError(
                f"nn.Parameter of a sparse {self._kind_name()} tensor that requires grad is "
                f"not supported by ember (a compressed leaf gets no gradient): use a COO "
                f"tensor (to_sparse()) or requires_grad=False")
        return super()._as_parameter(requires_grad)

    # ------------------------------------------------------------ refusals and copies

    _impl_name = "SparseCsrTensorImpl"  # torch's class for both layouts, in its errors
    # element-wise functions keeping zero that torch has no sparse compressed kernel for
    _no_values_kernel = frozenset({"hardshrink", "nan_to_num"})

    def _values_to_map(self):
        return self._vals

    def _take(self, other):
        """Hold ``other``'s indices and values from now on (what an in-place op leaves)."""
        self._compressed, self._plain, self._vals = other._compressed, other._plain, other._vals
        self._layout, self._owns_values = other._layout, other._owns_values

    def _with_values(self, values):
        """This matrix's pattern holding ``values``."""
        return SparseCompressedTensor(self._compressed, self._plain, values, self._size,
                                      self._layout)

    @property
    def nbytes(self):
        return self.numel() * self.element_size()  # the dense equivalent's, as torch counts

    def _empty_of(self, size, dtype, device):
        from .. import zeros

        if len(size) != 2:
            raise RuntimeError(f"torch.empty: Only batched sparse compressed (non-block) "
                               f"tensors are supported, but got size {list(size)}")
        lines = size[0] if self._layout is sparse_csr else size[1]
        return SparseCompressedTensor(zeros(lines + 1, dtype=dt.int64, device=device),
                                      zeros(0, dtype=dt.int64, device=device),
                                      zeros(0, dtype=dtype, device=device), size, self._layout)

    def _unsupported(self):
        return RuntimeError(f"unsupported tensor layout: {_NAMES[self._layout][2]}")

    def numpy(self, *, force=False):
        raise TypeError(f"can't convert {_NAMES[self._layout][2]} layout tensor to numpy. Use "
                        f"Tensor.to_dense() first.")

    def _refusal(self, op_name, op=None):
        """torch's error for a dense operator ``op_name`` given this matrix: an element-wise
        operator finds no kernel for the layout (RuntimeError), any other no kernel for the
        backend (NotImplementedError)."""
        if op is None:  # an in-place form: the op registered under its name
            from ..ops._registry import registry

            op = (registry.get(op_name.rstrip("_")) or [None])[0]
        if op is not None and op.pointwise:
            return self._unsupported()
        device = "CUDA" if self._vals.is_cuda else "CPU"
        return not_implemented(op_name, _NAMES[self._layout][2] + device)

    def _rebuild_args(self):
        """What ``pickle`` and ``ember.save`` store, as torch: both index tensors, detached
        values, size."""
        return self._compressed, self._plain, self._vals.detach(), Size(self._size)

    def _copy_for_deepcopy(self):
        raise NotImplementedError(f"Cannot access storage of {self._impl_name}")

    # ------------------------------------------------------------ conversions

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """The COO tensor (coalesced) with the same elements, or another compressed layout.

        Example::

            >>> ember.eye(2).to_sparse_csr().to_sparse()._indices()
            tensor([[0, 1],
                    [0, 1]])
        """
        if layout in (sparse_csr, sparse_csc):
            return self if layout is self._layout else _transposed_layout(self)
        row, column = self._coordinates()
        # torch keeps the storage order: CSR's is row-major (coalesced), CSC's is not
        return SparseCOOTensor(self._stack(row, column), self._vals, self._size,
                               is_coalesced=self._layout is sparse_csr)

    to_sparse_coo = to_sparse

    def to_sparse_csr(self, dense_dim=None):
        """This matrix in CSR form.

        Example::

            >>> ember.eye(2).to_sparse_csc().to_sparse_csr().layout
            ember.sparse_csr
        """
        return self.to_sparse(layout=sparse_csr)

    def to_sparse_csc(self, dense_dim=None):
        """This matrix in CSC form.

        Example::

            >>> ember.eye(2).to_sparse_csr().to_sparse_csc().layout
            ember.sparse_csc
        """
        return self.to_sparse(layout=sparse_csc)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense matrix (unspecified elements are zero).

        Example::

            >>> ember.sparse_csr_tensor([0, 1, 1], [1], [5.], (2, 2)).to_dense()
            tensor([[0., 5.],
                    [0., 0.]])
        """
        return self.to_sparse().to_dense(dtype)

    def _coordinates(self):
        """The (row, column) of each stored element, in storage order."""
        from .. import arange, repeat_interleave

        lines = self._size[0] if self._layout is sparse_csr else self._size[1]
        line_of_each = repeat_interleave(arange(lines, device=self._plain.device),
                                         self._compressed.diff())
        if self._layout is sparse_csr:
            return line_of_each, self._plain
        return self._plain, line_of_each

    @staticmethod
    def _stack(row, column):
        from .. import stack

        return stack([row, column])

    def to(self, *args, **kwargs):
        """Move or cast the values (and indices), as ``Tensor.to``.

        Example::

            >>> ember.eye(2).to_sparse_csr().to(ember.float64).dtype
            ember.float64
        """
        values = self._vals.to(*args, **kwargs)
        return SparseCompressedTensor(self._compressed.to(values.device),
                                      self._plain.to(values.device), values, self._size,
                                      self._layout)

    def mul(self, other):
        """Each stored element times a scalar (the pattern is kept).

        Example::

            >>> (ember.eye(2).to_sparse_csr() * 3).values()
            tensor([3., 3.])
        """
        from ._coo import _is_scalar

        if not _is_scalar(other):
            raise self._unsupported()
        return self._with_values(self._vals * other)

    __mul__ = __rmul__ = mul

    def t(self):
        """The transpose: the same arrays read the other way, CSR as CSC and back.

        Example::

            >>> ember.tensor([[0., 2.]]).to_sparse_csr().t().layout
            ember.sparse_csc
        """
        other = sparse_csc if self._layout is sparse_csr else sparse_csr
        return SparseCompressedTensor(self._compressed, self._plain, self._vals,
                                      (self._size[1], self._size[0]), other)

    def transpose(self, dim0, dim1):
        """Swap the two dims (:meth:`t`); a dim with itself gives the matrix unchanged."""
        from ._base import wrap_dim

        return self if wrap_dim(dim0, 2) == wrap_dim(dim1, 2) else self.t()

    # ------------------------------------------------------------ products

    def mm(self, mat2):
        """This sparse matrix times a dense matrix: a dense matrix.

        Example::

            >>> ember.eye(2).to_sparse_csr().mm(ember.ones(2, 1))
            tensor([[1.],
                    [1.]])
        """
        return compressed_mm(self, mat2)

    matmul = mm
    __matmul__ = mm

    def __rmatmul__(self, other):
        from ._ops import mm

        return mm(other, self.to_sparse())

    # ------------------------------------------------------------ printing

    def __repr__(self):
        compressed_name, plain_name = _NAMES[self._layout][:2]
        lines = [f"tensor({compressed_name}="
                 + _inner_repr(self._compressed, 8 + len(compressed_name)) + ",",
                 f"       {plain_name}=" + _inner_repr(self._plain, 8 + len(plain_name)) + ",",
                 "       values=" + _inner_repr(self._vals, 14)]
        details = [f"size={tuple(self._size)}", f"nnz={self._nnz()}"]
        default = dt.get_default_dtype()
        if self.dtype not in (default, default.to_complex(), dt.int64, dt.bool):
            details.append(f"dtype={self.dtype!r}")
        if self._vals.device.type != "cpu":
            details.append(f"device='{self._vals.device}'")
        details.append(f"layout={self._layout!r}")
        if self.grad_fn is not None:
            details.append(f"grad_fn=<{self._grad_fn_name or 'SparseCompressedTensorBackward0'}>")
        elif self.requires_grad:
            details.append("requires_grad=True")
        return _repr_suffixes("\n".join(lines), details, force_newline=False)

    __str__ = __repr__


def _transposed_layout(matrix):
    """A CSR matrix as CSC or the reverse: sort the elements by the other index."""
    coo = matrix.to_sparse().coalesce()
    target = sparse_csc if matrix.layout is sparse_csr else sparse_csr
    return _compress(coo, target, grad_fn_name=None)


def _compress(coo, layout, grad_fn_name):
    """A coalesced 2-D COO tensor's elements in compressed form."""
    from .. import arange, searchsorted

    if layout is sparse_csc:
        coo = coo.transpose(0, 1).coalesce()  # column-major order: sort by (column, row)
    lines, plain = coo._idx[0], coo._idx[1]
    count = coo.shape[0]
    starts = searchsorted(lines, arange(count + 1, device=lines.device))
    size = coo.shape if layout is sparse_csr else (coo.shape[1], coo.shape[0])
    return SparseCompressedTensor(starts, plain.contiguous(), coo._vals, size, layout,
                                  grad_fn_name=grad_fn_name)


def dense_to_compressed(tensor, layout):
    """``Tensor.to_sparse_csr()`` / ``to_sparse_csc()`` of a dense matrix.

    Example::

        >>> dense_to_compressed(ember.eye(2), ember.sparse_csc).row_indices()
        tensor([0, 1])
    """
    if tensor.dim() != 2:
        raise RuntimeError(f"to_sparse: ember supports 2-D compressed tensors only, got a "
                           f"{tensor.dim()}-D tensor")
    from ._ops import dense_to_sparse

    name = "ToSparseCsrBackward0" if layout is sparse_csr else "ToSparseCscBackward0"
    return _compress(dense_to_sparse(tensor), layout, grad_fn_name=name)


def compressed_mm(matrix, dense):
    """A compressed matrix times a dense matrix, through the COO product (which shares the
    values, so gradients reach them).

    Example::

        >>> compressed_mm(ember.eye(2).to_sparse_csc(), ember.ones(2, 1))
        tensor([[1.],
                [1.]])
    """
    from ._ops import mm

    if not isinstance(dense, Tensor):
        raise TypeError(f"mm(): argument 'mat2' must be Tensor, not {type(dense).__name__}")
    if dense.dim() != 2 or dense.shape[0] != matrix.shape[1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({matrix.shape[0]}x{matrix.shape[1]} and "
                           f"{'x'.join(str(s) for s in dense.shape)})")
    return mm(matrix.to_sparse(), dense)


def _compressed_tensor(layout, compressed, plain, values, size, dtype, device, requires_grad):
    values = as_tensor(values, dtype=dtype, device=device)
    compressed = as_tensor(compressed, device=values.device)
    plain = as_tensor(plain, device=values.device)
    compressed_name, plain_name = _NAMES[layout][:2]
    for name, index in ((compressed_name, compressed), (plain_name, plain)):
        if index.dtype not in (dt.int32, dt.int64):
            raise RuntimeError(f"{compressed_name} and {plain_name} must have the same dtype, "
                               f"int32 or int64, but got {index.dtype}")
        if index.dim() != 1:
            raise RuntimeError(f"ember supports 2-D compressed tensors only: {name} must be "
                               f"1-D, got {index.dim()}-D")
    if values.dim() != 1:
        raise RuntimeError(f"ember supports compressed tensors with scalar values only: "
                           f"values must be 1-D, got {values.dim()}-D")
    compressed, plain = compressed.to(dt.int64), plain.to(dt.int64)
    size = _compressed_size(layout, compressed, plain, size)
    _check_invariants(layout, compressed, plain, values, size)
    owns = bool(requires_grad)
    if owns:
        values = values.detach().requires_grad_()
    elif values.requires_grad:
        values = values.view_as(values)  # a node of its own: the sparse tensor is no leaf
    return SparseCompressedTensor(compressed, plain, values, size, layout, owns_values=owns)


def _compressed_size(layout, compressed, plain, size):
    if size is not None:
        size = tuple(int(s) for s in size)
        if len(size) != 2:
            raise RuntimeError(f"ember supports 2-D compressed tensors only, got size {size}")
        return size
    lines = compressed.shape[0] - 1
    others = int(plain.amax()) + 1 if plain.shape[0] else 0
    return (lines, others) if layout is sparse_csr else (others, lines)


def _check_invariants(layout, compressed, plain, values, size):
    """torch's compressed-index invariants (torch checks them only when asked; ember always)."""
    c, p = ("crow", "col") if layout is sparse_csr else ("ccol", "row")
    lines, others = size if layout is sparse_csr else (size[1], size[0])
    dim_name = "rows" if layout is sparse_csr else "columns"
    nnz = values.shape[0]
    if plain.shape[0] != nnz:
        raise RuntimeError(f"{p}_indices.shape[-1] must be equal to nnz (={nnz}) as defined "
                           f"by values.shape[0], but got {plain.shape[0]}")
    if compressed.shape[0] != lines + 1:
        raise RuntimeError(f"{c}_indices.shape[-1] must be equal to the number of {dim_name} "
                           f"+ 1 (={lines + 1}), but got {compressed.shape[0]}")
    starts = compressed.tolist()
    if starts[0] != 0:
        raise RuntimeError(f"`{c}_indices[..., 0] == 0` is not satisfied.")
    if starts[-1] != nnz:
        raise RuntimeError(f"`{c}_indices[..., -1] == nnz` is not satisfied.")
    if any(b < a for a, b in zip(starts, starts[1:])):
        raise RuntimeError(f"`0 <= {c}_indices[..., 1:] - {c}_indices[..., :-1] <= "
                           f"n{p}s` is not satisfied.")
    positions = plain.tolist()
    if any(not 0 <= q < others for q in positions):
        raise RuntimeError(f"`0 <= {p}_indices < n{p}s` is not satisfied.")
    for a, b in zip(starts, starts[1:]):
        line = positions[a:b]
        if any(y <= x for x, y in zip(line, line[1:])):
            raise RuntimeError(f"`{p}_indices[..., {c}_indices[..., i - 1]:{c}_indices[..., i]]"
                               f" for all i = 1, ..., n{dim_name} are sorted and distinct along"
                               f" the last dimension values` is not satisfied.")


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None):
    """A 2-D CSR matrix: row ``i``'s elements are ``col_indices[crow_indices[i]:
    crow_indices[i + 1]]`` with their ``values``. Without ``size``, the columns run to the
    largest column index. torch's invariants are always checked.

    Example::

        >>> ember.sparse_csr_tensor([0, 1, 2], [1, 0], [5., 6.]).to_dense()
        tensor([[0., 5.],
                [6., 0.]])
    """
    return _compressed_tensor(sparse_csr, crow_indices, col_indices, values, size, dtype,
                              device, requires_grad)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None):
    """A 2-D CSC matrix: column ``j``'s elements are ``row_indices[ccol_indices[j]:
    ccol_indices[j + 1]]`` with their ``values``. torch's invariants are always checked.

    Example::

        >>> ember.sparse_csc_tensor([0, 1, 2], [1, 0], [5., 6.]).to_dense()
        tensor([[0., 6.],
                [5., 0.]])
    """
    return _compressed_tensor(sparse_csc, ccol_indices, row_indices, values, size, dtype,
                              device, requires_grad)


_MM_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "amax", "max": "amax", "amin": "amin",
                  "min": "amin"}


def _layout_name(matrix):
    if isinstance(matrix, SparseCompressedTensor):
        return "SparseCsr" if matrix.layout is sparse_csr else "SparseCsc"
    return "Sparse" if isinstance(matrix, SparseCOOTensor) else "Strided"


def compressed_mm_reduce(matrix, dense, reduce):
    """``torch.sparse.mm(csr, dense, reduce)``: row ``i`` of the result reduces, over the
    stored elements ``(i, j)`` of the CSR matrix, the rows ``value * dense[j]`` with
    ``reduce`` ('sum', 'mean', 'amax'/'max' or 'amin'/'min'); a row with no stored element
    gives zeros. Gradients reach the matrix's values and ``dense``.

    Example::

        >>> m = ember.tensor([[2., 1.], [0., 3.]]).to_sparse_csr()
        >>> compressed_mm_reduce(m, ember.tensor([[1., -1.], [5., 2.]]), "amax")
        tensor([[ 5.,  2.],
                [15.,  6.]])
    """
    kind = _MM_REDUCTIONS.get(reduce)
    if kind is None:
        if reduce == "prod":
            raise RuntimeError("sparse_mm_reduce: reduce type of prod has not been enabled.")
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if not isinstance(matrix, SparseCompressedTensor) or matrix.layout is not sparse_csr:
        raise RuntimeError(f"sparse_mm_reduce: expect self to be SparseCsr, got "
                           f"{_layout_name(matrix)}")
    if not isinstance(dense, Tensor):
        raise TypeError(f"mm(): argument 'mat2' must be Tensor, not {type(dense).__name__}")
    if dense.dim() != 2 or dense.shape[0] != matrix.shape[1]:
        raise RuntimeError(f"Expected a tensor of dimension 2 and tensor.size[0] == "
                           f"{matrix.shape[1]} but got: dimension {dense.dim()} and "
                           f"tensor.size[0] = {dense.shape[0] if dense.dim() else 1}")
    if dense.dtype is not matrix.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'other' to have scalar type "
                           f"{_cpp_scalar(matrix.dtype)}; but got {_cpp_tensor(dense.dtype)} "
                           f"instead (while checking arguments for sparse_mm_reduce)")
    rows, columns = matrix._coordinates()
    terms = matrix._vals.unsqueeze(1) * dense.index_select(0, columns)
    result = dense.new_zeros((matrix.shape[0], dense.shape[1]))
    if kind in ("amax", "amin"):
        return result.scatter_reduce(0, rows.unsqueeze(1).expand_as(terms), terms, kind,
                                     include_self=False)
    result = result.index_add(0, rows, terms)
    if kind == "mean":
        counts = matrix._compressed.diff().clamp(min=1).to(result.dtype).unsqueeze(1)
        result = result / counts
    return result


def _cpp_scalar(dtype):
    from ._ops import _cpp_name

    return _cpp_name(dtype)


def _cpp_tensor(dtype):
    return f"ember.{_cpp_scalar(dtype)}Tensor"


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` computed only at the stored elements of the
    CSR matrix ``input``: a CSR matrix with ``input``'s pattern (torch.sparse.sampled_addmm).
    Gradients reach ``input``'s values, ``mat1`` and ``mat2``.

    Example::

        >>> s = ember.eye(2).to_sparse_csr()
        >>> ember.sparse.sampled_addmm(s, ember.ones(2, 3), ember.ones(3, 2)).to_dense()
        tensor([[4., 0.],
                [0., 4.]])
    """
    if not isinstance(input, SparseCompressedTensor) or input.layout is not sparse_csr:
        layout_name = _layout_name(input)
        backend = ("" if layout_name == "Strided" else layout_name) + "CPU"
        raise NotImplementedError(
            f"Could not run 'aten::sparse_sampled_addmm' with arguments from the '{backend}' "
            "backend. This could be because the operator doesn't exist for this backend, or "
            "was omitted during the selective/custom build process (if using custom build).")
    if out is not None:
        raise NotImplementedError("sampled_addmm(out=...) is not supported by ember")
    _check_sampled_addmm(input, mat1, mat2)
    rows, columns = input._coordinates()
    products = (mat1.index_select(0, rows) * mat2.t().index_select(0, columns)).sum(-1)
    values = input._vals * beta + products * alpha
    return SparseCompressedTensor(input._compressed, input._plain, values, input.shape,
                                  sparse_csr)


def _check_sampled_addmm(input, mat1, mat2):
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if not isinstance(m, Tensor):
            raise TypeError(f"sampled_addmm(): argument '{name}' must be Tensor, not "
                            f"{type(m).__name__}")
        if m.dim() != 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a matrix, got "
                               f"{m.dim()}-D tensor")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, but "
                           f"got {_cpp_scalar(mat1.dtype)} and {_cpp_scalar(mat2.dtype)}")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
                           f"({mat1.shape[0]}x{mat1.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    if input.shape[0] != mat1.shape[0]:
        raise RuntimeError("sampled_addmm: self.shape[-2] must match mat1.shape[-2]")
    if input.shape[1] != mat2.shape[1]:
        raise RuntimeError("sampled_addmm: self.shape[-1] must match mat2.shape[-1]")
    if input.dtype is not mat1.dtype:
        raise RuntimeError(f"sampled_addmm: Expected self and mat1 to have the same dtype, but "
                           f"got {_cpp_scalar(input.dtype)} and {_cpp_scalar(mat1.dtype)}")
