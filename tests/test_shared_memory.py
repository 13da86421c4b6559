"""Memory shared with NumPy cannot grow: resize_ and out= resizing refuse as torch's do.

torch's storage for ``from_numpy``, ``frombuffer``, ``from_dlpack`` and a sharing ``as_tensor``
or ``asarray`` is not resizable, and ``.numpy()`` (or NumPy's ``__array__``) makes a storage
so; shrinking and regrowing within the storage stay allowed. Each case runs on both libraries.
"""

import array
import warnings

import numpy as np
import pytest
import torch

import ember


def _outcome(make, lib):
    """(error type, message) or ('ok', shape, values kept) of ``make(lib)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's out= resize and asarray warnings
            result = make(lib)
    except Exception as error:  # noqa: BLE001  (the outcome is compared, whatever it is)
        return type(error).__name__, str(error)
    return "ok", tuple(result.shape)


def _floats(n=6):
    return np.arange(n, dtype=np.float32)


def _exposed(lib):
    t = lib.zeros(4)
    t.numpy()
    return t


def _exposed_by_array_protocol(lib):
    t = lib.zeros(4)
    np.asarray(t)
    return t


def _set_onto_shared_storage(lib):
    return lib.zeros(1).set_(lib.from_numpy(_floats()).untyped_storage())


GROWTH = {
    "from_numpy grows": lambda lib: lib.from_numpy(_floats()).resize_(100),
    "from_numpy shrinks": lambda lib: lib.from_numpy(_floats()).resize_(3),
    "from_numpy keeps its size": lambda lib: lib.from_numpy(_floats()).resize_(2, 3),
    "a view grows past the storage": lambda lib: lib.from_numpy(_floats())[:2].resize_(10),
    "a view grows within the storage": lambda lib: lib.from_numpy(_floats())[:2].resize_(5),
    "an empty array grows": lambda lib: lib.from_numpy(np.zeros(0, np.float32)).resize_(3),
    "shrunk to nothing then regrown": lambda lib: lib.from_numpy(_floats()).resize_(0)
    .resize_(6),
    "resize_as_ grows": lambda lib: lib.from_numpy(_floats()).resize_as_(lib.zeros(10)),
    "a Fortran-ordered array shrinks": lambda lib: lib.from_numpy(
        np.asfortranarray(_floats().reshape(2, 3))).resize_(4),
    "as_tensor shares and grows": lambda lib: lib.as_tensor(_floats()).resize_(100),
    "as_tensor converts and grows": lambda lib: lib.as_tensor(_floats(), dtype=lib.float64)
    .resize_(100),
    "as_tensor of a NumPy scalar grows": lambda lib: lib.as_tensor(np.float32(1)).resize_(9),
    "asarray shares and grows": lambda lib: lib.asarray(_floats()).resize_(100),
    "asarray copies and grows": lambda lib: lib.asarray(_floats(), copy=True).resize_(100),
    "tensor copies and grows": lambda lib: lib.tensor(_floats()).resize_(100),
    "clone grows": lambda lib: lib.from_numpy(_floats()).clone().resize_(100),
    "detach grows": lambda lib: lib.from_numpy(_floats()).detach().resize_(100),
    "reshape grows": lambda lib: lib.from_numpy(_floats()).reshape(2, 3).resize_(100),
    "a dtype conversion grows": lambda lib: lib.from_numpy(_floats()).double().resize_(100),
    "frombuffer grows": lambda lib: lib.frombuffer(bytearray(16), dtype=lib.float32)
    .resize_(100),
    "frombuffer of an array.array grows": lambda lib: lib.frombuffer(
        array.array("f", [1.0, 2.0]), dtype=lib.float32).resize_(5),
    "from_dlpack grows": lambda lib: lib.from_dlpack(_floats()).resize_(100),
    "numpy() then grows": lambda lib: _exposed(lib).resize_(100),
    "numpy() then shrinks": lambda lib: _exposed(lib).resize_(2),
    "np.asarray(t) then grows": lambda lib: _exposed_by_array_protocol(lib).resize_(100),
    "numpy(force=True) then grows": lambda lib: _forced(lib).resize_(100),
    "numpy() of a view, then its base grows": lambda lib: _base_of_exposed_view(lib)
    .resize_(100),
    "set_ onto a shared storage, then grows": lambda lib: _set_onto_shared_storage(lib)
    .resize_(100),
    "set_ onto a shared tensor, then grows": lambda lib: lib.zeros(1).set_(
        lib.from_numpy(_floats())).resize_(100),
    "requires grad and shared": lambda lib: lib.from_numpy(_floats()).requires_grad_()
    .resize_(100),
    "the storage grows": lambda lib: lib.from_numpy(_floats()).untyped_storage().resize_(100),
    "to meta, then grows": lambda lib: lib.from_numpy(_floats()).to("meta").resize_(100),
}


def _forced(lib):
    t = lib.zeros(4)
    t.numpy(force=True)
    return t


def _base_of_exposed_view(lib):
    t = lib.zeros(4)
    t[1:].numpy()
    return t


@pytest.mark.parametrize("case", sorted(GROWTH))
def test_resize_of_shared_memory_as_torch(case):
    assert _outcome(GROWTH[case], ember) == _outcome(GROWTH[case], torch)


def _shared_out(lib, n=3):
    return lib.from_numpy(np.zeros(n, np.float32))


OUT_CALLS = {
    "add": lambda lib, out: lib.add(lib.ones(10), 1, out=out),
    "sum": lambda lib, out: lib.sum(lib.ones(10, 5), 1, out=out),
    "matmul": lambda lib, out: lib.matmul(lib.ones(10, 5), lib.ones(5), out=out),
    "cat": lambda lib, out: lib.cat([lib.ones(10)], out=out),
    "zeros": lambda lib, out: lib.zeros(10, out=out),
    "arange": lambda lib, out: lib.arange(10.0, out=out),
    "shrinking add": lambda lib, out: lib.add(lib.ones(2), 1, out=out),
    "shrinking zeros": lambda lib, out: lib.zeros(2, out=out),
}


@pytest.mark.parametrize("size", [0, 3, 20])
@pytest.mark.parametrize("call", sorted(OUT_CALLS))
def test_out_argument_on_shared_memory_resizes_as_torch(call, size):
    assert _outcome(lambda lib: OUT_CALLS[call](lib, _shared_out(lib, size)), ember) == \
        _outcome(lambda lib: OUT_CALLS[call](lib, _shared_out(lib, size)), torch)


def test_shrinking_keeps_sharing_with_the_array():
    for lib in (ember, torch):
        source = _floats()
        t = lib.from_numpy(source)
        t.resize_(2)
        t[0] = 9.0
        out = lib.from_numpy(np.zeros(4, np.float32))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.add(lib.ones(2), 1, out=out)
        assert source[0] == 9.0 and out.numpy().tolist() == [2.0, 2.0], lib.__name__


def test_fortran_ordered_storage_shrinks_in_memory_order():
    source = np.asfortranarray(_floats().reshape(2, 3))
    e, t = ember.from_numpy(source), torch.from_numpy(source.copy(order="K"))
    assert e.resize_(4).tolist() == t.resize_(4).tolist()
    assert np.shares_memory(e.numpy(), source)


def test_numpy_force_shares_cpu_memory_as_torch():
    for lib in (ember, torch):
        t = lib.zeros(2, requires_grad=True)
        t.numpy(force=True)[0] = 5.0
        assert t.detach().tolist() == [5.0, 0.0], lib.__name__
