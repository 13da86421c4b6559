"""``ember.mm``, ``ember.addmm`` and ``ember.matmul`` that also take a sparse first matrix, as
torch's do. Dense arguments go straight to the dense operators (one type test in front)."""

from __future__ import annotations

import functools

from ..ops import linalg as _dense
from ..ops._registry import write_out
from . import _ops
from ._coo import SparseCOOTensor


@functools.wraps(_dense.mm)
def mm(input, mat2, *, out=None):
    if type(input) is SparseCOOTensor:
        return write_out(_ops.mm(input, mat2), out, "mm")
    return _dense.mm(input, mat2, out=out)


@functools.wraps(_dense.matmul)
def matmul(input, other, *, out=None):
    if type(input) is SparseCOOTensor:
        return write_out(_ops.mm(input, other), out, "matmul")
    return _dense.matmul(input, other, out=out)


@functools.wraps(_dense.addmm)
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    if type(mat1) is SparseCOOTensor:
        return write_out(_ops.addmm(input, mat1, mat2, beta=beta, alpha=alpha), out, "addmm")
    return _dense.addmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)
