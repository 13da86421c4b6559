"""Kernels compute with their array module ``xp`` and never hand its arrays to NumPy.

A kernel is written once against ``xp`` (NumPy on the cpu, CuPy on cuda, ember's own module on
webgpu). A ``np.<function>(array)`` inside it works on the cpu and fails, or silently copies to
the host, everywhere else. This test reads the syntax tree of every module under ``src/ember``
(nothing is imported) and lists each offender as ``file:line: function: np.<name>``.

The rule, precisely:

* **Kernel**: a function (``def`` or ``lambda``) that has a parameter named ``xp`` (its whole
  body is scanned) or binds a local name ``xp`` (``xp = device.xp``, ``xp = a._device._xp``,
  ``for``/``with``/walrus targets: scanned from the first statement that binds it on, and
  where that is in an ``if``, from there in its branch and after the ``if``; so a
  ``device is META`` branch without ``xp`` is host-side set-up). Functions nested in a kernel are
  part of it (they close over ``xp``); its decorators and argument defaults are not (they run
  once, on no array). A function that only reaches the module inline
  (``device.xp.asarray(host)``) is glue, not a kernel.
* **Offender**: any ``np.<name>`` (or ``numpy.<name>``) in a kernel, unless its dotted name is in
  ``ALLOWED`` (dtypes, constants and functions of dtypes or shapes, each with its reason) or it
  sits in an explicit CPU-only branch.
* **CPU-only branch**: the one recognised guard is the identity test ``xp is np`` (or
  ``xp is numpy``): the body of ``if xp is np:`` (also ``if xp is np and ...:``), the ``else`` of
  ``if xp is not np:``, the rest of a block after ``if xp is not np: ... return/raise``, the
  first arm of ``a if xp is np else b`` (the second of ``is not``), and the operands that follow
  ``xp is np`` in an ``and``. The other branch is the GPU path.
* ``HOST_FUNCTIONS`` names the few kernels that work on host copies on purpose, each with why.

``tests/test_cuda_paths.py`` checks more on the ops and nn kernels (host synchronisations,
names CuPy lacks, ufunc methods); this test holds the NumPy rule for every module.
"""

from __future__ import annotations

import ast
import functools
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "ember"

# NumPy names a kernel may use, and why each is safe whatever ``xp`` is.
_DTYPE = "a dtype: CuPy and the webgpu module take NumPy's dtypes"
_DTYPE_FUNCTION = "a function of dtypes (kernels pass it dtypes, never arrays)"
_CONSTANT = "a Python float or None, not an array"
ALLOWED = {
    **dict.fromkeys(("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float16", "float32", "float64", "complex64", "complex128"),
                    _DTYPE),
    "integer": "NumPy's integer scalar type, to tell an index that is a number (isinstance)",
    **dict.fromkeys(("dtype", "finfo", "iinfo", "result_type", "promote_types", "can_cast"),
                    _DTYPE_FUNCTION),
    **dict.fromkeys(("pi", "inf", "nan", "newaxis"), _CONSTANT),
    "errstate": "sets NumPy's floating-point error flags; touches no array (no-op on CuPy)",
    "broadcast_shapes": "a function of shape tuples, never of arrays",
    "ndindex": "iterates over a tuple of Python ints (a kernel's window), not an array",
    "linalg.LinAlgError": "an exception class: CuPy raises numpy.linalg.LinAlgError too",
}
# np.ndarray is allowed only as a type to test against (isinstance(x, np.ndarray),
# type(x) is np.ndarray): a question about an array, not a computation on it.

# Kernels that run NumPy on host copies by design, and why.
HOST_FUNCTIONS = {
    ("ops/linalg/decompositions.py", "_host_linalg"): "NumPy's LAPACK on a host copy for what CuPy lacks (eig)",
    ("ops/linalg/_common.py", "_singular_error"): "error path: finds the zero pivot on a host copy",
}


def _is_numpy(node):
    return isinstance(node, ast.Name) and node.id in ("np", "numpy")


def _xp_guard(test):
    """+1 if ``test`` is ``xp is np`` (or begins ``xp is np and``), -1 for ``xp is not np``,
    else 0."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return 1 if _xp_guard(test.values[0]) == 1 else 0
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
            and test.left.id == "xp" and _is_numpy(test.comparators[0]):
        return {ast.Is: 1, ast.IsNot: -1}.get(type(test.ops[0]), 0)
    return 0


def _takes_xp(fn):
    args = fn.args
    params = args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
    return any(p is not None and p.arg == "xp" for p in params)


def _assigns_xp(node):
    """Whether ``node`` binds the name ``xp`` (functions nested in it aside)."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Name) and node.id == "xp" and isinstance(node.ctx, ast.Store):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _is_kernel(fn):
    return _takes_xp(fn) or any(_assigns_xp(s) for s in (
        fn.body if isinstance(fn.body, list) else [fn.body]))


def _dotted(node):
    """``np.linalg.LinAlgError`` -> ``"linalg.LinAlgError"`` for the outermost attribute."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join(reversed(parts))


class _Scanner(ast.NodeVisitor):
    """The offenders of one module: ``(line, function, "np.<name>")``."""

    def __init__(self, path):
        self.path = path
        self.functions = []   # enclosing function names
        self.depth = 0        # > 0 inside a kernel
        self.found = []

    def _function(self, node, name, body):
        for part in getattr(node, "decorator_list", []) + node.args.defaults \
                + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(part)
        self.functions.append(name)
        if _takes_xp(node):
            self.depth += 1
            self._block(body) if isinstance(body, list) else self.visit(body)
            self.depth -= 1
        elif isinstance(body, list):
            self._until_bound(body)
        else:
            self.visit(body)
        self.functions.pop()

    def visit_FunctionDef(self, node):
        if (self.path, node.name) in HOST_FUNCTIONS:
            return
        self._function(node, node.name, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._function(node, "<lambda>", node.body)

    def _until_bound(self, statements):
        """Visit ``statements`` as host-side code until one binds ``xp``: from there on (in an
        ``if``, from there in the branch that binds it, then after the ``if``) it is kernel."""
        for i, statement in enumerate(statements):
            if not _assigns_xp(statement):
                self.visit(statement)
                continue
            rest = statements[i + 1:]
            if isinstance(statement, ast.If):
                self.visit(statement.test)
                self._until_bound(statement.body)
                self._until_bound(statement.orelse)
            else:
                rest = statements[i:]
            self.depth += 1
            self._block(rest)
            self.depth -= 1
            return

    def _block(self, statements):
        for statement in statements:
            self.visit(statement)
            if isinstance(statement, ast.If) and _xp_guard(statement.test) == -1 \
                    and not statement.orelse \
                    and isinstance(statement.body[-1], (ast.Return, ast.Raise)):
                return  # the rest of the block runs on NumPy only

    def visit_If(self, node):
        guard = _xp_guard(node.test)
        if guard != 1:
            self.visit(node.test)
            self._block(node.body)
        if guard != -1:
            self._block(node.orelse)

    def visit_IfExp(self, node):
        guard = _xp_guard(node.test)
        if guard == 0:
            self.visit(node.test)
        if guard != 1:
            self.visit(node.body)
        if guard != -1:
            self.visit(node.orelse)

    def visit_BoolOp(self, node):
        if _xp_guard(node) != 1:
            self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "isinstance" and len(node.args) == 2:
            self.visit(node.args[0])
            if not self._is_ndarray(node.args[1]):
                self.visit(node.args[1])
            return
        self.generic_visit(node)

    def visit_Compare(self, node):
        # type(x) is np.ndarray / type(x) is not np.ndarray
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            self.visit(node.left)
            for right in node.comparators:
                if not self._is_ndarray(right):
                    self.visit(right)
            return
        self.generic_visit(node)

    @staticmethod
    def _is_ndarray(node):
        elements = node.elts if isinstance(node, ast.Tuple) else [node]
        return all(isinstance(e, ast.Attribute) and _is_numpy(e.value) and e.attr == "ndarray"
                   for e in elements)

    def visit_Attribute(self, node):
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if self.depth and _is_numpy(root):
            name = _dotted(node)
            if name not in ALLOWED:
                self.found.append((node.lineno, ".".join(self.functions), f"np.{name}"))
            return  # the inner attributes of np.a.b are part of this one name
        self.generic_visit(node)


def offenders(source, path):
    """``file:line: function: np.<name>`` for each NumPy use in a kernel of ``source``."""
    scanner = _Scanner(path)
    scanner.visit(ast.parse(source, path))
    return [f"src/ember/{path}:{line}: {function}: {name}"
            for line, function, name in sorted(scanner.found)]


@functools.cache
def _modules():
    """``(path under src/ember, source)`` of every module."""
    return [(file.relative_to(SRC).as_posix(), file.read_text())
            for file in sorted(SRC.rglob("*.py"))]


def test_kernels_never_call_numpy_on_their_arrays():
    found = [o for path, source in _modules() for o in offenders(source, path)]
    assert not found, ("NumPy used in kernels written for xp (rewrite on xp, or put it behind "
                       "`if xp is np:` with a GPU path):\n" + "\n".join(found))


def test_host_functions_exist():
    """No stale exemption: every entry of HOST_FUNCTIONS names a kernel that is still there."""
    kernels = {(path, node.name) for path, source in _modules()
               for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.FunctionDef) and _is_kernel(node)}
    for entry, reason in HOST_FUNCTIONS.items():
        assert entry in kernels and reason, entry


_EXAMPLE = '''
import numpy as np

@register(meta=lambda a: np.zeros(a.shape))         # decorator: not the kernel
def good(xp, a, b, shape=np.ones(2)):                # default: not the kernel
    if xp is np:
        np.add.at(a, [0], 1)
    if xp is np and not np.all(b):
        raise ValueError
    if isinstance(a, np.ndarray) or type(b) is not np.ndarray:
        pass
    c = np.asarray(a) if xp is np else xp.asarray(a)
    d = xp.zeros(3, np.float32) + np.inf + np.finfo(a.dtype).eps
    with np.errstate(all="ignore"):
        pass
    try:
        xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        pass
    for tap in np.ndindex(*shape):
        pass
    if xp is not np:
        raise NotImplementedError("good on cuda")
    return np.tril(a)

def bad(x, device):
    if device is META:
        return np.broadcast_to(np.zeros(()), x.shape)   # before xp is bound: set-up
    if x.ndim:
        y = np.zeros(()) + x.dtype.itemsize                # the branch without xp: set-up
    else:
        xp = device.xp
    y = np.tril(x) + np.linalg.inv(x)
    def inner(z):
        return np.isnan(z)
    if xp is not np:
        y = np.exp(y)
    return lambda v: np.lib.stride_tricks.as_strided(v, (1,), (8,))

def not_a_kernel(a):
    return np.tril(a)
'''


def test_the_scanner_on_an_example():
    """What the rule flags and what it leaves alone, line by line."""
    lines = _EXAMPLE.splitlines()

    def line_of(text):
        return next(i + 1 for i, line in enumerate(lines) if text in line)

    found = offenders(_EXAMPLE, "example.py")
    assert found == [
        f"src/ember/example.py:{line_of('np.tril(x)')}: bad: np.linalg.inv",
        f"src/ember/example.py:{line_of('np.tril(x)')}: bad: np.tril",
        f"src/ember/example.py:{line_of('np.isnan')}: bad.inner: np.isnan",
        f"src/ember/example.py:{line_of('np.exp')}: bad: np.exp",
        f"src/ember/example.py:{line_of('stride_tricks')}: bad.<lambda>: "
        "np.lib.stride_tricks.as_strided",
    ], "\n".join(found)
