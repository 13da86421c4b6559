"""ember.sparse: sparse COO tensors and their operators, as ``torch.sparse``.

A sparse COO tensor stores the coordinates (``indices``, sparse_dim x nnz) and the values
(nnz x dense dims) of its specified elements; every other element is zero.

Example::

    >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
    >>> ember.sparse.mm(s, ember.eye(2))
    tensor([[0., 2.],
            [3., 0.]])
"""

from ._coo import SparseCOOTensor, sparse_coo_tensor
from ._ops import addmm, log_softmax, mm, softmax
from ._ops import sparse_sum as sum  # noqa: A001  (torch.sparse.sum)

__all__ = ["SparseCOOTensor", "sparse_coo_tensor", "addmm", "mm", "sum", "softmax",
           "log_softmax"]
