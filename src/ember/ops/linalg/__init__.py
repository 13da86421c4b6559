# ruff: noqa: F401  (this package re-exports the operators of its modules)
"""Linear algebra operators, one module per family; this package re-exports them so that
``ember.ops.linalg.<name>`` is every operator's home. The ``ember.linalg`` namespace
(``ember/linalg.py``) maps torch's ``linalg.*`` names onto the ``linalg_*`` functions here.
A function that is also a Tensor method (``x.mm``, ``x.svd``, ``x.addmm_``, ``@``) declares
it with ``@tensor_method`` where it is defined.

================  ==================================================================
module            operators
================  ==================================================================
products          ``matmul``, ``mm``, ``bmm``, ``mv``, ``dot``, ``addmm``, ``tensordot``...
contractions      ``einsum``, ``kron``, ``cross``, ``trace``, ``diag``, ``vander``...
norms             vector and matrix norms, ``cdist``, ``det``, ``slogdet``, ``cond``
solvers           ``inv``, ``solve``, ``cholesky_solve``, ``tensorsolve``...
least_squares     ``pinv``, ``matrix_rank``, ``lstsq``
decompositions    Cholesky, QR, ``eigh``/``eig``, SVD, ``geqrf``/``ormqr``
lu_ldl            LU, triangular solves, LDL
matrix_functions  ``matrix_power``, ``matrix_exp``
lowrank           ``svd_lowrank``, ``pca_lowrank``, ``lobpcg``
_common           ``LinAlgError``, named results, shared argument checks
================  ==================================================================
"""

from ._common import (
    CholeskyExResult,
    EighResult,
    EigResult,
    InvExResult,
    LinAlgError,
    LstsqResult,
    PlainSlogdet,
    QRResult,
    SlogdetResult,
    SolveExResult,
    SVDResult,
)
from .contractions import (
    cross,
    cross_op,
    diag,
    diag_embed,
    diag_embed_op,
    diagonal_,
    einsum,
    einsum_op,
    kron,
    linalg_cross,
    linalg_multi_dot,
    linalg_vander,
    linalg_vecdot,
    trace,
    vander,
)
from .decompositions import (
    GeqrfResult,
    PlainQRResult,
    cholesky,
    cholesky_op,
    eig_op,
    eigh_op,
    geqrf,
    geqrf_op,
    linalg_cholesky,
    linalg_cholesky_ex,
    linalg_eig,
    linalg_eigh,
    linalg_eigvals,
    linalg_eigvalsh,
    linalg_householder_product,
    linalg_qr,
    linalg_svd,
    linalg_svdvals,
    orgqr,
    ormqr,
    qr,
    qr_op,
    svd,
    svd_op,
)
from .least_squares import (
    linalg_lstsq,
    linalg_matrix_rank,
    linalg_pinv,
    lstsq_op,
    pinv_op,
    pinverse,
)
from .lowrank import lobpcg, pca_lowrank, svd_lowrank
from .lu_ldl import (
    LDLFactorExResult,
    LDLFactorResult,
    LUFactorExResult,
    LUFactorResult,
    LUResult,
    LUUnpackResult,
    LUWithInfoResult,
    TriangularSolveResult,
    ldl_factor_op,
    ldl_solve_op,
    linalg_ldl_factor,
    linalg_ldl_factor_ex,
    linalg_ldl_solve,
    linalg_lu,
    linalg_lu_factor,
    linalg_lu_factor_ex,
    linalg_lu_solve,
    linalg_solve_triangular,
    lu,
    lu_factor_op,
    lu_solve,
    lu_unpack,
    solve_triangular_op,
    triangular_solve,
)
from .matrix_functions import (
    linalg_matrix_exp,
    linalg_matrix_power,
    matrix_exp,
    matrix_exp_op,
    matrix_power,
)
from .norms import (
    cdist,
    det,
    det_op,
    frobenius_norm,
    linalg_cond,
    linalg_det,
    linalg_matrix_norm,
    linalg_norm,
    linalg_slogdet,
    linalg_vector_norm,
    logdet,
    slogdet,
    slogdet_op,
)
from .products import (
    addbmm,
    addmm,
    addmv,
    addr,
    baddbmm,
    bmm,
    bmm_op,
    chain_matmul,
    dot,
    dot_op,
    ger,
    inner,
    matmul,
    matmul_op,
    mm,
    mm_op,
    mv,
    mv_op,
    outer,
    tensordot,
    vdot,
)
from .solvers import (
    cholesky_inverse,
    cholesky_solve,
    inv_h_op,
    inv_op,
    inverse,
    linalg_inv,
    linalg_inv_ex,
    linalg_solve,
    linalg_solve_ex,
    linalg_tensorinv,
    linalg_tensorsolve,
    solve_op,
)

__all__ = [
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "addmv",
    "addr", "addbmm", "baddbmm", "einsum", "tensordot", "kron", "cross", "trace", "diag",
    "diag_embed", "cdist", "cholesky", "chain_matmul", "det", "logdet", "slogdet", "inverse",
    "pinverse", "matrix_power", "matrix_exp", "cholesky_inverse", "cholesky_solve", "svd", "lu",
    "lu_solve", "lu_unpack", "qr", "triangular_solve", "vander", "svd_lowrank", "pca_lowrank",
    "geqrf", "orgqr", "ormqr", "lobpcg", "frobenius_norm",
]
