"""The errors of ``ember.cuda`` when no GPU can be used, and its out-of-memory error.

torch raises different exception types from different ``torch.cuda`` functions when it has no
CUDA (a CPU build asserts, a missing binding gives AttributeError, a CUDA build on a machine
without driver raises RuntimeError). Each class below is a RuntimeError *and* the type a CPU
build of torch raises, so ``except`` clauses written for either keep working.

Example::

    >>> issubclass(CudaUnavailableError, AssertionError), issubclass(CudaUnavailableError,
    ...                                                                RuntimeError)
    (True, True)
"""

from __future__ import annotations

from .._device import cupy_module

__all__ = ["NO_GPU_MESSAGE", "CudaUnavailableError", "CudaBindingMissingError",
           "CudaStatsMissingError", "OutOfMemoryError", "require_gpu"]

NO_GPU_MESSAGE = ("Found no NVIDIA driver or no CuPy on your system: ember's cuda device needs "
                  "a GPU and CuPy (pip install 'ember[cuda]').")


class CudaUnavailableError(RuntimeError, AssertionError):
    """No GPU: where torch's CPU build raises AssertionError ("not compiled with CUDA")."""


class CudaBindingMissingError(RuntimeError, AttributeError):
    """No GPU: where torch's CPU build lacks the binding (AttributeError)."""


class CudaStatsMissingError(RuntimeError, KeyError):
    """No GPU: where torch's CPU build finds no statistics to read (KeyError)."""

    def __str__(self):
        # KeyError quotes its argument; this is a sentence, so print it as RuntimeError does
        return RuntimeError.__str__(self)


class OutOfMemoryError(RuntimeError):
    """The GPU ran out of memory (torch.OutOfMemoryError; CuPy's OutOfMemoryError mapped).

    Example::

        >>> issubclass(ember.cuda.OutOfMemoryError, RuntimeError)
        True
    """


def require_gpu(error=CudaUnavailableError):
    """The CuPy module, or ``error`` saying that a GPU and CuPy are needed.

    Example::

        >>> require_gpu()          # doctest: +SKIP
    """
    cupy = cupy_module()
    if cupy is None:
        raise error(NO_GPU_MESSAGE)
    return cupy


def translate_out_of_memory(error):
    """``error`` as an :class:`OutOfMemoryError` when it is CuPy's, else ``error`` itself.

    Example::

        >>> translate_out_of_memory(ValueError("x"))
        ValueError('x')
    """
    cupy = cupy_module()
    if cupy is not None and isinstance(error, cupy.cuda.memory.OutOfMemoryError):
        return OutOfMemoryError(f"CUDA out of memory. {error}")
    return error
