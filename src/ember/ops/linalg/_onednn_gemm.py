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
import math

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
# oneDNN's sgemm (the onednn-cpu-gomp wheel, AVX2) runs 1.3-2x slower than torch's (MKL) when
# it walks an operand along k at a row stride that is a multiple of 2 KB (rows of 512 or 1024
# floats, usual model widths): e.g. a linear layer's weight gradient x.T @ g with x of 1024
# columns; those rows fall into a few L1 cache sets. A copy of that operand with rows one cache
# line longer costs less than it saves where the product's other dim is 128 to 512 and k is at
# least 512 (1 thread, best of 7 interleaved rounds against torch.mm, bench/compiled_floor.py's
# sweep: 1024x128x1024 TN 6.5 -> 4.0 ms, torch 4.3; 256x1024x1024 NN 19.5 -> 9.7 ms, torch 9.5;
# GPT's 512x1024.T @ 1024x128 1.3x -> 1.05x torch). Outside that range it did not pay: with
# fewer rows to share the copy it cost more than it saved, with more oneDNN was already fast.
_ALIASING_STRIDE = 2048


def _aliasing_hurts():
    """Whether this CPU is one where the padded copy was measured to pay: AMD's (an EPYC,
    Zen with AVX2: the gains above). On an Intel Xeon (Sapphire Rapids, AVX-512) oneDNN ran
    those products at torch's time without the copy and 10-25% slower with it (GPT's
    512x1024.T @ 1024x128: 2.0 ms, torch 2.0, 2.4 with the copy)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("vendor_id") and "AuthenticAMD" in line for line in f)
    except OSError:
        return False


_PADDED_MIN_K = 512 if _aliasing_hurts() else math.inf
_PADDED_OTHER_DIM = range(128, 513)
_PAD = 64 // _ITEM

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
        >>> y is None or bool(y.sum() == 128 * 128)
        True
    """
    m, k = a.shape
    n = b.shape[1]
    if m * n * k < _MIN_WORK or not _enabled():
        return None
    left, right = _operand(a), _operand(b)
    if left is None or right is None:
        return None
    if k >= _PADDED_MIN_K:
        a, left = _unaliased(a, left, left[0] == b"T", n)
        b, right = _unaliased(b, right, right[0] == b"N", m)
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


def _unaliased(array, operand, walks_rows, other_dim):
    """``array`` and its ``operand`` description, or a copy whose stored rows are padded by a
    cache line where oneDNN would walk its rows (along k) at a stride that thrashes the cache
    (see ``_ALIASING_STRIDE``) and the product's ``other_dim`` makes the copy pay."""
    flag, leading = operand
    if not walks_rows or (leading * _ITEM) % _ALIASING_STRIDE or other_dim not in _PADDED_OTHER_DIM:
        return array, operand
    padded = _padded_rows(np, array.T if flag == b"T" else array)
    return (padded.T if flag == b"T" else padded), (flag, padded.strides[0] // _ITEM)


def _padded_rows(xp, matrix):
    """A copy of the 2-D ``matrix`` (of array module ``xp``) in a buffer whose rows are one
    cache line longer.

    Example::

        >>> m = _padded_rows(np, np.ones((4, 512), np.float32))
        >>> m.shape, m.strides, bool((m == 1).all())
        ((4, 512), (2112, 4), True)
    """
    rows, cols = matrix.shape
    buffer = xp.empty((rows, cols + _PAD), matrix.dtype)[:, :cols]
    buffer[...] = matrix
    return buffer


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
