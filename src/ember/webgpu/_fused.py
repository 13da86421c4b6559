"""One WGSL compute shader per fused element-wise chain on the webgpu device.

``ember.jit``'s element-wise fusion (``jit/_passes.py``, ``FusedOp``) turns a chain of
pointwise ops into one node whose *program* is a list of steps ``(name, refs, params)`` (a
ref below 0 is the running result, the others index the chain's inputs). On NumPy the steps
run into one buffer; on webgpu each step would be its own dispatch writing a whole array. Here
the chain becomes one shader: each thread loads its element of every input, applies every
step in registers and stores one float32.

Each step's op has a fusion rule (``op.fuse``); :data:`WGSL_FORMS` gives the WGSL of each
rule by its name (the array function it calls, ``rule.ufunc``, or its hand-written step,
``_sigmoid_step`` -> ``sigmoid``). The forms of the array functions the device already has are
its element-wise kernels' own (``_xp._POINTWISE``), so a fused chain computes what the chain
of kernels computes; the others are written here. A chain with a step that has no form, an
operand that is not a float32 device array, or more operands than a shader may bind is not
run here (the functions return None) and the caller runs its steps.

Operands broadcast: each is read at ``offset + i`` (contiguous, of the output's shape), at one
element (a single value) or through its broadcast strides, as the device's element-wise
kernels read theirs (``_xp._access``); shapes and strides travel in the params buffer, so one
pipeline serves every shape with the same access pattern.

Example::

    >>> from ember.ops._registry import registry
    >>> program = [["exp", [0], {}], ["add", [-1, 1], {}]]
    >>> shader = fused_shader(program, [registry["exp"][0], registry["add"][0]])
    >>> x = ember.zeros(2, 3, device="webgpu")._data
    >>> shader([x, ember.ones(3, device="webgpu")._data]).get()
    array([[2., 2., 2.],
           [2., 2., 2.]], dtype=float32)
"""

from __future__ import annotations

import functools

import numpy as np

from . import _kernels as K
from . import _runtime, _xp
from ._array import WebGPUArray

__all__ = ["WGSL_FORMS", "chain_kernel", "fused_shader", "rule_name", "shader_source",
           "wgsl_form"]

_FLOAT32 = np.dtype(np.float32)

# fusion-rule name -> (arity, WGSL in ``a`` (and ``b``) of type f32), for the rules whose array
# function the device's element-wise kernels lack, and for the hand-written steps (each in the
# step's own order of operations); the helpers they call are in _HELPERS or ``_xp._helpers``
_OWN_FORMS = {
    "hypot": (2, "hypot_(a, b)"),
    "copysign": (2, "bitcast<f32>((bitcast<u32>(a) & 0x7fffffffu) | "
                    "(bitcast<u32>(b) & 0x80000000u))"),
    "nextafter": (2, "nextafter_(a, b)"),
    "logaddexp": (2, "logaddexp_(a, b)"),
    "logaddexp2": (2, "logaddexp2_(a, b)"),
    "arcsinh": (1, "asinh_(a)"),
    "arccosh": (1, "acosh_(a)"),
    "arctanh": (1, "atanh_(a)"),
    # sqrt, then reciprocal
    "rsqrt": (1, "select(1.0 / sqrt_(a), nan(), isnan_(a))"),
    # negative, exp, add 1, reciprocal
    "sigmoid": (1, "select(1.0 / (1.0 + exp(-a)), nan(), isnan_(a))"),
    # maximum(a, 0), NaN kept
    "relu": (1, "maxn(a, 0.0)"),
    # abs, add 1, divide
    "softsign": (1, "a / (abs(a) + 1.0)"),
}

# WGSL's log is only accurate to an absolute 2**-21 near 1 (Vulkan's bound, and lavapipe's
# error), which no formula built on log(1 + x) survives for small x: log1p_s sums the series
# log1p(x) = 2 atanh(s), s = x / (2 + x), where |s| <= 0.2 (nine terms reach 2**-24)
_HELPERS = """
// |r| with the sign bit of x (odd functions keep -0.0)
fn with_sign(r: f32, x: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(r) & 0x7fffffffu) | (bitcast<u32>(x) & 0x80000000u));
}
fn log1p_s(x: f32) -> f32 {
    if (isnan_(x) || x < -1.0) { return nan(); }
    if (x == -1.0) { return -inf(); }
    if (x < -0.33333334 || x > 0.5) { return log(1.0 + x); }
    let s = x / (2.0 + x);
    let q = s * s;
    return 2.0 * s * (1.0 + q * (0.33333333 + q * (0.2 + q * (0.14285714 + q * (0.11111111
        + q * (0.09090909 + q * (0.07692308 + q * (0.06666667 + q * 0.05882353))))))));
}
fn hypot_(a: f32, b: f32) -> f32 {
    let x = abs(a);
    let y = abs(b);
    if (x == inf() || y == inf()) { return inf(); }
    if (isnan_(x) || isnan_(y)) { return nan(); }
    let big = max(x, y);
    if (big == 0.0) { return 0.0; }
    let r = min(x, y) / big;
    return big * sqrt(1.0 + r * r);
}
fn nextafter_(a: f32, b: f32) -> f32 {
    if (isnan_(a) || isnan_(b)) { return nan(); }
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    if (ua == ub || ((ua | ub) & 0x7fffffffu) == 0u) { return b; }
    if ((ua & 0x7fffffffu) == 0u) { return bitcast<f32>((ub & 0x80000000u) | 1u); }
    // away from zero when b lies beyond a on a's side: the magnitude's bits grow by one
    let away = (a < b) == ((ua & 0x80000000u) == 0u);
    return bitcast<f32>(select(ua - 1u, ua + 1u, away));
}
fn logaddexp_(a: f32, b: f32) -> f32 {
    if (isnan_(a) || isnan_(b)) { return nan(); }
    if (a == b) { return a + 0.6931471805599453; }
    let d = a - b;
    return max(a, b) + log1p_s(exp(-abs(d)));
}
fn logaddexp2_(a: f32, b: f32) -> f32 {
    if (isnan_(a) || isnan_(b)) { return nan(); }
    if (a == b) { return a + 1.0; }
    let d = a - b;
    return max(a, b) + log1p_s(exp2(-abs(d))) * 1.4426950408889634;
}
fn asinh_(x: f32) -> f32 {
    if (isnan_(x)) { return x; }
    let z = abs(x);
    var r: f32;
    if (z > 1e18) {
        r = log(z) + 0.6931471805599453;  // z * z would overflow: asinh(z) = log(2z)
    } else {
        r = log1p_s(z + z * z / (1.0 + sqrt(1.0 + z * z)));
    }
    return with_sign(r, x);
}
fn acosh_(x: f32) -> f32 {
    if (isnan_(x) || x < 1.0) { return nan(); }
    if (x > 1e18) { return log(x) + 0.6931471805599453; }
    let t = x - 1.0;
    return log1p_s(t + sqrt(2.0 * t + t * t));
}
fn atanh_(x: f32) -> f32 {
    let z = abs(x);
    if (isnan_(x) || z > 1.0) { return nan(); }
    return with_sign(0.5 * log1p_s(2.0 * z / (1.0 - z)), x);
}
"""


def _pointwise_form(name):
    """The float32 form of the device's element-wise kernel for the array function ``name``
    (NaN in, NaN out for the "float" functions, as that kernel ensures), or None."""
    entry = _xp._POINTWISE.get(name)
    if entry is None:
        return None
    arity, kind, exprs = entry
    expr = exprs.get("f32", exprs.get("*"))
    if expr is None or kind not in ("arith", "float"):
        return None
    if kind == "float":
        nan_in = " || ".join(f"isnan_({v})" for v in "ab"[:arity])
        expr = f"select({expr}, nan(), {nan_in})"
    return arity, expr


WGSL_FORMS = {name: form for name in _xp._POINTWISE
              if (form := _pointwise_form(name)) is not None}
WGSL_FORMS.update(_OWN_FORMS)


def rule_name(rule):
    """The name a fusion rule is known by in :data:`WGSL_FORMS`: its array function, or its
    step's name without the leading underscore and ``_step``.

    Example::

        >>> from ember.ops._registry import registry
        >>> rule_name(registry["exp"][0].fuse), rule_name(registry["sigmoid"][0].fuse)
        ('exp', 'sigmoid')
    """
    if rule.ufunc is not None:
        return rule.ufunc
    name = getattr(rule.step, "__name__", "")
    return name.strip("_").removesuffix("_step")


def wgsl_form(rule, params=None):
    """``(arity, WGSL expression)`` of a step with fusion rule ``rule`` and parameters
    ``params`` (None when it has none, or they may change what it computes).

    Example::

        >>> from ember.ops._registry import registry
        >>> wgsl_form(registry["mul"][0].fuse)
        (2, 'a * b')
    """
    from ..ops._fusion import unit_alpha

    if params and rule.accepts is not unit_alpha:  # alpha == 1 changes nothing
        return None
    form = WGSL_FORMS.get(rule_name(rule))
    if form is None or form[0] != rule.arity:
        return None
    return form


def _step_functions(names):
    """WGSL functions ``f0``, ``f1``, ... (one per distinct form, in ``names``' order)."""
    lines = []
    for k, name in enumerate(names):
        arity, expr = WGSL_FORMS[name]
        args = ", ".join(f"{v}: f32" for v in "ab"[:arity])
        lines.append(f"fn f{k}({args}) -> f32 {{ return {expr}; }}\n")
    return "".join(lines)


@functools.lru_cache(maxsize=1024)
def shader_source(steps, access):
    """The WGSL of the chain ``steps`` (``(form name, refs)`` each) over inputs read as
    ``access`` says (a key of ``_kernels.ACCESS_INDEX`` per input, bound at 2, 3, ...).

    Example::

        >>> src = shader_source((("exp", (0,)), ("add", (-1, 1))), ("linear", "single"))
        >>> "let s1 = f1(s0, x1);" in src, "rem % size" in src
        (True, False)
    """
    names = list(dict.fromkeys(name for name, _ in steps))
    lines = [K._HEADER]
    lines += [f"@group(0) @binding({2 + j}) var<storage, read> I{2 + j}: array<u32>;\n"
              for j in range(len(access))]
    lines += [_xp._helpers(), _HELPERS, _step_functions(names), K._ENTRY,
              "    let i = t;\n    if (i >= P[0]) { return; }\n"]
    strided = [j for j, how in enumerate(access) if how == "strided"]
    if strided:
        lines.append(K._strided_offsets(strided).replace("\n        ", "\n    ")[4:])
    for j, how in enumerate(access):
        index = K.ACCESS_INDEX[how].format(base=K.operand_base(j), j=j)
        lines.append(f"    let x{j} = {K.load_element(f'I{2 + j}', 4, 'f32', index)};\n")
    for k, (name, refs) in enumerate(steps):
        args = ", ".join(f"s{k - 1}" if r < 0 else f"x{r}" for r in refs)
        lines.append(f"    let s{k} = f{names.index(name)}({args});\n")
    lines.append(f"    OUT[i] = bitcast<u32>(s{len(steps) - 1});\n}}\n")
    return "".join(lines)


class FusedShader:
    """A chain's shader: called with the chain's input arrays, returns the chain's result
    (a new contiguous float32 array), or None when these arrays cannot run it (not float32
    device arrays, too many to bind): the caller then runs the steps."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, arrays):
        if not _fits(arrays):
            return None
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        out = _xp._new(shape, _FLOAT32)
        if out.size == 0:
            return out
        access, views = zip(*(_xp._access(a, shape) for a in arrays))
        source = shader_source(self.steps, access)
        limit = out.storage.runtime.max_binding
        if out.storage.buffer.size > limit or any(v.storage.buffer.size > limit for v in views):
            if any(how == "strided" and not v.is_c_contiguous() and 0 not in v.estrides
                   for v, how in zip(views, access)):
                return None  # a large permuted operand: the steps copy it first
            _xp._run_windowed(source, out, views, access, [], 1)
            return out
        words = _xp._params_for(shape, [(v.offset, v.estrides) for v in views])
        _xp._run(source, out, views, words, out.size)
        return out


def _fits(arrays):
    """Whether one shader may compute over ``arrays``: float32 device arrays of at most
    ``MAX_DIMS`` dims, few enough to bind beside the params and the output."""
    for a in arrays:
        if type(a) is not WebGPUArray or a.dtype != _FLOAT32 or a.ndim > K.MAX_DIMS:
            return False
    return len(arrays) <= _max_inputs()


@functools.cache
def _max_inputs():
    limits = _runtime.runtime().device.limits
    return limits.get("max-storage-buffers-per-shader-stage", 8) - 2


def fused_shader(program, ops):
    """The :class:`FusedShader` of a fused chain (``FusedOp``'s ``program`` and ``ops``), or
    None when one of its steps has no WGSL form (see the module docstring; an example there).
    """
    steps = []
    for op, (_, refs, params) in zip(ops, program):
        rule = op.fuse
        if rule is None or wgsl_form(rule, params) is None:
            return None
        steps.append((rule_name(rule), tuple(refs)))
    return _shader(tuple(steps))


@functools.lru_cache(maxsize=1024)
def _shader(steps):
    return FusedShader(steps)


def chain_kernel(xp, program, ops):
    """``kernel(xp, *arrays)`` running a fused chain (``program`` and ``ops`` as
    ``FusedOp``'s) on the webgpu array module ``xp`` as one shader, or, on arrays the shader
    refuses, op by op with each op's kernel; None for another array module or a chain with a
    step that has no WGSL form. For generated code (the joint graph's ``ArrayCode``).

    Example::

        >>> from ember.ops._registry import registry
        >>> from ember.webgpu import _xp
        >>> kernel = chain_kernel(_xp, [["exp", [0], {}]], registry["exp"][:1])
        >>> kernel(_xp, ember.zeros(2, device="webgpu")._data).get()
        array([1., 1.], dtype=float32)
        >>> chain_kernel(np, [["exp", [0], {}]], registry["exp"][:1]) is None
        True
    """
    if xp is np or not xp.__name__.startswith("ember.webgpu"):
        return None
    shader = fused_shader(program, ops)
    if shader is None:
        return None
    steps = [(op.kernel, tuple(refs), dict(params)) for op, (_, refs, params) in zip(ops, program)]

    def kernel(xp, *arrays):
        result = shader(arrays)
        if result is not None:
            return result
        acc = None
        for run, refs, params in steps:
            acc = run(xp, *[acc if r < 0 else arrays[r] for r in refs], **params)
        return acc
    return kernel
