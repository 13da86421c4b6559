"""Random generators: :class:`Generator` and torch's CPU transformations of its words.

A CPU generator is NumPy's ``MT19937`` seeded as torch's ``CPUGeneratorImpl`` (the low 32 bits
of the seed), with torch's 5056-byte state; ``_MTDraws`` turns its 32-bit words into numbers
the way torch's CPU kernels do (uniform floats by mantissa width, Box-Muller normals with
torch's libm rounding, Poisson's rejection loop). A CUDA generator keeps a seed and an offset,
as torch's Philox generators do, and draws through CuPy (``_CupyDraws``). The sampling
functions are in :mod:`ember.ops.random`. Example::

    >>> import ember
    >>> g = ember.Generator().manual_seed(0)
    >>> g.initial_seed()
    0
"""

from __future__ import annotations

import builtins
import math
import secrets
import struct

import numpy as np

from .. import _dtype as dt
from .._device import CPU, canonical
from .._device import device as _device_type
from .._tensor import Tensor

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
