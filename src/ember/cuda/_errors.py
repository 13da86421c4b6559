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
           "CudaStatsMissingError", "OutOfMemoryError", "require_gpu",
           "register_out_of_memory_type", "translate_out_of_memory"]

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


_STAND_IN_OUT_OF_MEMORY_TYPES = []


def register_out_of_memory_type(error_type):
    """Treat ``error_type`` like CuPy's OutOfMemoryError: for tests on machines without CuPy.

    Example::

        >>> class FakeOutOfMemory(MemoryError): pass
        >>> register_out_of_memory_type(FakeOutOfMemory)
    """
    if error_type not in _STAND_IN_OUT_OF_MEMORY_TYPES:
        _STAND_IN_OUT_OF_MEMORY_TYPES.append(error_type)


def _out_of_memory_types():
    cupy = cupy_module()
    found = [cupy.cuda.memory.OutOfMemoryError] if cupy is not None else []
    return tuple(found + _STAND_IN_OUT_OF_MEMORY_TYPES)


def _format_size(nbytes):
    """A byte count as torch's messages print it: bytes, KiB, MiB or GiB."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    for unit, power in (("KiB", 1), ("MiB", 2), ("GiB", 3)):
        if nbytes < 1024 ** (power + 1) or unit == "GiB":
            return f"{nbytes / 1024 ** power:.2f} {unit}"


def translate_out_of_memory(error):
    """``error`` as an :class:`OutOfMemoryError` when it is CuPy's, else ``error`` itself.

    CuPy's error keeps the requested size in ``_size``; the message starts as torch's does
    ("CUDA out of memory. Tried to allocate 20.00 MiB") and ends with CuPy's own words.

    Example::

        >>> translate_out_of_memory(ValueError("x"))
        ValueError('x')
    """
    if not isinstance(error, _out_of_memory_types()):
        return error
    size = getattr(error, "_size", None)
    tried = f" Tried to allocate {_format_size(size)}." if isinstance(size, int) else ""
    return OutOfMemoryError(f"CUDA out of memory.{tried} ({error})")
