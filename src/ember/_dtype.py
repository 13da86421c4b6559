"""Data types and torch's type-promotion rules.

An :class:`dtype` pairs a torch name (``ember.float32``) with the NumPy dtype that stores it.
bfloat16 comes from ``ml_dtypes``, imported the first time a bfloat16 array is needed (the
import costs about a second). Promotion follows torch, not NumPy: categories rank
bool < integer < floating < complex, and 0-dim tensors and Python scalars only matter when they
bring a higher category (see :func:`result_type`).
"""

from __future__ import annotations

import builtins

import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "half", "float", "double", "short",
    "int", "long", "cfloat", "cdouble", "chalf", "get_default_dtype", "set_default_dtype",
    "promote_types", "result_type", "can_cast", "finfo", "iinfo",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, as ``torch.dtype``.

    Example::

        >>> ember.float32.is_floating_point, ember.float32.itemsize
        (True, 4)
    """

    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "_rank")

    def __init__(self, name, np_dtype, category, rank):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = category != _BOOL and name != "uint8"
        self._rank = rank

    @property
    def is_floating_point(self):
        return self.category == _FLOAT

    @property
    def is_complex(self):
        return self.category == _COMPLEX

    def to_real(self):
        """The real counterpart of a complex dtype (``complex64 -> float32``)."""
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self):
        """The complex counterpart of a floating dtype (``float64 -> complex128``)."""
        return _REAL_TO_COMPLEX.get(self, self)

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


class _LazyNumpyDtype(dtype):
    """A dtype whose NumPy type comes from an optional package, imported on first use."""

    __slots__ = ("_load",)

    def __init__(self, name, load, category, rank, itemsize):
        self.name = name
        self._load = load
        self.itemsize = itemsize
        self.category = category
        self.is_signed = True
        self._rank = rank

    @property
    def np(self):
        resolved = np.dtype(self._load())
        _BY_NUMPY[resolved] = self
        return resolved


def _ml_dtypes_bfloat16():
    import ml_dtypes

    return ml_dtypes.bfloat16


def is_bfloat16_array_dtype(np_dtype):
    """Whether a NumPy dtype is ml_dtypes' bfloat16, without importing ml_dtypes.

    Example::

        >>> is_bfloat16_array_dtype(np.dtype(np.float16))
        False
    """
    if isinstance(np_dtype, np.dtype):  # NumPy's ``.name`` runs an import each time (1.5 us)
        return np_dtype.type.__name__ == "bfloat16"
    return getattr(np_dtype, "name", None) == "bfloat16"


class _LowPrecisionNumpyDtypes:
    """``np_dtype in LOW_PRECISION``: float16 or bfloat16 (computed in float32 by kernels)."""

    def __contains__(self, np_dtype):
        itemsize = getattr(np_dtype, "itemsize", None)
        if type(itemsize) is builtins.int and itemsize != 2:  # skip NumPy's slow ``.name``
            return False
        return np_dtype == _NP_FLOAT16 or is_bfloat16_array_dtype(np_dtype)


_NP_FLOAT16 = np.dtype(np.float16)
LOW_PRECISION = _LowPrecisionNumpyDtypes()

bool = dtype("bool", np.bool_, _BOOL, 0)
uint8 = dtype("uint8", np.uint8, _INT, 1)
int8 = dtype("int8", np.int8, _INT, 2)
int16 = dtype("int16", np.int16, _INT, 3)
int32 = dtype("int32", np.int32, _INT, 4)
int64 = dtype("int64", np.int64, _INT, 5)
float16 = dtype("float16", np.float16, _FLOAT, 6)
bfloat16 = _LazyNumpyDtype("bfloat16", _ml_dtypes_bfloat16, _FLOAT, 7, itemsize=2)
float32 = dtype("float32", np.float32, _FLOAT, 8)
float64 = dtype("float64", np.float64, _FLOAT, 9)
complex64 = dtype("complex64", np.complex64, _COMPLEX, 10)
complex128 = dtype("complex128", np.complex128, _COMPLEX, 11)

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble, chalf = complex64, complex128, None

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NUMPY = {d.np: d for d in ALL_DTYPES if d is not bfloat16}
_COMPLEX_TO_REAL = {complex64: float32, complex128: float64}
_REAL_TO_COMPLEX = {float16: complex64, bfloat16: complex64, float32: complex64,
                    float64: complex128}


def _dtype_by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype):
    """The ember dtype that stores ``np_dtype``; TypeError for types torch lacks."""
    try:
        return _BY_NUMPY[np_dtype]
    except KeyError:
        pass
    try:
        resolved = np.dtype(np_dtype)
        if is_bfloat16_array_dtype(resolved):
            return bfloat16  # an ml_dtypes array made before ember first needed bfloat16
        return _BY_NUMPY[resolved]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types "
            "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
            "uint8, and bool.") from None


def to_dtype(d):
    """Accept an ember dtype, a NumPy dtype or a Python type and return an ember dtype.

    A Python type stands for the dtype torch's argument parser maps it to, whatever the
    default dtype: ``float`` is float64, ``int`` int64, ``bool`` bool, ``complex`` complex128.

    Example::

        >>> import builtins
        >>> to_dtype(builtins.float), to_dtype(builtins.complex)
        (ember.float64, ember.complex128)
    """
    if isinstance(d, dtype):
        return d
    python_type = _PYTHON_TYPES.get(d) if isinstance(d, type) else None
    if python_type is not None:
        return python_type
    if isinstance(d, str):
        name = d.removeprefix("torch.").removeprefix("ember.")
        if name in _BY_NAME:
            return _BY_NAME[name]
        aliases = {"float": float32, "double": float64, "half": float16, "long": int64,
                   "int": int32, "short": int16, "cfloat": complex64, "cdouble": complex128}
        if name in aliases:
            return aliases[name]
        raise TypeError(f"invalid dtype string: {d!r}")
    return from_numpy_dtype(d)


_TORCH_SHORT_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def no_kernel_for(kernel, d):
    """torch's NotImplementedError for a kernel that has no version for dtype ``d``: torch
    raises it where its CPU kernel was not compiled for the dtype (a missing kernel, not an
    invalid call; docs/migrating-from-pytorch.md lists where ember has the kernel anyway).

    Example::

        >>> print(no_kernel_for("slow_conv2d_cpu", ember.bool))
        "slow_conv2d_cpu" not implemented for 'Bool'
    """
    return NotImplementedError(f'"{kernel}" not implemented for '
                               f"'{_TORCH_SHORT_NAMES.get(d.name, d.name)}'")


_PYTHON_TYPES = {builtins.float: float64, builtins.int: int64, builtins.bool: bool,
                 builtins.complex: complex128}


# ---------------------------------------------------------------- default dtype

_default_dtype = float32


def get_default_dtype():
    """The dtype of floating tensors made from Python floats (float32 unless changed).

    Example::

        >>> ember.get_default_dtype()
        ember.float32
    """
    return _default_dtype


def set_default_dtype(d):
    """Set the default floating dtype; only float16, bfloat16, float32 and float64 are allowed.

    Example::

        >>> ember.set_default_dtype(ember.float64)
        >>> ember.tensor([1.5]).dtype
        ember.float64
    """
    global _default_dtype
    d = to_dtype(d)
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_dtype = d


# ---------------------------------------------------------------- promotion

def _promote_same_category(a, b):
    if a.category == _INT:
        return from_numpy_dtype(np.promote_types(a.np, b.np))
    if {a, b} == {float16, bfloat16}:
        return float32
    return a if a._rank >= b._rank else b


def promote_types(type1, type2):
    """The smallest dtype both can be cast to, by torch's table.

    Example::

        >>> ember.promote_types(ember.int64, ember.float16)
        ember.float16
    """
    a, b = to_dtype(type1), to_dtype(type2)
    if a is b:
        return a
    if a.category == b.category:
        return _promote_same_category(a, b)
    low, high = (a, b) if a.category < b.category else (b, a)
    if high.category == _COMPLEX and low.category == _FLOAT:
        return promote_types(high, low.to_complex())
    return high


def _combine_categories(higher, lower):
    """Combine the result of a higher-priority group with a lower one, as torch does."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == _COMPLEX:
        return higher
    if lower.category == _COMPLEX:
        return higher.to_complex() if higher.category == _FLOAT else lower
    if higher.category == _FLOAT:
        return higher
    if higher is bool or lower.category == _FLOAT:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value):
    """The dtype a Python scalar takes part in promotion with (a 'wrapped number')."""
    if isinstance(value, builtins.bool):
        return bool
    if isinstance(value, builtins.int):
        return int64
    if isinstance(value, builtins.float):
        return _default_dtype
    if isinstance(value, builtins.complex):
        return _default_dtype.to_complex()
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def result_type(*operands):
    """The dtype torch would compute ``operands`` in, with scalars and 0-dim tensors weak.

    Example::

        >>> ember.result_type(ember.tensor([1, 2]), 2.5)
        ember.float32
    """
    dim_result = zero_result = scalar_result = None
    for x in operands:
        if hasattr(x, "_data") and hasattr(x, "dtype"):
            d = x.dtype
            if x.ndim:
                dim_result = d if dim_result is None else promote_types(dim_result, d)
            else:
                zero_result = d if zero_result is None else promote_types(zero_result, d)
        elif isinstance(x, dtype):
            dim_result = x if dim_result is None else promote_types(dim_result, x)
        else:
            d = scalar_dtype(x)
            scalar_result = d if scalar_result is None else promote_types(scalar_result, d)
    return _combine_categories(dim_result, _combine_categories(zero_result, scalar_result))


def can_cast(from_, to):
    """Whether torch allows a same-kind cast from ``from_`` to ``to`` (no category drop).

    Example::

        >>> ember.can_cast(ember.float64, ember.int32)
        False
    """
    return to_dtype(from_).category <= to_dtype(to).category


# ---------------------------------------------------------------- finfo / iinfo

class finfo:
    """Machine limits of a floating dtype, as ``torch.finfo``.

    Example::

        >>> ember.finfo(ember.float32).eps
        1.1920928955078125e-07
    """

    def __init__(self, type=None):
        d = to_dtype(type) if type is not None else _default_dtype
        if d.category not in (_FLOAT, _COMPLEX):
            raise TypeError(f"torch.finfo() requires a floating point input type, got {d}")
        real = d.to_real()
        if real is bfloat16:
            import ml_dtypes

            info = ml_dtypes.finfo(real.np)
        else:
            info = np.finfo(real.np)
        self.dtype = d.to_real().name
        self.bits = info.bits
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.tiny)
        self.resolution = 10.0 ** -builtins.int(info.precision)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as ``torch.iinfo``.

    Example::

        >>> ember.iinfo(ember.int8).max
        127
    """

    def __init__(self, type):
        d = to_dtype(type)
        if d.category == _BOOL:
            self.bits, self.min, self.max = 8, 0, 1
        elif d.category == _INT:
            info = np.iinfo(d.np)
            self.bits = info.bits
            self.min, self.max = builtins.int(info.min), builtins.int(info.max)
        else:
            raise TypeError(f"torch.iinfo() requires an integer input type, got {d}")
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
