"""Random numbers: :class:`Generator`, the default generator, sampling functions and in-place
samplers (``uniform_``, ``normal_``, ...).

A CPU generator is a Mersenne Twister (mt19937) seeded as torch's ``CPUGeneratorImpl`` is (with
the low 32 bits of the seed), and every CPU sampling function turns its 32-bit words into
numbers the way torch's CPU kernels do, so ``ember.manual_seed(s); ember.rand(3)`` gives
``torch.manual_seed(s); torch.rand(3)``. The words come vectorised from NumPy's ``MT19937``;
only algorithms that are sequential by nature (``randperm``'s swaps, ``poisson``'s rejection
loop) step through them in Python. Exact: uniform numbers, integers, permutations, the
Box-Muller normals of ``randn``/``normal_`` (float64 exactly, float32 to within an ulp of
torch's libm), exponential, geometric, Cauchy, log-normal, Bernoulli with a tensor ``p``,
multinomial and Poisson. ``get_state`` is torch's 5056-byte ``CPUGeneratorImplState``, so a
state moves between ember and torch both ways. Machine-dependent in torch, so not reproduced
everywhere: ``bernoulli_`` with a scalar ``p`` follows torch's portable kernel (a 53-bit
uniform below ``p``, which is what torch runs on non-Intel CPUs; on Intel CPUs torch draws from
MKL's stream instead).

A CUDA generator keeps a seed and an offset, as torch's Philox generators do: each draw seeds
CuPy's generator from ``(seed, offset)`` and advances the offset, which makes its state 16 bytes
that save and restore exactly (GPU streams are not torch's).
"""

from __future__ import annotations

import builtins
import contextlib
import math
import secrets
import struct
import warnings

import numpy as np

from .. import _dtype as dt
from .._device import CPU, DEFAULT, META, canonical, check_cuda_dtype
from .._device import device as _device_type
from .._tensor import Tensor
from ..autograd import grad_mode
from ._operands import varargs_or_keyword
from ._registry import _short_name, check_inplace_target, copyto, defop, write_out
from .creation import _write_factory_out, parse_size

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "rand_like", "randn", "randn_like",
           "randint", "randint_like", "randperm", "normal", "bernoulli", "multinomial",
           "poisson"]

_DEFAULT_SEED = 67280421310721
_U64 = 1 << 64
_MT_N = 624
# torch's CPUGeneratorImplState: seed, left, seeded, next, 624 state words (as uint64), the
# legacy normal_x/normal_y/normal_rho doubles, normal_is_valid (int + padding), then the cached
# float normal and its flag (+ padding)
_CPU_STATE = struct.Struct("<QiiQ624Q3di4xf?3x")
_CPU_STATE_SIZE = _CPU_STATE.size          # 5056


def _check_seed(seed):
    if isinstance(seed, Tensor):
        seed = seed.item()
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator:
    """A source of random numbers with its own state, as ``torch.Generator``.

    Example::

        >>> g = ember.Generator().manual_seed(0)
        >>> a = ember.rand(2, generator=g)
        >>> g.manual_seed(0); bool((ember.rand(2, generator=g) == a).all())
        True
    """

    def __init__(self, device="cpu"):
        device = _device_type(device) if not isinstance(device, _device_type) else device
        if device.type == "meta":
            raise RuntimeError("META device type not an accelerator.")
        if device.type == "cpu" or (device.type == "cuda" and device.index is None):
            device = canonical(device)
        self._device = device
        self._seed = _DEFAULT_SEED
        if device.type == "cpu":
            self._bg = np.random.MT19937()
            self._npg = np.random.Generator(self._bg)
            self._draws = _MTDraws(self)
        self._reseed()

    def _reseed(self):
        if self._device.type == "cpu":
            self._bg._legacy_seeding(self._seed & 0xFFFFFFFF)
            # torch's engine reads word 0 of a freshly seeded (untwisted) state with next == 0;
            # remembered so that get_state can write torch's exact bytes
            self._fresh_key = self._bg.state["state"]["key"]
            self._normal_cache = None      # torch's cached second Box-Muller double
            self._float_cache = None       # torch's cached float normal (kept for the state)
        else:
            self._offset = 0

    @property
    def device(self):
        """The device this generator draws for."""
        return self._device

    def manual_seed(self, seed):
        """Seed the generator (any int in ``[-2**63, 2**64)``) and return it."""
        self._seed = _check_seed(seed)
        self._reseed()
        return self

    def seed(self):
        """Seed from a non-deterministic source and return the seed used."""
        self._seed = secrets.randbits(64)
        self._reseed()
        return self._seed

    def initial_seed(self):
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 CPU tensor (see :meth:`set_state`).

        On the CPU it is torch's 5056-byte layout: ``torch.set_rng_state`` accepts it (and
        ember accepts torch's), and both continue the same stream.
        """
        if self._device.type == "cpu":
            state = self._bg.state["state"]
            key, pos = state["key"], int(state["pos"])
            left, nxt = _MT_N + 1 - pos, pos
            if pos == _MT_N and self._fresh_key is not None and \
                    np.array_equal(key, self._fresh_key):
                nxt = 0
            normal = self._normal_cache
            fnormal = self._float_cache
            raw = _CPU_STATE.pack(self._seed, left, 1, nxt, *key.tolist(), 0.0,
                                  0.0 if normal is None else normal, 0.0, normal is not None,
                                  0.0 if fnormal is None else fnormal, fnormal is not None)
        else:
            raw = b"".join(int(w).to_bytes(8, "little") for w in (self._seed, self._offset))
        return Tensor._make(np.frombuffer(raw, np.uint8).copy(), CPU)

    def set_state(self, new_state):
        """Restore a state returned by :meth:`get_state` (or by torch); returns the generator."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = new_state._host_array().tobytes()
        if self._device.type != "cpu":
            if len(raw) != 16:
                raise RuntimeError(f"Expected a CUDAGeneratorImplState of size 16 but found the "
                                   f"input RNG state size to be {len(raw)}")
            self._seed = int.from_bytes(raw[:8], "little")
            self._offset = int.from_bytes(raw[8:], "little")
            return self
        if len(raw) != _CPU_STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_CPU_STATE_SIZE} "
                               f"but found the input RNG state size to be {len(raw)}")
        fields = _CPU_STATE.unpack(raw)
        seed, left, seeded, nxt = fields[:4]
        key = np.array(fields[4:4 + _MT_N], dtype=np.uint64).astype(np.uint32)
        normal_y, normal_valid, fnormal, fvalid = fields[629], fields[631], fields[632], \
            fields[633]
        if not (seeded and 0 < left <= _MT_N and (nxt & 0xFFFFFFFF) <= _MT_N):
            raise RuntimeError("Invalid mt19937 state")
        self._seed = seed
        self._bg.state = {"bit_generator": "MT19937",
                          "state": {"key": key, "pos": _MT_N + 1 - left}}
        self._fresh_key = key.copy() if (left == 1 and nxt == 0) else None
        self._normal_cache = normal_y if normal_valid else None
        self._float_cache = fnormal if fvalid else None
        return self

    def _backend(self, device):
        """The object that draws for ``device`` (advancing the state of a CUDA generator)."""
        if device is CPU and self._device is CPU:
            return self._draws
        if device.type != self._device.type:
            raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                               f"'{self._device.type}'")
        cupy = device.xp
        mixed = (self._seed * 0x9E3779B97F4A7C15 + self._offset) % _U64
        self._offset += 1
        with cupy.cuda.Device(device.index):
            return _CupyDraws(cupy.random.RandomState(mixed), cupy, device.index)

    def __repr__(self):
        return f"<ember.Generator object, device={self._device}>"


# ---------------------------------------------------------------- torch's CPU transformations

_TWO_PI = 2.0 * math.pi
_UNIT_BITS = {"float16": 11, "bfloat16": 8, "float32": 24}
_F32 = np.float32
_F64 = np.float64


def _to_storage(array, np_dtype):
    """Cast float64 results to ``np_dtype`` as C++ ``static_cast`` does (half and bfloat16 go
    through float, as c10's converters do)."""
    if array.dtype == np_dtype:
        return array
    if np_dtype in dt.LOW_PRECISION and array.dtype == _F64:
        array = array.astype(_F32)
    return array.astype(np_dtype)


def _libm(name, x):
    """``np.<name>(x)``; for a few values the C library's function instead (what torch's
    scalar kernels call; NumPy's SIMD versions can differ in the last bit)."""
    if x.size <= 64:
        fn = getattr(math, name)
        return np.array([fn(v) for v in x.ravel().tolist()], np.float64).reshape(x.shape)
    return getattr(np, name)(x)


_FAST_TRIG = 4096     # from this many float32 values on, NumPy's float32 SIMD sin/cos


def _significant_bits(value):
    """The number of significant bits of a float's mantissa."""
    mantissa = int(math.frexp(abs(float(value)))[0] * (1 << 53))
    return 53 - ((mantissa & -mantissa).bit_length() - 1) if mantissa else 0


def _split(x):
    big = x * 134217729.0
    hi = big - (big - x)
    return hi, x - hi


def _fma(a, b, c, a_bits=53):
    """``a * b + c`` with one rounding, as the fused multiply-add torch's compiled kernels use
    (float64 arrays; ``b`` and ``c`` numbers). The product's rounding error is recovered
    exactly (Dekker), so this is exact unless the final sum is a near-tie."""
    p = a * b
    bits = _significant_bits(b)
    if bits <= 1 or a_bits + bits <= 53 or not a.size:       # the product is exact
        return p + c if c else p
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(np.float64(b))
    err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    total = p + c
    back = total - p
    tail = (p - (total - back)) + (c - back)
    return total + (tail + err)


def _fma32(a, b, c):
    """``a * b + c`` on float32 values with one rounding (the product is exact in double)."""
    return (a.astype(_F64) * float(b) + float(c)).astype(_F32)


class _MTDraws:
    """Draws on the CPU from a generator's mt19937, with torch's CPU transformations."""

    xp = np

    def __init__(self, gen):
        self.gen = gen

    # raw words ------------------------------------------------------------------------------
    def words(self, n):
        """``n`` 32-bit words (torch's ``random()``), as uint32."""
        return self.gen._npg.integers(0, 1 << 32, n, dtype=np.uint32)

    def words64(self, n):
        """``n`` 64-bit words (torch's ``random64()``: two words, the first the high half)."""
        v = self.words(2 * n).view(np.uint64)
        return (v << np.uint64(32)) | (v >> np.uint64(32))

    def unit(self, n, name):
        """torch's ``uniform_real_distribution<T>(0, 1)``: float64 from 53 bits of random64,
        float32 (also behind half and bfloat16) from the 24 low bits of one word (exact)."""
        if name in ("float64", "complex128"):
            v = self.words(2 * n).view(np.uint64)     # (second << 32) | first
            w = v & np.uint64((1 << 21) - 1)           # the first word is the high half
            w <<= np.uint64(32)
            v >>= np.uint64(32)
            w |= v
            out = w.view(np.int64).astype(_F64)
            out *= 2.0 ** -53
            return out
        bits = 24
        w = self.words(n)
        w &= np.uint32((1 << bits) - 1)
        out = w.view(np.int32).astype(_F32)
        out *= _F32(2.0 ** -bits)
        return out

    # uniform --------------------------------------------------------------------------------
    def uniform(self, n, dtype, low=0.0, high=1.0):
        """``uniform_(low, high)`` values of real ``dtype`` (a flat array of that dtype)."""
        name = dtype.name
        x = self.unit(n, name)
        if name == "float64":
            if low != 0 or high != 1:
                x = _fma(x, high - low, low)
            return x
        if low != 0 or high != 1:
            # torch: bounds as float, (to - from) in float, the rest in double
            lo, hi = _F32(low), _F32(high)
            x = _fma(x.astype(_F64), float(hi - lo), float(lo), 24).astype(_F32)
        if name == "float32":
            return x
        # half / bfloat16: torch draws them as float32 uniforms, rounded
        out = x.astype(dtype.np)
        # torch maps a value that rounds up to ``high`` back to ``low``
        top, bottom = np.array(high, _F32).astype(dtype.np), np.array(low, _F32).astype(dtype.np)
        out[out == top] = bottom
        return out

    # normal ---------------------------------------------------------------------------------
    def normal_serial(self, n, mean, std):
        """torch's ``normal_distribution<double>`` element after element (float64 values):
        Box-Muller on two 53-bit uniforms, the sine half cached in the generator."""
        gen = self.gen
        out = np.empty(n, _F64)
        start = 0
        if n and gen._normal_cache is not None:
            out[0] = _fma(np.array([gen._normal_cache]), std, mean)[0]
            gen._normal_cache = None
            start = 1
        m = n - start
        pairs = (m + 1) // 2
        if pairs:
            u = self.unit(2 * pairs, "float64").reshape(pairs, 2)
            if pairs <= 64:
                # few values: the C library's functions, as torch calls them (NumPy's SIMD
                # versions can differ from them in the last bit)
                cos, sin = np.empty(pairs), np.empty(pairs)
                for i, (u1, u2) in enumerate(u.tolist()):
                    radius = math.sqrt(-2.0 * math.log1p(-u2))
                    cos[i] = radius * math.cos(_TWO_PI * u1)
                    sin[i] = radius * math.sin(_TWO_PI * u1)
            else:
                radius = np.sqrt(-2.0 * np.log1p(-u[:, 1]))
                theta = _TWO_PI * u[:, 0]
                cos = radius * np.cos(theta)
                sin = radius * np.sin(theta)
            out[start::2] = _fma(cos, std, mean)
            out[start + 1::2] = _fma(sin[:m // 2], std, mean)
            if m % 2:
                gen._normal_cache = float(sin[-1])
        return out

    def normal_fill(self, n, dtype, mean, std):
        """torch's ``normal_fill`` for a contiguous tensor of ``n >= 16`` elements: all
        uniforms first, Box-Muller on blocks of 16 (u1 from the first 8, u2 from the last 8),
        and when ``n % 16`` the last 16 redrawn and transformed again."""
        name = dtype.name
        store = dtype.np
        full = n // 16
        if store in (_F32, _F64):
            data = self.unit(n, name)
        else:
            # half and bfloat16: computed in float, uniforms drawn for whole blocks only (then
            # the redrawn tail), rounded once at the end
            data = np.empty(n, _F32)
            data[:full * 16] = self.unit(full * 16, name)
        _box_muller16(data[:full * 16].reshape(full, 16), data.dtype.type, mean, std, store)
        if n % 16:
            tail = self.unit(16, name)
            data[n - 16:] = tail
            _box_muller16(data[n - 16:].reshape(1, 16), data.dtype.type, mean, std, store)
        return data.astype(store, copy=False)

    def normal(self, n, dtype, mean=0.0, std=1.0, contiguous=True):
        """``normal_(mean, std)`` values of real ``dtype`` (flat, in memory order)."""
        if n >= 16 and contiguous:
            return self.normal_fill(n, dtype, mean, std)
        return _to_storage(self.normal_serial(n, mean, std), dtype.np)

    # integers -------------------------------------------------------------------------------
    def integers(self, low, high, n, dtype):
        """torch's ``random_(from, to)``: ``random() % range + from``, or ``random64()`` when the
        range needs more than 32 bits (int64 and float targets)."""
        span = high - low
        if span >= _U64:
            vals = self.words64(n).view(np.int64)
        elif span > 0xFFFFFFFF and dtype.name in ("int64", "float64", "float32", "bfloat16"):
            vals = self.words64(n) % np.uint64(span)
            vals += np.uint64(low % _U64)
            vals = vals.view(np.int64)
        else:
            w = self.words(n)
            if span <= 0xFFFFFFFF:
                w %= np.uint32(span)
                vals = w.astype(np.int64)
            else:
                vals = (w.astype(np.uint64) % np.uint64(span)).view(np.int64)
            if low:
                vals += low
        return vals

    def random_full(self, n, dtype):
        """torch's ``random_()`` with no bounds: ``[0, 2**digits]`` for floats, ``[0, max]``
        for integers, a bit for bool."""
        name = dtype.name
        if name == "bool":
            return (self.words(n) & np.uint32(1)).astype(np.bool_)
        if name in ("int64", "float64"):
            w = self.words64(n)
            mod = (1 << 63) if name == "int64" else (1 << 53) + 1
            return (w % np.uint64(mod)).view(np.int64)
        w = self.words(n)
        if dtype.is_floating_point:
            mod = (1 << _UNIT_BITS[name]) + 1
        else:
            mod = int(np.iinfo(dtype.np).max) + 1
        if mod < (1 << 32):
            w %= np.uint32(mod)
        return w.astype(np.int64)

    def permutation(self, n):
        """torch's CPU ``randperm``: Fisher-Yates, swapping ``r[i]`` with
        ``r[i + random() % (n - i)]`` for i = 0 .. n-2 (the inside-out variant with random64
        for huge ``n``)."""
        if n < 0xFFFFFFFF // 20:
            if n < 2:
                return np.arange(n, dtype=np.int64)
            steps = np.arange(n - 1, dtype=np.int64)
            pick = self.words(n - 1).astype(np.int64)
            pick %= n - steps
            pick += steps
            order = list(range(n))
            for i, j in enumerate(pick.tolist()):
                order[i], order[j] = order[j], order[i]
            return np.array(order, dtype=np.int64)
        words = self.words64(n)
        out = np.empty(n, np.int64)
        for i, w in enumerate(words.tolist()):
            z = w % (i + 1)
            out[i] = out[z]
            out[z] = i
        return out

    # other distributions (float64 values, as torch's <double> distributions) ---------------
    def exponential(self, n, lambd=1.0):
        u = self.unit(n, "float64")
        return (-1.0 / lambd) * _libm("log1p", -u)

    def geometric(self, n, p):
        u = self.unit(n, "float64")
        with np.errstate(divide="ignore"):
            return np.ceil(_libm("log", u) / math.log1p(-p)) if u.size > 64 or u.all() else \
                np.ceil(np.log(u) / math.log1p(-p))

    def cauchy(self, n, median=0.0, sigma=1.0):
        u = self.unit(n, "float64")
        return median + sigma * _libm("tan", math.pi * (u - 0.5))

    def log_normal(self, n, mean, std):
        return _libm("exp", self.normal_serial(n, mean, std))

    def bernoulli(self, p, n, double):
        """``u < p`` with ``u`` a 53-bit (``double``) or 24-bit uniform, one per element."""
        u = self.unit(n, "float64" if double else "float32")
        return u < p

    def poisson(self, rates):
        """torch's ``sample_poisson`` element after element (a rejection sampler for rates
        >= 10, products of uniforms below), on pre-drawn uniforms; the generator advances by
        exactly the words used."""
        flat = rates.ravel()
        out = np.zeros(flat.shape, np.int64)
        todo = np.flatnonzero(flat > 0)
        if not todo.size:
            return out.reshape(rates.shape)
        bg = self.gen._bg
        saved = bg.state
        budget = builtins.max(64, 8 * todo.size)
        buf = self.unit(budget, "float64").tolist()
        used = [0]

        def uniform():
            if used[0] == len(buf):
                buf.extend(self.unit(len(buf), "float64").tolist())
            used[0] += 1
            return buf[used[0] - 1]

        for i in todo.tolist():
            out[i] = _poisson_one(float(flat[i]), uniform)
        bg.state = saved
        self.words(2 * used[0])
        return out.reshape(rates.shape)


def _poisson_one(lam, uniform):
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = uniform() - 0.5
            v = uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)) <= \
                    (-lam + k * loglam - math.lgamma(k + 1.0)):
                return k
    enlam = math.exp(-lam)
    x, prod = 0, 1.0
    while True:
        prod *= uniform()
        if prod > enlam:
            x += 1
        else:
            return x


def _box_muller16(blocks, compute, mean, std, store):
    """torch's ``normal_fill_16`` on every row of ``blocks`` (rows of 16, in place): u1 from
    the first 8 uniforms, u2 from the last 8; double arithmetic for float64, float arithmetic
    otherwise (half and bfloat16 are computed in float and rounded once at the end), with the
    libm functions evaluated in double and rounded to float."""
    if not blocks.size:
        return
    u1, u2 = blocks[:, :8], blocks[:, 8:]
    if compute == _F64:
        if u1.size <= 64:
            radius = np.sqrt(-2.0 * np.array([math.log(1.0 - v) for v in u1.ravel().tolist()]))
            theta = (_TWO_PI * u2).ravel().tolist()
            cos = radius * np.array([math.cos(t) for t in theta])
            sin = radius * np.array([math.sin(t) for t in theta])
            cos, sin = cos.reshape(u1.shape), sin.reshape(u1.shape)
        else:
            radius = np.sqrt(-2.0 * np.log(1.0 - u1))
            theta = _TWO_PI * u2
            cos = radius * np.cos(theta)
            sin = radius * np.sin(theta)
        blocks[:, :8] = _fma(cos, std, mean)
        blocks[:, 8:] = _fma(sin, std, mean)
        return
    std32, mean32 = _F32(std), _F32(mean)
    one_minus = _F32(1) - u1
    log = np.log(one_minus.astype(_F64)).astype(_F32)
    radius = np.sqrt(log * _F32(-2))
    theta = _F32(_TWO_PI) * u2
    if theta.size < _FAST_TRIG:
        theta64 = theta.astype(_F64)
        cos = np.cos(theta64).astype(_F32)
        sin = np.sin(theta64).astype(_F32)
    else:
        # NumPy's float32 SIMD sin/cos: within an ulp of the rounded double result
        cos, sin = np.cos(theta), np.sin(theta)
    cos *= radius
    sin *= radius
    if std32 != 1 or mean32 != 0:
        cos = _fma32(cos, std32, mean32)
        sin = _fma32(sin, std32, mean32)
    blocks[:, :8] = cos
    blocks[:, 8:] = sin


class _CupyDraws:
    """Draws on a GPU from a CuPy RandomState seeded by the ember generator."""

    def __init__(self, rs, cupy, index):
        self.rs, self.xp, self.index = rs, cupy, index

    def _on_device(self, fn, *args, **kwargs):
        with self.xp.cuda.Device(self.index):
            return fn(*args, **kwargs)

    def uniform(self, shape, dtype):
        return self._on_device(self.rs.random_sample, shape, dtype=dtype)

    def normal(self, shape, dtype):
        return self._on_device(self.rs.standard_normal, shape, dtype=dtype)

    def exponential(self, shape, dtype):
        return self._on_device(self.rs.standard_exponential, shape, dtype=dtype)

    def integers(self, low, high, shape):
        if high - low > (1 << 31):
            hi = self._on_device(self.rs.randint, 0, 1 << 31, shape, dtype=np.int64)
            lo = self._on_device(self.rs.randint, 0, 1 << 31, shape, dtype=np.int64)
            return low + ((hi << 31) | lo) % (high - low)
        return self._on_device(self.rs.randint, low, high, shape, dtype=np.int64)

    def geometric(self, p, shape):
        return self._on_device(self.rs.geometric, p, shape, dtype=np.int64)

    def cauchy(self, shape):
        return self._on_device(self.rs.standard_cauchy, shape, dtype=np.float64)

    def poisson(self, lam):
        return self._on_device(self.rs.poisson, lam, dtype=np.int64)

    def permutation(self, n):
        return self._on_device(self.rs.permutation, n)


default_generator = Generator()
_cuda_generators = {}


def cuda_generator(index):
    """The generator of GPU ``index`` (created on first use), used by ``ember.cuda``."""
    gen = _cuda_generators.get(index)
    if gen is None:
        gen = _cuda_generators[index] = Generator(_device_type("cuda", index))
    return gen


# Called with the Generator before every draw when set: ember.func.vmap uses it to refuse
# random ops (randomness="error") or to replay one draw per batch element ("same").
draw_hook = None


def _generator_for(generator, device):
    if generator is not None:
        if not isinstance(generator, Generator):
            raise TypeError(f"expected a Generator, got {type(generator).__name__}")
    elif device.type == "cuda":
        generator = cuda_generator(device.index)
    else:
        generator = default_generator
    if draw_hook is not None:
        draw_hook(generator)
    if device.type == "webgpu":  # drawn on the host from the CPU generator, then uploaded
        device = CPU
    return generator._backend(device)


def manual_seed(seed):
    """Seed the default CPU generator (and every GPU's) and return the CPU generator.

    Example::

        >>> ember.manual_seed(0).initial_seed()
        0
    """
    seed = _check_seed(seed)
    from .. import cuda

    if cuda.is_available():
        cuda.manual_seed_all(seed)
    return default_generator.manual_seed(seed)


def seed():
    """Seed the default generator non-deterministically and return the seed."""
    return default_generator.seed()


def initial_seed():
    """The seed of the default CPU generator.

    Example::

        >>> ember.manual_seed(7); ember.initial_seed()
        7
    """
    return default_generator.initial_seed()


def get_rng_state():
    """The default CPU generator's state, a uint8 tensor (restore with :func:`set_rng_state`).

    Example::

        >>> state = ember.get_rng_state(); a = ember.rand(2)
        >>> ember.set_rng_state(state); bool((ember.rand(2) == a).all())
        True
    """
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default CPU generator's state."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Context manager that restores the default CPU generator (and the given GPUs'
    generators; all seen GPUs by default) when it exits, as ``torch.random.fork_rng``.

    Example::

        >>> with ember.ops.random.fork_rng():
        ...     _ = ember.rand(3)
    """
    if not enabled:
        yield
        return
    from .. import cuda

    if devices is None:
        devices = range(cuda.device_count()) if cuda.is_available() else ()
    gens = [default_generator] + [cuda_generator(int(getattr(d, "index", d) or 0))
                                  for d in devices]
    states = [g.get_state() for g in gens]
    try:
        yield
    finally:
        for g, state in zip(gens, states):
            g.set_state(state)


# ---------------------------------------------------------------- drawing helpers

_MANTISSA = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _uniform01(draws, shape, dtype):
    """Uniform numbers in [0, 1) exactly representable in ``dtype`` (never 1 after rounding)."""
    if dtype in (dt.float16, dt.bfloat16):
        bits = _MANTISSA[dtype.name]
        k = draws.integers(0, 1 << bits, shape)
        return (k.astype(np.float32) * np.float32(2.0 ** -bits)).astype(dtype.np)
    compute = np.float64 if dtype in (dt.float64, dt.complex128) else np.float32
    return draws.uniform(shape, compute)


def _compute_dtype(dtype):
    return np.float64 if dtype in (dt.float64, dt.complex128) else np.float32


def _place(array, dtype):
    return array if array.dtype == dtype.np else array.astype(dtype.np)


def _new_tensor(array, device):
    if device.type == "webgpu" and isinstance(array, np.ndarray):
        array = device.xp.from_host(array)  # (numbers drawn on the host)
    return Tensor._make(array, device)


def _meta(shape, dtype):
    return np.broadcast_to(np.zeros((), dtype.np), shape)


def _check_float(dtype, kernel):
    if not (dtype.is_floating_point or dtype.is_complex):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_short_name(dtype)}'")


def _factory_target(dtype, device, out, default):
    if out is not None and isinstance(out, Tensor):
        dtype = out.dtype if dtype is None else dtype
        device = out._device if device is None else device
    dtype = dt.to_dtype(dtype) if dtype is not None else default
    device = canonical(device) if device is not None else DEFAULT[0]
    if device.type == "cuda":
        check_cuda_dtype(dtype)
    return dtype, device


def _finish(result, requires_grad, out, name):
    if requires_grad:
        result.requires_grad_()
    if out is None:
        return result
    return _write_factory_out(result, out, name)


_parse_size = parse_size


# ---------------------------------------------------------------- rand / randn


def _rand_array(draws, shape, dtype, low=0.0, high=1.0, order=None):
    """Uniform numbers of ``dtype`` in ``[low, high)`` shaped ``shape``; on the CPU torch's
    numbers, drawn in memory order ``order`` (see :func:`_memory_order`)."""
    if draws.xp is np:
        n = math.prod(shape)
        if dtype.is_complex:
            real = dtype.to_real()
            flat = draws.uniform(2 * n, real, low, high).view(dtype.np)
        else:
            flat = draws.uniform(n, dtype, low, high)
        return _arrange(flat, shape, order)
    if dtype.is_complex:
        real = dtype.to_real()
        array = _uniform01(draws, shape, real) + 1j * _uniform01(draws, shape, real)
    else:
        array = _uniform01(draws, shape, dtype)
    if low != 0 or high != 1:
        array = array * (high - low) + low
    return array


def _randn_array(draws, shape, dtype, mean=0.0, std=1.0, order=None, contiguous=True):
    """Normal numbers of ``dtype`` (complex: each part with variance std**2 / 2); on the CPU
    torch's numbers (``contiguous`` picks torch's block path for 16 or more elements)."""
    if draws.xp is np:
        n = math.prod(shape)
        if dtype.is_complex:
            flat = draws.normal(2 * n, dtype.to_real(), mean, std / math.sqrt(2.0),
                                contiguous).view(dtype.np)
        else:
            flat = draws.normal(n, dtype, mean, std, contiguous)
        return _arrange(flat, shape, order)
    compute = _compute_dtype(dtype)
    if dtype.is_complex:
        scale = compute(math.sqrt(0.5))
        array = (draws.normal(shape, compute) * scale) + 1j * (draws.normal(shape, compute)
                                                               * scale)
    else:
        array = draws.normal(shape, compute)
    if std != 1 or mean != 0:
        array = array * std + mean
    return array


def _memory_order(array):
    """The axes of ``array`` from the slowest to the fastest in memory (the order in which
    torch's TensorIterator fills a tensor), or None when that is the logical order."""
    if array.ndim < 2 or array.flags.c_contiguous:
        return None
    strides = array.strides
    perm = sorted(range(array.ndim), key=lambda ax: -abs(strides[ax]))
    return None if perm == list(range(array.ndim)) else tuple(perm)


def _arrange(flat, shape, order):
    """Values drawn in memory order ``order`` placed at their logical positions."""
    if order is None:
        return flat.reshape(shape)
    return flat.reshape([shape[ax] for ax in order]).transpose(np.argsort(order))


def _sample_factory(kind, shape, dtype, device, generator):
    if device is META:
        return _meta(shape, dtype)
    draws = _generator_for(generator, device)
    if kind == "uniform":
        array = _rand_array(draws, shape, dtype)
    else:
        array = _randn_array(draws, shape, dtype)
    return _place(array, dtype)


def rand(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """Uniform random numbers in ``[0, 1)``.

    Example::

        >>> ember.manual_seed(0); ember.rand(2, 3).shape
        ember.Size([2, 3])
    """
    size = varargs_or_keyword("rand", sizes, size)
    if not size:
        raise TypeError("rand() received an invalid combination of arguments - got (), but "
                        "expected (tuple of ints size, *, Generator generator, Tensor out, "
                        "dtype dtype, layout layout, device device, bool pin_memory, "
                        "bool requires_grad)")
    shape = _parse_size(size)
    dtype, device = _factory_target(dtype, device, out, dt.get_default_dtype())
    _check_float(dtype, "check_uniform_bounds")
    result = _new_tensor(_sample_factory("uniform", shape, dtype, device, generator), device)
    return _finish(result, requires_grad, out, "rand")


def randn(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    """Standard normal random numbers (complex: real and imaginary parts with variance 1/2).

    Example::

        >>> ember.randn(4, dtype=ember.float64).dtype
        ember.float64
    """
    size = varargs_or_keyword("randn", sizes, size)
    if not size:
        raise TypeError("randn() received an invalid combination of arguments - got (), but "
                        "expected (tuple of ints size, *, Generator generator, Tensor out, "
                        "dtype dtype, layout layout, device device, bool pin_memory, "
                        "bool requires_grad)")
    shape = _parse_size(size)
    dtype, device = _factory_target(dtype, device, out, dt.get_default_dtype())
    _check_float(dtype, "normal_kernel_cpu")
    result = _new_tensor(_sample_factory("normal", shape, dtype, device, generator), device)
    return _finish(result, requires_grad, out, "randn")


def _like_target(input, dtype, device):
    dtype = dt.to_dtype(dtype) if dtype is not None else input.dtype
    device = canonical(device) if device is not None else input._device
    if device.type == "cuda":
        check_cuda_dtype(dtype)
    return dtype, device


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=None):
    """:func:`rand` with the shape (and by default dtype and device) of ``input``.

    Example::

        >>> ember.rand_like(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    dtype, device = _like_target(input, dtype, device)
    return rand(input._data.shape, generator=generator, dtype=dtype, device=device,
                requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,
               requires_grad=False, memory_format=None):
    """:func:`randn` with the shape (and by default dtype and device) of ``input``.

    Example::

        >>> ember.randn_like(ember.zeros(3)).shape
        ember.Size([3])
    """
    dtype, device = _like_target(input, dtype, device)
    return randn(input._data.shape, generator=generator, dtype=dtype, device=device,
                 requires_grad=requires_grad)


# ---------------------------------------------------------------- integers

_C_TYPE = {"uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
           "int64": "long", "bool": "bool", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
           "float32": "float", "float64": "double"}


def _dtype_range(dtype):
    """The inclusive range of integers ``dtype`` stores exactly (torch's ``random_`` bounds)."""
    if dtype is dt.bool:
        return 0, 1
    if dtype.category == dt._INT:
        info = np.iinfo(dtype.np)
        return int(info.min), int(info.max)
    bits = _MANTISSA[dtype.to_real().name]
    return -(1 << bits), 1 << bits


_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


def _check_random_range(low, high, dtype):
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    if dtype.is_floating_point:
        # torch refuses only what the dtype cannot hold, and warns beyond 2**digits
        top = _FLOAT_MAX[dtype.name]
        bits = _MANTISSA[dtype.name]
        for value, name in ((low, "from"), (high - 1, "to - 1")):
            if not -top <= value <= top:
                raise RuntimeError(f"{name} is out of bounds for {_C_TYPE[dtype.name]}")
            if not -(1 << bits) <= value <= 1 << bits:
                warnings.warn(f"{name} is out of bounds [-(2^{bits}), 2^{bits}]. Due to "
                              f"precision limitations {_C_TYPE[dtype.name]} can support discrete "
                              "uniform distribution only within this range.", stacklevel=3)
        return
    lo, hi = _dtype_range(dtype)
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {_C_TYPE[dtype.name]}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {_C_TYPE[dtype.name]}")


def _integers(draws, low, high, shape, dtype):
    if draws.xp is np:
        array = draws.integers(low, high, math.prod(shape), dtype).reshape(shape)
    else:
        array = draws.integers(low, high, shape)
    if dtype.is_complex:
        return array.astype(dtype.np)
    return array.astype(dtype.np, copy=False)


def _int_value(x, name):
    if isinstance(x, Tensor):
        x = x.item()
    return int(x)


def randint(*args, low=None, high=None, size=None, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad=False, pin_memory=False):
    """Random integers in ``[low, high)``: ``randint(high, size)`` or ``randint(low, high, size)``.

    Example::

        >>> ember.randint(3, 5, (4,)).dtype
        ember.int64
    """
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list, Tensor)) and not (
            isinstance(args[-1], Tensor) and args[-1].ndim == 0):
        size = args.pop()
    if high is None and args:
        high = args.pop()
    if low is None and args:
        low = args.pop()
    if args or high is None or size is None or not isinstance(size, (tuple, list, Tensor)):
        got = ", ".join(type(a).__name__ for a in [low, high, size] if a is not None)
        raise TypeError(f"randint() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n * (int high, tuple of ints size, *, Generator "
                        "generator, Tensor out, dtype dtype, layout layout, device device, bool "
                        "pin_memory, bool requires_grad)\n * (int low, int high, tuple of ints "
                        "size, *, Generator generator, Tensor out, dtype dtype, layout layout, "
                        "device device, bool pin_memory, bool requires_grad)")
    low = 0 if low is None else _int_value(low, "low")
    high = _int_value(high, "high")
    shape = _parse_size((size,))
    dtype, device = _factory_target(dtype, device, out, dt.int64)
    _check_random_range(low, high, dtype)
    if device is META:
        array = _meta(shape, dtype)
    else:
        array = _integers(_generator_for(generator, device), low, high, shape, dtype)
    return _finish(_new_tensor(array, device), requires_grad, out, "randint")


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None,
                 device=None, requires_grad=False, memory_format=None):
    """:func:`randint` with the shape (and by default dtype and device) of ``input``.

    ``randint_like(x, high)`` or ``randint_like(x, low, high)``.

    Example::

        >>> ember.randint_like(ember.zeros(3), 10).dtype
        ember.float32
    """
    if high is None:
        low, high = 0, low
    dtype, device = _like_target(input, dtype, device)
    return randint(low, high, input._data.shape, generator=generator, dtype=dtype, device=device,
                   requires_grad=requires_grad)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """A random permutation of ``0 .. n-1``.

    Example::

        >>> sorted(ember.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    if isinstance(n, Tensor):
        n = n.item()
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype, device = _factory_target(dtype, device, out, dt.int64)
    if dtype is dt.bool or dtype.is_complex:
        raise NotImplementedError(f"\"randperm\" not implemented for '{_short_name(dtype)}'")
    lo, hi = _dtype_range(dtype)
    if n > 0 and n - 1 > hi:
        raise RuntimeError(f"n must be at most {hi + 1} for {_C_TYPE[dtype.name]}, got {n}")
    if device is META:
        array = _meta((n,), dtype)
    else:
        array = _generator_for(generator, device).permutation(n).astype(dtype.np)
    return _finish(_new_tensor(array, device), requires_grad, out, "randperm")


# ---------------------------------------------------------------- normal


def _zero_grad_op(name, grad_name):
    """An op ``(inputs..., noise) -> combine`` whose gradient is zero w.r.t. its tensor inputs,
    as torch defines it for sampling (``normal``, ``bernoulli``, ``poisson``)."""
    def decorate(kernel):
        op = defop(name, save_inputs=False, grad_name=grad_name, kind="random",
                   opt_outs={"onnx": "a random draw: ONNX's samplers cannot give ember's "
                                     "numbers"},
                   meta=lambda *arrays: (np.broadcast_shapes(*(a.shape for a in arrays)),
                                         arrays[0].dtype))(kernel)

        @op.defderivative
        def _(ctx, grad):
            return tuple((grad * 0) if need else None for need in ctx.needs_input_grad)
        return op
    return decorate


@_zero_grad_op("normal", "NormalBackward3")
def _normal_combine_op(xp, mean, std, noise):
    return (mean + std * noise).astype(mean.dtype, copy=False)


_normal_combine_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


def _check_std_scalar(std):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")


def _fmt(value):
    return int(value) if isinstance(value, builtins.float) and value.is_integer() else value


def _normal_tensor(mean, std, generator, out):
    """normal() with at least one tensor argument."""
    from ._operands import broadcast_shapes, scalar_tensor

    ref = mean if isinstance(mean, Tensor) else std
    dtype = ref.dtype
    _check_float(dtype, "normal_kernel_cpu")
    device = ref._device
    if isinstance(std, Tensor):
        if device is not META and std._device is not META and std.numel() and \
                builtins.bool((std._data < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    else:
        _check_std_scalar(std)
    if not isinstance(mean, Tensor):
        mean = scalar_tensor(mean, dtype, device)
    scalar_std = 1.0
    if not isinstance(std, Tensor):
        scalar_std, std = std, scalar_tensor(1.0, dtype, device)
    shape = broadcast_shapes(mean._data.shape, std._data.shape)
    if device is META:
        noise = _meta(shape, dtype)
    else:
        draws = _generator_for(generator, device)
        # torch: normal_(0, std) then add mean for a number std, else normal_(0, 1), then
        # mul std, add mean
        noise = _place(_randn_array(draws, shape, dtype, 0.0, scalar_std), dtype)
    std = std.to(dtype) if std.dtype is not dtype else std
    mean = mean.to(dtype) if mean.dtype is not dtype else mean
    result = _normal_combine_op(mean, std, _new_tensor(noise, device))
    return write_out(result, out, "normal")


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False, pin_memory=False):
    """Normal random numbers with the given ``mean`` and ``std`` (tensors broadcast, or numbers
    with a ``size``).

    The gradient with respect to tensor ``mean``/``std`` is zero, as in torch.

    Example::

        >>> ember.normal(ember.zeros(3), 1.0).shape
        ember.Size([3])
        >>> ember.normal(2.0, 3.0, size=(2, 2)).shape
        ember.Size([2, 2])
    """
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        return _normal_tensor(mean, std, generator, out)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments - got (float, "
                        "float), but expected (float mean, float std, tuple of ints size, *, "
                        "Generator generator, Tensor out, dtype dtype, ...)")
    _check_std_scalar(std)
    shape = _parse_size((size,))
    dtype, device = _factory_target(dtype, device, out, dt.get_default_dtype())
    _check_float(dtype, "normal_kernel_cpu")
    if device is META:
        array = _meta(shape, dtype)
    else:
        array = _randn_array(_generator_for(generator, device), shape, dtype, mean, std)
        array = _place(array, dtype)
    return _finish(_new_tensor(array, device), requires_grad, out, "normal")


# ---------------------------------------------------------------- bernoulli, poisson


@_zero_grad_op("bernoulli", "BernoulliBackward0")
def _bernoulli_combine_op(xp, p, sample):
    return sample


_bernoulli_combine_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


def _check_probabilities(p):
    if p._device is META or not p.numel():
        return
    data = p._data
    if dt.is_bfloat16_array_dtype(data.dtype):
        data = data.astype(np.float32)
    if not builtins.bool(((data >= 0) & (data <= 1)).all()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def _check_p_scalar(p, name="bernoulli_"):
    if not 0 <= p <= 1:
        raise RuntimeError(f"{name} expects p to be in [0, 1], but got p={_fmt(p)}")


def _bernoulli_sample(p_array, shape, dtype, device, generator, double=True, order=None):
    """0/1 of ``dtype``: ``u < p`` with one uniform per element, 53-bit when ``p`` is float64
    (or a number), 24-bit for other ``p`` dtypes, drawn in memory order ``order``."""
    if device is META:
        return _meta(shape, dtype)
    draws = _generator_for(generator, device)
    xp = draws.xp
    if xp is np:
        n = math.prod(shape)
        if isinstance(p_array, np.ndarray):
            p_array = np.broadcast_to(p_array, shape)
            if order is not None:
                p_array = p_array.transpose(order)
            p_array = p_array.ravel()
            if not double:
                p_array = p_array.astype(_F32)
        return _arrange(draws.bernoulli(p_array, n, double), shape, order).astype(dtype.np)
    u = draws.uniform(shape, np.float64)
    p_array = p_array.astype(np.float64) if hasattr(p_array, "astype") else p_array
    return xp.less(u, p_array).astype(dtype.np)


def bernoulli(input, p=None, *, generator=None, out=None):
    """Draw 0 or 1 for each element, with probability ``input`` (or ``p``) of a 1.

    Example::

        >>> ember.bernoulli(ember.tensor([0., 1.]))
        tensor([0., 1.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    shape, dtype, device = input._data.shape, input.dtype, input._device
    if p is not None:
        if isinstance(p, Tensor):
            return bernoulli(p.expand(shape).to(dtype) if p.dtype.is_floating_point else p,
                             generator=generator, out=out)
        _check_p_scalar(p)
        sample = _bernoulli_sample(p, shape, dtype, device, generator)
        return write_out(_new_tensor(sample, device), out, "bernoulli")
    _check_float(dtype, "bernoulli_tensor_cpu_p_")
    _check_probabilities(input)
    data = input._data
    if device is not META and dt.is_bfloat16_array_dtype(data.dtype):
        data = data.astype(np.float32)
    sample = _bernoulli_sample(data, shape, dtype, device, generator,
                               double=dtype is dt.float64)
    return write_out(_bernoulli_combine_op(input, _new_tensor(sample, device)), out, "bernoulli")


@_zero_grad_op("poisson", "PoissonBackward0")
def _poisson_combine_op(xp, rates, sample):
    return sample


_poisson_combine_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


def poisson(input, generator=None):
    """Poisson random counts with rates ``input`` (same dtype as ``input``).

    Example::

        >>> ember.poisson(ember.zeros(2))
        tensor([0., 0.])
    """
    dtype, device = input.dtype, input._device
    _check_float(dtype, "poisson_cpu")
    if device is META:
        sample = _meta(input._data.shape, dtype)
    else:
        rates = input._data.astype(np.float64)
        if rates.size and not builtins.bool((rates >= 0).all()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        draws = _generator_for(generator, device)
        sample = draws.poisson(rates).astype(dtype.np)
    return _poisson_combine_op(input, _new_tensor(sample, device))


# ---------------------------------------------------------------- multinomial


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Sample category indices from each row of (unnormalised) probabilities ``input``.

    Without replacement each row yields distinct categories (so ``num_samples`` may not exceed
    the number of categories).

    Example::

        >>> ember.multinomial(ember.tensor([0., 1., 0.]), 2, replacement=True)
        tensor([1, 1])
    """
    if input._data.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_short_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = input._data.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    device = input._device
    rows = input._data.shape[0] if input._data.ndim == 2 else 1
    out_shape = (rows, num_samples) if input._data.ndim == 2 else (num_samples,)
    if device is META:
        return write_out(_new_tensor(_meta(out_shape, dt.int64), device), out, "multinomial")
    draws = _generator_for(generator, device)
    xp = draws.xp
    probs = input._data.reshape(rows, categories).astype(np.float64)
    if categories == 0 or not builtins.bool((xp.isfinite(probs) & (probs >= 0)).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = probs.sum(axis=1)
    if not builtins.bool((totals > 0).all()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if xp is np:
        index = _multinomial_cpu(draws, input._data.reshape(rows, categories), num_samples,
                                 replacement)
    elif replacement:
        # Inverse CDF, all rows in one searchsorted: row r's CDF is shifted into [2r, 2r + 1].
        # A zero-probability category repeats its predecessor's CDF value, so it is never the
        # first value above u; the clip catches u * total rounding up to the last value.
        cdf = xp.cumsum(probs, axis=1) / totals[:, None]
        offsets = xp.arange(rows, dtype=np.float64)[:, None] * 2.0
        u = draws.uniform((rows, num_samples), np.float64)
        flat = xp.searchsorted((cdf + offsets).ravel(), (u + offsets).ravel(), side="right")
        index = flat.reshape(rows, num_samples) - xp.arange(rows)[:, None] * categories
        last_positive = categories - 1 - xp.argmax(probs[:, ::-1] > 0, axis=1)
        index = xp.minimum(index, last_positive[:, None])
    else:
        # Exponential race: the k smallest E_i / p_i are a draw without replacement; when a row
        # has fewer positive categories than samples, zero-probability ones follow in order.
        keys = draws.exponential((rows, categories), np.float64)
        keys = xp.where(probs > 0, keys / xp.where(probs > 0, probs, 1.0), xp.inf)
        index = (np.argsort(keys, axis=1, kind="stable") if xp is np else
                 xp.argsort(keys, axis=1))[:, :num_samples]
    result = _new_tensor(index.astype(np.int64).reshape(out_shape), device)
    return write_out(result, out, "multinomial")


def _multinomial_cpu(draws, probs, num_samples, replacement):
    """torch's CPU multinomial. Without replacement (or for one sample): ``q`` exponential(1)
    in the input's dtype, the ``num_samples`` largest ``p / q``. With replacement: per row the
    cumulative sums (in the input's dtype, divided by the total, the last set to 1) and for
    each 53-bit uniform ``u`` the first category whose cumulative value is >= ``u``."""
    rows, categories = probs.shape
    store = probs.dtype
    if not replacement or num_samples == 1:
        q = _to_storage(draws.exponential(rows * categories), store).reshape(rows, categories)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (probs / q).astype(np.float64)
        # largest first; ties keep the lower index
        return np.argsort(-ratio, axis=1, kind="stable")[:, :num_samples]
    acc = _F32 if store.itemsize < 4 else store
    cdf = np.cumsum(probs.astype(acc), axis=1, dtype=acc)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1
    u = draws.unit(rows * num_samples, "float64").reshape(rows, num_samples)
    return np.stack([np.searchsorted(cdf[r].astype(np.float64), u[r], side="left")
                     for r in range(rows)]) if rows else np.zeros((0, num_samples), np.int64)


# ---------------------------------------------------------------- in-place samplers


def _overwrite(self, array):
    """Write a freshly drawn ``array`` into ``self`` (autograd sees a zero gradient)."""
    check_inplace_target(self)
    if self._device is META:
        self._vc[0] += 1
        return self
    if grad_mode.state.enabled and self._rg:
        return self.copy_(_new_tensor(array, self._device))
    copyto(self._device, self._data, array)
    self._vc[0] += 1
    return self


def _draws_for(self, generator):
    return None if self._device is META else _generator_for(generator, self._device)


def _shape(self):
    return self._data.shape


def _cpu_fill(self, make):
    """``make(n)``'s float64 values (drawn in ``self``'s memory order) cast to its dtype."""
    shape = _shape(self)
    values = _to_storage(make(math.prod(shape)), self.dtype.np)
    return _arrange(values, shape, _memory_order(self._data))


def _uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with uniform numbers in ``[from, to)``.

    Example::

        >>> ember.empty(3).uniform_(-1, 1).shape
        ember.Size([3])
    """
    from_ = kwargs.pop("from", from_)
    dtype = self.dtype
    _check_float(dtype, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_fmt(from_)} > to={_fmt(to)}")
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    return _overwrite(self, _rand_array(draws, _shape(self), dtype, from_, to,
                                        _memory_order(self._data)))


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal numbers of the given ``mean`` and ``std``.

    Example::

        >>> ember.empty(3).normal_(0, 2).shape
        ember.Size([3])
    """
    dtype = self.dtype
    _check_float(dtype, "normal_kernel_cpu")
    _check_std_scalar(std)
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    return _overwrite(self, _randn_array(draws, _shape(self), dtype, mean, std,
                                         _memory_order(self._data), self.is_contiguous()))


def _random_(self, *args, generator=None, **kwargs):
    """Fill with random integers: ``random_()`` over the dtype's exact range,
    ``random_(to)`` in ``[0, to)``, ``random_(from, to)`` in ``[from, to)``.

    Example::

        >>> ember.zeros(3, dtype=ember.int64).random_(5, 6)
        tensor([5, 5, 5])
    """
    dtype = self.dtype
    low, high = kwargs.pop("from", None), kwargs.pop("to", None)
    if len(args) == 1:
        low, high = (0, args[0]) if low is None and high is None else (args[0], high)
    elif len(args) == 2:
        low, high = args
    bounded = low is not None or high is not None
    if low is None:
        low = 0
    lo, hi = _dtype_range(dtype)
    if high is None:
        high = hi + 1
        if dtype is dt.bool:
            high = 2
    if dtype.is_complex:
        raise NotImplementedError(f"\"random_\" not implemented for '{_short_name(dtype)}'")
    _check_random_range(int(low), int(high), dtype)
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    shape = _shape(self)
    if draws.xp is not np:
        return _overwrite(self, draws.integers(int(low), int(high), shape))
    n, order = math.prod(shape), _memory_order(self._data)
    if not bounded:
        values = draws.random_full(n, dtype)
    else:
        values = draws.integers(int(low), int(high), n, dtype)
    return _overwrite(self, _arrange(values, shape, order))


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential numbers of rate ``lambd``.

    Example::

        >>> bool((ember.empty(5).exponential_() >= 0).all())
        True
    """
    dtype = self.dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {_short_name(dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    if draws.xp is not np:
        return _overwrite(self, draws.exponential(_shape(self), _compute_dtype(dtype)) / lambd)
    return _overwrite(self, _cpu_fill(self, lambda n: draws.exponential(n, lambd)))


def _geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...).

    Example::

        >>> bool((ember.empty(5).geometric_(0.5) >= 1).all())
        True
    """
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")
    if self.dtype.is_complex:
        raise NotImplementedError(f"\"geometric_\" not implemented for "
                                  f"'{_short_name(self.dtype)}'")
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    if draws.xp is not np:
        return _overwrite(self, draws.geometric(p, _shape(self)))
    return _overwrite(self, _cpu_fill(self, lambda n: draws.geometric(n, p)))


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy numbers of the given ``median`` and scale ``sigma``.

    Example::

        >>> ember.empty(3).cauchy_().shape
        ember.Size([3])
    """
    dtype = self.dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {_short_name(dtype)}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    if draws.xp is not np:
        return _overwrite(self, draws.cauchy(_shape(self)) * sigma + median)
    return _overwrite(self, _cpu_fill(self, lambda n: draws.cauchy(n, median, sigma)))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with ``exp(N(mean, std))`` numbers.

    Example::

        >>> bool((ember.empty(5).log_normal_() > 0).all())
        True
    """
    dtype = self.dtype
    _check_float(dtype, "log_normal_cpu")
    if dtype.is_complex:
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for "
                                  f"'{_short_name(dtype)}'")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")
    draws = _draws_for(self, generator)
    if draws is None:
        return _overwrite(self, None)
    if draws.xp is np:
        return _overwrite(self, _cpu_fill(self, lambda n: draws.log_normal(n, mean, std)))
    z = draws.normal(_shape(self), np.float64)
    return _overwrite(self, draws.xp.exp(z * std + mean))


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 draws, 1 with probability ``p`` (a number or a broadcastable tensor).

    Example::

        >>> ember.empty(3).bernoulli_(1.0)
        tensor([1., 1., 1.])
    """
    shape, device = _shape(self), self._device
    if isinstance(p, Tensor):
        if not (p.dtype.is_floating_point):
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                      f"'{_short_name(p.dtype)}'")
        _check_probabilities(p)
        if p._device is not device:
            p = p.to(device)
        if device is META:
            return _overwrite(self, None)
        from ._operands import broadcast_shapes

        if broadcast_shapes(shape, p._data.shape) != shape:
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast "
                               f"shape {list(broadcast_shapes(shape, p._data.shape))}")
        data = p._data.astype(np.float64)
        return _overwrite(self, _bernoulli_sample(data, shape, dt.float64, device, generator,
                                                  p.dtype is dt.float64,
                                                  _memory_order(self._data)))
    _check_p_scalar(p)
    if device is META:
        return _overwrite(self, None)
    return _overwrite(self, _bernoulli_sample(p, shape, dt.float64, device, generator,
                                              order=_memory_order(self._data)))


Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_
Tensor.random_ = _random_
Tensor.exponential_ = _exponential_
Tensor.geometric_ = _geometric_
Tensor.cauchy_ = _cauchy_
Tensor.log_normal_ = _log_normal_
Tensor.bernoulli_ = _bernoulli_
Tensor.bernoulli = bernoulli
Tensor.multinomial = multinomial


# ---------------------------------------------------------------- torch.binomial


def binomial(count, prob, generator=None):
    """Binomial counts: ``count`` trials with success probability ``prob``, element-wise.

    ember draws with its own sampler (not torch's numbers for a seed; see the migration notes).

    Example::

        >>> ember.binomial(ember.tensor([0., 5.]), ember.tensor([0.5, 1.]))
        tensor([0., 5.])
    """
    from ..distributions import _ops

    if not (isinstance(count, Tensor) and isinstance(prob, Tensor)):
        raise TypeError("binomial(): argument 'count' and 'prob' must be Tensor")
    return _ops.binomial(*_broadcast_pair(count, prob))


def _broadcast_pair(a, b):
    from .. import broadcast_tensors

    return broadcast_tensors(a, b)


__all__ += ["binomial"]
