"""torch's older names for sparse-dense products: ``spmm``, ``dsmm``, ``hspmm``, ``hsmm``,
``smm``, ``sspaddmm`` and ``saddmm``, built on :func:`ember.mm` and the COO tensor.

``spmm``/``dsmm`` give a dense product; ``hspmm``/``hsmm`` a hybrid COO tensor holding the
product's rows that the sparse factor touches; ``smm`` the same rows as a plain COO tensor;
``sspaddmm``/``saddmm`` ``beta * input + alpha * (mat1 @ mat2)`` as a sparse tensor.
"""

from __future__ import annotations

from ..ops._signature import signature
from ..ops.creation import arange
from ..ops.shape import stack
from ._compressed import SparseCompressedTensor
from ._coo import SparseCOOTensor, no_kernel_for_layout, sparse_coo_tensor
from ._dispatch import mm

__all__ = ["spmm", "dsmm", "hspmm", "hsmm", "smm", "sspaddmm", "saddmm"]

_SPARSE = (SparseCOOTensor, SparseCompressedTensor)


def _as_coo(input):
    return input.to_sparse() if type(input) is SparseCompressedTensor else input


def spmm(input, mat2, *, out_dtype=None):
    """The matrix product of a sparse (or dense) ``input`` and ``mat2``, dense, as
    :func:`ember.mm`.

    Example::

        >>> s = ember.eye(2).to_sparse()
        >>> ember.spmm(s, ember.ones(2, 1))
        tensor([[1.],
                [1.]])
    """
    return mm(input, mat2, out_dtype=out_dtype)


def dsmm(input, mat2):
    """``spmm`` under its other old name: the dense product of ``input`` and ``mat2``.

    Example::

        >>> ember.dsmm(ember.eye(2).to_sparse(), ember.ones(2, 1)).shape
        ember.Size([2, 1])
    """
    return mm(input, mat2)


def _touched_rows(input):
    """The rows of a sparse matrix that hold a specified element, in order, as an int64 tensor."""
    rows = _as_coo(input).coalesce().indices()[0]
    return rows.unique(sorted=True)


@signature("hspmm(Tensor mat1, Tensor mat2, *, Tensor? out=None) -> Tensor",
           any_layout=True)
def hspmm(mat1, mat2, *, out=None):
    """The product of sparse ``mat1`` and dense ``mat2`` as a hybrid COO tensor (one sparse
    dim): the product's rows that ``mat1`` touches, each stored whole.

    Example::

        >>> s = ember.tensor([[0., 2.], [0., 0.]]).to_sparse()
        >>> ember.hspmm(s, ember.ones(2, 3)).to_dense()
        tensor([[2., 2., 2.],
                [0., 0., 0.]])
    """
    if type(mat1) not in _SPARSE:
        raise no_kernel_for_layout("hspmm")
    if out is not None:
        raise RuntimeError("hspmm: out= is not supported in ember (sparse results are new "
                           "tensors); use the returned tensor")
    rows = _touched_rows(mat1)
    product = mm(mat1, mat2)
    return sparse_coo_tensor(rows.unsqueeze(0), product.index_select(0, rows),
                             tuple(product.shape))


@signature("hspmm(Tensor mat1, Tensor mat2) -> Tensor",
           any_layout=True)
def hsmm(mat1, mat2):
    """``hspmm`` under its other name.

    Example::

        >>> ember.hsmm(ember.eye(2).to_sparse(), ember.ones(2, 2)).dense_dim()
        1
    """
    return hspmm(mat1, mat2)


@signature("smm(Tensor input, Tensor mat2) -> Tensor",
           any_layout=True)
def smm(input, mat2):
    """The product of sparse ``input`` and dense ``mat2`` as a COO tensor that specifies every
    element of the rows ``input`` touches (zeros included).

    Example::

        >>> s = ember.tensor([[0., 2.], [0., 0.]]).to_sparse()
        >>> ember.smm(s, ember.ones(2, 2))._nnz()
        2
    """
    if type(input) not in _SPARSE:
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    hybrid = hspmm(input, mat2)
    rows, columns = hybrid._indices()[0], mat2.shape[1]
    row_of_each = rows.repeat_interleave(columns)
    column_of_each = arange(columns, device=rows.device).repeat(rows.shape[0])
    return sparse_coo_tensor(stack([row_of_each, column_of_each]), hybrid._values().reshape(-1),
                             tuple(hybrid.shape))


@signature("sspaddmm(Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
           "Scalar alpha=1, Tensor? out=None) -> Tensor", any_layout=True)
def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` for sparse ``input`` and ``mat1`` and dense
    ``mat2``, as a sparse tensor.

    Example::

        >>> s = ember.eye(2).to_sparse()
        >>> ember.sspaddmm(s, s, ember.ones(2, 2)).to_dense()
        tensor([[2., 1.],
                [1., 2.]])
    """
    if type(input) not in _SPARSE or type(mat1) not in _SPARSE:
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    if type(mat2) in _SPARSE:
        raise RuntimeError("sspaddmm: expected 'mat2' to have strided layout, got 'mat2' with "
                           "layout Sparse")
    if tuple(mat1.shape)[1] != tuple(mat2.shape)[0]:
        raise RuntimeError(f"sspaddmm: Argument #3: Expected dim 0 size {mat1.shape[1]}, got "
                           f"{mat2.shape[0]}")
    result = _as_coo(input) * beta + smm(mat1, mat2) * alpha
    result = result.coalesce()
    if out is not None:
        raise RuntimeError("sspaddmm: out= is not supported in ember (sparse results are new "
                           "tensors); use the returned tensor")
    return result


@signature("sspaddmm(Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
           "Scalar alpha=1, Tensor? out=None) -> Tensor", any_layout=True)
def saddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``sspaddmm`` under its old name.

    Example::

        >>> s = ember.eye(2).to_sparse()
        >>> ember.saddmm(s, s, ember.ones(2, 2)).to_dense()[0]
        tensor([2., 1.])
    """
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


def _attach_methods():
    """``s.smm(dense)``, ``s.sspaddmm(mat1, mat2)`` and ``s.hspmm(dense)`` on COO tensors."""
    SparseCOOTensor.smm = smm
    SparseCOOTensor.hspmm = hspmm
    SparseCOOTensor.sspaddmm = _sspaddmm_method


def _sspaddmm_method(self, mat1, mat2, *, beta=1, alpha=1):
    """``ember.sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)`` (the method takes no
    ``out=``, as torch's)."""
    return sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)


_attach_methods()
