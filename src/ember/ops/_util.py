"""Small helpers that let one kernel run on NumPy (cpu) and CuPy (cuda).

Kernels compute with the array module ``xp`` they are given. Where NumPy and CuPy differ
(SciPy vs ``cupyx.scipy``, ``ufunc.at`` vs ``cupyx.scatter_add``, ufunc methods CuPy lacks,
CuPy's silent linear-algebra failures), a kernel calls one of these instead of branching itself.
``tests/test_cuda_paths.py`` scans the kernels for NumPy-only code.
"""

from __future__ import annotations

import contextlib

import numpy as np

__all__ = []


def scipy_special(xp):
    """``scipy.special`` for NumPy, ``cupyx.scipy.special`` for CuPy."""
    if xp is np:
        import scipy.special as special
    elif hasattr(xp, "scipy_special"):  # the webgpu array module's own
        return xp.scipy_special
    else:  # pragma: no cover - GPU only
        import cupyx.scipy.special as special
    return special


def as_strided(xp):
    """``xp.lib.stride_tricks.as_strided`` (strides in bytes, as NumPy's)."""
    return xp.lib.stride_tricks.as_strided


def scatter_add(xp, out, key, values):
    """``out[key] += values`` in place, repeated indices accumulating (``np.add.at``)."""
    if xp is np:
        np.add.at(out, key, values)
    elif hasattr(xp, "ufunc_at"):  # the webgpu array module's own
        xp.ufunc_at("add", out, key, values)
    else:  # pragma: no cover - GPU only
        import cupyx

        cupyx.scatter_add(out, key, values)


def accumulate(xp, name, a, axis):
    """``xp.<name>.accumulate(a, axis)`` for any binary ufunc ``name``.

    CuPy's ufuncs accumulate only ``add`` and ``multiply``; for the others (``maximum``,
    ``minimum``, ``logical_or``, ...) this runs an inclusive scan in ``log2(n)`` vectorised
    steps (each element combines with the one ``2**k`` before it).
    """
    if xp is np:
        return getattr(np, name).accumulate(a, axis=axis)
    if name == "add":  # pragma: no cover - GPU only
        return xp.add.accumulate(a, axis=axis)
    if name == "multiply":  # pragma: no cover - GPU only
        return xp.multiply.accumulate(a, axis=axis)
    return scan(xp, name, a, axis)  # pragma: no cover - GPU only


def scan(xp, name, a, axis):
    """The inclusive scan behind :func:`accumulate`, on any array module, for ufuncs whose
    result has the input's dtype."""
    ufunc = getattr(xp, name)
    axis = axis % a.ndim
    result = a.copy()
    n = a.shape[axis]
    head = (slice(None),) * axis
    shift = 1
    while shift < n:
        # the right side is computed in full before it is written back: no aliasing
        result[head + (slice(shift, None),)] = ufunc(result[head + (slice(shift, None),)],
                                                     result[head + (slice(None, n - shift),)])
        shift *= 2
    return result


def scalar(value, dtype):
    """Python number ``value`` as a NumPy scalar of ``dtype`` (integers wrap, as ``astype``).

    CuPy takes NumPy scalars as operands but refuses NumPy arrays, 0-dim ones included.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(value).astype(dtype)[()]


def host_values(xp, *arrays):
    """The values of several 0-dim arrays of one dtype as Python numbers, in one device-to-host
    copy.

    Use it where a kernel must look at data to decide (an error check, a data-dependent output
    size): on the GPU each call is one synchronisation.
    """
    if xp is np:
        return [a.item() for a in arrays]
    return xp.stack(arrays).tolist()  # pragma: no cover - GPU only


def linalg_errors(xp):
    """A context in which CuPy's linear algebra raises ``numpy.linalg.LinAlgError`` on failure
    (singular or not positive-definite input) as NumPy's does; by default CuPy returns NaN or
    garbage silently. On the GPU this checks cuSOLVER's status, one synchronisation. (The
    webgpu array module runs linear algebra through NumPy, which raises by itself.)"""
    if xp is np or not getattr(xp, "__name__", "").startswith("cupy"):
        return contextlib.nullcontext()
    import cupyx  # pragma: no cover - GPU only

    return cupyx.errstate(linalg="raise")  # pragma: no cover


def svd(xp, a, full_matrices=True, compute_uv=True, name="linalg.svd"):
    """``xp.linalg.svd`` of a matrix or a batch, with torch's answers for non-finite input:
    ``LinAlgError`` naming the first matrix that holds a NaN, and NaN factors for a matrix
    that holds an infinity (LAPACK's gesdd can loop forever on one, so it never sees it).

    Example::

        >>> svd(np, np.diag([3., 4.]), compute_uv=False)
        array([4., 3.])
    """
    finite = xp.isfinite(a).all(axis=(-2, -1))
    if host_values(xp, finite.all())[0]:  # one synchronisation on the GPU
        return xp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    with_nan = xp.isnan(a).any(axis=(-2, -1)).reshape(-1)
    any_nan, index = host_values(xp, with_nan.any(), xp.argmax(with_nan))
    if any_nan:
        from .linalg._common import LinAlgError, _batch_prefix

        raise LinAlgError(f"{name}: {_batch_prefix(index, a.ndim > 2)}The algorithm failed to "
                          "converge because the input matrix contained non-finite values.")
    results = xp.linalg.svd(xp.where(finite[..., None, None], a, 0), full_matrices=full_matrices,
                            compute_uv=compute_uv)
    for result in results if compute_uv else (results,):
        result[~finite] = xp.nan
    return results
