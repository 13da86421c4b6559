"""Element-wise regions of a compiled graph as one generated C loop (the CPU's NumPy-free code).

The joint graph's array code (``array_code.py``) calls one NumPy function per element-wise
step. On small arrays each call costs about a microsecond whatever it computes, and on large
ones each step is a pass over memory. Here a run of element-wise nodes that share one shape
and one float dtype (a *region*: fused chains and single fusable ops, with the parameter and
constant reads between them) becomes one C function: one loop over the elements that reads
each operand once, computes every step in registers and writes the values read after the
region (saved for the backward, outputs). All regions of a graph go into one C file,
compiled once by the system's C compiler (``cc -O3 -march=native``) into a shared library
kept in a cache folder by the hash of its source, and called through ctypes with the arrays'
addresses.

Each step's C form comes from its fusion rule (``ops/_fusion.py``): a NumPy function name
maps to C arithmetic or a C math function (``tanh`` -> ``tanhf`` for float32), the hand
written steps (relu, sigmoid, rsqrt, softsign) to their formulas; NaN handling follows
NumPy's (``maximum`` propagates NaN, ``fmax`` does not). The math functions are declared
with OpenMP's ``declare simd`` so that the loop calls glibc's vector variants (libmvec)
eight floats at a time, as NumPy's own SIMD loops do, within a few ulps of them.

A loop computes all its outputs while all its operands are alive: where NumPy's calls
free each saved value once its step is done, a region's peak memory holds its operands and
its outputs together (a backward whose steps each make a parameter's gradient).

It pays when a region has at least two steps (one call instead of several), or one step
that calls a math function (glibc's vector ``tanhf`` is 2-4x NumPy's float32 loop on AVX2;
``sqrt`` ~2x), and is used then. A ``sum`` or ``mean`` of every element of a value the
region makes ends it: the loop adds the values as it makes them (in double), so a loss's
last steps are one call. There is no compiler, or it fails, or the library does not load:
the graph keeps NumPy's calls (``EMBER_LOGS=aot`` says why). ``EMBER_C_LOOPS=0`` turns it off.

Example::

    >>> from ember._inductor.capture import capture
    >>> graph = capture(lambda x: (x + 1).tanh() * 2, [ember.zeros(4)]).graph
    >>> len(plan_regions(graph, set(graph.output_values())))
    1
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from .._array_address import LAYOUT_HOLDS
from ..jit._ir import CONSTANT, FUSED, GET_ATTR, OP
from .state import log, log_enabled

__all__ = ["Region", "plan_regions", "compile_regions", "chain_function", "chain_region",
           "is_row", "enabled", "C_FORMS"]

# the C form of each fusion step, by the rule's NumPy function name (or its step's name):
# {0}, {1} the operands, {F} the math functions' suffix ("f" for float32), {T} the C type
C_FORMS = {
    "add": "({0} + {1})", "subtract": "({0} - {1})", "multiply": "({0} * {1})",
    "true_divide": "({0} / {1})", "negative": "(-{0})",
    "maximum": "em_max{F}({0}, {1})", "minimum": "em_min{F}({0}, {1})",
    "fmax": "fmax{F}({0}, {1})", "fmin": "fmin{F}({0}, {1})",
    "arctan2": "atan2{F}({0}, {1})", "hypot": "hypot{F}({0}, {1})",
    "copysign": "copysign{F}({0}, {1})", "nextafter": "nextafter{F}({0}, {1})",
    "logaddexp": "em_logaddexp{F}({0}, {1})", "logaddexp2": "em_logaddexp2{F}({0}, {1})",
    "exp": "exp{F}({0})", "exp2": "exp2{F}({0})", "expm1": "expm1{F}({0})",
    "log": "log{F}({0})", "log2": "log2{F}({0})", "log10": "log10{F}({0})",
    "log1p": "log1p{F}({0})", "sqrt": "sqrt{F}({0})",
    "sin": "sin{F}({0})", "cos": "cos{F}({0})", "tan": "tan{F}({0})",
    "arcsin": "asin{F}({0})", "arccos": "acos{F}({0})", "arctan": "atan{F}({0})",
    "sinh": "sinh{F}({0})", "cosh": "cosh{F}({0})", "tanh": "tanh{F}({0})",
    "arcsinh": "asinh{F}({0})", "arccosh": "acosh{F}({0})", "arctanh": "atanh{F}({0})",
    "floor": "floor{F}({0})", "ceil": "ceil{F}({0})", "trunc": "trunc{F}({0})",
    "_rsqrt_step": "(({T})1 / sqrt{F}({0}))",
    "_sigmoid_step": "(({T})1 / (({T})1 + exp{F}(-{0})))",
    "_relu_step": "em_max{F}({0}, ({T})0)",
    "_softsign_step": "({0} / (({T})1 + fabs{F}({0})))",
}

# the C form of element-wise ops that have no fusion rule, by the op's name (a region checks
# that their operands and result are of its float dtype): NumPy's float ``power`` with a
# scalar exponent of 2, 0.5 or -1 squares, takes the square root or the reciprocal, and calls
# the C library's scalar ``pow`` otherwise; so does this, value for value (libmvec's vector
# powf differs from it by an ulp and took 10 ns an element, measured)
_OP_FORMS = {"pow": "em_pow{F}({0}, {1})"}

# glibc's vector math library has these (one and two operands): declared ``declare simd``
_VECTOR_MATH_1 = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
                  "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh")
_VECTOR_MATH_2 = ("atan2", "hypot")

_C_TYPES = {np.dtype(np.float32): ("float", "f"), np.dtype(np.float64): ("double", "")}

_PRELUDE = """\
#include <math.h>
/* NumPy's maximum/minimum: a NaN operand is the result */
static inline float em_maxf(float a, float b) { return (a >= b || a != a) ? a : b; }
static inline double em_max(double a, double b) { return (a >= b || a != a) ? a : b; }
static inline float em_minf(float a, float b) { return (a <= b || a != a) ? a : b; }
static inline double em_min(double a, double b) { return (a <= b || a != a) ? a : b; }
/* NumPy's float power: its fast exponents, else the C library's pow */
static inline float em_powf(float a, float b) {
    return b == 2.0f ? a * a : b == 0.5f ? sqrtf(a) : b == -1.0f ? 1.0f / a : powf(a, b);
}
static inline double em_pow(double a, double b) {
    return b == 2.0 ? a * a : b == 0.5 ? sqrt(a) : b == -1.0 ? 1.0 / a : pow(a, b);
}
/* NumPy's logaddexp: equal operands (infinities too) give x + log 2 */
#define EM_LOGADDEXP(NAME, T, F, LOG1P, EXP, SCALE, EQUAL) \\
static inline T NAME(T x, T y) { \\
    if (x == y) return x + EQUAL; \\
    T d = x - y; \\
    if (d > 0) return x + LOG1P(EXP(-d)) * SCALE; \\
    if (d <= 0) return y + LOG1P(EXP(d)) * SCALE; \\
    return d; \\
}
EM_LOGADDEXP(em_logaddexpf, float, f, log1pf, expf, 1.0f, 0.693147180559945309f)
EM_LOGADDEXP(em_logaddexp, double, , log1p, exp, 1.0, 0.693147180559945309)
EM_LOGADDEXP(em_logaddexp2f, float, f, log1pf, exp2f, 1.442695040888963407f, 1.0f)
EM_LOGADDEXP(em_logaddexp2, double, , log1p, exp2, 1.442695040888963407, 1.0)
"""


def _vector_declarations():
    """``declare simd`` for glibc's vector math, as glibc's own headers declare it.

    No ``simdlen``: the compiler then picks each ISA's full register width (SSE 4 floats,
    AVX/AVX2 8, AVX-512 16), exactly the variants libmvec exports. A fixed ``simdlen(8)``
    asked AVX-512 builds for ``_ZGVeN8v_tanhf``, which libmvec lacks: the library failed
    to load and every loop fell back to the scalar functions (28x slower tanh).
    """
    lines = []
    for name in _VECTOR_MATH_1:
        lines += ["#pragma omp declare simd notinbranch", f"extern float {name}f(float);",
                  "#pragma omp declare simd notinbranch", f"extern double {name}(double);"]
    for name in _VECTOR_MATH_2:
        lines += ["#pragma omp declare simd notinbranch",
                  f"extern float {name}f(float, float);",
                  "#pragma omp declare simd notinbranch",
                  f"extern double {name}(double, double);"]
    return "\n".join(lines) + "\n"


def _tuple_layout_holds():
    """Whether a tuple's items are read at ``tuple.__basicsize__`` (CPython's layout)."""
    items = (np.zeros(1), np.zeros(2))
    return LAYOUT_HOLDS and all(
        ctypes.c_void_p.from_address(id(items) + tuple.__basicsize__ + 8 * i).value ==
        id(item) for i, item in enumerate(items)) and ctypes.sizeof(ctypes.c_void_p) == 8


_LAYOUT = _tuple_layout_holds()


def enabled():
    """Whether regions become C loops: a C compiler is on PATH and ``EMBER_C_LOOPS`` is not 0.

    Example::

        >>> isinstance(enabled(), bool)
        True
    """
    return os.environ.get("EMBER_C_LOOPS", "1") != "0" and _LAYOUT and \
        _compiler() is not None


def _compiler():
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


# ---------------------------------------------------------------- planning


class Region:
    """A run of element-wise nodes computed by one C loop: ``members`` (node indices),
    ``leaves`` (the parameter and constant reads among them, emitted before the call), the
    ``shape`` and ``dtype`` every member computes, the external ``inputs`` (``full`` arrays of
    that shape or ``scalar`` one-element arrays) and the ``outputs`` read after the region."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype
        self.members, self.leaves = [], []
        self.inputs, self.outputs = [], []
        self.scalars = set()
        self.rows = set()   # inputs repeated along the leading dims, ``inner`` elements each
        self.inner = None   # their element count (None: the function's ``m`` argument)
        self.steps = []     # (C form, operand values, result value)
        self.reduction = None  # ("sum" or "mean", the value summed, the result) or None
        self.function = None  # the ctypes function, once compiled

    def output_shape(self, value):
        """The shape of the array the region writes ``value`` into."""
        if self.reduction is not None and value is self.reduction[2]:
            return tuple(value.shape)
        return self.shape

    @property
    def size(self):
        """The element count baked into the loop (None: the function's ``n`` argument)."""
        if self.shape is None:
            return None
        return int(np.prod(self.shape, dtype=np.int64))

    def step_count(self):
        """The calls the region replaces: its steps, and its reduction."""
        return len(self.steps) + (self.reduction is not None)


def _dtype(value):
    try:
        return np.dtype(value.dtype)
    except TypeError:
        return None


def _form(rule):
    """The C form of a fusion rule's step, or None."""
    if rule is None:
        return None
    return C_FORMS.get(rule.ufunc or getattr(rule.step, "__name__", ""))


def _node_steps(node):
    """``[(form, operand refs)]`` of an element-wise node (refs index ``node.inputs``, -1 the
    running result), or None when some step has no C form."""
    if node.kind == FUSED:
        steps = []
        for op, (_, refs, params) in zip(node.op.ops, node.op.program):
            form = _form(op.fuse)
            if form is None or not op.fuse.accepts(params):
                return None
            steps.append((form, list(refs)))
        return steps
    if node.kind == OP and _copies_a_value(node):
        return [("{0}", [0])]
    if node.kind == OP and node.op.fuse is None and node.op.name in _OP_FORMS and \
            len(node.inputs) == 2:
        return [(_OP_FORMS[node.op.name], [0, 1])]
    if node.kind == OP and node.op.fuse is not None and node.op.fuse.accepts(node.params) \
            and len(node.inputs) == node.op.fuse.arity:
        form = _form(node.op.fuse)
        return None if form is None else [(form, list(range(len(node.inputs))))]
    return None


def _copies_a_value(node):
    """A ``detach`` (the same values), or an ``expand`` of one element to the region's
    shape: inside a loop each is its operand's value (a region never writes such a view's
    values as an output: see :func:`plan_regions`)."""
    name = node.op.name
    if len(node.inputs) != 1 or name not in ("detach", "expand"):
        return False
    shape = node.inputs[0].shape
    return name == "detach" or (shape is not None and
                                int(np.prod(shape, dtype=np.int64)) == 1)


def _fits(node, region, produced):
    """Whether ``node``'s operands fit ``region`` (its shape and dtype): each made inside it,
    or of its shape, or one element, or a row repeated along its leading dims (a bias: one
    row size per region, which this sets); its result of that shape and dtype."""
    shape, dtype = region.shape, region.dtype
    if tuple(node.outputs[0].shape or ()) != shape or _dtype(node.outputs[0]) != dtype or \
            len(node.outputs) != 1:
        return False
    inner = region.inner
    for v in node.inputs:
        if v in produced:
            continue
        if _dtype(v) != dtype or v.shape is None:
            return False
        size = int(np.prod(v.shape, dtype=np.int64))
        if tuple(v.shape) == shape or size == 1:
            continue
        if not is_row(tuple(v.shape), shape) or inner not in (None, size):
            return False
        inner = size
    region.inner = inner
    return True


def is_row(operand_shape, shape):
    """Whether an operand of ``operand_shape`` is one row of ``shape`` repeated along its
    leading dims: leading ones dropped, it is ``shape``'s trailing dims (and smaller).

    Example::

        >>> is_row((1, 256), (32, 256)), is_row((32, 1), (32, 256))
        (True, False)
    """
    first = next((i for i, d in enumerate(operand_shape) if d != 1), len(operand_shape))
    trailing = operand_shape[first:]
    return 0 < len(trailing) <= len(shape) and trailing != shape and \
        trailing == shape[len(shape) - len(trailing):]


def plan_regions(graph, outputs):
    """Node index of each region's first member -> :class:`Region`, for the runs of
    element-wise nodes of ``graph`` (float32/float64, one shape) with at least two steps,
    or one that calls a math function (:func:`_pays_alone`);
    ``outputs`` are the graph's output values (a region writes those it makes).

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: (x + 1).tanh(), [ember.zeros(4)]).graph
        >>> [r.step_count() for r in plan_regions(graph, set()).values()]
        [2]
    """
    nodes = graph.nodes
    readers = {}
    for k, n in enumerate(nodes):
        for v in n.inputs:
            readers.setdefault(v, []).append(k)
    regions, k = {}, 0
    while k < len(nodes):
        region = _grow(nodes, k)
        if region is None:
            k += 1
            continue
        k = region.members[-1] + 1
        if region.step_count() >= 2 or _pays_alone(region):
            _close(region, nodes, readers, outputs)
            views = {nodes[m].outputs[0] for m in region.members
                     if nodes[m].kind == OP and _copies_a_value(nodes[m])}
            if not views.intersection(region.outputs):  # (a view read later stays a view)
                regions[region.members[0]] = region
    return regions


# math functions whose loop here beats NumPy's own on one step (measured on 16K elements,
# thread CPU time: float32 tanh 25 vs 54 us, exp 15 vs 34, log 9 vs 35, sqrt 4.5 vs 8.0;
# float64 by 2-7x): NumPy's float32 loops for them are scalar or narrower than libmvec's
_MATH_ALONE = tuple(f"{name}{{F}}(" for name in _VECTOR_MATH_1 + _VECTOR_MATH_2 + ("sqrt",))


def _pays_alone(region):
    """Whether a one-step region is worth its own loop: its step calls a math function.

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: x.tanh(), [ember.zeros(4)]).graph
        >>> _pays_alone(_grow(graph.nodes, 0))
        True
    """
    return any(key in form for form, _, _ in region.steps for key in _MATH_ALONE)


def _start(node):
    steps = _node_steps(node)
    if steps is None or not node.outputs or node.outputs[0].shape is None:
        return None
    dtype = _dtype(node.outputs[0])
    if dtype not in _C_TYPES:
        return None
    shape = tuple(node.outputs[0].shape)
    region = Region(shape, dtype)
    return region if _fits(node, region, set()) else None


def _grow(nodes, first):
    """The region starting at node ``first``: it and the element-wise nodes after it that
    fit, the parameter and constant reads between them included (they have no inputs, so
    they may run before the loop)."""
    region = _start(nodes[first])
    if region is None:
        return None
    produced = set()
    leaves = []
    for k in range(first, len(nodes)):
        node = nodes[k]
        if node.kind in (GET_ATTR, CONSTANT):
            leaves.append(k)  # (read before the loop: an external operand)
            continue
        steps = _node_steps(node)
        if steps is None or not _fits(node, region, produced):
            if _reduces_all(node, region, produced):
                region.members.append(k)
                region.leaves += leaves
                region.reduction = (node.op.name, node.inputs[0], node.outputs[0])
            break
        region.members.append(k)
        region.leaves += leaves
        leaves = []
        _add_steps(region, node, steps)
        produced.update(node.outputs)
    return region


def _reduces_all(node, region, produced):
    """Whether ``node`` is a ``sum``/``mean`` of every element of a value the region makes,
    in its dtype (no ``dtype=`` argument): the loop adds the values as it makes them."""
    if node.kind != OP or node.op.name not in ("sum", "mean") or len(node.inputs) != 1 or \
            node.inputs[0] not in produced or len(node.outputs) != 1:
        return False
    params = node.params
    if set(params) - {"dims", "keepdim", "dtype"} or params.get("dtype") is not None:
        return False
    dims, ndim = params.get("dims"), len(region.shape)
    covered = range(ndim) if dims is None else {d % ndim for d in dims} if ndim else set()
    out = node.outputs[0]
    return len(set(covered)) == ndim and ndim > 0 and _dtype(out) == region.dtype and \
        out.shape is not None and int(np.prod(out.shape, dtype=np.int64)) == 1


def _add_steps(region, node, steps):
    result = node.outputs[0]
    running = None
    for i, (form, refs) in enumerate(steps):
        operands = [running if r < 0 else node.inputs[r] for r in refs]
        running = result if i == len(steps) - 1 else ("step", id(node), i)
        region.steps.append((form, operands, running))


def _close(region, nodes, readers, outputs):
    """The region's external inputs (in first-use order) and its outputs: values it makes
    that a node after it or the graph's output reads."""
    members = set(region.members)
    made = {result for _, _, result in region.steps}
    seen = set()
    for _, operands, _ in region.steps:
        for v in operands:
            if v in made or v in seen:
                continue
            seen.add(v)
            region.inputs.append(v)
            if tuple(v.shape) != region.shape:
                one = int(np.prod(v.shape, dtype=np.int64)) == 1
                (region.scalars if one else region.rows).add(v)
    last = region.members[-1]
    results = [result for _, _, result in region.steps]
    if region.reduction is not None:
        results.append(region.reduction[2])
    for result in results:
        if isinstance(result, tuple):
            continue
        later = [k for k in readers.get(result, ()) if k not in members and k > last]
        if later or result in outputs:
            region.outputs.append(result)


# ---------------------------------------------------------------- C source


def region_source(region, name):
    """The C function computing ``region``: ``void name(const char *arrays)``, ``arrays`` a
    tuple of its inputs then its outputs (see :func:`_argument_macros`).

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: (x + 1).tanh(), [ember.zeros(4)]).graph
        >>> region, = plan_regions(graph, set(graph.output_values())).values()
        >>> print(region_source(region, "r0").splitlines()[0])
        void r0(const char *arrays) {
    """
    ctype, suffix = _C_TYPES[region.dtype]
    names, head = {}, []
    for i, v in enumerate(region.inputs):
        head.append(f"    const {ctype} *restrict i{i} = EM_ARRAY(arrays, {i});")
        names[v] = f"s{i}" if v in region.scalars else f"i{i}[c]" if v in region.rows \
            else f"i{i}[k]"
        if v in region.scalars:
            head.append(f"    const {ctype} s{i} = i{i}[0];")
    first = len(region.inputs)
    head += [f"    {ctype} *restrict o{i} = EM_ARRAY(arrays, {first + i});"
             for i in range(len(region.outputs))]
    body = []
    for j, (form, operands, result) in enumerate(region.steps):
        expression = form.format(*[names[v] for v in operands], F=suffix, T=ctype)
        body.append(f"        const {ctype} t{j} = {expression};")
        names[result] = f"t{j}"
    reduced = region.reduction[2] if region.reduction is not None else None
    body += [f"        o{i}[k] = {names[v]};" for i, v in enumerate(region.outputs)
             if v is not reduced]
    count = "n" if region.size is None else f"{region.size}L"
    pragma, tail = "#pragma omp simd", []
    if reduced is not None:
        # the sum in double (torch and NumPy sum float32 in float32, pairwise: this is as
        # close or closer), rounded once; a mean divides in double, as np.mean does
        kind, summed, _ = region.reduction
        head.append("    double acc = 0;")
        pragma += " reduction(+:acc)"
        body.append(f"        acc += {names[summed]};")
        total = "acc" if kind == "sum" else f"acc / (double){count}"
        tail = [f"    o{region.outputs.index(reduced)}[0] = ({ctype})({total});"]
    signature = "const char *arrays" + (", long n" if region.size is None else "")
    if region.rows:
        # operands repeated along the leading dims (a bias row): the loop runs over rows of
        # ``inner`` elements, each such operand read at the column ``c``
        inner = "m" if region.inner is None else f"{region.inner}L"
        signature += ", long m" if region.inner is None else ""
        loop = [f"    for (long r = 0; r < {count} / {inner}; r++) {{",
                f"    {pragma}\n    for (long c = 0; c < {inner}; c++) {{",
                f"        const long k = r * {inner} + c;", *body, "    }", "    }"]
    else:
        loop = [f"    {pragma}\n    for (long k = 0; k < {count}; k++) {{", *body, "    }"]
    return f"void {name}({signature}) {{\n" + "\n".join(head + loop + tail) + "\n}\n"


def _argument_macros():
    """``EM_ARRAY(arrays, i)``: the data pointer of item ``i`` of the tuple ``arrays``, read
    at CPython's fixed offsets (a tuple's items follow its header; a NumPy array's data
    pointer follows its object header, as ``ember._array_address`` checks at import), so
    that a call passes one object, not one converted address per array."""
    items = tuple.__basicsize__
    data = object.__basicsize__
    return (f"#define EM_ARRAY(arrays, i) (*(void *const *)(*(const char *const *)"
            f"((arrays) + {items} + sizeof(void *) * (i)) + {data}))\n")


# ---------------------------------------------------------------- compiling

def _library_with_vector_math(body):
    """``body`` compiled and loaded with glibc's vector math (libmvec); where that fails to
    build or load (another C library, a variant it lacks), with the scalar functions."""
    try:
        return _library(_PRELUDE + _vector_declarations() + body, ("-lmvec", "-lm"))
    except (OSError, subprocess.CalledProcessError) as reason:
        if log_enabled("aot"):
            log.info("C loops use the scalar math functions (libmvec's vector ones did not "
                     "link: %s)", getattr(reason, "stderr", None) or reason)
        return _library(_PRELUDE + body, ("-lm",))


def chain_region(program, ops, dtype):
    """A jit ``FusedOp`` chain as a :class:`Region` of no fixed shape: inputs ``0..n-1``,
    one output ``"out"``; None when its dtype or a step has no C form.

    Example::

        >>> ops = [ember.ops._registry.registry[n][0] for n in ("add", "tanh")]
        >>> chain_region([["add", [0, 1], {}], ["tanh", [-1], {}]], ops,
        ...              np.dtype(np.float32)).step_count()
        2
    """
    if dtype not in _C_TYPES:
        return None
    region = Region(None, dtype)
    region.inputs = list(range(1 + max(r for _, refs, _ in program for r in refs)))
    running = None
    for j, (op, (_, refs, params)) in enumerate(zip(ops, program)):
        form = _form(op.fuse)
        if form is None or not op.fuse.accepts(params):
            return None
        result = "out" if j == len(program) - 1 else ("step", j)
        region.steps.append((form, [running if r < 0 else r for r in refs], result))
        running = result
    region.outputs = ["out"]
    return region


def _machine():
    """What ``-march=native`` compiles for: the CPU's architecture and feature flags (a
    cache folder shared by machines of other CPUs must not hand them this one's code)."""
    import platform

    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()} {flags}"


_MACHINE = _machine()


def _flags(machine):
    """The compiler's flags. On AVX-512 CPUs the loops use full 512-bit vectors (GCC and
    clang default to 256 there): libmvec's 16-float tanh is ~3x its 8-float one."""
    wide = ("-mprefer-vector-width=512",) if " avx512f " in f" {machine} " else ()
    return ("-O3", "-march=native", *wide, "-fopenmp-simd", "-fno-math-errno", "-fPIC",
            "-shared")


_FLAGS = _flags(_MACHINE)
_loaded = {}  # source hash -> the loaded library (a process compiles a source once)


def _cache_dir():
    root = os.environ.get("EMBER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ember")
    path = os.path.join(root, "c_loops")
    os.makedirs(path, exist_ok=True)
    return path


def compile_regions(regions):
    """Compile the C functions of ``regions`` (a list) into one library and set each
    region's ``function``; raises ``OSError`` or ``subprocess.CalledProcessError`` when the
    compiler or the loader fails (the caller keeps NumPy's code then).

    Example::

        >>> from ember._inductor.capture import capture
        >>> graph = capture(lambda x: (x + 1).tanh(), [ember.zeros(4)]).graph
        >>> regions = list(plan_regions(graph, set(graph.output_values())).values())
        >>> compile_regions(regions)
        >>> regions[0].function.argtypes is not None
        True
    """
    body = _argument_macros() + "".join(region_source(r, f"region{i}")
                                        for i, r in enumerate(regions))
    library = _library_with_vector_math(body)
    for i, region in enumerate(regions):
        function = getattr(library, f"region{i}")
        function.argtypes = [ctypes.py_object]
        function.restype = None
        region.function = function


def chain_function(program, ops, dtype, scalars, rows=()):
    """A jit ``FusedOp`` chain (``program``: ``(name, refs, params)`` per step, refs into
    the inputs, -1 the running result) as a C function ``f((*inputs, out), n)`` over ``n``
    elements of ``dtype``, the inputs whose positions are in ``scalars`` one-element arrays,
    the others C-ordered arrays of ``n``; None when a step has no C form or compiling fails.
    With ``rows`` (positions of C-ordered inputs repeated along the result's leading dims,
    such as a bias) it is ``f((*inputs, out), n, m)``, ``m`` the elements of one such row.

    Example::

        >>> ops = [ember.ops._registry.registry[n][0] for n in ("add", "tanh")]
        >>> f = chain_function([["add", [0, 1], {}], ["tanh", [-1], {}]], ops,
        ...                    np.dtype(np.float32), {1})
        >>> out = np.empty(3, np.float32)
        >>> f((np.zeros(3, np.float32), np.ones(1, np.float32), out), 3)
        >>> out
        array([0.7615942, 0.7615942, 0.7615942], dtype=float32)
    """
    if not enabled():
        return None
    region = chain_region(program, ops, dtype)
    if region is None:
        return None
    region.scalars, region.rows = set(scalars), set(rows)
    body = _argument_macros() + region_source(region, "chain")
    try:
        library = _library_with_vector_math(body)
    except (OSError, subprocess.CalledProcessError):
        return None
    function = library.chain
    function.argtypes = [ctypes.py_object, ctypes.c_long] + [ctypes.c_long] * bool(rows)
    function.restype = None
    return function


def _library(source, libraries):
    compiler = _compiler()
    key = hashlib.sha256("\0".join([source, *_FLAGS, *libraries, compiler or "",
                                    _MACHINE]).encode())
    key = key.hexdigest()
    if key in _loaded:
        return _loaded[key]
    path = os.path.join(_cache_dir(), key[:32] + ".so")
    if not os.path.exists(path):
        _build(compiler, source, libraries, path)
    library = _loaded[key] = ctypes.CDLL(path)
    return library


def _build(compiler, source, libraries, path):
    """Compile ``source`` to the shared library ``path`` (written under another name, then
    renamed, so that a concurrent process never loads half a file)."""
    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as work:
        c_file, built = os.path.join(work, "loops.c"), os.path.join(work, "loops.so")
        with open(c_file, "w") as f:
            f.write(source)
        subprocess.run([compiler, *_FLAGS, c_file, "-o", built, *libraries], check=True,
                       capture_output=True)
        os.replace(built, path)
