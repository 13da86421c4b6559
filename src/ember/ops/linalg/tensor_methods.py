"""The linear-algebra ``Tensor`` methods (``Tensor.mm``, ``Tensor.svd``, ``Tensor.addmm_``...)
and the ``@`` operators: each method is the function of the same name from its family module.

Example::

    >>> (ember.eye(2) @ ember.ones(2)).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

from .._methods import tensor_method
from .._operands import operator_method
from .._registry import inplace
from . import (
    contractions,
    decompositions,
    least_squares,
    lu_ldl,
    matrix_functions,
    norms,
    products,
    solvers,
)
from .products import _imatmul, _rmatmul, matmul, tensordot

# Tensor.<name> is ember.<name>, the function of each family module
SAME_NAME = {
    products: ("matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
               "addmv", "addr", "addbmm", "baddbmm"),
    contractions: ("kron", "cross", "trace", "diag", "diag_embed"),
    norms: ("det", "logdet", "slogdet"),
    solvers: ("inverse", "cholesky_inverse", "cholesky_solve"),
    least_squares: ("pinverse",),
    decompositions: ("cholesky", "svd", "qr", "geqrf", "orgqr", "ormqr"),
    lu_ldl: ("lu", "lu_solve", "triangular_solve"),
    matrix_functions: ("matrix_power", "matrix_exp"),
}
# the products with an in-place form, Tensor.<name>_
IN_PLACE = ("addmm", "addmv", "addr", "addbmm", "baddbmm")


def _in_place(fn):
    """``Tensor.addmm_`` from ``addmm``: the result is written into ``self``."""
    return lambda self, *args, **kwargs: inplace(fn, self, *args, **kwargs)


def install():
    """Set the methods and operators on ``Tensor`` (done once, when the package is imported)."""
    for module, names in SAME_NAME.items():
        for name in names:
            tensor_method(getattr(module, name), name)
    for name in IN_PLACE:
        tensor_method(_in_place(getattr(products, name)), name + "_")
    tensor_method(lambda self, other, dims=2: tensordot(self, other, dims), "tensordot")
    tensor_method(operator_method(matmul, "__matmul__"), "__matmul__")
    tensor_method(operator_method(_rmatmul, "__rmatmul__"), "__rmatmul__")
    tensor_method(operator_method(_imatmul, "__imatmul__"), "__imatmul__")


install()
