"""float32 matrix products on oneDNN's GEMM (``dnnl_sgemm``) when ``libdnnl`` is installed.

NumPy's ``matmul`` calls OpenBLAS; oneDNN's JIT GEMM, which ships with the optional
``onednn-cpu-gomp`` wheel that ember's convolutions already use, is as fast as PyTorch's own
CPU GEMM and clearly faster than OpenBLAS on the skinny products of small models (a 64x784 by
784x256 product: about 2.5x). This module gives the matrix-product ops a CPU kernel that hands
float32 2-D products (and N-D by 2-D ones whose leading dims fold into rows, as ``linear``
makes) to ``dnnl_sgemm``; everything else, and every product while oneDNN is absent or
``ember.backends.mkldnn.enabled`` is False, runs the generic NumPy kernel.

Example::

    >>> a = np.ones((128, 96), np.float32); b = np.ones((96, 128), np.float32)
    >>> y = sgemm(a, b)
    >>> y is None or float(y[0, 0]) == 96.0   # None where oneDNN is not installed
    True
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..._array_address import data_address

_F32 = np.dtype(np.float32)
_ITEM = _F32.itemsize
# below about this many multiply-adds oneDNN's fixed cost per call (some 5 us) exceeds what
# its faster kernel saves over OpenBLAS (64x120 by 120x84: 10 us on NumPy, 16 on oneDNN)
_MIN_WORK = 1 << 20
# a product with a dim below this runs on one thread even when ember has more: each element
# of its largest operand or result then carries under this many multiply-adds, and the
# single-threaded NumPy ops that next read them find the lines the other core touched in that
# core's cache, which costs more than the second thread saved (2 cores, MLP 784-256-10 step,
# batch 64: the SGD update of w1 took 34 -> 245 us after two-thread GEMMs, the step 672 us at
# one thread, 760 at two; 680 at two with this rule; a GPT step's 1024x128x384 products gain)
_MIN_THREADED_DIM = 128

_onednn = None      # ember.nn._functional._onednn, imported on first use (it imports ember.nn)
_gemm = None        # the bound ``dnnl_sgemm``, or False when oneDNN is not loaded
_omp = None         # GNU OpenMP (``omp_get_max_threads``, ``omp_set_num_threads``) once bound


def _bound_sgemm():
    """``dnnl_sgemm`` with its argument types set, or False where oneDNN is absent."""
    global _onednn, _gemm
    if _onednn is None:
        from ...nn._functional import _onednn
    library = _onednn._load()
    if library is None:
        _gemm = False
        return _gemm
    fn = library.lib.dnnl_sgemm
    size, ptr, char, real = ctypes.c_int64, ctypes.c_void_p, ctypes.c_char, ctypes.c_float
    fn.argtypes = [char, char, size, size, size, real, ptr, size, ptr, size, real, ptr, size]
    fn.restype = ctypes.c_int
    global _omp
    _omp = _openmp_runtime()
    _gemm = fn
    return _gemm


class _NoOpenMP:
    """Stands in for GNU OpenMP where oneDNN was built on another runtime: one thread asked,
    nothing to set."""

    @staticmethod
    def omp_get_max_threads():
        return 1

    @staticmethod
    def omp_set_num_threads(count):
        pass


def _openmp_runtime():
    """The GNU OpenMP library oneDNN runs on (``libdnnl`` of the ``onednn-cpu-gomp`` wheel)."""
    try:
        return ctypes.CDLL("libgomp.so.1")
    except OSError:
        return _NoOpenMP()


def _operand(array):
    """(transpose flag, leading dimension) describing a 2-D float32 ``array`` to a row-major
    GEMM, or None when neither of its dims is unit-stride (then NumPy handles it)."""
    rows_stride, cols_stride = array.strides
    rows, cols = array.shape
    if cols_stride == _ITEM and rows_stride % _ITEM == 0 and rows_stride >= cols * _ITEM:
        return b"N", max(rows_stride // _ITEM, 1)
    if rows_stride == _ITEM and cols_stride % _ITEM == 0 and cols_stride >= rows * _ITEM:
        return b"T", max(cols_stride // _ITEM, 1)
    return None


def sgemm(a, b, out=None, bias=None):
    """``a @ b`` for float32 matrices on oneDNN's GEMM, written into ``out`` when given (a
    C-contiguous float32 matrix sharing no memory with ``a`` or ``b``), or None where this
    module declines (oneDNN absent or switched off, a product too small to gain, a layout with
    no unit stride, an unsuitable ``out``). ``bias`` (float32, broadcastable to a row of the
    result) is added to every row: it is copied into the output, which the GEMM then
    accumulates into (its C operand with beta = 1, as torch's ``addmm``), instead of a second
    pass over the result.

    Example::

        >>> y = sgemm(np.eye(128, dtype=np.float32), np.ones((128, 128), np.float32))
        >>> y is None or y.sum() == 128 * 128
        True
    """
    m, k = a.shape
    n = b.shape[1]
    if m * n * k < _MIN_WORK or not _enabled():
        return None
    left, right = _operand(a), _operand(b)
    if left is None or right is None:
        return None
    if out is None:
        out = np.empty((m, n), _F32)
    elif out.dtype != _F32 or out.shape != (m, n) or not out.flags.c_contiguous \
            or np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return None
    beta = 0.0
    if bias is not None:
        out[...] = bias
        beta = 1.0
    args = (left[0], right[0], m, n, k, 1.0, data_address(a), left[1], data_address(b),
            right[1], beta, data_address(out), n)
    if min(m, n, k) < _MIN_THREADED_DIM:
        status = _on_one_thread(args)
    else:
        status = _gemm(*args)
    return out if status == 0 else None


def _on_one_thread(args):
    """``dnnl_sgemm(*args)`` with this thread's OpenMP team held at one thread (oneDNN sizes
    its team from ``omp_get_max_threads`` at each call); the count is restored afterwards."""
    threads = _omp.omp_get_max_threads()
    if threads == 1:
        return _gemm(*args)
    _omp.omp_set_num_threads(1)
    try:
        return _gemm(*args)
    finally:
        _omp.omp_set_num_threads(threads)


def _enabled():
    """oneDNN's GEMM is in use: loaded and switched on, at any thread count. Once oneDNN is
    loaded its OpenMP pool is the one that gets ember's threads and NumPy's BLAS runs on one
    (``ember._threads``), so oneDNN's GEMM is the threaded one."""
    if _gemm is None:
        _bound_sgemm()
    return _gemm is not False and _onednn.available()


def matmul_cpu_kernel(generic):
    """The CPU kernel of a matrix-product op whose generic kernel is ``generic``: float32
    products of a matrix (or a stack of rows that folds into one) by a matrix go to
    :func:`sgemm`, the rest to ``generic``.

    Example::

        >>> kernel = matmul_cpu_kernel(lambda xp, a, b: xp.matmul(a, b))
        >>> kernel(np, np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)).shape
        (2, 4)
    """
    def kernel(xp, a, b):
        if (a.dtype == _F32 and b.dtype == _F32 and b.ndim == 2 and a.ndim >= 2
                and a.shape[-1] == b.shape[0]):
            out = _folded_product(a, b)
            if out is not None:
                return out
        return generic(xp, a, b)
    kernel.__name__ = kernel.__qualname__ = "matmul_cpu_kernel"
    return kernel


def _folded_product(a, b):
    """``a @ b`` through :func:`sgemm` with ``a``'s leading dims folded into rows when that
    needs no copy; None where it does or where :func:`sgemm` declines."""
    if a.ndim == 2:
        return sgemm(a, b)
    if not a.flags.c_contiguous or a.size == 0:  # (no rows to fold: reshape(-1, 0) is ambiguous)
        return None
    out = sgemm(a.reshape(-1, a.shape[-1]), b)
    return None if out is None else out.reshape(*a.shape[:-1], b.shape[1])


def matrix_product(xp, a, b, out=None):
    """``xp.matmul(a, b, out=out)`` for two matrices, float32 NumPy ones on :func:`sgemm` (the
    recurrent layers' per-step products call this inside their kernels).

    Example::

        >>> matrix_product(np, np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
        array([[3., 3.],
               [3., 3.]], dtype=float32)
    """
    if xp is np and a.dtype == _F32 and b.dtype == _F32 and a.ndim == 2 and b.ndim == 2 \
            and a.shape[1] == b.shape[0]:
        result = sgemm(a, b, out)
        if result is not None:
            return result
    return xp.matmul(a, b, out=out)
