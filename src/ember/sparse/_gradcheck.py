"""``torch.sparse.as_sparse_gradcheck``: gradcheck for functions of sparse tensors.

gradcheck perturbs strided tensors only, so each sparse input that requires grad is handed to
it as its values (a strided tensor) and rebuilt, inside the checked function, as a sparse tensor
of the same layout and indices; sparse outputs are compared as dense tensors. Without
``masked=True`` every element of a sparse input is first made a specified one, so the
gradient is checked with respect to the whole dense tensor (torch's default).
"""

from __future__ import annotations

import functools

from .._tensor import sparse_coo, sparse_csc, sparse_csr
from ._compressed import SparseCompressedTensor
from ._coo import SparseCOOTensor

__all__ = ["as_sparse_gradcheck"]

_SPARSE = (SparseCOOTensor, SparseCompressedTensor)


class _Strided:
    """A sparse input as gradcheck sees it: how to rebuild it around its values."""

    def __init__(self, layout, shape, indices, coalesced=False):
        self.layout, self.shape, self.indices, self.coalesced = layout, shape, indices, coalesced

    def rebuild(self, values):
        from .. import sparse_compressed_tensor, sparse_coo_tensor

        if self.layout is sparse_coo:
            return sparse_coo_tensor(self.indices, values, self.shape,
                                     is_coalesced=self.coalesced)
        compressed, plain = self.indices
        return sparse_compressed_tensor(compressed, plain, values, self.shape,
                                        layout=self.layout)


def _all_specified(tensor):
    """``tensor`` (sparse) with every element specified, zeros included, built from its dense
    form so that the values stay differentiable."""
    from ..ops.creation import arange

    if tensor.dense_dim():
        raise NotImplementedError("as_sparse_gradcheck: hybrid sparse inputs (dense_dim > 0) "
                                  "need masked=True in ember")
    dense = tensor.to_dense()
    if tensor.layout is sparse_coo:
        positions = dense.new_ones(dense.shape).nonzero().t()
        return _Strided(sparse_coo, dense.shape, positions, True), dense.reshape(-1)
    rows, cols = dense.shape
    if tensor.layout is sparse_csr:
        compressed = arange(0, rows * cols + 1, cols)
        plain = arange(cols).repeat(rows)
        return _Strided(sparse_csr, dense.shape, (compressed, plain)), dense.reshape(-1)
    compressed = arange(0, rows * cols + 1, rows)
    plain = arange(rows).repeat(cols)
    return _Strided(sparse_csc, dense.shape, (compressed, plain)), dense.t().reshape(-1)


def _specified_only(tensor):
    if tensor.layout is sparse_coo:
        tensor = tensor.coalesce()
        return (_Strided(sparse_coo, tensor.shape, tensor.indices(), True),
                tensor.values().detach())
    if tensor.layout is sparse_csr:
        indices = (tensor.crow_indices(), tensor.col_indices())
    else:
        indices = (tensor.ccol_indices(), tensor.row_indices())
    return _Strided(tensor.layout, tensor.shape, indices), tensor.values().detach()


def _to_strided(inputs, masked):
    """The inputs for gradcheck: each sparse input that requires grad becomes a
    ``(_Strided, values)`` pair, its values a new leaf requiring grad."""
    converted = []
    for item in inputs:
        if isinstance(item, _SPARSE) and item.requires_grad:
            plan, values = (_specified_only if masked else _all_specified)(item)
            converted += [plan, values.detach().requires_grad_(True)]
        else:
            converted.append(item)
    return tuple(converted)


def _from_strided(arguments):
    restored, index = [], 0
    while index < len(arguments):
        item = arguments[index]
        if isinstance(item, _Strided):
            restored.append(item.rebuild(arguments[index + 1]))
            index += 2
        else:
            restored.append(item)
            index += 1
    return tuple(restored)


def _dense_outputs(output):
    if isinstance(output, _SPARSE):
        return output.to_dense()
    if isinstance(output, (tuple, list)):
        return type(output)(_dense_outputs(o) for o in output)
    return output


def as_sparse_gradcheck(gradcheck):
    """``gradcheck`` (``ember.autograd.gradcheck`` or a partial of it) extended to functions
    whose inputs or outputs are sparse tensors; ``masked=True`` checks the gradient with
    respect to the specified elements only.

    Example::

        >>> check = ember.sparse.as_sparse_gradcheck(ember.autograd.gradcheck)
        >>> x = ember.tensor([[0., 1.], [2., 3.]], dtype=ember.float64).to_sparse()
        >>> check(lambda s: s.to_dense() * 2, x.requires_grad_(True))
        True
    """

    @functools.wraps(gradcheck)
    def gradcheck_with_sparse_support(func, inputs, **kwargs):
        masked = kwargs.pop("masked", False)
        inputs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
        strided = _to_strided(tuple(inputs), masked)

        def checked(*arguments):
            return _dense_outputs(func(*_from_strided(arguments)))

        return gradcheck(checked, strided, **kwargs)

    return gradcheck_with_sparse_support



