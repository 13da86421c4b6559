"""The address of a NumPy array's first element, for handing arrays to C libraries through
ctypes (oneDNN's GEMM, convolutions and norms).

NumPy's public spellings, ``array.ctypes.data`` and ``array.__array_interface__["data"][0]``,
each cost about 0.8 us (the first runs an import and builds a helper object, the second
builds a dict), and a oneDNN call passes two to six arrays. NumPy's array object is CPython's
object header followed by the ``data`` pointer (``PyArrayObject_fields``, the field NumPy's
own ``PyArray_DATA`` reads), so on CPython the address is one read at a fixed offset from the
object, about 0.1 us. That layout is checked against ``.ctypes.data`` when this module loads;
where it does not hold, or on another Python implementation (where ``id`` is no address),
:func:`data_address` is the public spelling.

Example::

    >>> a = np.arange(6.0)
    >>> data_address(a[2:]) == a[2:].ctypes.data
    True
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

__all__ = ["data_address"]

_pointer_at = ctypes.c_void_p.from_address
_DATA_OFFSET = object.__basicsize__   # the data pointer follows the object header


def _layout_holds():
    """Whether reading at the fixed offset agrees with NumPy on arrays, views and subclasses
    (checked once, before any reading is trusted)."""
    if sys.implementation.name != "cpython":
        return False
    class Subclass(np.ndarray):
        pass

    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    samples = (base, base[1:, 2:], base.T, base[:, ::2], base[1:].view(Subclass), np.empty(0))
    return all(_pointer_at(id(a) + _DATA_OFFSET).value == a.ctypes.data for a in samples)


if _layout_holds():
    def data_address(array):
        """The address of NumPy array ``array``'s first element (read from the array object:
        pass NumPy arrays only, any other object gives a meaningless number).

        Example::

            >>> a = np.zeros((4, 4), np.float32)
            >>> data_address(a[1:]) == a.ctypes.data + 16
            True
        """
        return _pointer_at(id(array) + _DATA_OFFSET).value
else:
    def data_address(array):
        """The address of NumPy array ``array``'s first element.

        Example::

            >>> a = np.zeros((4, 4), np.float32)
            >>> data_address(a[1:]) == a.ctypes.data + 16
            True
        """
        return array.ctypes.data
