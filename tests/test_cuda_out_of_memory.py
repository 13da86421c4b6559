"""CuPy's out-of-memory error inside an operator becomes ember.cuda.OutOfMemoryError.

Simulated: this machine may have no GPU, so a stand-in exception class (registered through
``register_out_of_memory_type``, carrying ``_size`` as CuPy's OutOfMemoryError does) is raised
by a fake kernel, and the GPU branch of the dispatcher (``_run_cuda``) runs it with a fake
array module whose ``cuda.Device`` is a no-op context. A real CuPy allocation failure is not
exercised here.
"""

import contextlib
import types

import pytest

import ember
from ember.cuda._errors import register_out_of_memory_type, translate_out_of_memory
from ember.ops._registry import _run_cuda


class StandInOutOfMemory(MemoryError):
    """Shaped like cupy.cuda.memory.OutOfMemoryError: the requested size in ``_size``."""

    def __init__(self, size):
        self._size = size
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: 0 bytes).")


register_out_of_memory_type(StandInOutOfMemory)
FAKE_CUPY = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda index:
                                                             contextlib.nullcontext()))
FAKE_GPU = types.SimpleNamespace(xp=FAKE_CUPY, index=0)


def _op_raising(error):
    def kernel(xp, *arrays):
        raise error
    return types.SimpleNamespace(kernel=kernel)


def test_out_of_memory_in_a_kernel_becomes_torchs_error():
    with pytest.raises(ember.cuda.OutOfMemoryError) as caught:
        _run_cuda(_op_raising(StandInOutOfMemory(20 * 2 ** 20)), FAKE_GPU, (), {})
    assert isinstance(caught.value, RuntimeError)
    assert ember.OutOfMemoryError is ember.cuda.OutOfMemoryError
    assert str(caught.value).startswith("CUDA out of memory. Tried to allocate 20.00 MiB.")
    assert isinstance(caught.value.__cause__, StandInOutOfMemory)


def test_other_kernel_errors_pass_through_unchanged():
    error = ValueError("bad shape")
    with pytest.raises(ValueError) as caught:
        _run_cuda(_op_raising(error), FAKE_GPU, (), {})
    assert caught.value is error


@pytest.mark.parametrize("size, printed", [(512, "512 bytes"), (3 * 1024, "3.00 KiB"),
                                           (5 * 2 ** 30, "5.00 GiB")])
def test_sizes_print_in_torchs_units(size, printed):
    message = str(translate_out_of_memory(StandInOutOfMemory(size)))
    assert message.startswith(f"CUDA out of memory. Tried to allocate {printed}.")
