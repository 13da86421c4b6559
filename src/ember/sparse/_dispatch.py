"""``ember.mm``, ``ember.addmm`` and ``ember.matmul`` that also take sparse (COO, CSR, CSC)
operands, as torch's do. Dense arguments go straight to the dense operators (two type tests
in front)."""

from __future__ import annotations

import functools

from ..ops import linalg as _dense
from ..ops._registry import write_out
from . import _ops
from ._base import is_strided
from ._compressed import SparseCompressedTensor, compressed_mm
from ._coo import SparseCOOTensor

_SPARSE = (SparseCOOTensor, SparseCompressedTensor)


def _sparse_product(input, other):
    if type(input) is SparseCompressedTensor:
        return compressed_mm(input, other)
    if type(other) is SparseCompressedTensor:
        other = other.to_sparse()
    return _ops.mm(input, other)


@functools.wraps(_dense.mm)
def mm(input, mat2, *, out_dtype=None, out=None):
    if type(input) in _SPARSE or type(mat2) in _SPARSE:
        product = _sparse_product(input, mat2)
        if out_dtype is not None:
            product = product.to(out_dtype)
        return _written(product, out, "mm")
    return _dense.mm(input, mat2, out_dtype=out_dtype, out=out)


@functools.wraps(_dense.matmul)
def matmul(input, other, *, out=None):
    if type(input) in _SPARSE or type(other) in _SPARSE:
        return _written(_sparse_product(input, other), out, "matmul")
    return _dense.matmul(input, other, out=out)


@functools.wraps(_dense.addmm)
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    if type(mat1) is SparseCompressedTensor:
        mat1 = mat1.to_sparse()
    if type(mat1) is SparseCOOTensor:
        return write_out(_ops.addmm(input, mat1, mat2, beta=beta, alpha=alpha), out, "addmm")
    return _dense.addmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


def _written(result, out, name):
    if out is None or is_strided(result):
        return write_out(result, out, name)
    raise RuntimeError(f"{name}: out= is not supported for a sparse result")
