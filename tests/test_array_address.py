"""ember._array_address.data_address against NumPy's own public address (``.ctypes.data``)."""

import numpy as np
import pytest

from ember._array_address import data_address

_BASE = np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5)


@pytest.mark.parametrize("array", [
    _BASE,
    _BASE[1:, 2:, 3:],                       # offset view
    _BASE.transpose(2, 0, 1),                # permuted strides
    _BASE[::-1, :, ::-2],                    # negative strides: the first element is not the lowest
    _BASE[2, 3:4, 4],
    _BASE[..., 0].T,
    np.broadcast_to(_BASE[0, 0], (7, 5)),    # read-only, zero stride
    np.empty(0, np.float64),
    np.array(3.5),                           # 0-dim array
    np.ma.masked_array(_BASE),               # subclass
    np.arange(10, dtype=np.complex128)[3:],
    np.zeros((3, 3), np.uint8)[1:, 1:],
    np.frombuffer(bytearray(64), np.float32)[5:],   # memory owned by another object
], ids=lambda a: f"{type(a).__name__}{a.shape}{a.strides}")
def test_address_matches_numpy(array):
    assert data_address(array) == array.ctypes.data


def test_address_of_a_view_is_offset_by_its_start():
    a = np.zeros((8, 8), np.float32)
    assert data_address(a[3:, 2:]) - data_address(a) == (3 * 8 + 2) * 4


def test_address_survives_a_resize_in_place():
    a = np.zeros(4, np.float64)
    a.resize(1 << 16, refcheck=False)     # reallocates: the address must be the new one
    assert data_address(a) == a.ctypes.data
