"""Random numbers drawn on the webgpu device: Philox-4x32-10 in WGSL, as torch's CUDA draws.

Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) is a
counter-based generator: word ``j`` of block ``b`` is a pure function of a 64-bit key and a
128-bit counter, so every GPU thread computes its own block with no shared state, and a draw
is reproduced from the key and the first counter alone. The webgpu generator (an ember
:class:`~ember.ops._generator.Generator` of device ``webgpu``) keeps a seed and an offset,
as torch's CUDA generator does: a draw of ``n`` words uses key = the seed's two 32-bit halves
and counters ``offset / 4 + b`` (low 64 bits; the high 64 bits are 0) for blocks ``b = 0 ..
ceil(n / 4) - 1``, then advances the offset by ``4 * ceil(n / 4)``. Its 16-byte state (seed,
offset) saves and restores exactly. Value ``i`` of a draw is made from word ``i`` (two words
for integer ranges above 2**32):

* uniform: ``(w & 0xffffff) * 2**-24`` in ``[0, 1)`` (exact in float32), scaled to
  ``[low, high)``;
* normal: Box-Muller on the word pairs ``(w0, w1)`` and ``(w2, w3)`` of each block:
  ``sqrt(-2 log u1) * (cos, sin)(2 pi u2)`` with ``u1`` in ``(0, 1]`` and ``u2`` in ``[0, 1)``;
* Bernoulli: ``uniform < p``; a dropout mask is a Bernoulli draw, so it never leaves the GPU;
* integers in ``[low, high)``: ``w % (high - low) + low`` (torch's ``random_``), a 64-bit word
  pair for ranges above 2**32;
* exponential, Cauchy and geometric numbers by inverting their CDFs on one uniform.

Poisson counts are drawn one thread per rate, each from its own counters (Knuth's method
below rate 10, Hormann's PTRS rejection above, as NumPy's); a permutation maps each index
through a keyed Feistel bijection, walking its cycle back into range.
Streams are not torch's (torch's CUDA kernels lay words out per thread and launch
configuration), as ember's CUDA streams are not.

Example::

    >>> import ember
    >>> ember.webgpu.manual_seed(0)                       # doctest: +SKIP
    >>> a = ember.rand(3, device="webgpu")                # doctest: +SKIP
    >>> ember.webgpu.manual_seed(0)                       # doctest: +SKIP
    >>> bool((ember.rand(3, device="webgpu") == a).all()) # doctest: +SKIP
    True
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["default_generator", "PhiloxDraws", "PHILOX_WGSL", "POISSON_WGSL",
           "PERMUTATION_WGSL"]

# Philox-4x32's multipliers and Weyl key increments (the published constants)
_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85

PHILOX_WGSL = f"""
fn mulhilo(a: u32, b: u32) -> vec2<u32> {{
    // the 64-bit product a * b as (low word, high word), from 16-bit halves
    let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
    let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u),
                     a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}}
fn philox(counter: vec4<u32>, key_in: vec2<u32>) -> vec4<u32> {{
    var c = counter;
    var k = key_in;
    for (var round = 0u; round < 10u; round = round + 1u) {{
        if (round > 0u) {{ k = k + vec2<u32>({_W0:#x}u, {_W1:#x}u); }}
        let p0 = mulhilo({_M0:#x}u, c.x);
        let p1 = mulhilo({_M1:#x}u, c.z);
        c = vec4<u32>(p1.y ^ c.y ^ k.x, p1.x, p0.y ^ c.w ^ k.y, p0.x);
    }}
    return c;
}}
"""

_UNIT = "5.9604644775390625e-8"   # 2**-24

# Params words: P[0] values, P[1..2] key, P[3..6] the first counter; then each transform's own
# (as f32 bits unless said): ARG = P[7], P[8], ...
_HEAD = """@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;
fn arg(i: u32) -> f32 { return bitcast<f32>(P[7u + i]); }
fn unit(w: vec4<u32>) -> vec4<f32> {  // [0, 1), exact
    return vec4<f32>(w & vec4<u32>(0xffffffu)) * %(unit)s;
}
fn open_unit(w: vec4<u32>) -> vec4<f32> {  // (0, 1): never 0, never 1
    return (vec4<f32>(w >> vec4<u32>(8u)) + 0.5) * %(unit)s;
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    let first = t * %(per)su;
    if (first >= P[0]) { return; }
    let low = P[3] + t;
    let high = P[4] + select(0u, 1u, low < t);
    let w = philox(vec4<u32>(low, high, P[5], P[6]), vec2<u32>(P[1], P[2]));
"""

_STORE_F32 = """    for (var k = 0u; k < 4u; k = k + 1u) {
        if (first + k < P[0]) { OUT[first + k] = bitcast<u32>(v[k]); }
    }
}
"""

_STORE_WORDS = """    for (var k = 0u; k < 4u; k = k + 1u) {
        if (first + k < P[0]) { OUT[first + k] = w[k]; }
    }
}
"""

# f32 results, four values per block: WGSL computing ``v`` (vec4<f32>) from ``w``
_F32_TRANSFORMS = {
    # ARG: low, span, high
    "uniform": "    let scaled = unit(w) * arg(1u) + arg(0u);\n"
               "    let v = select(scaled, vec4<f32>(arg(0u)), scaled >= vec4<f32>(arg(2u)));\n",
    # ARG: mean, std
    "normal": "    let u1 = (vec2<f32>(w.xz >> vec2<u32>(8u)) + 1.0) * %(unit)s;\n"
              "    let theta = vec2<f32>(w.yw >> vec2<u32>(8u)) * "
              "(6.2831853071795864 * %(unit)s);\n"
              "    let r = sqrt(-2.0 * log(u1));\n"
              "    let v = vec4<f32>(r.x * cos(theta.x), r.x * sin(theta.x),\n"
              "                      r.y * cos(theta.y), r.y * sin(theta.y))"
              " * arg(1u) + arg(0u);\n",
    # ARG: p
    "bernoulli": "    let v = select(vec4<f32>(0.0), vec4<f32>(1.0), "
                 "unit(w) < vec4<f32>(arg(0u)));\n",
    # rate 1 (the caller divides by lambda); 1 - u is exact and in (0, 1]
    "exponential": "    let v = abs(log(1.0 - unit(w)));\n",
    "cauchy": "    let v = tan(3.14159265358979 * (open_unit(w) - 0.5));\n",
    # ARG: log(1 - p)
    "geometric": "    let v = max(ceil(log(open_unit(w)) / arg(0u)), vec4<f32>(1.0));\n",
}

_I64_HELPERS = """
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn ge64(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y > b.y || (a.y == b.y && a.x >= b.x); }
fn mod64(x: vec2<u32>, m: vec2<u32>) -> vec2<u32> {
    // x % m by binary long division (arithmetic modulo 2**64: the remainder stays below m)
    var r = vec2<u32>(0u, 0u);
    for (var i = 0; i < 64; i = i + 1) {
        let word = select(x.x, x.y, i < 32);
        let bit = (word >> u32(31 - (i & 31))) & 1u;
        let overflow = (r.y >> 31u) == 1u;  // the doubled remainder is >= 2**64 > m
        r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
        if (overflow || ge64(r, m)) {
            r = vec2<u32>(r.x - m.x, r.y - m.y - select(0u, 1u, r.x < m.x));
        }
    }
    return r;
}
"""

# int64 results in [low, high): ARG words (u32) = low (2 words), span (2 words; 0 = 2**64)
_INT_TRANSFORMS = {
    "int32": (4, "    let span = P[9];\n    let low64 = vec2<u32>(P[7], P[8]);\n"
                 "    for (var k = 0u; k < 4u; k = k + 1u) {\n"
                 "        if (first + k >= P[0]) { break; }\n"
                 "        let r = select(w[k] % span, w[k], span == 0u);\n"
                 "        let v = add64(vec2<u32>(r, 0u), low64);\n"
                 "        OUT[2u * (first + k)] = v.x;\n"
                 "        OUT[2u * (first + k) + 1u] = v.y;\n    }\n}\n"),
    "int64": (2, "    let span = vec2<u32>(P[9], P[10]);\n    let low64 = vec2<u32>(P[7], P[8]);\n"
                 "    for (var k = 0u; k < 2u; k = k + 1u) {\n"
                 "        if (first + k >= P[0]) { break; }\n"
                 "        let x = vec2<u32>(w[2u * k + 1u], w[2u * k]);\n"
                 "        var r = x;\n"
                 "        if (span.x != 0u || span.y != 0u) { r = mod64(x, span); }\n"
                 "        let v = add64(r, low64);\n"
                 "        OUT[2u * (first + k)] = v.x;\n"
                 "        OUT[2u * (first + k) + 1u] = v.y;\n    }\n}\n"),
}


# Poisson counts, one thread per rate: P = [count, key (2), first counter (2)]; thread t
# draws from its own counters (first + t, high word, j, 0) for j = 0, 1, ... (four words a
# block), so a rate may use any number of words. Knuth's product of uniforms below rate 10,
# Hormann's PTRS transformed rejection (as NumPy's) above, whose acceptance test is written
# with log1p around k + 1 - rate so that float32 keeps it exact for large rates (counts are
# exact below 2**24). Results are int64 pairs.
POISSON_WGSL = PHILOX_WGSL + """
@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;
@group(0) @binding(2) var<storage, read> RATE: array<u32>;
var<private> counter: vec4<u32>;
var<private> pool: vec4<u32>;
var<private> used: u32;
fn uniform_open() -> f32 {  // (0, 1)
    if (used == 4u) {
        pool = philox(counter, vec2<u32>(P[1], P[2]));
        counter.z = counter.z + 1u;
        used = 0u;
    }
    let w = pool[used];
    used = used + 1u;
    return (f32(w >> 8u) + 0.5) * 5.9604644775390625e-8;
}
fn log_factorial(k: f32) -> f32 {  // log(k!) for an integer k >= 0
    if (k < 7.0) {
        var f = 1.0;
        for (var i = 2.0; i <= k; i = i + 1.0) { f = f * i; }
        return log(f);
    }
    let x = k + 1.0;
    let r = 1.0 / x;
    return (x - 0.5) * log(x) - x + 0.9189385332046727
        + r * (0.08333333333 - r * r * (0.00277777778 - r * r * 0.00079365079));
}
fn knuth(rate: f32) -> f32 {
    let limit = exp(-rate);
    var k = 0.0;
    var p = uniform_open();
    while (p > limit) { k = k + 1.0; p = p * uniform_open(); }
    return k;
}
fn ptrs(rate: f32) -> f32 {
    let root = sqrt(rate);
    let b = 0.931 + 2.53 * root;
    let a = -0.059 + 0.02483 * b;
    let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    let vr = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = uniform_open() - 0.5;
        let v = uniform_open();
        let us = 0.5 - abs(u);
        let k = floor((2.0 * a / us + b) * u + rate + 0.43);
        if (us >= 0.07 && v <= vr) { return k; }
        if (k < 0.0 || (us < 0.013 && v > us)) { continue; }
        // log(rate^k e^-rate / k!), k >= 7 by Stirling around k + 1 - rate
        var bound: f32;
        if (k < 7.0) {
            bound = k * log(rate) - rate - log_factorial(k);
        } else {
            let x = k + 1.0;
            let r = 1.0 / x;
            let series = r * (0.08333333333 - r * r * (0.00277777778 - r * r * 0.00079365079));
            bound = -k * log1p((x - rate) / rate) + (x - rate) - 0.5 * log(x)
                - 0.9189385332046727 - series;
        }
        if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= bound) { return k; }
    }
    return 0.0;
}
fn log1p(x: f32) -> f32 {
    let u = 1.0 + x;
    if (u == 1.0) { return x; }
    return log(u) * x / (u - 1.0);
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if (t >= P[0]) { return; }
    let low = P[3] + t;
    counter = vec4<u32>(low, P[4] + select(0u, 1u, low < t), 0u, 0u);
    used = 4u;
    let rate = bitcast<f32>(RATE[t]);
    var k = 0.0;
    if (rate >= 10.0) { k = ptrs(rate); } else if (rate > 0.0) { k = knuth(rate); }
    let v = u32(k);
    OUT[2u * t] = v;
    OUT[2u * t + 1u] = 0u;
}
"""


# A random permutation of 0 .. n-1 without sorting: thread i maps i through a keyed bijection
# of [0, 4**h) (a four-round Feistel network whose round function is Philox on the half, the
# round and the draw's counter) and walks the cycle until the value is below n ("cycle
# walking", Black and Rogaway 2002), so distinct threads land on distinct values. P = [n, key
# (2), counter (2), h (bits per half)]; int64 results.
PERMUTATION_WGSL = PHILOX_WGSL + """
@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;
fn feistel(x: u32) -> u32 {
    let h = P[5];
    let mask = (1u << h) - 1u;
    var left = x >> h;
    var right = x & mask;
    for (var round = 0u; round < 6u; round = round + 1u) {
        let f = philox(vec4<u32>(right, round, P[3], P[4]), vec2<u32>(P[1], P[2])).x & mask;
        let next = left ^ f;
        left = right;
        right = next;
    }
    return (left << h) | right;
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if (t >= P[0]) { return; }
    var x = feistel(t);
    while (x >= P[0]) { x = feistel(x); }
    OUT[2u * t] = x;
    OUT[2u * t + 1u] = 0u;
}
"""


@functools.cache
def kernel(transform):
    """The WGSL source of one draw kind (``uniform``, ``normal``, ``bernoulli``, ``words``,
    ``exponential``, ``cauchy``, ``geometric``, ``int32``, ``int64``)."""
    if transform in _INT_TRANSFORMS:
        per, body = _INT_TRANSFORMS[transform]
        return PHILOX_WGSL + _I64_HELPERS + _HEAD % {"unit": _UNIT, "per": per} + body
    head = PHILOX_WGSL + _HEAD % {"unit": _UNIT, "per": 4}
    if transform == "words":
        return head + _STORE_WORDS
    return head + _F32_TRANSFORMS[transform] % {"unit": _UNIT} + _STORE_F32


# ---------------------------------------------------------------- the generator

_default = None


def default_generator():
    """The webgpu device's default generator (made on first use; needs no adapter).

    Example::

        >>> ember.webgpu._random.default_generator().device
        device(type='webgpu')
    """
    global _default
    if _default is None:
        from .._device import device
        from ..ops._generator import Generator

        _default = Generator(device("webgpu"))
    return _default


def _float_word(value):
    return int(np.float32(value).view(np.uint32))


def _int64_words(value):
    value %= 1 << 64
    return [value & 0xFFFFFFFF, value >> 32]


class PhiloxDraws:
    """Draws for one sampling call on the webgpu device from ``generator``'s seed and offset
    (the draw methods ember's random functions call on a GPU's draws; results are float32 or
    int64 device arrays).

    Example::

        >>> g = ember.Generator("webgpu").manual_seed(3)
        >>> PhiloxDraws(g).uniform((2,), np.float32).shape   # doctest: +SKIP
        (2,)
    """

    def __init__(self, generator):
        from . import _xp

        if generator.device.type != "webgpu":
            raise RuntimeError(f"Expected a 'webgpu' device type for generator but found "
                               f"'{generator.device.type}'")
        self.gen = generator
        self.xp = _xp

    # ------------------------------------------------------------ the kernel launch

    def _reserve(self, words):
        """The first block counter of a draw of ``words`` words; advances the offset."""
        blocks = (words + 3) // 4
        base = self.gen._offset // 4
        self.gen._offset += 4 * blocks
        return base

    def _draw(self, transform, shape, args=(), dtype=np.float32, words_per_value=1,
              counter_high=(0, 0)):
        shape = tuple(int(n) for n in shape)
        count = math.prod(shape)
        out = self.xp.empty(shape, dtype)
        if count == 0:
            return out
        base = self._reserve(count * words_per_value)
        seed = self.gen.initial_seed()
        words = [count, seed & 0xFFFFFFFF, seed >> 32, base & 0xFFFFFFFF,
                 (base >> 32) & 0xFFFFFFFF, *counter_high, *args]
        per = 2 if transform == "int64" else 4
        self.xp._run(kernel(transform), out, [], words, (count + per - 1) // per)
        return out

    # ------------------------------------------------------------ distributions

    def words(self, n):
        """``n`` raw Philox words (uint32)."""
        return self._draw("words", (n,), dtype=np.uint32)

    def uniform(self, shape, dtype=np.float32, low=0.0, high=1.0):
        """Uniform float32 numbers in ``[low, high)`` (float32 also where float64 is asked:
        the device has no float64)."""
        low, high = float(low), float(high)
        span = float(np.float32(high) - np.float32(low))
        return self._draw("uniform", shape, [_float_word(low), _float_word(span),
                                             _float_word(high)])

    def normal(self, shape, dtype=np.float32, mean=0.0, std=1.0):
        """Normal float32 numbers (Box-Muller)."""
        return self._draw("normal", shape, [_float_word(mean), _float_word(std)])

    def bernoulli(self, p, shape, dtype):
        """0/1 of ``dtype`` (float64 is drawn as float32, which it is stored as on this
        device), 1 where a uniform is below ``p`` (a number or a device array)."""
        target = np.float32 if np.dtype(dtype) == np.float64 else dtype
        if isinstance(p, self.xp.ndarray):
            sample = self.xp.less(self.uniform(shape), p.astype(np.float32, copy=False))
        else:
            sample = self._draw("bernoulli", shape, [_float_word(p)])
        return sample.astype(target, copy=False)

    def integers(self, low, high, shape):
        """int64 numbers in ``[low, high)``: ``word % (high - low) + low``, from two words
        when the range exceeds 2**32."""
        span = high - low
        if span <= 1 << 32:
            return self._draw("int32", shape, [*_int64_words(low), span & 0xFFFFFFFF],
                              dtype=np.int64)
        return self._draw("int64", shape, [*_int64_words(low), *_int64_words(span)],
                          dtype=np.int64, words_per_value=2)

    def exponential(self, shape, dtype=np.float32):
        """Exponential(1) float32 numbers."""
        return self._draw("exponential", shape)

    def cauchy(self, shape):
        """Standard Cauchy float32 numbers."""
        return self._draw("cauchy", shape)

    def geometric(self, p, shape):
        """Trials up to the first success of Bernoulli(``p``), as float32 (exact up to
        2**24)."""
        return self._draw("geometric", shape, [_float_word(math.log1p(-p))])

    # ------------------------------------------------------------ on the host

    def _host_generator(self, words):
        """A NumPy generator keyed by this draw's seed and offset (for the fallbacks)."""
        base = self._reserve(words)
        return np.random.Generator(np.random.Philox(
            key=self.gen.initial_seed(), counter=[base, 0, 0, 0]))

    def poisson(self, lam):
        """int64 Poisson counts for the float32 rates ``lam`` (a device array), one thread
        each (:data:`POISSON_WGSL`); other rates run on the host."""
        if not (isinstance(lam, self.xp.ndarray) and lam.dtype == np.float32):
            self.xp.note_fallback("random.poisson")
            rates = lam.get() if isinstance(lam, self.xp.ndarray) else np.asarray(lam)
            host = self._host_generator(4 * max(rates.size, 1))
            return self.xp.from_host(host.poisson(rates).astype(np.int64))
        rates = self.xp.ascontiguousarray(lam)
        out = self.xp.empty(rates.shape, np.int64)
        if rates.size == 0:
            return out
        if rates.offset:
            rates = rates.copy()
        base = self._reserve(4 * rates.size)  # each thread's own counter: one block each
        seed = self.gen.initial_seed()
        words = [rates.size, seed & 0xFFFFFFFF, seed >> 32, base & 0xFFFFFFFF,
                 (base >> 32) & 0xFFFFFFFF]
        self.xp._run(POISSON_WGSL, out, [rates], words, rates.size)
        return out

    def permutation(self, n):
        """A random permutation of ``0 .. n-1`` as int64 (:data:`PERMUTATION_WGSL`; on the
        host from 2**30 elements)."""
        if n >= 1 << 30:
            self.xp.note_fallback("random.permutation")
            host = self._host_generator(4 * max(n, 1))
            return self.xp.from_host(host.permutation(n).astype(np.int64))
        out = self.xp.empty((n,), np.int64)
        base = self._reserve(4)  # one block's counter keys the whole permutation
        if n == 0:
            return out
        half = max(5, ((n - 1).bit_length() + 1) // 2)  # small n: a 2**10 domain
        seed = self.gen.initial_seed()
        words = [n, seed & 0xFFFFFFFF, seed >> 32, base & 0xFFFFFFFF,
                 (base >> 32) & 0xFFFFFFFF, half]
        self.xp._run(PERMUTATION_WGSL, out, [], words, n)
        return out
