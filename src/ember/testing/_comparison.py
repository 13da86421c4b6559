"""``assert_close``: compare tensors, numbers and nested containers of them, as torch does.

The comparison runs in two phases, like torch's. First the inputs are walked (sequences
element by element, mappings key by key) and each leaf pair is *classified*: ``None``,
booleans, numbers, or tensor-likes. A structural problem (lengths, keys, unrelated types, a
lone ``rtol``) stops the walk at once. Then every leaf pair is compared and the first mismatch
is reported; only these value/attribute failures honour the ``msg`` argument.
"""

from __future__ import annotations

import cmath
import collections.abc
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor, as_tensor, sparse_coo, strided, tensor

__all__ = ["assert_close", "assert_allclose"]

# torch's default (rtol, atol) per dtype; every other dtype compares exactly.
_DEFAULT_TOLERANCES = {
    dt.float16: (1e-3, 1e-5),
    dt.bfloat16: (1.6e-2, 1e-5),
    dt.float32: (1.3e-6, 1e-5),
    dt.float64: (1e-7, 1e-7),
    dt.complex64: (1.3e-6, 1e-5),
    dt.complex128: (1e-7, 1e-7),
}

# The dtype a Python number stands for when choosing its default tolerances.
_NUMBER_DTYPES = {int: dt.int64, float: dt.float64, complex: dt.complex128}


class _Failure(Exception):
    """A failed check: the exception type to raise, its message, and where in the inputs."""

    def __init__(self, error_type, message, path=()):
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.path = path

    def to_error(self, msg=None):
        """The user-facing exception, with ``msg`` (a string or a callable) applied."""
        if isinstance(msg, str):
            return self.error_type(msg)
        text = self.message
        if self.path:
            text += "\n\nThe failure occurred for item " + "".join(str([k]) for k in self.path)
        return self.error_type(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """A leaf kind that cannot handle the given inputs; the next kind is tried."""


def _tolerances(dtypes, rtol, atol, path):
    """The (rtol, atol) to use: both given, or both defaulted to the loosest of ``dtypes``."""
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                       f"omitted, but got no {missing}.", path)
    if rtol is not None:
        return rtol, atol
    pairs = [_DEFAULT_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_message(kind, extra, abs_diff, rel_diff, rtol, atol,
                      abs_index=None, rel_index=None):
    """torch's "<kind> are not close!" report: the extra line, then both differences."""
    exact = rtol == 0 and atol == 0
    lines = [f"{kind} are not {'equal' if exact else 'close'}!", ""]
    if extra:
        lines.append(extra.strip())
    for name, diff, index, tol in (("absolute", abs_diff, abs_index, atol),
                                   ("relative", rel_diff, rel_index, rtol)):
        line = (f"{name.title()} difference: {diff}" if index is None
                else f"Greatest {name} difference: {diff} at index {index}")
        lines.append(line if exact else f"{line} (up to {tol} allowed)")
    return "\n".join(lines).strip()


def _scalar_message(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message("Scalars", f"Expected {expected} but got {actual}.", abs_diff,
                             rel_diff, rtol, atol)


# ---------------------------------------------------------------- leaf kinds


class _NoneLeaf:
    """At least one side is ``None``: both must be."""

    def __init__(self, actual, expected, path, **_):
        if actual is not None and expected is not None:
            raise _Unsupported
        self.actual, self.expected, self.path = actual, expected, path

    def compare(self):
        if not (self.actual is None and self.expected is None):
            raise _Failure(AssertionError,
                           f"None mismatch: {self.actual} is not {self.expected}", self.path)


class _BoolLeaf:
    """Python or NumPy booleans: compared for identity."""

    def __init__(self, actual, expected, path, **_):
        if not all(isinstance(v, (bool, np.bool_)) for v in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected, self.path = bool(actual), bool(expected), path

    def compare(self):
        if self.actual is not self.expected:
            raise _Failure(AssertionError,
                           f"Booleans mismatch: {self.actual} is not {self.expected}", self.path)


class _NumberLeaf:
    """Python or NumPy numbers: close within tolerances chosen from their Python type."""

    def __init__(self, actual, expected, path, *, rtol, atol, equal_nan, check_dtype, **_):
        kinds = (int, float, complex, np.number)
        if not all(isinstance(v, kinds) for v in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected = (v.item() if isinstance(v, np.number) else v
                                      for v in (actual, expected))
        self.path = path
        dtypes = [_NUMBER_DTYPES[type(v)] for v in (self.actual, self.expected)]
        self.rtol, self.atol = _tolerances(dtypes, rtol, atol, path)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        actual, expected = self.actual, self.expected
        if self.check_dtype and type(actual) is not type(expected):
            raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != "
                           f"{type(expected)}.", self.path)
        if actual == expected:
            return
        if self.equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
            return
        difference = abs(actual - expected)
        if cmath.isfinite(difference) and difference <= self.atol + self.rtol * abs(expected):
            return
        raise _Failure(AssertionError,
                       _scalar_message(actual, expected, self.rtol, self.atol), self.path)


class _TensorLeaf:
    """Tensors and tensor-likes of directly related types (NumPy arrays, Parameters, ...)."""

    def __init__(self, actual, expected, path, *, allow_subclasses, rtol, atol, equal_nan,
                 check_device, check_dtype, check_layout, check_stride, **_):
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not allow_subclasses and type(actual) is not type(expected)):
            raise _Unsupported
        self.actual, self.expected = _as_tensor(actual), _as_tensor(expected)
        self.path = path
        self.rtol, self.atol = _tolerances([self.actual.dtype, self.expected.dtype], rtol,
                                           atol, path)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype = check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    def _fail_attribute(self, name, actual_value, expected_value):
        raise _Failure(AssertionError, f"The values for attribute '{name}' do not match: "
                       f"{actual_value} != {expected_value}.", self.path)

    def compare(self):
        actual, expected = self.actual, self.expected
        self._compare_attributes(actual, expected)
        if "meta" in (actual.device.type, expected.device.type):
            return  # meta tensors have attributes but no values
        actual, expected = _equalize(actual.detach(), expected.detach())
        if actual.layout != expected.layout:  # (check_layout=False) compared dense, as torch
            actual, expected = actual.to_dense(), expected.to_dense()
        if actual.layout is sparse_coo:
            self._compare_sparse_coo(actual, expected)
        elif actual.layout is not strided:
            self._compare_sparse_compressed(actual, expected)
        else:
            self._compare_values(actual, expected)

    def _compare_sparse_coo(self, actual, expected):
        """As torch: sparse dims and nnz equal, the stored indices equal, the stored values
        close (uncoalesced tensors are compared as stored)."""
        for what, a, e in (("sparse dimensions", actual.sparse_dim(), expected.sparse_dim()),
                           ("specified values", actual._nnz(), expected._nnz())):
            if a != e:
                raise _Failure(AssertionError, f"The number of {what} in sparse COO tensors "
                               f"does not match: {a} != {e}", self.path)
        self._compare_values(actual._indices(), expected._indices(), "Sparse COO indices",
                             exact=True)
        self._compare_values(actual._values(), expected._values(), "Sparse COO values")

    def _compare_sparse_compressed(self, actual, expected):
        """As torch: nnz equal, both index tensors equal, the values close."""
        csr = actual.layout.name == "sparse_csr"
        name, compressed, plain = ("CSR", "crow_indices", "col_indices") if csr else \
            ("CSC", "ccol_indices", "row_indices")
        if actual._nnz() != expected._nnz():
            raise _Failure(AssertionError, f"The number of specified values in sparse {name} "
                           f"tensors does not match: {actual._nnz()} != {expected._nnz()}",
                           self.path)
        for indices in (compressed, plain):
            self._compare_values(getattr(actual, indices)(), getattr(expected, indices)(),
                                 f"Sparse {name} {indices}", exact=True)
        self._compare_values(actual.values(), expected.values(), f"Sparse {name} values")

    def _compare_attributes(self, actual, expected):
        if actual.shape != expected.shape:
            self._fail_attribute("shape", actual.shape, expected.shape)
        if actual.layout != expected.layout:
            if self.check_layout:
                self._fail_attribute("layout", actual.layout, expected.layout)
        elif self.check_stride and actual.stride() != expected.stride():
            self._fail_attribute("stride()", actual.stride(), expected.stride())
        if self.check_device and actual.device != expected.device:
            self._fail_attribute("device", actual.device, expected.device)
        if self.check_dtype and actual.dtype != expected.dtype:
            self._fail_attribute("dtype", actual.dtype, expected.dtype)

    def _compare_values(self, actual, expected, kind="Tensor-likes", exact=False):
        from ..ops.pointwise import isclose

        rtol, atol = (0.0, 0.0) if exact else (self.rtol, self.atol)
        if actual.shape != expected.shape:  # (the stored parts of sparse tensors)
            raise _Failure(AssertionError, f"{kind} are not {'equal' if exact else 'close'}!"
                           f"\n\nThe shapes do not match: {list(actual.shape)} != "
                           f"{list(expected.shape)}", self.path)
        matches = isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=self.equal_nan)
        if bool(matches.all()):
            return
        if actual.dim() == 0:
            message = _scalar_message(actual.item(), expected.item(), rtol, atol)
        else:
            message = _tensor_message(actual, expected, matches, rtol, atol, kind)
        raise _Failure(AssertionError, message, self.path)


_LEAF_KINDS = (_NoneLeaf, _BoolLeaf, _NumberLeaf, _TensorLeaf)


def _as_tensor(value):
    if isinstance(value, Tensor):
        return value
    try:
        return as_tensor(value)
    except Exception:
        raise _Unsupported from None


def _equalize(actual, expected):
    """Both on one device (the CPU if they differ) and of one promoted dtype."""
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype != expected.dtype:
        common = dt.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    return actual, expected


def _tensor_message(actual, expected, matches, rtol, atol, kind="Tensor-likes"):
    """Mismatch counts and the greatest differences (among mismatches) with their indices."""
    total = matches.numel()
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    actual_flat, expected_flat = actual.flatten(), expected.flatten()
    matches_flat = matches.flatten()
    if not (actual.dtype.is_floating_point or actual.dtype.is_complex):
        # Integer differences are taken in int64 so that they cannot wrap around.
        actual_flat, expected_flat = actual_flat.to(dt.int64), expected_flat.to(dt.int64)
    abs_diff = (actual_flat - expected_flat).abs()
    abs_diff[matches_flat] = 0
    with np.errstate(divide="ignore", invalid="ignore"):  # x/0 is inf or nan, as in torch
        rel_diff = abs_diff / expected_flat.abs()
    rel_diff[matches_flat] = 0
    abs_max, abs_at = abs_diff.max(0)
    rel_max, rel_at = rel_diff.max(0)
    shape = tuple(matches.shape)
    return _mismatch_message(kind, extra, abs_max.item(), rel_max.item(), rtol, atol,
                             _unravel(int(abs_at), shape), _unravel(int(rel_at), shape))


def _unravel(flat_index, shape):
    return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()


# ---------------------------------------------------------------- walking the inputs


def _is_sequence(value):
    return isinstance(value, collections.abc.Sequence) and not isinstance(value, str)


def _leaves(actual, expected, path, options):
    """Classify every leaf pair of two nested structures (raises on structural mismatches)."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, "The length of the sequences mismatch: "
                           f"{len(actual)} != {len(expected)}", path)
        leaves = []
        for i in range(len(actual)):
            leaves += _leaves(actual[i], expected[i], (*path, i), options)
        return leaves
    if (isinstance(actual, collections.abc.Mapping)
            and isinstance(expected, collections.abc.Mapping)):
        return _mapping_leaves(actual, expected, path, options)
    for kind in _LEAF_KINDS:
        try:
            return [kind(actual, expected, path, **options)]
        except _Unsupported:
            continue
    raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                   f"{type(actual)} and {type(expected)}.", path)


def _mapping_leaves(actual, expected, path, options):
    actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
    if actual_keys != expected_keys:
        raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                       f"Missing keys in the actual mapping: "
                       f"{sorted(expected_keys - actual_keys)}\n"
                       f"Additional keys in the actual mapping: "
                       f"{sorted(actual_keys - expected_keys)}", path)
    try:
        keys = sorted(actual_keys)  # a deterministic order, so the first failure is stable
    except TypeError:
        keys = list(actual_keys)
    leaves = []
    for key in keys:
        leaves += _leaves(actual[key], expected[key], (*path, key), options)
    return leaves


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close: ``|a - e| <= atol + rtol * |e|``.

    Inputs may be tensors, NumPy arrays, Python/NumPy numbers and booleans, ``None``, or
    sequences and mappings of these (compared element by element). Tensors must also agree on
    shape and, unless the ``check_*`` flags say otherwise, on device and dtype. Without
    ``rtol``/``atol`` the defaults come from the dtype (float32: 1.3e-6 and 1e-5, float64:
    1e-7 and 1e-7, float16: 1e-3 and 1e-5, bfloat16: 1.6e-2 and 1e-5, integers: exact).
    ``msg`` replaces the failure message, or (a callable) rewrites it.

    Raises ``AssertionError`` (with torch's report of mismatched elements and the greatest
    absolute and relative differences), ``TypeError`` for inputs of unrelated types, and
    ``ValueError`` when only one of ``rtol`` and ``atol`` is given.

    Example::

        >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0]))
        >>> ember.testing.assert_close(ember.tensor([1.0, 4.0, 5.0]),
        ...                            ember.tensor([1.0, 2.0, 3.0]))
        Traceback (most recent call last):
        ...
        AssertionError: Tensor-likes are not close!
        <BLANKLINE>
        Mismatched elements: 2 / 3 (66.7%)
        Greatest absolute difference: 2.0 at index (1,) (up to 1e-05 allowed)
        Greatest relative difference: 1.0 at index (1,) (up to 1.3e-06 allowed)
    """
    __tracebackhide__ = True
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol,
               "equal_nan": equal_nan, "check_device": check_device, "check_dtype": check_dtype,
               "check_layout": check_layout, "check_stride": check_stride}
    try:
        leaves = _leaves(actual, expected, (), options)
    except _Failure as failure:
        raise failure.to_error() from None
    for leaf in leaves:
        try:
            leaf.compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None


# Defaults of the deprecated ``assert_allclose`` (looser than ``assert_close``'s).
_ALLCLOSE_TOLERANCES = {dt.float16: (1e-3, 1e-3), dt.float32: (1e-4, 1e-5),
                        dt.float64: (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated: use :func:`assert_close`. Warns with torch's ``FutureWarning``.

    Non-tensors become tensors (``expected`` in ``actual``'s dtype); dtypes are not checked;
    NaNs compare equal by default; default tolerances are looser (float32: 1e-4 and 1e-5).

    Example::

        >>> ember.testing.assert_allclose(ember.tensor([1.0, 2.0]), [1.0, 2.00001])
    """
    warnings.warn("`ember.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `ember.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_ALLCLOSE_TOLERANCES.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)
