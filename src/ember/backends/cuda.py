"""``ember.backends.cuda``: CUDA matmul flags, as ``torch.backends.cuda``.

``matmul.allow_tf32`` is tied to :func:`ember.set_float32_matmul_precision` (True unless the
precision is ``'highest'``), as in torch. The flags are kept but have no effect on CuPy's
cuBLAS calls.

Example::

    >>> ember.backends.cuda.matmul.allow_tf32
    False
"""

from __future__ import annotations

__all__ = ["matmul", "is_built", "preferred_linalg_library", "preferred_blas_library"]


class cuBLASModule:
    """The ``matmul`` flags: ``allow_tf32``, ``allow_fp16_reduced_precision_reduction``,
    ``allow_bf16_reduced_precision_reduction``; unknown names raise AttributeError."""

    _flags = {"allow_fp16_reduced_precision_reduction": True,
              "allow_bf16_reduced_precision_reduction": True,
              "allow_fp16_accumulation": False}

    def __getattr__(self, name):
        if name == "allow_tf32":
            from .. import _compat

            return _compat.get_float32_matmul_precision() != "highest"
        if name in cuBLASModule._flags:
            return cuBLASModule._flags[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            from .. import _compat

            _compat.set_float32_matmul_precision("high" if value else "highest")
            return
        if name in cuBLASModule._flags:
            cuBLASModule._flags[name] = bool(value)
            return
        raise AttributeError(f"Unknown attribute {name}")


matmul = cuBLASModule()
_linalg_library = ["default"]
_blas_library = ["cublas"]


def is_built():
    """Whether ember can use CUDA at all: CuPy is installed (torch: built with CUDA).

    Example::

        >>> isinstance(ember.backends.cuda.is_built(), bool)
        True
    """
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


def preferred_linalg_library(backend=None):
    """Kept for torch's API: the named library (``'default'``, ``'cusolver'``, ``'magma'``);
    ember always uses CuPy's cuSOLVER."""
    if backend is not None:
        if backend not in ("default", "cusolver", "magma"):
            raise RuntimeError(f"Unknown input value. Choose from: default, cusolver, magma, "
                               f"got {backend}")
        _linalg_library[0] = backend
    return _linalg_library[0]


def preferred_blas_library(backend=None):
    """Kept for torch's API: the named BLAS library (``'cublas'``, ``'cublaslt'``); ember
    always uses CuPy's cuBLAS."""
    if backend is not None:
        if backend not in ("cublas", "cublaslt", "ck"):
            raise RuntimeError(f"Unknown input value. Choose from: cublas, cublaslt, ck, got "
                               f"{backend}")
        _blas_library[0] = backend
    return _blas_library[0]
