"""ember.sparse: sparse COO, CSR and CSC tensors and their operators, as ``torch.sparse``.

A sparse COO tensor stores the coordinates (``indices``, sparse_dim x nnz) and the values
(nnz x dense dims) of its specified elements; every other element is zero. A CSR (CSC) matrix
stores, for each row (column), where its elements start in the plain indices and values.

Example::

    >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
    >>> ember.sparse.mm(s, ember.eye(2))
    tensor([[0., 2.],
            [3., 0.]])
"""

from ._compressed import SparseCompressedTensor, sampled_addmm, sparse_csc_tensor, sparse_csr_tensor
from ._coo import SparseCOOTensor, sparse_coo_tensor
from ._gradcheck import as_sparse_gradcheck
from ._invariants import check_sparse_tensor_invariants
from ._ops import addmm, log_softmax, mm, softmax
from ._ops import sparse_sum as sum  # noqa: A001  (torch.sparse.sum)
from ._semi_structured import (
    SparseSemiStructuredTensor,
    SparseSemiStructuredTensorCUSPARSELT,
    SparseSemiStructuredTensorCUTLASS,
    to_sparse_semi_structured,
)

__all__ = ["SparseCOOTensor", "SparseCompressedTensor", "sparse_coo_tensor",
           "sparse_csr_tensor", "sparse_csc_tensor", "check_sparse_tensor_invariants", "addmm",
           "mm", "sampled_addmm", "sum", "softmax", "log_softmax", "as_sparse_gradcheck",
           "SparseSemiStructuredTensor", "SparseSemiStructuredTensorCUTLASS",
           "SparseSemiStructuredTensorCUSPARSELT", "to_sparse_semi_structured"]
