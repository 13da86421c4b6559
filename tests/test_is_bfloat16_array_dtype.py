"""ember._dtype.is_bfloat16_array_dtype against NumPy's own dtype name (its slow ``.name``)."""

import ml_dtypes
import numpy as np
import pytest

from ember import _dtype as dt

_DTYPES = [np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int16, np.uint16,
                                  np.complex64, np.bool_, "V2", [("a", "<f4")])]
_DTYPES += [np.dtype(getattr(ml_dtypes, name)) for name in (
    "bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4")]


@pytest.mark.parametrize("np_dtype", _DTYPES, ids=str)
def test_agrees_with_numpy_name(np_dtype):
    assert dt.is_bfloat16_array_dtype(np_dtype) == (np_dtype.name == "bfloat16")


def test_bfloat16_of_a_bfloat16_array():
    import ember

    assert dt.is_bfloat16_array_dtype(ember.ones(2, dtype=ember.bfloat16)._data.dtype)
    assert not dt.is_bfloat16_array_dtype(ember.ones(2)._data.dtype)


@pytest.mark.parametrize("other", ["bfloat16", None, 3])
def test_objects_without_a_numpy_dtype_are_not_bfloat16(other):
    assert not dt.is_bfloat16_array_dtype(other)
