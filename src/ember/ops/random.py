"""Random numbers: :class:`Generator`, the default generator, sampling functions and in-place
samplers (``uniform_``, ``normal_``, ...).

A CPU generator wraps NumPy's ``Generator(PCG64(seed))``, so the same seed gives the same numbers
on every run (torch's streams are not reproduced). A CUDA generator keeps a seed and an offset,
as torch's Philox generators do: each draw seeds CuPy's generator from ``(seed, offset)`` and
advances the offset, which makes its state 16 bytes that save and restore exactly.
"""

from __future__ import annotations

import builtins
import contextlib
import math
import secrets

import numpy as np

from .. import _dtype as dt
from .._device import CPU, META, canonical, check_cuda_dtype
from .._device import device as _device_type
from .._tensor import Tensor
from ..autograd import grad_mode
from ._registry import _short_name, check_inplace_target, copyto, defop, write_out
from .creation import _write_factory_out, parse_size

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "rand_like", "randn", "randn_like",
           "randint", "randint_like", "randperm", "normal", "bernoulli", "multinomial",
           "poisson"]

_DEFAULT_SEED = 67280421310721
_U64 = 1 << 64


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
        if device.type == "cuda" and device.index is None:
            device = canonical(device)
        self._device = device
        self._seed = _DEFAULT_SEED
        self._reseed()

    def _reseed(self):
        if self._device.type == "cpu":
            self._np = np.random.Generator(np.random.PCG64(self._seed))
            self._draws = _NumpyDraws(self._np)
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
        self._seed = secrets.randbits(63)
        self._reseed()
        return self._seed

    def initial_seed(self):
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 CPU tensor (see :meth:`set_state`)."""
        if self._device.type == "cpu":
            state = self._np.bit_generator.state
            words = [self._seed, state["state"]["state"], state["state"]["inc"],
                     state["has_uint32"], state["uinteger"]]
            sizes = (8, 16, 16, 8, 8)
        else:
            words, sizes = [self._seed, self._offset], (8, 8)
        raw = b"".join(int(w).to_bytes(n, "little") for w, n in zip(words, sizes))
        return Tensor._make(np.frombuffer(raw, np.uint8).copy(), CPU)

    def set_state(self, new_state):
        """Restore a state returned by :meth:`get_state`; returns the generator."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        sizes = (8, 16, 16, 8, 8) if self._device.type == "cpu" else (8, 8)
        if new_state.numel() != builtins.sum(sizes):
            kind = "CPUGeneratorImplState" if self._device.type == "cpu" else \
                "CUDAGeneratorImplState"
            raise RuntimeError(f"Expected a {kind} of size {builtins.sum(sizes)} but found the "
                               f"input RNG state size to be {new_state.numel()}")
        raw = new_state._host_array().tobytes()
        words, at = [], 0
        for n in sizes:
            words.append(int.from_bytes(raw[at:at + n], "little"))
            at += n
        if self._device.type == "cpu":
            self._seed = words[0]
            self._np = np.random.Generator(np.random.PCG64(0))
            self._np.bit_generator.state = {
                "bit_generator": "PCG64", "state": {"state": words[1], "inc": words[2]},
                "has_uint32": words[3], "uinteger": words[4]}
            self._draws = _NumpyDraws(self._np)
        else:
            self._seed, self._offset = words
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


class _NumpyDraws:
    """Draws on the CPU from a NumPy Generator (float32 or float64 arrays)."""

    def __init__(self, gen):
        self.gen, self.xp = gen, np

    def uniform(self, shape, dtype):
        return self.gen.random(shape, dtype=dtype)

    def normal(self, shape, dtype):
        return self.gen.standard_normal(shape, dtype=dtype)

    def exponential(self, shape, dtype):
        return self.gen.standard_exponential(shape, dtype=dtype)

    def integers(self, low, high, shape):
        return self.gen.integers(low, high, shape, dtype=np.int64)

    def geometric(self, p, shape):
        return self.gen.geometric(p, shape)

    def cauchy(self, shape):
        return self.gen.standard_cauchy(shape)

    def poisson(self, lam):
        return self.gen.poisson(lam)

    def permutation(self, n):
        return self.gen.permutation(n)


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


def _generator_for(generator, device):
    if generator is not None:
        if not isinstance(generator, Generator):
            raise TypeError(f"expected a Generator, got {type(generator).__name__}")
        return generator._backend(device)
    if device.type == "cuda":
        return cuda_generator(device.index)._backend(device)
    return default_generator._backend(device)


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
    device = canonical(device) if device is not None else CPU
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


def _rand_array(draws, shape, dtype):
    if dtype.is_complex:
        real = dtype.to_real()
        return _uniform01(draws, shape, real) + 1j * _uniform01(draws, shape, real)
    return _uniform01(draws, shape, dtype)


def _randn_array(draws, shape, dtype):
    compute = _compute_dtype(dtype)
    if dtype.is_complex:
        scale = compute(math.sqrt(0.5))
        return (draws.normal(shape, compute) * scale) + 1j * (draws.normal(shape, compute) * scale)
    return draws.normal(shape, compute)


def _sample_factory(kind, shape, dtype, device, generator):
    if device is META:
        return _meta(shape, dtype)
    draws = _generator_for(generator, device)
    if kind == "uniform":
        array = _rand_array(draws, shape, dtype)
    else:
        array = _randn_array(draws, shape, dtype)
    return _place(array, dtype)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """Uniform random numbers in ``[0, 1)``.

    Example::

        >>> ember.manual_seed(0); ember.rand(2, 3).shape
        ember.Size([2, 3])
    """
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


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    """Standard normal random numbers (complex: real and imaginary parts with variance 1/2).

    Example::

        >>> ember.randn(4, dtype=ember.float64).dtype
        ember.float64
    """
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


def _check_random_range(low, high, dtype):
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    lo, hi = _dtype_range(dtype)
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {_C_TYPE[dtype.name]}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {_C_TYPE[dtype.name]}")


def _integers(draws, low, high, shape, dtype):
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
        op = defop(name, save_inputs=False, grad_name=grad_name,
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
    if not isinstance(std, Tensor):
        std = scalar_tensor(std, dtype, device)
    shape = broadcast_shapes(mean._data.shape, std._data.shape)
    if device is META:
        noise = _meta(shape, dtype)
    else:
        draws = _generator_for(generator, device)
        noise = _place(_randn_array(draws, shape, dtype), dtype)
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
        array = _randn_array(_generator_for(generator, device), shape, dtype)
        array = _place(array * std + mean, dtype)
    return _finish(_new_tensor(array, device), requires_grad, out, "normal")


# ---------------------------------------------------------------- bernoulli, poisson


@_zero_grad_op("bernoulli", "BernoulliBackward0")
def _bernoulli_combine_op(xp, p, sample):
    return sample


def _check_probabilities(p):
    if p._device is META or not p.numel():
        return
    data = p._data
    if data.dtype == dt.bfloat16.np:
        data = data.astype(np.float32)
    if not builtins.bool(((data >= 0) & (data <= 1)).all()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def _check_p_scalar(p, name="bernoulli_"):
    if not 0 <= p <= 1:
        raise RuntimeError(f"{name} expects p to be in [0, 1], but got p={_fmt(p)}")


def _bernoulli_sample(p_array, shape, dtype, device, generator):
    if device is META:
        return _meta(shape, dtype)
    draws = _generator_for(generator, device)
    xp = draws.xp
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
    if device is not META and data.dtype == dt.bfloat16.np:
        data = data.astype(np.float32)
    sample = _bernoulli_sample(data, shape, dtype, device, generator)
    return write_out(_bernoulli_combine_op(input, _new_tensor(sample, device)), out, "bernoulli")


@_zero_grad_op("poisson", "PoissonBackward0")
def _poisson_combine_op(xp, rates, sample):
    return sample


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
        sample = _generator_for(generator, device).poisson(rates).astype(dtype.np)
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
    if replacement:
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
    u = _rand_array(draws, _shape(self), dtype)
    if from_ != 0 or to != 1:
        u = u * (to - from_) + from_
    return _overwrite(self, u)


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
    return _overwrite(self, _randn_array(draws, _shape(self), dtype) * std + mean)


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
    return _overwrite(self, draws.integers(int(low), int(high), _shape(self)))


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
    return _overwrite(self, draws.exponential(_shape(self), _compute_dtype(dtype)) / lambd)


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
    return _overwrite(self, draws.geometric(p, _shape(self)))


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
    return _overwrite(self, draws.cauchy(_shape(self)) * sigma + median)


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
        return _overwrite(self, _bernoulli_sample(data, shape, dt.float64, device, generator))
    _check_p_scalar(p)
    if device is META:
        return _overwrite(self, None)
    return _overwrite(self, _bernoulli_sample(p, shape, dt.float64, device, generator))


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
