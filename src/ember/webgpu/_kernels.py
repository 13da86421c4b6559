"""WGSL sources, generated from small tables: one template per kernel family.

Every buffer is bound as ``array<u32>`` and holds exactly NumPy's bytes for its dtype, so an
upload or download is a plain copy. Loads pick an element's bits out of the words (bytes for
bool/uint8, halves for float16, pairs of words for 8-byte dtypes) and convert them to the
kernel's compute type; a thread writes whole words (four bool/uint8 results at a time), so no
two threads ever write the same word.

Shapes, strides, offsets and scalar operands travel in a ``params`` buffer of u32 words
(:func:`params`), so one compiled pipeline serves every shape and every scalar value.
"""

from __future__ import annotations

import functools

import numpy as np

MAX_DIMS = 8
WORKGROUP = 64

# compute type of each dtype the kernels compute with
COMPUTE = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.uint8): "u32",
           np.dtype(np.bool_): "bool", np.dtype(np.int64): "i64", np.dtype(np.float16): "f32"}
# float16 computes in f32 and is rounded once on the store (to nearest even, on the bits), as
# NumPy's and torch's CPU half kernels compute

F16_HELPERS = """
fn f16_load(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        let tiny = f32(m) * 5.9604644775390625e-8;
        return select(tiny, -tiny, sign != 0u);
    }
    if (e == 31u) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }
    return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}
fn f16_bits(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let sign = (b >> 16u) & 0x8000u;
    let biased = (b >> 23u) & 0xffu;
    var m = b & 0x7fffffu;
    if (biased == 0xffu) { return sign | 0x7c00u | select(0u, 0x200u | (m >> 13u), m != 0u); }
    let e = i32(biased) - 112;
    if (e >= 31) { return sign | 0x7c00u; }
    if (e <= 0) {
        if (e < -10) { return sign; }
        m = m | 0x800000u;
        let shift = u32(14 - e);
        var half = m >> shift;
        let rem = m & ((1u << shift) - 1u);
        let halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half & 1u) == 1u)) { half = half + 1u; }
        return sign | half;
    }
    var h = (u32(e) << 10u) | (m >> 13u);
    let rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) { h = h + 1u; }
    return sign | h;
}
"""
# int64 computes as vec2<u32> (low word, high word): exact compares, selects, add/sub with
# carries (wrapping as torch's int64); nothing converts it to another type but bool

I64_HELPERS = """
alias i64 = vec2<u32>;
fn i64_of(x: i32) -> i64 { return i64(bitcast<u32>(x), select(0u, 0xffffffffu, x < 0)); }
fn lt64(a: i64, b: i64) -> bool {
    let ha = bitcast<i32>(a.y); let hb = bitcast<i32>(b.y);
    return ha < hb || (ha == hb && a.x < b.x);
}
fn eq64(a: i64, b: i64) -> bool { return a.x == b.x && a.y == b.y; }
fn add64(a: i64, b: i64) -> i64 {
    let lo = a.x + b.x;
    return i64(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn sub64(a: i64, b: i64) -> i64 {
    return i64(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
fn neg64(a: i64) -> i64 { return sub64(i64(0u, 0u), a); }
fn max64(a: i64, b: i64) -> i64 { return select(a, b, lt64(a, b)); }
fn min64(a: i64, b: i64) -> i64 { return select(a, b, lt64(b, a)); }
fn abs64(a: i64) -> i64 { return select(a, neg64(a), bitcast<i32>(a.y) < 0); }
fn mulwide(a: u32, b: u32) -> i64 {
    let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
    let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return i64((p00 & 0xffffu) | (mid << 16u),
               a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn mul64(a: i64, b: i64) -> i64 {
    let p = mulwide(a.x, b.x);
    return i64(p.x, p.y + a.x * b.y + a.y * b.x);
}
fn f32_from_i64(v: i64) -> f32 {
    // the magnitude's top 24 bits, rounded to nearest even on the rest (exact, as NumPy)
    let neg = bitcast<i32>(v.y) < 0;
    let m = select(v, neg64(v), neg);
    if (m.x == 0u && m.y == 0u) { return 0.0; }
    let lz = select(countLeadingZeros(m.y), 32u + countLeadingZeros(m.x), m.y == 0u);
    var hi = m.y; var lo = m.x;
    if (lz >= 32u) { hi = m.x << (lz - 32u); lo = 0u; }
    else if (lz > 0u) { hi = (m.y << lz) | (m.x >> (32u - lz)); lo = m.x << lz; }
    var mant = hi >> 8u;
    var e = 63u - lz;
    let rest = hi & 0xffu;
    let sticky = (rest & 0x7fu) != 0u || lo != 0u;
    if ((rest & 0x80u) != 0u && (sticky || (mant & 1u) == 1u)) {
        mant = mant + 1u;
        if (mant == 0x1000000u) { mant = 0x800000u; e = e + 1u; }
    }
    let magnitude = bitcast<f32>(((e + 127u) << 23u) | (mant & 0x7fffffu));
    return select(magnitude, -magnitude, neg);
}
fn i64_from_f32(x: f32) -> i64 {
    let t = trunc(x);
    if (abs(t) < 2147483648.0) { return i64_of(i32(t)); }
    let hi = floor(t / 4294967296.0);
    let lo = t - hi * 4294967296.0;
    return i64(u32(lo), bitcast<u32>(i32(hi)));
}
"""


def params(words):
    """The bytes of a params buffer holding ``words`` (ints as u32/i32 bits, floats as f32)."""
    if not words:
        return bytes(4)
    ints = [_float_bits(w) if isinstance(w, float) else w for w in words]
    return (np.array(ints, np.int64) & 0xFFFFFFFF).astype(np.uint32).tobytes()


def _float_bits(value):
    return int(np.float32(value).view(np.uint32))


def convert(value, source, target):
    """WGSL converting ``value`` of compute type ``source`` to ``target``."""
    if source == target:
        return value
    if target == "i64":
        if source == "bool":
            return f"i64(select(0u, 1u, {value}), 0u)"
        if source == "u32":
            return f"i64({value}, 0u)"
        if source == "i32":
            return f"i64_of({value})"
        if source == "f32":
            return f"i64_from_f32({value})"
        raise ValueError(f"no exact conversion from {source} to int64")
    if source == "i64":  # to narrower ints: the low word (NumPy's wrap)
        if target == "bool":
            return f"any({value} != i64(0u, 0u))"
        if target == "i32":
            return f"bitcast<i32>(({value}).x)"
        if target == "u32":
            return f"({value}).x"
        if target == "f32":
            return f"f32_from_i64({value})"
        raise ValueError(f"no exact conversion from int64 to {target}")
    if source == "bool":
        one = {"f32": "1.0", "i32": "1", "u32": "1u"}[target]
        zero = {"f32": "0.0", "i32": "0", "u32": "0u"}[target]
        return f"select({zero}, {one}, {value})"
    if target == "bool":
        zero = {"f32": "0.0", "i32": "0", "u32": "0u"}[source]
        return f"({value} != {zero})"
    if source == "f32" and target == "u32":
        return f"u32(i32({value}))"
    return f"{target}({value})"


def load_element(binding, itemsize, ct, index):
    """WGSL reading element ``index`` of ``binding`` (a dtype with compute type ``ct``)."""
    if itemsize == 8:
        return f"i64({binding}[2u * ({index})], {binding}[2u * ({index}) + 1u])"
    if itemsize == 4:
        return f"bitcast<{ct}>({binding}[{index}])" if ct != "u32" else f"{binding}[{index}]"
    if itemsize == 1:
        byte = f"(({binding}[({index}) >> 2u] >> ((({index}) & 3u) * 8u)) & 255u)"
        return f"({byte} != 0u)" if ct == "bool" else byte
    if itemsize == 2:  # float16
        return f"f16_load(({binding}[({index}) >> 1u] >> ((({index}) & 1u) * 16u)) & 0xffffu)"
    raise ValueError(itemsize)


def store_bits(value, ct, itemsize):
    """WGSL giving the low ``itemsize`` bytes' worth of bits of ``value`` as u32."""
    if itemsize == 1:
        return f"select(0u, 1u, {value})" if ct == "bool" else f"(u32({value}) & 255u)"
    if itemsize == 2:  # float16
        return f"f16_bits({value})"
    return value if ct == "u32" else f"bitcast<u32>({value})"


_INDEXING = """
fn offset_of(linear: u32, base: u32) -> u32 {
    var rem = linear;
    var off = bitcast<i32>(P[base]);
    for (var d = i32(P[1]) - 1; d >= 0; d = d - 1) {
        let size = P[2u + u32(d)];
        let idx = rem % size;
        rem = rem / size;
        off = off + i32(idx) * bitcast<i32>(P[base + 1u + u32(d)]);
    }
    return u32(off);
}
"""

_HEADER = """@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;
"""

_ENTRY = ("@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, "
          "@builtin(num_workgroups) nwg: vec3<u32>) {\n"
          "    let t = gid.x + gid.y * nwg.x * 64u;\n")


def operand_base(i):
    """Where operand ``i``'s offset and strides start in the params words."""
    return 2 + MAX_DIMS + i * (1 + MAX_DIMS)


# how an elementwise kernel finds a buffer operand's element for output element ``i``
ACCESS_INDEX = {
    "strided": "u32(o{j})",  # through the shape and strides (see _strided_offsets)
    "linear": "(P[{base}u] + i)",  # contiguous, of the output's shape: offset + i
    "single": "P[{base}u]",  # one element broadcast to every output element
}


def _strided_offsets(strided):
    """WGSL setting ``o{j}``, the element of strided operand ``j`` for output element ``i``:
    one division per dim, shared by all of them (the index is split into coordinates once)."""
    lines = ["        var rem = i;\n"]
    lines += [f"        var o{j} = bitcast<i32>(P[{operand_base(j)}u]);\n" for j in strided]
    lines.append("        for (var d = i32(P[1]) - 1; d >= 0; d = d - 1) {\n"
                 "            let size = P[2u + u32(d)];\n"
                 "            let idx = i32(rem % size);\n            rem = rem / size;\n")
    lines += [f"            o{j} = o{j} + idx * bitcast<i32>(P[{operand_base(j) + 1}u + u32(d)]);"
              "\n" for j in strided]
    return "".join(lines) + "        }\n"


@functools.lru_cache(maxsize=4096)
def elementwise(expr, operands, ct, out_ct, out_itemsize, expr_ct=None, access=None):
    """A kernel writing ``expr`` (WGSL in ``a``, ``b``, ``c`` of compute type ``ct``) for each
    element of a contiguous output of ``out_itemsize`` bytes.

    ``operands``: per operand ``("buffer", itemsize, compute type)`` (read through strides, 0
    for broadcast dims) or ``("scalar", None, compute type)`` (a params word), optionally
    followed by the compute type to convert it to (default ``ct``). ``expr_ct``: the type of
    ``expr`` when it must be converted to the output's (a cast). ``access``: per buffer operand
    a key of :data:`ACCESS_INDEX` (default: all ``"strided"``); a kernel whose operands are all
    ``"linear"`` or ``"single"`` indexes without any division.

    Example::

        >>> src = elementwise("a + b", (("buffer", 4, "f32"), ("buffer", 4, "f32")), "f32",
        ...                   "f32", 4, access=("linear", "single"))
        >>> "rem % size" in src, "(P[10u] + i)" in src, "I3[P[19u]]" in src
        (False, True, True)
    """
    nbuf = sum(1 for kind, *_ in operands if kind == "buffer")
    access = ("strided",) * nbuf if access is None else access
    lines = [_HEADER]
    binding = 2
    loads = []
    scalar_at = operand_base(nbuf)
    buffer_index = 0
    for name, (kind, itemsize, source, *target) in zip("abc", operands):
        target = target[0] if target else ct
        if kind == "buffer":
            lines.append(f"@group(0) @binding({binding}) var<storage, read> I{binding}: "
                         f"array<u32>;\n")
            index = ACCESS_INDEX[access[buffer_index]].format(base=operand_base(buffer_index),
                                                              j=buffer_index)
            raw = load_element(f"I{binding}", itemsize, source, index)
            binding += 1
            buffer_index += 1
        elif source == "i64":  # two params words
            raw = f"i64(P[{scalar_at}u], P[{scalar_at + 1}u])"
            scalar_at += 2
        else:
            raw = f"bitcast<{source}>(P[{scalar_at}u])" if source not in ("u32", "bool") else \
                f"P[{scalar_at}u]"
            if source == "bool":
                raw = f"(P[{scalar_at}u] != 0u)"
            scalar_at += 1
        loads.append(f"        let {name} = {convert(raw, source, target)};\n")
    strided = [j for j, how in enumerate(access) if how == "strided"]
    if strided:
        loads.insert(0, _strided_offsets(strided))
    lines.append(I64_HELPERS + F16_HELPERS)
    if out_itemsize == 8:  # an int64 result: two words per element
        value = expr if expr_ct is None else convert(f"({expr})", expr_ct, out_ct)
        lines.append(_ENTRY + "    let i = t;\n    if (i >= P[0]) { return; }\n")
        lines.extend(loads)
        lines.append(f"    let v = {value};\n    OUT[2u * t] = v.x;\n"
                     "    OUT[2u * t + 1u] = v.y;\n}\n")
        return "".join(lines).replace("\n        let ", "\n    let ")
    per = 4 // out_itemsize
    lines.append(_ENTRY)
    lines.append(f"    let first = t * {per}u;\n    if (first >= P[0]) {{ return; }}\n")
    lines.append(f"    var word = 0u;\n    for (var k = 0u; k < {per}u; k = k + 1u) {{\n"
                 f"        let i = first + k;\n        if (i >= P[0]) {{ break; }}\n")
    lines.extend(loads)
    value = expr if expr_ct is None else convert(f"({expr})", expr_ct, out_ct)
    lines.append(f"        let v = {value};\n")
    bits = store_bits("v", out_ct, out_itemsize)
    lines.append(f"        word = word | ({bits} << (k * {out_itemsize * 8}u));\n" if per > 1
                 else f"        word = {bits};\n")
    lines.append("    }\n    OUT[t] = word;\n}\n")
    return "".join(lines)


@functools.cache
def strided_copy(itemsize):
    """Gather a strided array of any dtype into a contiguous one (``contiguous()``), raw bits:
    the params hold the shape and the source's offset and strides (operand 0)."""
    base = operand_base(0)
    head = _HEADER + "@group(0) @binding(2) var<storage, read> I2: array<u32>;\n" + _INDEXING
    if itemsize == 8:
        body = (f"    if (t >= P[0]) {{ return; }}\n    let o = offset_of(t, {base}u);\n"
                "    OUT[2u * t] = I2[2u * o];\n    OUT[2u * t + 1u] = I2[2u * o + 1u];\n}\n")
        return head + _ENTRY + body
    if itemsize == 4:
        body = (f"    if (t >= P[0]) {{ return; }}\n"
                f"    OUT[t] = I2[offset_of(t, {base}u)];\n}}\n")
        return head + _ENTRY + body
    per, width = 4 // itemsize, itemsize * 8
    mask = (1 << width) - 1
    shift = {1: "2u", 2: "1u"}[itemsize]
    body = (f"    let first = t * {per}u;\n    if (first >= P[0]) {{ return; }}\n"
            f"    var word = 0u;\n    for (var k = 0u; k < {per}u; k = k + 1u) {{\n"
            "        let i = first + k;\n        if (i >= P[0]) { break; }\n"
            f"        let o = offset_of(i, {base}u);\n"
            f"        let bits = (I2[o >> {shift}] >> ((o & {per - 1}u) * {width}u)) & {mask}u;\n"
            f"        word = word | (bits << (k * {width}u));\n    }}\n    OUT[t] = word;\n}}\n")
    return head + _ENTRY + body


@functools.cache
def strided_write_narrow(itemsize):
    """``dst[...] = src`` for 1- and 2-byte dtypes, whose elements share words: each thread
    clears its element's bits and sets the new ones with atomics (binding 1 as atomics)."""
    dst, src = operand_base(0), operand_base(1)
    per, width = 4 // itemsize, itemsize * 8
    mask = (1 << width) - 1
    shift = {1: "2u", 2: "1u"}[itemsize]
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> OUT: array<atomic<u32>>;\n"
            "@group(0) @binding(2) var<storage, read> I2: array<u32>;\n" + _INDEXING + _ENTRY
            + "    if (t >= P[0]) { return; }\n"
            f"    let s = offset_of(t, {src}u);\n    let d = offset_of(t, {dst}u);\n"
            f"    let bits = (I2[s >> {shift}] >> ((s & {per - 1}u) * {width}u)) & {mask}u;\n"
            f"    let at = (d & {per - 1}u) * {width}u;\n"
            f"    atomicAnd(&OUT[d >> {shift}], ~({mask}u << at));\n"
            f"    atomicOr(&OUT[d >> {shift}], bits << at);\n}}\n")


@functools.cache
def strided_write(itemsize):
    """Scatter a contiguous array (binding 2, broadcast through operand 1's strides) into a
    strided view of the output buffer (operand 0's offset and strides): ``dst[...] = src``.
    Only for 4- and 8-byte dtypes, whose elements own whole words."""
    dst, src = operand_base(0), operand_base(1)
    head = _HEADER + "@group(0) @binding(2) var<storage, read> I2: array<u32>;\n" + _INDEXING
    if itemsize == 4:
        body = (f"    if (t >= P[0]) {{ return; }}\n"
                f"    OUT[offset_of(t, {dst}u)] = I2[offset_of(t, {src}u)];\n}}\n")
    else:
        body = (f"    if (t >= P[0]) {{ return; }}\n    let d = offset_of(t, {dst}u);\n"
                f"    let s = offset_of(t, {src}u);\n"
                "    OUT[2u * d] = I2[2u * s];\n    OUT[2u * d + 1u] = I2[2u * s + 1u];\n}\n")
    return head + _ENTRY + body


# reductions over the last axis of a contiguous (rows, K) array: P = [rows, K]
_REDUCE_BODY = {
    "sum": ("var acc = 0.0; var comp = 0.0;",
            "let y = x - comp; let s = acc + y; comp = (s - acc) - y; acc = s;", "acc"),
    "prod": ("var acc = 1.0;", "acc = acc * x;", "acc"),
    "max": ("var acc = bitcast<f32>(0xff800000u);",
            "if (x > acc || isnan_(x)) { acc = x; } if (isnan_(x)) { break; }", "acc"),
    "min": ("var acc = bitcast<f32>(0x7f800000u);",
            "if (x < acc || isnan_(x)) { acc = x; } if (isnan_(x)) { break; }", "acc"),
}


_ISNAN = "fn isnan_(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"


@functools.cache
def reduce_rows(kind):
    """One thread per row: sum (compensated), prod, max or min of float32 rows, or
    argmax/argmin as int64 (first occurrence, NaN counting as the extreme, as NumPy)."""
    head = ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;\n"
            "@group(0) @binding(2) var<storage, read> I2: array<u32>;\n" + _ISNAN)
    start = _ENTRY + "    if (t >= P[0]) { return; }\n    let K = P[1];\n    let row = t * K;\n"
    if kind in ("argmax", "argmin"):
        better = ">" if kind == "argmax" else "<"
        body = ("    var best = 0u;\n    var acc = bitcast<f32>(I2[row]);\n"
                "    for (var k = 0u; k < K; k = k + 1u) {\n"
                "        let x = bitcast<f32>(I2[row + k]);\n"
                "        if (isnan_(acc)) { break; }\n"
                f"        if (x {better} acc || isnan_(x)) {{ acc = x; best = k; }}\n    }}\n"
                "    OUT[2u * t] = best;\n    OUT[2u * t + 1u] = 0u;\n}\n")
        return head + start + body
    init, step, result = _REDUCE_BODY[kind]
    body = (f"    {init}\n    for (var k = 0u; k < K; k = k + 1u) {{\n"
            f"        let x = bitcast<f32>(I2[row + k]);\n        {step}\n    }}\n"
            f"    OUT[t] = bitcast<u32>({result});\n}}\n")
    return head + start + body


@functools.cache
def matmul():
    """Batched float32 matmul with broadcast batch dims, reading both operands through their
    strides (transposed views need no copy). One thread per 4x4 block of outputs: each step
    of ``k`` loads four values of each operand for sixteen multiply-adds (one thread per
    output loads two per multiply-add); each output still sums over ``k`` in order.

    P = [threads (4x4 blocks), M, N, K, nbatch, batch shape (4), a offset, a strides (batch 4,
    row, col), b offset, b strides (batch 4, row, col)].
    """
    rows = "".join(f"    let ra{i} = oa + i32(min(row0 + {i}u, M - 1u)) * st(14u);\n"
                   f"    let cb{i} = ob + i32(min(col0 + {i}u, N - 1u)) * st(22u);\n"
                   for i in range(4))
    step = "".join(f"        acc{i} = acc{i} + a.{xyzw} * b;\n"
                   for i, xyzw in enumerate("xyzw"))
    loads = ("        let a = vec4<f32>(" + ", ".join(
        f"bitcast<f32>(A[u32(ra{i} + ka)])" for i in range(4)) + ");\n"
        "        let b = vec4<f32>(" + ", ".join(
            f"bitcast<f32>(B[u32(cb{i} + kb)])" for i in range(4)) + ");\n")
    stores = "".join(f"    if (row0 + {i}u < M) {{ store_row(base + (row0 + {i}u) * N, col0, N, "
                     f"acc{i}); }}\n" for i in range(4))
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;\n"
            "@group(0) @binding(2) var<storage, read> A: array<u32>;\n"
            "@group(0) @binding(3) var<storage, read> B: array<u32>;\n"
            "fn st(i: u32) -> i32 { return bitcast<i32>(P[i]); }\n"
            "fn store_row(at: u32, col0: u32, N: u32, v: vec4<f32>) {\n"
            "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
            "        if (col0 + j < N) { OUT[at + col0 + j] = bitcast<u32>(v[j]); }\n    }\n}\n"
            + _ENTRY +
            "    if (t >= P[0]) { return; }\n"
            "    let M = P[1]; let N = P[2]; let K = P[3];\n"
            "    let blocks_n = (N + 3u) / 4u; let blocks_m = (M + 3u) / 4u;\n"
            "    let col0 = (t % blocks_n) * 4u; let row0 = ((t / blocks_n) % blocks_m) * 4u;\n"
            "    var batch = t / (blocks_m * blocks_n);\n"
            "    let base = batch * M * N;\n"
            "    var oa = st(9u); var ob = st(16u);\n"
            "    for (var d = i32(P[4]) - 1; d >= 0; d = d - 1) {\n"
            "        let size = P[5u + u32(d)];\n"
            "        let idx = i32(batch % size); batch = batch / size;\n"
            "        oa = oa + idx * st(10u + u32(d)); ob = ob + idx * st(17u + u32(d));\n    }\n"
            + rows +
            "    let sa = st(15u); let sb = st(21u);\n"
            "    var acc0 = vec4<f32>(0.0); var acc1 = vec4<f32>(0.0);\n"
            "    var acc2 = vec4<f32>(0.0); var acc3 = vec4<f32>(0.0);\n"
            "    var ka = 0; var kb = 0;\n"
            "    for (var k = 0u; k < K; k = k + 1u) {\n"
            + loads + step +
            "        ka = ka + sa; kb = kb + sb;\n    }\n"
            + stores + "}\n")


def _index_value(binding, itemsize, position):
    """WGSL reading an int32/int64 index as i32 (an int64's low word: indices are checked
    against the dim size before they reach a kernel)."""
    if itemsize == 8:
        return f"bitcast<i32>({binding}[2u * ({position})])"
    return f"bitcast<i32>({binding}[{position}])"


@functools.cache
def scatter_add(key_itemsizes, ct):
    """``out[key] += values`` with one index array per dim of ``out`` (all broadcast to one
    shape, the params' shape), repeats adding up through atomics (a compare-exchange loop for
    float32). Operand 0: values; 1..n: the keys; then out's offset, strides and shape."""
    n = len(key_itemsizes)
    out_base = operand_base(1 + n)
    lines = ["@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
             "@group(0) @binding(1) var<storage, read_write> OUT: array<atomic<u32>>;\n"
             "@group(0) @binding(2) var<storage, read> V: array<u32>;\n"]
    for j in range(n):
        lines.append(f"@group(0) @binding({3 + j}) var<storage, read> K{j}: array<u32>;\n")
    lines.append(_INDEXING + _ENTRY + "    if (t >= P[0]) { return; }\n"
                 f"    var pos = bitcast<i32>(P[{out_base}u]);\n")
    for j, itemsize in enumerate(key_itemsizes):
        index = _index_value(f"K{j}", itemsize, f"offset_of(t, {operand_base(1 + j)}u)")
        size = f"i32(P[{out_base + 1 + MAX_DIMS + j}u])"
        lines.append(f"    var k{j} = {index};\n    if (k{j} < 0) {{ k{j} = k{j} + {size}; }}\n"
                     f"    if (k{j} < 0 || k{j} >= {size}) {{ return; }}\n"
                     f"    pos = pos + k{j} * bitcast<i32>(P[{out_base + 1 + j}u]);\n")
    value = f"V[offset_of(t, {operand_base(0)}u)]"
    if ct == "f32":
        lines.append(f"    let v = bitcast<f32>({value});\n    loop {{\n"
                     "        let old = atomicLoad(&OUT[pos]);\n"
                     "        let sum = bitcast<u32>(bitcast<f32>(old) + v);\n"
                     "        if (atomicCompareExchangeWeak(&OUT[pos], old, sum).exchanged) "
                     "{ break; }\n    }\n}\n")
    else:
        lines.append(f"    atomicAdd(&OUT[pos], {value});\n}}\n")
    return "".join(lines)


@functools.cache
def take_along_axis(itemsize, index_itemsize):
    """``take_along_axis(a, idx, axis)`` for 4- and 8-byte dtypes. Operand 0: ``a`` broadcast
    to the output with stride 0 along the axis; operand 1: the indices; then the axis's stride
    and size. An index out of range reads 0 (ember checks ranges before)."""
    tail = operand_base(2)
    index = _index_value("IX", index_itemsize, f"offset_of(t, {operand_base(1)}u)")
    lines = [_HEADER, "@group(0) @binding(2) var<storage, read> A: array<u32>;\n"
             "@group(0) @binding(3) var<storage, read> IX: array<u32>;\n", _INDEXING, _ENTRY,
             "    if (t >= P[0]) { return; }\n"
             f"    var k = {index};\n    let size = i32(P[{tail + 1}u]);\n"
             "    if (k < 0) { k = k + size; }\n"
             f"    let pos = u32(i32(offset_of(t, {operand_base(0)}u)) + k * "
             f"bitcast<i32>(P[{tail}u]));\n"]
    if itemsize == 8:
        lines.append("    OUT[2u * t] = A[2u * pos];\n"
                     "    OUT[2u * t + 1u] = A[2u * pos + 1u];\n}\n")
    else:
        lines.append("    OUT[t] = A[pos];\n}\n")
    return "".join(lines)


@functools.cache
def reduce_rows_int64(kind):
    """max/min/sum of int64 rows (exact; sums wrap as int64), or argmax/argmin (the first
    occurrence, as int64), one thread per row."""
    store = "    OUT[2u * t] = lo;\n    OUT[2u * t + 1u] = bitcast<u32>(hi);\n}\n"
    if kind == "prod":  # wraps as int64, as NumPy's and torch's
        step = ("        let p = mul64(i64(lo, bitcast<u32>(hi)), i64(l, bitcast<u32>(h)));\n"
                "        lo = p.x; hi = bitcast<i32>(p.y);\n")
    elif kind == "sum":
        step = ("        let s = l + lo; hi = bitcast<i32>(bitcast<u32>(hi) + bitcast<u32>(h) + "
                "select(0u, 1u, s < lo)); lo = s;\n")
    else:
        better = ">" if kind in ("max", "argmax") else "<"
        found = " best = k;" if kind.startswith("arg") else ""
        step = (f"        if (h {better} hi || (h == hi && l {better} lo)) "
                f"{{ lo = l; hi = h;{found} }}\n")
        if found:
            store = "    OUT[2u * t] = best;\n    OUT[2u * t + 1u] = 0u;\n}\n"
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;\n"
            "@group(0) @binding(2) var<storage, read> I2: array<u32>;\n" + I64_HELPERS
            + _ENTRY +
            "    if (t >= P[0]) { return; }\n    let K = P[1];\n    let row = t * K;\n"
            "    var lo = I2[2u * row]; var hi = bitcast<i32>(I2[2u * row + 1u]);\n"
            "    var best = 0u;\n"
            "    for (var k = 1u; k < K; k = k + 1u) {\n"
            "        let l = I2[2u * (row + k)]; let h = bitcast<i32>(I2[2u * (row + k) + 1u]);\n"
            + step + "    }\n" + store)


@functools.cache
def cumprod_rows():
    """Inclusive products along contiguous float32 rows: P = [rows, K]."""
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;\n"
            "@group(0) @binding(2) var<storage, read> I2: array<u32>;\n"
            + _ENTRY +
            "    if (t >= P[0]) { return; }\n    let K = P[1];\n    let row = t * K;\n"
            "    var acc = 1.0;\n"
            "    for (var k = 0u; k < K; k = k + 1u) {\n"
            "        acc = acc * bitcast<f32>(I2[row + k]);\n"
            "        OUT[row + k] = bitcast<u32>(acc);\n    }\n}\n")


@functools.cache
def cumsum_rows():
    """Inclusive compensated sums along contiguous float32 rows: P = [rows, K]."""
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;\n"
            "@group(0) @binding(2) var<storage, read> I2: array<u32>;\n"
            + _ENTRY +
            "    if (t >= P[0]) { return; }\n    let K = P[1];\n    let row = t * K;\n"
            "    var acc = 0.0; var comp = 0.0;\n"
            "    for (var k = 0u; k < K; k = k + 1u) {\n"
            "        let y = bitcast<f32>(I2[row + k]) - comp;\n"
            "        let s = acc + y; comp = (s - acc) - y; acc = s;\n"
            "        OUT[row + k] = bitcast<u32>(acc);\n    }\n}\n")


@functools.cache
def cumsum_rows_int64():
    """Inclusive sums along contiguous int64 rows (exact; wrapping as int64, as NumPy's and
    torch's): P = [rows, K]."""
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;\n"
            "@group(0) @binding(2) var<storage, read> I2: array<u32>;\n"
            + _ENTRY +
            "    if (t >= P[0]) { return; }\n    let K = P[1];\n    let row = t * K;\n"
            "    var lo = 0u; var hi = 0u;\n"
            "    for (var k = 0u; k < K; k = k + 1u) {\n"
            "        let at = 2u * (row + k);\n"
            "        let s = lo + I2[at]; hi = hi + I2[at + 1u] + select(0u, 1u, s < lo); lo = s;\n"
            "        OUT[at] = lo; OUT[at + 1u] = hi;\n    }\n}\n")


@functools.cache
def bitonic_step(key="f32"):
    """One compare-exchange pass of a bitonic sort over rows of ``P`` (a power of two) keys
    (float32, or int32 with ``key="i32"``) with their indices: P = [rows * P, P, k, j, n].
    Keys order as NumPy's stable argsort: by value, NaN last, then by index (which makes the
    unstable network stable); padding (index >= n) sorts after everything."""
    nan = ("    let nx = isnan_(x); let ny = isnan_(y);\n"
           "    if (nx != ny) { return ny; }\n"
           "    if (!nx && x != y) { return x < y; }\n") if key == "f32" else \
        "    if (x != y) { return x < y; }\n"
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> KEY: array<u32>;\n"
            "@group(0) @binding(2) var<storage, read_write> IDX: array<u32>;\n"
            + _ISNAN +
            f"fn before(x: {key}, ix: u32, y: {key}, iy: u32, n: u32) -> bool {{\n"
            "    if (ix >= n || iy >= n) { return ix < iy; }\n"
            + nan +
            "    return ix < iy;\n}\n"
            + _ENTRY +
            "    if (t >= P[0]) { return; }\n"
            "    let size = P[1]; let k = P[2]; let j = P[3]; let n = P[4];\n"
            "    let row = t / size; let i = t % size; let l = i ^ j;\n"
            "    if (l <= i) { return; }\n"
            "    let a = row * size + i; let b = row * size + l;\n"
            f"    let x = bitcast<{key}>(KEY[a]); let y = bitcast<{key}>(KEY[b]);\n"
            "    let ix = IDX[a]; let iy = IDX[b];\n"
            "    let up = (i & k) == 0u;\n"
            "    if (before(y, iy, x, ix, n) == up) {\n"
            "        KEY[a] = bitcast<u32>(y); KEY[b] = bitcast<u32>(x);\n"
            "        IDX[a] = iy; IDX[b] = ix;\n    }\n}\n")


def _keyed_position(key_itemsizes, first_key_binding, out_base):
    """WGSL computing ``pos`` (an element of the output's storage) from one index per dim, as
    in :func:`scatter_add`; ``valid`` is false for an index out of range."""
    lines = [f"    var pos = bitcast<i32>(P[{out_base}u]);\n    var valid = true;\n"]
    for j, itemsize in enumerate(key_itemsizes):
        index = _index_value(f"K{j}", itemsize, f"offset_of(t, {operand_base(1 + j)}u)")
        size = f"i32(P[{out_base + 1 + MAX_DIMS + j}u])"
        lines.append(f"    var k{j} = {index};\n    if (k{j} < 0) {{ k{j} = k{j} + {size}; }}\n"
                     f"    if (k{j} < 0 || k{j} >= {size}) {{ valid = false; }}\n"
                     f"    pos = pos + k{j} * bitcast<i32>(P[{out_base + 1 + j}u]);\n")
    bindings = "".join(f"@group(0) @binding({first_key_binding + j}) var<storage, read> K{j}: "
                       "array<u32>;\n" for j in range(len(key_itemsizes)))
    return bindings, "".join(lines)


@functools.cache
def put_claim(key_itemsizes):
    """Pass 1 of ``out[key] = values``: each target element records the last (largest) thread
    writing it, so that repeated indices end as NumPy's (the last occurrence wins)."""
    bindings, position = _keyed_position(key_itemsizes, 2, operand_base(1 + len(key_itemsizes)))
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> WIN: array<atomic<u32>>;\n"
            + bindings + _INDEXING
            + _ENTRY + "    if (t >= P[0]) { return; }\n" + position
            + "    if (valid) { atomicMax(&WIN[u32(pos)], t + 1u); }\n}\n")


@functools.cache
def put_write(key_itemsizes, itemsize):
    """Pass 2 of ``out[key] = values``: the winning thread of each element writes it."""
    n = len(key_itemsizes)
    bindings, position = _keyed_position(key_itemsizes, 3, operand_base(1 + n))
    value = f"offset_of(t, {operand_base(0)}u)"
    store = ("    OUT[u32(pos)] = V[" + value + "];\n" if itemsize == 4 else
             "    let s = " + value + ";\n    OUT[2u * u32(pos)] = V[2u * s];\n"
             "    OUT[2u * u32(pos) + 1u] = V[2u * s + 1u];\n")
    return ("@group(0) @binding(0) var<storage, read> P: array<u32>;\n"
            "@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;\n"
            "@group(0) @binding(2) var<storage, read> V: array<u32>;\n" + bindings
            + f"@group(0) @binding({3 + n}) var<storage, read> WIN: array<u32>;\n" + _INDEXING
            + _ENTRY + "    if (t >= P[0]) { return; }\n" + position
            + "    if (!valid || WIN[u32(pos)] != t + 1u) { return; }\n" + store + "}\n")
