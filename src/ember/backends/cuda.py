"""``ember.backends.cuda``: CUDA matmul flags, as ``torch.backends.cuda``.

``matmul.allow_tf32`` is tied to :func:`ember.set_float32_matmul_precision` (True unless the
precision is ``'highest'``), as in torch. The flags are kept but have no effect on CuPy's
cuBLAS calls.

Example::

    >>> ember.backends.cuda.matmul.allow_tf32
    False
"""

from __future__ import annotations

__all__ = ["matmul", "is_built", "preferred_linalg_library", "preferred_blas_library",
           "cufft_plan_cache", "cuFFTPlanCache", "cuFFTPlanCacheManager",
           "cuFFTPlanCacheAttrContextProp", "blas_workspace_size", "cublas_workspace_size",
           "cublaslt_workspace_size", "preferred_rocm_fa_library"]


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


from ._sdp import *  # noqa: E402,F403  (the attention backend switches)
from ._sdp import __all__ as _sdp_names  # noqa: E402

__all__ += _sdp_names


class cuFFTPlanCacheAttrContextProp:
    """A property of :class:`cuFFTPlanCache` read and written through getter/setter functions
    taking the device index."""

    def __init__(self, getter, setter):
        self.getter, self.setter = getter, setter

    def __get__(self, obj, objtype):
        return self.getter(obj.device_index)

    def __set__(self, obj, val):
        if isinstance(self.setter, str):
            raise RuntimeError(self.setter)
        self.setter(obj.device_index, val)


_fft_max_size = {}


class cuFFTPlanCache:
    """The cuFFT plan cache of one device: ``size`` (plans cached: ember caches none),
    ``max_size`` (settable) and ``clear()``.

    Example::

        >>> cufft_plan_cache[0].size
        0
    """

    def __init__(self, device_index):
        self.device_index = device_index

    size = cuFFTPlanCacheAttrContextProp(
        lambda index: 0, ".size is a read-only property showing the number of plans currently "
        "in the cache. To change the cache capacity, set cufft_plan_cache.max_size.")
    max_size = cuFFTPlanCacheAttrContextProp(
        lambda index: _fft_max_size.get(index, 4096),
        lambda index, value: _fft_max_size.__setitem__(index, int(value)))

    def clear(self):
        """Drop the cached plans (there are none)."""


class cuFFTPlanCacheManager:
    """``cufft_plan_cache[device]``: the plan cache of each CUDA device.

    Example::

        >>> cufft_plan_cache[0].max_size
        4096
    """

    __initialized = False

    def __init__(self):
        self.caches = []
        self.__initialized = True

    def __getitem__(self, device):
        index = device if isinstance(device, int) else getattr(device, "index", 0) or 0
        while len(self.caches) <= index:
            self.caches.append(cuFFTPlanCache(len(self.caches)))
        return self.caches[index]


cufft_plan_cache = cuFFTPlanCacheManager()


def _workspace(name):
    from ..cuda._errors import NO_GPU_MESSAGE, CudaBindingMissingError

    def query(size=None, backend=None):
        raise CudaBindingMissingError(f"torch.backends.cuda.{name}: {NO_GPU_MESSAGE}")

    query.__name__ = query.__qualname__ = name
    query.__doc__ = f"cuBLAS's workspace size (torch's ``{name}``): needs a CUDA GPU."
    return query


blas_workspace_size = _workspace("blas_workspace_size")
cublas_workspace_size = _workspace("cublas_workspace_size")
cublaslt_workspace_size = _workspace("cublaslt_workspace_size")


def preferred_rocm_fa_library(backend=None):
    """The ROCm flash-attention library (torch's switch; ember has no ROCm kernels): only
    ``"default"`` is accepted.

    Example::

        >>> preferred_rocm_fa_library()
        'default'
    """
    if backend not in (None, "default"):
        raise RuntimeError("ember has no ROCm flash-attention libraries; only 'default' exists")
    return "default"
