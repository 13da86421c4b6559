"""The sparse COO tensor: an ``indices`` tensor (sparse_dim x nnz, int64) that names the
specified elements, and a ``values`` tensor (nnz x dense dims) that holds them.

It is a ``Tensor`` subclass, as torch's sparse tensors are ``torch.Tensor`` instances, but it has
no strided memory: a dense operator that reaches for ``_data`` is refused with torch's
"Could not run 'aten::...' with arguments from the 'SparseCPU' backend" error (see
``_base.py``). Everything it computes is built from ember operators on its ``values`` tensor,
so autograd and CuPy come for free.
"""

from __future__ import annotations

import numbers

from .. import _dtype as dt
from .._printing import PRINT_OPTS, _body
from .._tensor import Size, Tensor, as_tensor, sparse_coo
from ._base import _NOT_IMPLEMENTED, SparseTensorBase, wrap_dim


class SparseCOOTensor(SparseTensorBase):
    """A sparse tensor in coordinate (COO) format, as torch's ``layout=torch.sparse_coo``.

    Build one with :func:`ember.sparse_coo_tensor` or ``Tensor.to_sparse()``.

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.], (2, 3))
        >>> s.to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 0.]])
    """

    __slots__ = ("_idx", "_vals", "_size", "_coalesced", "_owns_values")

    def __init__(self, indices, values, size, is_coalesced=False, owns_values=False):
        self._idx = indices
        self._vals = values
        self._size = Size(size)
        self._coalesced = bool(is_coalesced)
        # True when ``_vals`` is this tensor's own autograd leaf (requires_grad=True at
        # construction): then ``.grad`` is read from ``_vals.grad``.
        self._owns_values = owns_values

    # ------------------------------------------------------------ metadata

    @property
    def layout(self):
        return sparse_coo

    @property
    def is_sparse(self):
        return True

    def sparse_dim(self):
        """How many leading dims are sparse (the rows of ``indices``).

        Example::

            >>> ember.sparse_coo_tensor([[0]], [[1., 2.]], (2, 2)).sparse_dim()
            1
        """
        return self._idx.shape[0]

    def dense_dim(self):
        """How many trailing dims each value has.

        Example::

            >>> ember.sparse_coo_tensor([[0]], [[1., 2.]], (2, 2)).dense_dim()
            1
        """
        return self._vals.dim() - 1

    def _nnz(self):
        """The number of specified elements (duplicates counted until coalesced).

        Example::

            >>> ember.sparse_coo_tensor([[0, 0]], [1., 2.], (2,))._nnz()
            2
        """
        return self._idx.shape[1]

    def is_coalesced(self):
        """True when the indices are sorted and free of duplicates.

        Example::

            >>> ember.sparse_coo_tensor([[1, 0]], [1., 2.], (2,)).is_coalesced()
            False
        """
        return self._coalesced

    def _indices(self):
        """The indices as stored, coalesced or not.

        Example::

            >>> ember.sparse_coo_tensor([[1, 0]], [1., 2.], (2,))._indices()
            tensor([[1, 0]])
        """
        return self._idx

    def _values(self):
        """The values as stored, coalesced or not.

        Example::

            >>> ember.sparse_coo_tensor([[1, 0]], [1., 2.], (2,))._values()
            tensor([1., 2.])
        """
        return self._vals

    def indices(self):
        """The indices of a coalesced tensor.

        Example::

            >>> ember.sparse_coo_tensor([[1, 0]], [1., 2.], (2,)).coalesce().indices()
            tensor([[0, 1]])
        """
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._idx

    def values(self):
        """The values of a coalesced tensor.

        Example::

            >>> ember.sparse_coo_tensor([[1, 0]], [1., 2.], (2,)).coalesce().values()
            tensor([2., 1.])
        """
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._vals

    # ------------------------------------------------------------ autograd

    def requires_grad_(self, requires_grad=True):
        """Make this tensor an autograd leaf whose ``.grad`` is sparse.

        Example::

            >>> ember.zeros(2).to_sparse().requires_grad_().requires_grad
            True
        """
        if not self.is_leaf:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if not self._owns_values:
            self._vals = self._vals.detach()
            self._owns_values = True
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient of a leaf, as a sparse tensor on this tensor's coalesced pattern."""
        if not self._owns_values or self._vals.grad is None:
            return None
        return self._sparse_gradient(self._vals.grad)

    def _sparse_gradient(self, values_grad):
        """The gradient of this tensor from ``values_grad``, its values' gradient: a sparse
        tensor on the coalesced pattern, as torch's sparse gradients are."""
        # Every duplicate of one position receives the same gradient (the derivative with
        # respect to that position), so the pattern's value is any one of them, not their sum.
        from ._ops import first_of_duplicates

        return first_of_duplicates(self._idx, values_grad, self._size)

    def _values_gradient(self, grad):
        """The values' gradient from ``grad``, a gradient of this whole tensor (sparse or
        dense): each stored value gets ``grad``'s element at its position."""
        dense = grad.to_dense() if isinstance(grad, SparseTensorBase) else grad
        return dense[tuple(self._idx)]

    def _autograd_stand_in(self):
        """The tensor autograd differentiates for this one (its values), and the map from
        that tensor's gradient to this one's (see ``ember.autograd.grad``)."""
        return self._vals, self._sparse_gradient

    def register_hook(self, hook):
        """Call ``hook(grad)`` with this tensor's sparse gradient whenever it is computed;
        a returned tensor (sparse or dense) replaces it. Returns a handle with ``remove()``.

        Example::

            >>> s = ember.sparse_coo_tensor([[0, 2]], [1., 2.], (3,), requires_grad=True)
            >>> handle = s.register_hook(lambda g: g * 2)
            >>> ember.sparse.sum(s * 3).backward(); s.grad.to_dense()
            tensor([6., 0., 6.])
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")

        def on_values(values_grad):
            replaced = hook(self._sparse_gradient(values_grad))
            return None if replaced is None else self._values_gradient(replaced)

        return self._vals.register_hook(on_values)

    @grad.setter
    def grad(self, value):
        if value is not None:
            raise RuntimeError("assigning a gradient to a sparse tensor is not supported; "
                               "assign None to clear it")
        self._vals.grad = None

    def detach(self):
        """The same indices and values, cut from the autograd graph.

        Example::

            >>> ember.zeros(2).to_sparse().requires_grad_().detach().requires_grad
            False
        """
        return SparseCOOTensor(self._idx, self._vals.detach(), self._size, self._coalesced)

    # ------------------------------------------------------------ conversions

    def coalesce(self):
        """Sort the indices and sum the values of duplicates.

        Example::

            >>> ember.sparse_coo_tensor([[1, 0, 1]], [1., 2., 3.], (2,)).coalesce().values()
            tensor([2., 4.])
        """
        if self._coalesced:
            return self
        from ._ops import coalesced

        return coalesced(self)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense tensor with the same elements (unspecified ones are zero).

        Example::

            >>> ember.sparse_coo_tensor([[1]], [5.], (3,)).to_dense()
            tensor([0., 5., 0.])
        """
        from ._ops import to_dense

        dense = to_dense(self)
        return dense if dtype is None else dense.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None):
        """Already sparse: returned as it is (a new ``sparse_dim`` is not supported).

        Example::

            >>> s = ember.zeros(2).to_sparse()
            >>> s.to_sparse() is s
            True
        """
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion to a different sparse_dim is not "
                               "supported for sparse COO tensors")
        return self

    to_sparse_coo = to_sparse

    def to(self, *args, **kwargs):
        """Move or cast the values and indices, as ``Tensor.to``.

        Example::

            >>> ember.zeros(2).to_sparse().to(ember.float64).dtype
            ember.float64
        """
        values = self._vals.to(*args, **kwargs)
        indices = self._idx.to(values.device)
        return SparseCOOTensor(indices, values, self._size, self._coalesced)

    def clone(self):
        """A copy with its own indices and values.

        Example::

            >>> ember.zeros(2).to_sparse().clone()._nnz()
            0
        """
        return SparseCOOTensor(self._idx.clone(), self._vals.clone(), self._size,
                               self._coalesced)

    _impl_name = "SparseTensorImpl"  # torch's class, in its storage errors
    # element-wise functions keeping zero that torch has no sparse COO kernel for
    _no_values_kernel = frozenset({"angle", "hardshrink"})

    def _values_to_map(self):
        """The values an element-wise function maps: coalesced first, as torch's kernels
        do (a non-linear function of duplicates is not the sum of their images)."""
        return self.coalesce()._vals

    def _with_values(self, values):
        """This tensor's coalesced pattern holding ``values``."""
        pattern = self.coalesce()
        return SparseCOOTensor(pattern._idx, values, self._size, is_coalesced=True)

    def is_contiguous(self, memory_format=None):
        return False

    def stride(self, dim=None):
        strides = (0,) * self.dim()  # torch answers zeros for a COO tensor
        return strides if dim is None else strides[wrap_dim(dim, self.dim())]

    @property
    def nbytes(self):
        raise RuntimeError("nbytes is not defined for sparse tensors.  If you want the size "
                           "of the constituent tensors, add the nbytes of the indices and "
                           "values.  If you want the size of the  equivalent dense tensor, "
                           "multiply numel() by element_size()")

    def __iter__(self):
        return iter([self.select(0, i) for i in range(len(self))])

    def _empty_of(self, size, dtype, device):
        from .. import empty, zeros

        return SparseCOOTensor(zeros((len(size), 0), dtype=dt.int64, device=device),
                               empty((0,), dtype=dtype, device=device), size,
                               is_coalesced=True)

    def _refusal(self, op_name, op=None):
        """torch's error for a dense operator ``op_name`` given this tensor."""
        return NotImplementedError(_not_implemented(op_name, self))

    def _rebuild_args(self):
        """What ``pickle`` and ``ember.save`` store, as torch: indices, detached values, size,
        whether coalesced."""
        return self._idx, self._vals.detach(), Size(self._size), self._coalesced

    def _copy_for_deepcopy(self):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        copy = SparseCOOTensor(self._idx.clone(), self._vals.detach().clone(), self._size,
                               self._coalesced)
        return copy.requires_grad_() if self.requires_grad else copy

    def numpy(self, *, force=False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    def contiguous(self, memory_format=None):
        raise RuntimeError("unsupported memory format option Contiguous")

    # ------------------------------------------------------------ arithmetic

    def __add__(self, other):
        return self.add(other)

    def add(self, other, *, alpha=1):
        """Elementwise sum with another sparse tensor of the same size.

        Example::

            >>> a = ember.sparse_coo_tensor([[0]], [1.], (2,))
            >>> (a + a).to_dense()
            tensor([2., 0.])
        """
        from ._ops import add

        return add(self, other, alpha=alpha)

    def __radd__(self, other):
        """``dense + sparse``: a dense tensor, as torch gives."""
        if isinstance(other, Tensor):
            from ._ops import dense_add_sparse

            return dense_add_sparse(other, self)
        return NotImplemented

    def __sub__(self, other):
        return self.add(other, alpha=-1)

    def sub(self, other, *, alpha=1):
        """``self - alpha * other`` for sparse tensors of the same size."""
        return self.add(other, alpha=-alpha)

    def __mul__(self, other):
        return self.mul(other)

    def __rmul__(self, other):
        return self.mul(other)

    def mul(self, other):
        """Elementwise product with a scalar or with another sparse tensor.

        Example::

            >>> (ember.sparse_coo_tensor([[1]], [2.], (2,)) * 3).to_dense()
            tensor([0., 6.])
        """
        from ._ops import mul

        return mul(self, other)

    def __truediv__(self, other):
        return self.div(other)

    def div(self, other):
        """Division by a scalar (the pattern is kept).

        Example::

            >>> (ember.sparse_coo_tensor([[1]], [2.], (2,)) / 4).to_dense()
            tensor([0.0000, 0.5000])
        """
        if isinstance(other, Tensor) and not _is_scalar(other):
            raise division_by_tensor(other)
        if not _is_scalar(other):
            raise NotImplementedError(_not_implemented("div.Tensor", self))
        return SparseCOOTensor(self._idx, self._vals / other, self._size, self._coalesced)

    def pow(self, exponent):
        """Each specified element to a scalar power other than 0 (the pattern is kept).

        Example::

            >>> (ember.sparse_coo_tensor([[1]], [3.], (2,)) ** 2).to_dense()
            tensor([0., 9.])
        """
        if not _is_scalar(exponent):
            raise NotImplementedError(_not_implemented("pow.Tensor_Tensor", self))
        if exponent == 0:
            raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would "
                               "make the result tensor dense")
        pattern = self.coalesce()  # a power of a sum is not the sum of the powers
        return SparseCOOTensor(pattern._idx, pattern._vals ** exponent, self._size,
                               is_coalesced=True)

    __pow__ = pow
    true_divide = div

    def square(self):
        """Each specified element squared (``pow(2)``)."""
        return self.pow(2)

    def __neg__(self):
        return self.neg()

    def neg(self):
        """The negated values on the same pattern."""
        return SparseCOOTensor(self._idx, -self._vals, self._size, self._coalesced)

    # ------------------------------------------------------------ in place

    def _take(self, other):
        """Hold ``other``'s indices and values from now on (what an in-place op leaves)."""
        self._idx, self._vals, self._coalesced = other._idx, other._vals, other._coalesced
        self._owns_values = other._owns_values

    def add_(self, other, *, alpha=1):
        """``self += alpha * other`` for a sparse ``other`` of the same size.

        Example::

            >>> s = ember.sparse_coo_tensor([[1]], [2.], (2,))
            >>> s.add_(s).to_dense()
            tensor([0., 4.])
        """
        return self._in_place(self.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        """``self -= alpha * other`` for a sparse ``other`` of the same size."""
        return self._in_place(self.sub(other, alpha=alpha))

    def mul_(self, other):
        """``self *= other`` for a scalar or a sparse ``other`` of the same size."""
        return self._in_place(self.mul(other))

    def div_(self, other):
        """``self /= other`` for a scalar ``other``."""
        return self._in_place(self.div(other))

    def neg_(self):
        """Negate the values in place."""
        return self._in_place(self.neg())

    def zero_(self):
        """Drop every specified element (nnz 0), as torch's ``zero_`` of a sparse tensor.

        Example::

            >>> ember.tensor([1., 0.]).to_sparse().zero_()._nnz()
            0
        """
        return self._in_place(self._empty_of(self._size, self.dtype, self.device))

    def copy_(self, src, non_blocking=False):
        """Take ``src``'s elements (a sparse tensor of the same size)."""
        if not isinstance(src, SparseCOOTensor):
            raise NotImplementedError(_not_implemented("copy_", self))
        if src.shape != self.shape:
            raise RuntimeError(f"copy_: expected src of size {list(self.shape)}, got "
                               f"{list(src.shape)}")
        copied = SparseCOOTensor(src._idx.clone(), src._vals.to(self.dtype), self._size,
                                 src._coalesced)
        return self._in_place(copied)

    def __matmul__(self, other):
        return self.matmul(other)

    def __rmatmul__(self, other):
        """``dense @ sparse``: a dense matrix."""
        if isinstance(other, Tensor):
            from ._ops import dense_sparse_mm

            return dense_sparse_mm(other, self)
        return NotImplemented

    def mm(self, mat2):
        """Sparse times dense (a dense result) or sparse (a sparse result): see
        :func:`ember.sparse.mm`."""
        from ._ops import mm

        return mm(self, mat2)

    matmul = mm

    def select(self, dim, index):
        """The slice at ``index`` along ``dim`` (sparse while sparse dims remain).

        Example::

            >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
            >>> s.select(1, 0).to_dense()
            tensor([0., 3.])
        """
        from ._ops import select

        return select(self, dim, index)

    def index_select(self, dim, index):
        """The slices at ``index`` along ``dim``, a sparse tensor.

        Example::

            >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
            >>> s.index_select(0, ember.tensor([1])).to_dense()
            tensor([[3., 0.]])
        """
        from ._ops import index_select

        return index_select(self, dim, index)

    def __getitem__(self, index):
        """``s[i]`` with an int: ``select(0, i)`` (other indexing is not supported)."""
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            return self.select(0, int(index))
        raise NotImplementedError(_not_implemented("index.Tensor", self))

    def sum(self, dim=None, keepdim=False, dtype=None):
        """Sum of the specified elements: see :func:`ember.sparse.sum`."""
        if keepdim:
            raise RuntimeError("sum: keepdim is not supported for sparse tensors")
        from ._ops import sparse_sum

        return sparse_sum(self, dim, dtype=dtype)

    def unsqueeze(self, dim):
        """A size-1 dim at ``dim`` (sparse among the sparse dims, else dense).

        Example::

            >>> ember.sparse_coo_tensor([[1]], [2.], (2,)).unsqueeze(1).shape
            ember.Size([2, 1])
        """
        from ._ops import unsqueeze

        return unsqueeze(self, dim)

    @staticmethod
    def _list_cat(tensors, dim=0, *, out=None):
        """``ember.cat`` of sparse COO tensors (see ``_base._list_form``)."""
        from ._ops import cat

        if out is not None:
            raise RuntimeError("cat: out= is not supported for sparse tensors in ember")
        return cat(tensors, dim)

    @staticmethod
    def _list_stack(tensors, dim=0, *, out=None):
        """``ember.stack`` of sparse COO tensors (see ``_base._list_form``)."""
        from ._ops import stack

        if out is not None:
            raise RuntimeError("stack: out= is not supported for sparse tensors in ember")
        return stack(tensors, dim)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The ``p``-norm of all elements (that of the coalesced values; torch reduces a
        sparse tensor over all of its dims only).

        Example::

            >>> ember.tensor([3., 0., 4.]).to_sparse().norm()
            tensor(5.)
        """
        dims = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
        if dims and sorted(wrap_dim(d, self.dim()) for d in dims) != list(range(self.dim())):
            raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' "
                               "must either be empty or contain all dimensions of the input")
        values = self.coalesce()._vals
        values = values if dtype is None else values.to(dtype)
        return values.norm(2 if p == "fro" else p)

    def transpose(self, dim0, dim1):
        """Swap two sparse dims.

        Example::

            >>> ember.sparse_coo_tensor([[0], [2]], [1.], (2, 3)).t().to_dense()
            tensor([[0., 0.],
                    [0., 0.],
                    [1., 0.]])
        """
        from ._ops import transpose

        return transpose(self, dim0, dim1)

    def t(self):
        """The transpose of a matrix (a 2-D sparse tensor)."""
        if self.dim() > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.dim()}D")
        return self if self.dim() < 2 else self.transpose(0, 1)

    # ------------------------------------------------------------ printing

    def __repr__(self):
        text = ("tensor(indices=" + _inner_repr(self._idx, 15) + ",\n"
                "       values=" + _inner_repr(self._vals, 14))
        details = [f"size={tuple(self._size)}", f"nnz={self._nnz()}"]
        default = dt.get_default_dtype()
        if self.dtype not in (default, default.to_complex(), dt.int64, dt.bool):
            details.append(f"dtype={self.dtype!r}")
        if self._vals.device.type != "cpu":
            details.append(f"device='{self._vals.device}'")
        details.append("layout=ember.sparse_coo")
        if self.grad_fn is not None:
            details.append(f"grad_fn=<{self.grad_fn.name().rsplit('::', 1)[-1]}>")
        elif self.requires_grad:
            details.append("requires_grad=True")
        return _repr_suffixes(text, details, force_newline=True)

    __str__ = __repr__


def _backend(sparse):
    return "SparseCUDA" if sparse._vals.is_cuda else "SparseCPU"


def _not_implemented(op_name, sparse):
    return _NOT_IMPLEMENTED.format(name=op_name, backend=_backend(sparse))


def no_kernel_for_layout(op_name, backend="CPU"):
    """torch's NotImplementedError for an op that has no kernel for a (dense) tensor's
    ``backend``, such as ``hspmm`` of two dense matrices.

    Example::

        >>> str(no_kernel_for_layout("hspmm"))[:30]
        "Could not run 'aten::hspmm' wi"
    """
    return NotImplementedError(_NOT_IMPLEMENTED.format(name=op_name, backend=backend))


def _inner_repr(t, column):
    """``tensor([...])`` of an index or value tensor that starts at ``column``."""
    t = t.detach()
    if t.numel() == 0:
        return f"tensor([], size={tuple(t.shape)})"
    return "tensor(" + _body(t, column + 7) + ")"


def _repr_suffixes(text, suffixes, force_newline, indent=7):
    """``text`` followed by ``, suffix`` items, each moved to a new line when it would pass
    ``linewidth`` (and the first one always, for COO tensors), then the closing parenthesis:
    torch's layout of a tensor repr's trailing details."""
    linewidth = PRINT_OPTS.linewidth
    parts = [text]
    line_length = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or line_length + len(suffix) + 2 > linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            line_length += len(suffix) + 2
    return "".join(parts) + ")"


def division_by_tensor(divisor):
    """torch's error for a sparse tensor divided by a tensor of one element or more dims
    (or a dense tensor divided by a sparse one).

    Example::

        >>> str(division_by_tensor(ember.ones(2)))[:35]
        'Sparse division requires a scalar o'
    """
    return RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor divisor "
                        f"(got shape {list(divisor.shape)} for divisor)")


def _is_scalar(value):
    if isinstance(value, Tensor):
        return value.dim() == 0
    return isinstance(value, numbers.Number)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor from ``indices`` (sparse_dim x nnz) and ``values`` (nnz x dense
    dims). Without ``size``, each sparse dim is one past its largest index. Indices are
    always checked against ``size`` (torch checks them only with ``check_invariants``).

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
        >>> s._nnz(), s.sparse_dim(), s.dense_dim()
        (3, 2, 0)
    """
    values = as_tensor(values, dtype=dtype, device=device)
    indices = as_tensor(indices, device=values.device)
    if indices.dtype is not dt.int64:
        indices = indices.to(dt.int64)
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: "
                           f"{list(indices.shape)}")
    sparse_dims, nnz = indices.shape
    if values.dim() == 0 or values.shape[0] != nnz:
        got = values.shape[0] if values.dim() else 0
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {got}")
    size = _checked_size(indices, values, size)
    owns = bool(requires_grad)
    if owns:
        values = values.detach().requires_grad_()
    elif values.requires_grad:
        values = values.view_as(values)  # a node of its own: the sparse tensor is no leaf
    return SparseCOOTensor(indices, values, size, bool(is_coalesced), owns_values=owns)


def _checked_size(indices, values, size):
    sparse_dims, nnz = indices.shape
    if nnz:
        lowest = indices.amin(1).tolist()
        for d, low in enumerate(lowest):
            if low < 0:
                raise RuntimeError(f"found negative index {low} for dim {d}")
        highest = indices.amax(1).tolist()
    else:
        highest = [-1] * sparse_dims
    if size is None:
        return tuple(h + 1 for h in highest) + tuple(values.shape[1:])
    size = tuple(int(s) for s in size)
    dense_dims = values.dim() - 1
    if len(size) != sparse_dims + dense_dims:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                           f"len(size) = {len(size)}, sparse_dim = {sparse_dims}, "
                           f"dense_dim = {dense_dims}")
    for d, high in enumerate(highest):
        if high >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {high}")
    if tuple(values.shape[1:]) != size[sparse_dims:]:
        raise RuntimeError(f"values has incorrect size, expected {list(size[sparse_dims:])}, "
                           f"got {list(values.shape[1:])}")
    return size
