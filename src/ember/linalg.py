"""ember.linalg: linear algebra as torch.linalg.

The operators are defined in :mod:`ember.ops.linalg`; this module is their ``torch.linalg``
namespace.

Example::

    >>> A = ember.tensor([[4., 2.], [2., 5.]])
    >>> ember.linalg.solve(A, ember.tensor([2., 1.]))
    tensor([0.5000, 0.0000])
"""

from __future__ import annotations

from .ops import linalg as _ops

LinAlgError = _ops.LinAlgError
matmul = _ops.matmul
diagonal = _ops.diagonal_
cholesky = _ops.linalg_cholesky
cholesky_ex = _ops.linalg_cholesky_ex
cross = _ops.linalg_cross
det = _ops.linalg_det
eig = _ops.linalg_eig
eigh = _ops.linalg_eigh
eigvals = _ops.linalg_eigvals
eigvalsh = _ops.linalg_eigvalsh
householder_product = _ops.linalg_householder_product
inv = _ops.linalg_inv
inv_ex = _ops.linalg_inv_ex
lstsq = _ops.linalg_lstsq
matrix_exp = _ops.linalg_matrix_exp
matrix_norm = _ops.linalg_matrix_norm
matrix_power = _ops.linalg_matrix_power
matrix_rank = _ops.linalg_matrix_rank
multi_dot = _ops.linalg_multi_dot
norm = _ops.linalg_norm
pinv = _ops.linalg_pinv
qr = _ops.linalg_qr
slogdet = _ops.linalg_slogdet
solve = _ops.linalg_solve
solve_ex = _ops.linalg_solve_ex
svd = _ops.linalg_svd
svdvals = _ops.linalg_svdvals
vecdot = _ops.linalg_vecdot
vector_norm = _ops.linalg_vector_norm
lu = _ops.linalg_lu
lu_factor = _ops.linalg_lu_factor
lu_factor_ex = _ops.linalg_lu_factor_ex
lu_solve = _ops.linalg_lu_solve
solve_triangular = _ops.linalg_solve_triangular
cond = _ops.linalg_cond
ldl_factor = _ops.linalg_ldl_factor
ldl_factor_ex = _ops.linalg_ldl_factor_ex
ldl_solve = _ops.linalg_ldl_solve
tensorinv = _ops.linalg_tensorinv
tensorsolve = _ops.linalg_tensorsolve
vander = _ops.linalg_vander

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eig", "eigh",
           "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "lstsq", "matmul",
           "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm",
           "pinv", "qr", "slogdet", "solve", "solve_ex", "svd", "svdvals", "vecdot",
           "vector_norm", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "solve_triangular",
           "cond", "ldl_factor", "ldl_factor_ex", "ldl_solve", "tensorinv", "tensorsolve",
           "vander", "common_notes"]

# The notes torch's linalg docstrings share (torch.linalg.common_notes); on the CPU the
# synchronisation notes do not apply, but documentation tools read these keys.
common_notes = {
    "experimental_warning": 'This function is "experimental" and it may change in a future '
                            "PyTorch release.",
    "sync_note": "When inputs are on a CUDA device, this function synchronizes that device "
                 "with the CPU.",
    "sync_note_ex": "When the inputs are on a CUDA device, this function synchronizes only when "
                    ":attr:`check_errors`\\ `= True`.",
    "sync_note_has_ex": "When inputs are on a CUDA device, this function synchronizes that "
                        "device with the CPU. For a version of this function that does not "
                        "synchronize, see :func:`{}`.",
}
