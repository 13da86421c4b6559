"""Randomised and iterative methods: ``svd_lowrank``, ``pca_lowrank`` and ``lobpcg``.

Example::

    >>> _ = ember.manual_seed(0)
    >>> U, S, V = ember.svd_lowrank(ember.eye(4), q=2)
    >>> S.shape
    ember.Size([2])
"""

from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from .decompositions import linalg_eigh, linalg_qr, linalg_svd
from .norms import linalg_matrix_norm
from .products import matmul

# ================================================================ randomised low-rank SVD


def _approximate_basis(A, q, niter, M=None):
    """An orthonormal ``Q`` (m x q) whose range approximates that of ``A - M``: a random
    projection refined by ``niter`` power iterations (Halko et al. 2009, algorithm 4.4)."""
    from ..random import randn

    dtype = A.dtype if (A.dtype.is_floating_point or A.dtype.is_complex) else dt.float32

    def times(left, right, left_shift=None):
        product = matmul(left, right)
        return product if left_shift is None else product - matmul(left_shift, right)

    projection = randn(A._data.shape[-1], q, dtype=dtype, device=A._device)
    Q = linalg_qr(times(A, projection, M)).Q
    for _ in range(niter):
        Q = linalg_qr(times(A.mH, Q, None if M is None else M.mH)).Q
        Q = linalg_qr(times(A, Q, M)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """An approximate rank-``q`` SVD ``(U, S, V)`` of ``A - M`` by random projection (Halko et
    al. 2009, algorithm 5.1), with ``niter`` subspace iterations; exact when the rank of
    ``A - M`` is at most ``q``.

    Example::

        >>> A = ember.ones(5, 1) @ ember.ones(1, 4)
        >>> U, S, V = ember.svd_lowrank(A, q=1)
        >>> round(float(S[0]), 4)
        4.4721
    """
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A._data.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    tall = m >= n
    if not tall:  # work on A^H, which is tall
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = matmul(Q.mH, A)
    if M is not None:
        B = B - matmul(Q.mH, M)
    U, S, Vh = linalg_svd(B, full_matrices=False)
    U, V = matmul(Q, U), Vh.mH
    return (U, S, V) if tall else (V, S, U)


def pca_lowrank(A, q=None, center=True, niter=2):
    """Principal components of ``A`` by :func:`svd_lowrank` of the centred matrix (column
    means removed when ``center``): ``(U, S, V)``; ``q`` defaults to ``min(6, m, n)``.

    Example::

        >>> U, S, V = ember.pca_lowrank(ember.tensor([[1., 2.], [3., 4.], [5., 6.]]), q=1)
        >>> round(float(S[0]), 4)
        4.0
    """
    m, n = A._data.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(dim=(-2,), keepdim=True)
    return svd_lowrank(A, q, niter=niter)


# ================================================================ lobpcg


def _b_orthonormal_basis(S, BS, eps):
    """An orthonormal (in the ``B`` inner product) basis of ``S``'s columns, dropping directions
    that ``S`` barely spans: the symmetric orthogonalisation ``S V diag(1/sqrt(w))`` of the Gram
    matrix's eigenpairs ``(w, V)`` above ``eps`` times the largest."""
    gram = matmul(S.mT, BS)
    w, v = linalg_eigh((gram + gram.mT) / 2)
    keep = (w > eps * w.max()).nonzero().reshape(-1)
    v = v.index_select(-1, keep) * w.index_select(-1, keep).rsqrt()
    return matmul(S, v)


def _lobpcg_single(A, B, X, iK, k, niter, tol, largest):
    """One matrix's LOBPCG iterations: Rayleigh-Ritz on [X, preconditioned residual, previous
    step] until ``k`` residuals are below ``tol`` relative to ``|A| + |E| |B|``."""
    apply_b = (lambda M: M) if B is None else (lambda M: matmul(B, M))
    eps = float(np.finfo(X._data.dtype).eps) * 10
    a_norm = linalg_matrix_norm(A, 2)
    b_norm = 1.0 if B is None else linalg_matrix_norm(B, 2)
    n = X._data.shape[-1]
    X = _b_orthonormal_basis(X, apply_b(X), eps)
    previous = None
    for _ in range(niter + 1):
        projected = matmul(X.mT, matmul(A, X))
        E, C = linalg_eigh((projected + projected.mT) / 2)
        order = E.argsort(descending=largest)[:n]
        E, X = E.index_select(0, order), matmul(X, C.index_select(-1, order))
        residual = matmul(A, X) - apply_b(X) * E
        error = residual.norm(dim=0) / (X.norm(dim=0) * (a_norm + E.abs() * b_norm))
        if int((error[:k] < tol).sum()) == k:
            break
        search = residual if iK is None else matmul(iK, residual)
        parts = [X, search] if previous is None else [X, search, previous]
        basis = _b_orthonormal_basis(_cat(parts, -1), apply_b(_cat(parts, -1)), eps)
        projected = matmul(basis.mT, matmul(A, basis))
        theta, Z = linalg_eigh((projected + projected.mT) / 2)
        order = theta.argsort(descending=largest)[:n]
        X_new = matmul(basis, Z.index_select(-1, order))
        previous = X_new - matmul(X, matmul(X.mT, apply_b(X_new)))
        X = _b_orthonormal_basis(X_new, apply_b(X_new), eps)
    return E[:k], X[:, :k]


def _cat(tensors, dim):
    from ..shape import cat

    return cat(tensors, dim)


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (or smallest) eigenpairs of the symmetric generalised problem
    ``A x = lambda B x`` by LOBPCG (``B`` positive definite, identity when None).

    ``X`` is the initial block (random when None, as torch), ``iK`` a preconditioner, ``tol``
    the relative residual at which an eigenpair has converged. Eigenpairs equal ``eigh``'s to
    within ``tol``; the iterates are ember's own (torch's robust ``ortho`` method keeps other
    bookkeeping). Not differentiable yet: call it on detached tensors.

    Example::

        >>> A = ember.diag(ember.arange(1., 11., dtype=ember.float64))
        >>> E, X = ember.lobpcg(A, k=2)
        >>> E.round()
        tensor([10.,  9.], dtype=ember.float64)
    """
    if A._data.shape[-2] != A._data.shape[-1]:
        raise AssertionError(f"A must be square, got shape {_size_repr(A)}")
    if B is not None and B._data.shape != A._data.shape:
        raise AssertionError(f"A and B must have same shape, got {_size_repr(A)} vs "
                             f"{_size_repr(B)}")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"LOBPCG method '{method}' is not supported by ember (ortho, basic)")
    if A.requires_grad or (B is not None and B.requires_grad):
        raise NotImplementedError("ember's lobpcg is not differentiable yet: call it on "
                                  "A.detach() (and B.detach())")
    if tol is None:
        tol = {"float32": 1.2e-07, "float64": 2.23e-16}[A.dtype.name] ** 0.5
    m = A._data.shape[-1]
    k = (1 if X is None else X._data.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X._data.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    niter = 1000 if niter is None else niter
    largest = True if largest is None else largest
    batch = A._data.shape[:-2]
    from ..random import randn

    flat_a = A.reshape((-1, m, m))
    flat_b = None if B is None else B.reshape((-1, m, m))
    flat_x = None if X is None else X.reshape((-1,) + X._data.shape[-2:])
    values, vectors = [], []
    for index in range(flat_a._data.shape[0]):
        start = (randn(m, n, dtype=A.dtype, device=A._device) if flat_x is None
                 else flat_x[index])
        if tuple(start._data.shape) != (m, n):
            raise AssertionError(f"X shape mismatch: got {_size_repr(start)}, expected "
                                 f"{(m, n)}")
        E, U = _lobpcg_single(flat_a[index], None if flat_b is None else flat_b[index], start,
                              iK, k, niter, tol, largest)
        values.append(E)
        vectors.append(U)
    from ..shape import stack

    return (stack(values).reshape(batch + (k,)), stack(vectors).reshape(batch + (m, k)))


def _size_repr(t):
    return f"torch.Size({list(t._data.shape)})"
