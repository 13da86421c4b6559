"""``torch.sparse.semi_structured``: the 2:4 semi-structured sparse tensor classes (CUDA
libraries that ember does not bind; see ``ember/sparse/_semi_structured.py``)."""

from ._semi_structured import (
    SparseSemiStructuredTensor,
    SparseSemiStructuredTensorCUSPARSELT,
    SparseSemiStructuredTensorCUTLASS,
    to_sparse_semi_structured,
)

__all__ = ["SparseSemiStructuredTensor", "SparseSemiStructuredTensorCUTLASS",
           "SparseSemiStructuredTensorCUSPARSELT", "to_sparse_semi_structured"]
