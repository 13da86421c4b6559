"""The CUDA code paths, checked without a GPU.

Every kernel receives the array module ``xp`` (NumPy on cpu, CuPy on cuda) and must compute with
it alone. An AST scan of ember's kernels and device-generic helpers fails, with file:line, on
anything that would break (or silently fall back to the host) on CuPy arrays:

* ``np.``/``numpy.`` calls other than dtype and shape metadata (``ALLOWED_NP``), ``scipy``;
* NumPy-only features: ``np.lib.stride_tricks``, ``ufunc.at`` (CuPy: ``cupyx.scatter_add``),
  ``.base`` chains, ``np.frombuffer``;
* host syncs: ``.item()``, ``.tolist()``, ``.get()`` and ``bool()/int()/float()`` of an array
  expression, except where a documented entry of ``HOST_SYNC_ALLOWED`` says why it is needed.

Code inside an ``if xp is np:`` branch (or its ``xp is not np`` else branch) is the CPU-only
path and is not scanned. Functions that are not kernels are scanned for ``np.<fn>(... ._data
...)``: NumPy functions applied to a tensor's device array outside a kernel.

The second half checks that, with ``ember.cuda.is_available()`` False, every cuda entry point
raises a RuntimeError that says so (torch built with CUDA raises RuntimeError on a machine
without a driver).
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import ember

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "ember"

# the files whose kernels must run unchanged on CuPy
SCANNED = sorted(
    [p for p in (SRC / "ops").rglob("*.py")]  # families split into packages (ops/pointwise/...)
    + [SRC / "nn" / "_functional" / f"{name}.py" for name in (
        "activation", "softmax", "conv", "normalization", "embedding", "loss", "attention",
        "distance", "dropout", "linear", "pooling", "adaptive_pooling")]
    + [SRC / "autograd" / "views.py"])

# NumPy names a kernel may use: dtypes and scalar constants, and functions of dtypes and shapes
# only (they never see an array), plus errstate (a no-op for CuPy's kernels).
ALLOWED_NP = {
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", "intp", "uintp",
    "dtype", "iinfo", "finfo", "result_type", "promote_types", "can_cast", "issubdtype",
    "floating", "integer", "signedinteger", "unsignedinteger", "complexfloating", "number",
    "inexact", "generic", "bool", "ndarray",
    "pi", "e", "inf", "nan", "newaxis", "euler_gamma",
    "broadcast_shapes", "errstate", "ndindex",
}
# of those, the ones that must be given dtypes (an array would be converted to NumPy)
_DTYPE_FUNCTIONS = {"dtype", "iinfo", "finfo", "result_type", "promote_types", "can_cast",
                    "issubdtype"}

# NumPy functions CuPy 14 lacks (numpy 2.4 namespace minus CuPy's): ``xp.<name>`` fails on cuda
CUPY_LACKS = {
    "": {"asmatrix", "block", "bmat", "busday_count", "busday_offset", "datetime_as_string",
         "datetime_data", "einsum_path", "frompyfunc", "fromregex", "geomspace",
         "histogram_bin_edges", "insert", "is_busday", "isnat", "matvec", "nanpercentile",
         "nanquantile", "nested_iters", "polyder", "polydiv", "polyint", "spacing", "unstack",
         "vecdot", "vecmat", "seterr", "geterr"},
    "linalg": {"diagonal", "matrix_norm", "multi_dot", "outer", "svdvals", "tensordot",
               "trace", "vecdot", "vector_norm"},
}
# ufunc methods CuPy has, and for which ufuncs (CuPy's ufunc reference)
CUPY_UFUNC_METHODS = {
    "reduce": {"add", "multiply"},
    "accumulate": {"add", "multiply"},
    "reduceat": {"add"},
    "at": {"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"},
}

# Functions allowed to synchronise with the GPU (``.item()``, ``.tolist()``, ``.get()``,
# ``bool/int/float(array)``, ``xp.asnumpy``, ``ops._util.host_values``), and why.
HOST_SYNC_ALLOWED = {
    ("_util.py", "host_values"): "the one helper that copies device scalars to the host",
    ("_copies.py", "_copy_kernel"): "a cuda -> cpu copy is the op itself",
    ("_kernels.py", "_check_range"): "out-of-range indices must raise (CuPy would wrap them)",
    ("_kernels.py", "_ufunc_at_rounds"): "the number of rounds is the largest repetition",
    ("loss.py", "_bce_op"): "torch's range checks of input and target (one copy for both)",
    ("histograms.py", "bincount_op"): "the output size is the largest value",
    ("histograms.py", "_histogram_range"): "the bins span the data's min and max",
    ("histograms.py", "histogram_op"): "the bins span the data's min and max",
    ("matrix_functions.py", "_expm_kernel"): "the number of squarings depends on the norm",
    ("_common.py", "_singular_error"): "error path: locates the zero pivot on a host copy",
    ("decompositions.py", "_not_pd_error"): "error path: locates the failing minor on a host copy",
    ("decompositions.py", "_host_linalg"): "eig/eigvals: CuPy has no general eigensolver",
    ("matrix_functions.py", "_scaled_taylor_18"): "the number of squarings depends on the norms",
    ("histograms.py", "bin_positions"): "sorted edges take the library's search (one check)",
    ("creation.py", "checked_int"): "reads a NumPy scalar parameter, never a device array",
    ("_util.py", "svd"): "NaN must raise and inf give NaN as in torch (LAPACK's gesdd may hang "
                         "on them): one finiteness check",
    ("decompositions.py", "cholesky_op"): "a non-finite matrix fails as torch's potrf: one check",
}

# Functions allowed to use NumPy/SciPy because they work on host arrays, and why.
NP_ALLOWED = {
    ("_common.py", "_singular_error"): "error path on a host copy (xp.asnumpy)",
    ("_common.py", "_zero_pivot"): "error path: one host matrix's LU (called by _singular_error)",
    ("decompositions.py", "_first_bad_minor"): "error path on a host copy (called by _not_pd_error)",
    ("decompositions.py", "_host_linalg"): "NumPy's LAPACK on a host copy for what CuPy lacks",
    ("softmax.py", "_softmax_rows"): "the blocked CPU kernel, reached only when "
                                        "_by_rows found NumPy arrays",
    ("softmax.py", "_row_sums"): "row sums of the blocked CPU kernels (NumPy arrays only)",
    ("normalization.py", "_variance"): "oneDNN's variances, reached only on the oneDNN path "
                                       "(NumPy arrays, _on_onednn)",
    ("_onednn_gemm.py", "sgemm"): "oneDNN's GEMM, the matrix products' CPU device kernel "
                                  "(NumPy arrays only)",
}


def _is_np(node):
    return isinstance(node, ast.Name) and node.id in ("np", "numpy")


def _is_xp(node):
    return isinstance(node, ast.Name) and node.id == "xp"


def _xp_is_np(test):
    """+1 for ``xp is np`` (or ``xp is np and ...``), -1 for ``xp is not np``, else 0."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_xp(test.left) \
            and _is_np(test.comparators[0]):
        if isinstance(test.ops[0], ast.Is):
            return 1
        if isinstance(test.ops[0], ast.IsNot):
            return -1
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
            and _xp_is_np(test.values[0]) == 1:
        return 1
    return 0


def _kernel_arrays(fn):
    """The array parameters of a kernel ``fn(xp, *arrays, **params)``; None if not a kernel."""
    args = fn.args.posonlyargs + fn.args.args
    if not args or args[0].arg != "xp":
        return None
    names = {a.arg for a in args[1:] if "dtype" not in a.arg}
    if fn.args.vararg is not None:
        names.add(fn.args.vararg.arg)
    return names


_SYNC_METHODS = {"item", "tolist", "get"}
_SYNC_FUNCTIONS = {"host_values"}
_REDUCING_METHODS = {"any", "all", "sum", "max", "min", "prod", "mean", "argmax", "argmin"}


class _Scanner(ast.NodeVisitor):
    """One file's problems. ``helpers`` are functions of the file that kernels call: they are
    scanned as kernels too (``called`` collects the names kernels call)."""

    def __init__(self, path, name, helpers=frozenset()):
        self.path = path
        self.name = name
        self.helpers = helpers
        self.problems = []
        self.called = set()
        self.stack = []          # enclosing function names
        self.arrays = []         # array parameters of the enclosing kernels
        self.kernel_depth = 0    # > 0 inside a kernel (or a function nested in one)

    # -------------------------------------------------------------- traversal

    def _report(self, node, what):
        self.problems.append(f"{self.path}:{node.lineno}: {what} "
                             f"(in {'.'.join(self.stack) or '<module>'})")

    def _visit_function(self, node, name, body):
        arrays = _kernel_arrays(node)
        kernel = arrays is not None or name in self.helpers
        self.stack.append(name)
        self.arrays.append(arrays or set())
        self.kernel_depth += kernel
        for d in getattr(node, "decorator_list", ()):
            self.visit(d)
        if isinstance(body, list):
            self._block(body)
        else:
            self.visit(body)
        self.kernel_depth -= kernel
        self.arrays.pop()
        self.stack.pop()

    def visit_FunctionDef(self, node):
        self._visit_function(node, node.name, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._visit_function(node, "<lambda>", node.body)

    def _block(self, stmts):
        """Visit statements; after ``if xp is not np: return ...`` the rest is CPU-only."""
        for stmt in stmts:
            self.visit(stmt)
            if isinstance(stmt, ast.If) and _xp_is_np(stmt.test) == -1 and not stmt.orelse \
                    and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
                return

    def visit_If(self, node):
        branch = _xp_is_np(node.test)
        if branch != 1:
            self.visit(node.test)
            self._block(node.body)
        else:
            self.visit(node.test.values[0] if isinstance(node.test, ast.BoolOp) else node.test)
        if branch != -1:
            self._block(node.orelse)

    def visit_IfExp(self, node):
        branch = _xp_is_np(node.test)
        if branch != 1:
            self.visit(node.body)
        if branch != -1:
            self.visit(node.orelse)

    def visit_BoolOp(self, node):
        # ``xp is np and <cpu-only expression>``
        if _xp_is_np(node) == 1:
            return
        self.generic_visit(node)

    # -------------------------------------------------------------- checks

    def _allowed(self, table):
        return any((self.name, fn) in table for fn in self.stack)

    def visit_Attribute(self, node):
        if not self.kernel_depth:
            self.generic_visit(node)
            return
        value = node.value
        if node.attr == "LinAlgError" and isinstance(value, ast.Attribute) \
                and value.attr == "linalg" and _is_np(value.value):
            return  # CuPy raises numpy.linalg.LinAlgError too
        if _is_np(value) and node.attr not in ALLOWED_NP and not self._allowed(NP_ALLOWED):
            self._report(node, f"np.{node.attr} in a kernel")
        if isinstance(value, ast.Name) and value.id == "scipy" \
                and not self._allowed(NP_ALLOWED):
            self._report(node, "scipy in a kernel (use ember.ops._util.scipy_special(xp))")
        if node.attr == "base" and isinstance(node.ctx, ast.Load):
            self._report(node, ".base chain in a kernel (CuPy views made from a pointer have "
                               "none)")
        if node.attr == "stride_tricks" and isinstance(value, ast.Attribute) \
                and _is_np(value.value):
            self._report(node, "np.lib.stride_tricks in a kernel (use xp.lib.stride_tricks)")
        if _is_xp(value):
            space = ""
        elif isinstance(value, ast.Attribute) and _is_xp(value.value) \
                and value.attr in CUPY_LACKS:
            space = value.attr + "."
        else:
            space = None
        if space is not None and node.attr in CUPY_LACKS[space.rstrip(".")]:
            self._report(node, f"xp.{space}{node.attr}: CuPy has no such function")
        if node.attr in CUPY_UFUNC_METHODS:
            ufunc = value.attr if isinstance(value, ast.Attribute) and _is_xp(value.value) \
                else None
            dynamic = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                and value.func.id == "getattr" and value.args and _is_xp(value.args[0])
            if dynamic or (ufunc is not None and ufunc not in CUPY_UFUNC_METHODS[node.attr]):
                self._report(node, f"xp.{ufunc or '<ufunc>'}.{node.attr}: CuPy has "
                                   f"{node.attr} only for {sorted(CUPY_UFUNC_METHODS[node.attr])}"
                                   " (see ember.ops._util)")
        self.generic_visit(node)

    def visit_Import(self, node):
        if self.kernel_depth and not self._allowed(NP_ALLOWED):
            for alias in node.names:
                if alias.name.split(".")[0] in ("numpy", "scipy"):
                    self._report(node, f"import {alias.name} in a kernel")

    def visit_ImportFrom(self, node):
        if self.kernel_depth and (node.module or "").split(".")[0] in ("numpy", "scipy") \
                and not self._allowed(NP_ALLOWED):
            self._report(node, f"from {node.module} import in a kernel")

    def visit_Call(self, node):
        func = node.func
        if self.kernel_depth:
            if isinstance(func, ast.Name):
                self.called.add(func.id)
            self._check_sync(node, func)
            if isinstance(func, ast.Attribute) and _is_np(func.value) \
                    and func.attr in _DTYPE_FUNCTIONS:
                arrays = self.arrays[-1]
                for arg in node.args:
                    if isinstance(arg, ast.Name) and arg.id in arrays:
                        self._report(node, f"np.{func.attr}({arg.id}) of an array: pass "
                                           f"{arg.id}.dtype")
        elif isinstance(func, ast.Attribute) and _is_np(func.value) \
                and func.attr not in ALLOWED_NP and any(_touches_data(a) for a in node.args):
            self._report(node, f"np.{func.attr}(tensor._data) outside a kernel")
        self.generic_visit(node)

    def _check_sync(self, node, func):
        if self._allowed(HOST_SYNC_ALLOWED):
            return
        if isinstance(func, ast.Attribute) and func.attr in _SYNC_METHODS and not node.args \
                and not node.keywords:
            self._report(node, f".{func.attr}() host sync in a kernel")
        elif isinstance(func, ast.Attribute) and func.attr == "asnumpy" and _is_xp(func.value):
            self._report(node, "xp.asnumpy host sync in a kernel")
        elif isinstance(func, ast.Name) and func.id in _SYNC_FUNCTIONS:
            self._report(node, f"{func.id}() host sync in a kernel")
        elif isinstance(func, ast.Name) and func.id in ("bool", "int", "float", "complex") \
                and len(node.args) == 1 and _array_expression(node.args[0]):
            self._report(node, f"{func.id}(array) host sync in a kernel")


def _array_expression(node):
    """An expression that computes on arrays: an xp call or a reducing method call in it."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            if _is_xp(sub.func.value) or sub.func.attr in _REDUCING_METHODS:
                return True
    return False


_METADATA = {"dtype", "shape", "ndim", "size", "strides", "itemsize", "nbytes"}


def _touches_data(node):
    """Whether ``node`` uses some tensor's ``._data`` array itself (not only its metadata)."""
    parents = {}
    for sub in ast.walk(node):
        for child in ast.iter_child_nodes(sub):
            parents[child] = sub
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr == "_data":
            parent = parents.get(sub)
            if not (isinstance(parent, ast.Attribute) and parent.attr in _METADATA):
                return True
    return False


def scan_source(text, path="<source>"):
    """Every CuPy-incompatible use in one file's source, as 'path:line: what (in function)'."""
    tree = ast.parse(text, path)
    name = pathlib.PurePath(path).name
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    helpers = frozenset()
    while True:  # the functions kernels call, transitively, are scanned as kernels
        scanner = _Scanner(path, name, helpers)
        scanner.visit(tree)
        more = helpers | (scanner.called & defined)
        if more == helpers:
            return scanner.problems
        helpers = more


def scan(paths=SCANNED):
    """Every CuPy-incompatible use in ember's kernels."""
    problems = []
    for path in paths:
        problems.extend(scan_source(path.read_text(), str(path.relative_to(SRC.parents[1]))))
    return problems


# ------------------------------------------------------------------------------- the scan


def test_kernels_use_only_xp():
    problems = scan()
    assert not problems, "CuPy-incompatible code in kernels:\n" + "\n".join(problems)


def test_allow_lists_name_existing_functions():
    """Every allow-list entry names a function that exists (no stale exemptions)."""
    defined = {}
    for path in SCANNED:
        tree = ast.parse(path.read_text())
        defined.setdefault(path.name, set()).update(
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    for table in (HOST_SYNC_ALLOWED, NP_ALLOWED):
        for (file, function), reason in table.items():
            assert function in defined[file], f"{file}:{function} is gone"
            assert reason


_OFFENDERS = """
import numpy as np
import scipy.special

def good_kernel(xp, a, b, *, dtype):
    if xp is np:
        np.add.at(a, [0], 1)
        return scipy.special.erf(a)
    if xp is np and not np.all(b):
        raise RuntimeError
    x = np.float32(1) if a.dtype == np.float16 else np.asarray(a) if xp is np else a
    with np.errstate(over="ignore"):
        y = xp.cumsum(a, axis=0) + np.finfo(a.dtype).eps + np.iinfo(dtype).max
    try:
        xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        pass
    if xp is not np:
        return xp.matmul(a, b)
    return np.matmul(a, b, out=np.empty(a.shape))

def bad_kernel(xp, a, b):
    c = np.asarray(a) + np.zeros(3)
    d = scipy.special.erf(a)
    np.add.at(a, [0], 1)
    e = np.lib.stride_tricks.as_strided(a, (2,), (8,))
    f = a.base
    n = int(a.max()) + float(xp.sum(b))
    g = xp.maximum.accumulate(a, axis=0)
    h = getattr(xp, "minimum").reduce(a)
    i = xp.multiply.at(a, [0], 2)
    j = a.item() + len(b.tolist())
    k = xp.geomspace(1, 2) + xp.linalg.multi_dot([a, b])
    t = np.result_type(a, b)
    return _helper(a)

def _helper(a):
    return np.sort(a)

def not_a_kernel(t, u):
    return np.sum(t._data) + np.zeros((), t._data.dtype) + np.broadcast_to(u, t._data.shape)
"""


def test_scan_finds_what_breaks_on_cupy():
    """The scanner itself: everything in ``bad_kernel`` is found, nothing in ``good_kernel``."""
    problems = scan_source(_OFFENDERS, "src/ember/ops/example.py")
    found = {(int(p.split(":")[1]), p.split(": ", 1)[1].split(" (in ")[0]) for p in problems}
    lines = _OFFENDERS.splitlines()

    def line_of(text):
        return next(i + 1 for i, line in enumerate(lines) if text in line)

    expected = {
        (line_of("c = np.asarray"), "np.asarray in a kernel"),
        (line_of("c = np.asarray"), "np.zeros in a kernel"),
        (line_of("d = scipy"), "scipy in a kernel (use ember.ops._util.scipy_special(xp))"),
    }
    messages = "\n".join(problems)
    for lineno, what in expected:
        assert (lineno, what) in found, messages
    bad = range(line_of("def bad_kernel"), line_of("def not_a_kernel") + 3)
    flagged = {lineno for lineno, _ in found}
    # every statement of bad_kernel (but its return) and _helper and not_a_kernel is flagged
    for lineno in range(line_of("c = np.asarray"), line_of("return _helper")):
        assert lineno in flagged, f"line {lineno} ({lines[lineno - 1].strip()}) not flagged"
    assert line_of("return np.sort(a)") in flagged  # a helper a kernel calls is a kernel
    assert line_of("return np.sum(t._data)") in flagged
    # nothing outside bad_kernel, _helper and not_a_kernel
    assert flagged <= set(bad), messages
    text = messages
    for what in ("np.add in", "np.lib.stride_tricks", ".base chain", "int(array)",
                 "float(array)", "xp.maximum.accumulate", "xp.<ufunc>.reduce",
                 "xp.multiply.at", ".item()", ".tolist()", "xp.geomspace", "xp.linalg.multi_dot",
                 "np.result_type(a)", "np.sort", "np.sum(tensor._data)"):
        assert what in text, f"{what!r} not reported:\n{text}"
    assert "np.zeros(tensor._data)" not in text  # ._data.dtype is metadata
    assert "np.broadcast_to(tensor._data)" not in text


# ------------------------------------------------------------------------------- GPU helpers on NumPy
# The GPU-only branches of ember.ops._util and ops.index run on NumPy here, checked against the
# NumPy functions they replace on CuPy.


# the ufuncs kernels scan (their result has the input's dtype)
_SCANS = [(name, dtype) for name in ("maximum", "minimum", "fmax", "fmin")
          for dtype in ("float64", "float32", "float16", "int64", "int8", "bool")] \
    + [("logical_or", "bool"), ("add", "float64"), ("add", "int64")]


@pytest.mark.parametrize("name,dtype", _SCANS)
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 5), 1), ((3, 5), -2), ((4, 1, 9), -1),
                                         ((0, 3), 0), ((2, 0), 1), ((1,), 0), ((2, 33), 1)])
def test_scan_matches_ufunc_accumulate(name, shape, axis, dtype):
    from ember.ops import _util

    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    if dtype.startswith("float") and a.size > 2:
        a.flat[rng.integers(0, a.size, 2)] = np.nan
    expected = getattr(np, name).accumulate(a, axis=axis)
    actual = _util.scan(np, name, a, axis)
    assert actual.dtype == expected.dtype
    if name == "add" and dtype.startswith("float"):  # summed in another order
        np.testing.assert_allclose(actual, expected, rtol=1e-12)
    else:
        np.testing.assert_array_equal(actual, expected)
    np.testing.assert_array_equal(_util.accumulate(np, name, a, axis), expected)


def test_scan_of_a_transposed_view_leaves_it_alone():
    from ember.ops import _util

    a = np.arange(12.0)[::-1].reshape(3, 4).T
    before = a.copy()
    np.testing.assert_array_equal(_util.scan(np, "maximum", a, 0), np.maximum.accumulate(a, 0))
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_ufunc_at_rounds_matches_ufunc_at(name, dtype):
    from ember.ops import index

    rng = np.random.default_rng(1)
    out = rng.integers(1, 5, (4, 6)).astype(dtype)
    rows = rng.integers(0, 4, 30)
    cols = rng.integers(0, 6, 30)
    values = rng.integers(1, 4, 30).astype(dtype)
    expected = out.copy()
    getattr(np, name).at(expected, (rows, cols), values)
    actual = out.copy()
    index._ufunc_at_rounds(np, name, actual, (rows, cols), values)
    np.testing.assert_array_equal(actual, expected)
    empty = out.copy()
    index._ufunc_at_rounds(np, name, empty, (rows[:0], cols[:0]), values[:0])
    np.testing.assert_array_equal(empty, out)


def test_host_values_and_scalar():
    from ember.ops import _util

    a = np.arange(5)
    assert _util.host_values(np, a.min(), a.max()) == [0, 4]
    assert all(type(v) is int for v in _util.host_values(np, a.min(), a.max()))
    value = _util.scalar(300, np.dtype(np.int8))
    assert isinstance(value, np.generic) and value.dtype == np.int8 and value == 44
    assert _util.scalar(1e300, np.dtype(np.float16)) == np.inf
    assert _util.scipy_special(np).erf(np.float64(0.0)) == 0.0
    out = np.zeros(3)
    _util.scatter_add(np, out, np.array([0, 0, 2]), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(out, [3.0, 0.0, 3.0])
    assert _util.as_strided(np) is np.lib.stride_tricks.as_strided
    with _util.linalg_errors(np), pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(np.zeros((2, 2)))


def test_bfloat16_is_refused_on_cuda():
    from ember._device import check_cuda_dtype

    with pytest.raises(TypeError, match="bfloat16"):
        check_cuda_dtype(ember.bfloat16)
    with pytest.raises(TypeError, match="bfloat16"):
        check_cuda_dtype(ember.bfloat16.np)
    for d in (ember.float16, ember.float32, ember.int64, ember.bool, ember.complex64):
        check_cuda_dtype(d)
        check_cuda_dtype(d.np)


# ------------------------------------------------------------------------------- CuPy itself


def test_kernels_name_only_what_cupy_has():
    """With CuPy installed (the GPU machine), every ``xp.<chain>`` the kernels use exists."""
    cupy = pytest.importorskip("cupy")
    missing = []
    for path in SCANNED:
        for node in ast.walk(ast.parse(path.read_text())):
            chain = []
            while isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            if not (chain and _is_xp(node)):
                continue
            obj = cupy
            for part in reversed(chain):
                if not hasattr(obj, part):
                    missing.append(f"{path.name}: xp.{'.'.join(reversed(chain))}")
                    break
                obj = getattr(obj, part)
    assert not missing, "\n".join(sorted(set(missing)))


# ------------------------------------------------------------------------------- without a GPU

no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="checks the machine without GPU")


def _cpu_pairs():
    import torch

    e, t = ember.zeros(2), torch.zeros(2)
    return [
        ("zeros", lambda: ember.zeros(2, device="cuda"), lambda: torch.zeros(2, device="cuda")),
        ("ones", lambda: ember.ones(2, device="cuda:0"), lambda: torch.ones(2, device="cuda:0")),
        ("empty", lambda: ember.empty(2, device="cuda"), lambda: torch.empty(2, device="cuda")),
        ("full", lambda: ember.full((2,), 1.0, device="cuda"),
         lambda: torch.full((2,), 1.0, device="cuda")),
        ("arange", lambda: ember.arange(3, device="cuda"), lambda: torch.arange(3, device="cuda")),
        ("linspace", lambda: ember.linspace(0, 1, 3, device="cuda"),
         lambda: torch.linspace(0, 1, 3, device="cuda")),
        ("eye", lambda: ember.eye(2, device="cuda"), lambda: torch.eye(2, device="cuda")),
        ("tensor", lambda: ember.tensor([1.0], device="cuda"),
         lambda: torch.tensor([1.0], device="cuda")),
        ("as_tensor", lambda: ember.as_tensor(np.ones(2), device="cuda"),
         lambda: torch.as_tensor(np.ones(2), device="cuda")),
        ("randn", lambda: ember.randn(2, device="cuda"), lambda: torch.randn(2, device="cuda")),
        ("rand", lambda: ember.rand(2, device="cuda"), lambda: torch.rand(2, device="cuda")),
        ("randint", lambda: ember.randint(0, 5, (2,), device="cuda"),
         lambda: torch.randint(0, 5, (2,), device="cuda")),
        ("zeros_like", lambda: ember.zeros_like(e, device="cuda"),
         lambda: torch.zeros_like(t, device="cuda")),
        ("randn_like", lambda: ember.randn_like(e, device="cuda"),
         lambda: torch.randn_like(t, device="cuda")),
        ("Tensor.cuda", lambda: e.cuda(), lambda: t.cuda()),
        ("Tensor.cuda(1)", lambda: e.cuda(1), lambda: t.cuda(1)),
        ("Tensor.to", lambda: e.to("cuda"), lambda: t.to("cuda")),
        ("Tensor.to(device)", lambda: e.to(ember.device("cuda", 0)),
         lambda: t.to(torch.device("cuda", 0))),
        ("Tensor.new_zeros", lambda: e.new_zeros(2, device="cuda"),
         lambda: t.new_zeros(2, device="cuda")),
        ("Module.cuda", lambda: ember.nn.Linear(2, 2).cuda(), lambda: torch.nn.Linear(2, 2).cuda()),
        ("Module.to", lambda: ember.nn.Linear(2, 2).to("cuda"),
         lambda: torch.nn.Linear(2, 2).to("cuda")),
        ("current_device", ember.cuda.current_device, torch.cuda.current_device),
        ("synchronize", ember.cuda.synchronize, torch.cuda.synchronize),
        ("get_device_name", ember.cuda.get_device_name, torch.cuda.get_device_name),
        ("get_device_capability", ember.cuda.get_device_capability,
         torch.cuda.get_device_capability),
        ("get_device_properties", lambda: ember.cuda.get_device_properties(0),
         lambda: torch.cuda.get_device_properties(0)),
        ("init", ember.cuda.init, torch.cuda.init),
        ("set_device", lambda: ember.cuda.set_device(0), lambda: torch.cuda.set_device(0)),
    ]


@no_gpu
@pytest.mark.parametrize("index", range(len(_cpu_pairs())), ids=[p[0] for p in _cpu_pairs()])
def test_cuda_entry_points_raise_without_gpu(index):
    """Each entry point raises a RuntimeError naming the missing driver/CuPy, where torch (a
    CPU build here) refuses too; a CUDA build of torch on a machine without driver raises a
    RuntimeError ("Found no NVIDIA driver on your system")."""
    _, ember_call, torch_call = _cpu_pairs()[index]
    with pytest.raises(Exception):  # noqa: B017 - torch's CPU build: AssertionError and others
        torch_call()
    with pytest.raises(RuntimeError, match="NVIDIA driver|CuPy"):
        ember_call()


@no_gpu
def test_cuda_queries_without_gpu_match_torch():
    import torch

    for name in ("is_available", "device_count", "is_initialized", "is_bf16_supported",
                 "memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved", "empty_cache"):
        assert getattr(ember.cuda, name)() == getattr(torch.cuda, name)(), name
    # seeding the GPU generators is silently ignored without a GPU, as in torch
    assert ember.cuda.manual_seed(0) is None and torch.cuda.manual_seed(0) is None
    assert ember.cuda.manual_seed_all(0) is None and torch.cuda.manual_seed_all(0) is None
    assert ember.manual_seed(3) is not None
    # naming a cuda device needs no GPU
    assert repr(ember.device("cuda")) == repr(torch.device("cuda")).replace("torch", "ember")
    assert repr(ember.device("cuda:1")) == repr(torch.device("cuda:1"))
    assert ember.zeros(2).is_cuda is False and ember.zeros(2).get_device() == -1


def test_meta_numpy_error_names_the_device():
    import torch

    with pytest.raises(TypeError) as expected:
        torch.zeros(2, device="meta").numpy()
    with pytest.raises(TypeError) as actual:
        ember.zeros(2, device="meta").numpy()
    assert str(actual.value).split(".")[0] == str(expected.value).split(".")[0]


# ------------------------------------------------------------------------------- on a GPU
# What the CPU cannot show: run by scripts/gpu_check.sh on a machine with CuPy and a GPU.

gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a GPU")


def _both(array):
    return ember.tensor(array), ember.tensor(array, device="cuda")


def _same(cuda_result, cpu_result, **tolerance):
    assert cuda_result.device.type == "cuda"
    assert cuda_result.dtype == cpu_result.dtype and cuda_result.shape == cpu_result.shape
    np.testing.assert_allclose(cuda_result.cpu().numpy(), cpu_result.numpy(), **tolerance)


@gpu
def test_gpu_scans_and_sorts_match_cpu():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, (5, 40)).astype(np.float32)
    a[1, 3] = np.nan
    c, g = _both(a)
    for dim in (0, 1, -1):
        for fn in (ember.cummax, ember.cummin):
            cv, ci = fn(c, dim)
            gv, gi = fn(g, dim)
            _same(gv, cv)
            _same(gi, ci)
    _same(ember.mode(g, 1).values, ember.mode(c, 1).values)
    _same(ember.median(g), ember.median(c))
    _same(ember.nanmedian(g), ember.nanmedian(c))
    _same(ember.logcumsumexp(g, 1), ember.logcumsumexp(c, 1), rtol=1e-5)
    seq, values = _both(np.sort(rng.standard_normal((3, 9)), axis=-1))
    qc, qg = _both(rng.standard_normal((3, 4)))
    _same(ember.searchsorted(values, qg), ember.searchsorted(seq, qc))


@gpu
def test_gpu_scatter_reductions_with_repeats_match_cpu():
    rng = np.random.default_rng(1)
    index = rng.integers(0, 3, (4, 6))
    src = rng.standard_normal((4, 6))
    for reduce in ("sum", "prod", "amax", "amin", "mean"):
        results = []
        for device in ("cpu", "cuda"):
            base = ember.ones(3, 6, dtype=ember.float64, device=device)
            results.append(base.scatter_reduce(0, ember.tensor(index, device=device),
                                               ember.tensor(src, device=device), reduce))
        _same(results[1], results[0], rtol=1e-12)
    with pytest.raises(RuntimeError):
        ember.zeros(3, device="cuda").scatter_add(0, ember.tensor([0, 5], device="cuda"),
                                                  ember.ones(2, device="cuda"))


@gpu
def test_gpu_linalg_failures_raise():
    singular = ember.zeros(2, 2, device="cuda")
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.inv(singular)
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.solve(singular, ember.ones(2, 1, device="cuda"))
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.cholesky(-ember.eye(2, device="cuda"))
    assert ember.linalg.inv_ex(singular).info.item() != 0
    _same(ember.linalg.matrix_exp(ember.eye(3, device="cuda") * 3),
          ember.linalg.matrix_exp(ember.eye(3) * 3), rtol=1e-5)


@gpu
def test_gpu_bfloat16_is_refused():
    for make in (lambda: ember.zeros(2, dtype=ember.bfloat16, device="cuda"),
                 lambda: ember.tensor([1.0], dtype=ember.bfloat16, device="cuda"),
                 lambda: ember.randn(2, dtype=ember.bfloat16, device="cuda"),
                 lambda: ember.ones(2, device="cuda").to(ember.bfloat16),
                 lambda: ember.ones(2, dtype=ember.bfloat16).cuda()):
        with pytest.raises(TypeError, match="bfloat16"):
            make()


@gpu
def test_gpu_copies_views_and_scalars():
    c, g = _both(np.arange(12.0).reshape(3, 4))
    _same(g + 1, c + 1)
    _same(g.add(g, alpha=300), c.add(c, alpha=300))
    _same(ember.nan_to_num(g / 0), ember.nan_to_num(c / 0))
    view = g[1:, 2:]
    assert view.storage_offset() == c[1:, 2:].storage_offset() == 6
    _same(view.t().contiguous(), c[1:, 2:].t().contiguous())
    back = g.t().cpu()
    np.testing.assert_array_equal(back.numpy(), c.t().numpy())
    target = ember.zeros(3, 4, dtype=ember.float64, device="cuda")
    target.copy_(c)
    _same(target, c)
    with pytest.raises(TypeError, match="cuda:0"):
        g.numpy()
    _same(ember.nn.functional.binary_cross_entropy(ember.sigmoid(g), ember.ones_like(g) / 2),
          ember.nn.functional.binary_cross_entropy(ember.sigmoid(c), ember.ones_like(c) / 2),
          rtol=1e-6)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        ember.nn.functional.binary_cross_entropy(g, ember.ones_like(g))


@pytest.mark.skipif(ember.cuda.device_count() < 2, reason="needs two GPUs")
def test_gpu_ops_on_a_gpu_that_is_not_current():
    c = ember.arange(6.0).reshape(2, 3)
    g = c.to("cuda:1")
    assert ember.cuda.current_device() == 0
    result = (g * 2 + 1).sum(1)
    assert result.device == ember.device("cuda", 1)
    _same(result, (c * 2 + 1).sum(1))
    _same(g.to("cuda:0"), c)


if __name__ == "__main__":  # print the offenders: python tests/test_cuda_paths.py
    print("\n".join(scan()))
