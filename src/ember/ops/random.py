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
import warnings

import numpy as np

from .. import _dtype as dt
from .._device import DEFAULT, META, canonical, check_cuda_dtype, check_webgpu_dtype
from .._device import device as _device_type
from .._tensor import Tensor
from ._generator import (  # noqa: F401  (moved to _generator.py; importers use this path)
    _F32,
    Generator,
    _check_seed,
    _to_storage,
)
from ._operands import varargs_or_keyword
from ._registry import _short_name, defop, write_out
from ._vmap_rules import batching
from .creation import _write_factory_out, parse_size

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "rand_like", "randn", "randn_like",
           "randint", "randint_like", "randperm", "normal", "bernoulli", "multinomial",
           "poisson"]

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
    elif device.type == "webgpu":
        from ..webgpu._random import default_generator as webgpu_generator

        generator = webgpu_generator()
    else:
        generator = default_generator
    if draw_hook is not None:
        draw_hook(generator)
    if device.type == "webgpu":  # Philox-4x32 in WGSL, from the generator's seed and offset
        from ..webgpu._random import PhiloxDraws

        return PhiloxDraws(generator)
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
    from ..webgpu._random import default_generator as webgpu_generator

    webgpu_generator().manual_seed(seed)
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
    generators; all seen GPUs by default; the webgpu device's with
    ``device_type="webgpu"``) when it exits, as ``torch.random.fork_rng``.

    Example::

        >>> with ember.ops.random.fork_rng():
        ...     _ = ember.rand(3)
    """
    if not enabled:
        yield
        return
    from .. import cuda

    if device_type == "webgpu":
        from ..webgpu._random import default_generator as webgpu_generator

        gens = [default_generator, webgpu_generator()]
    else:
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
    elif device.type == "webgpu":
        check_webgpu_dtype(dtype)
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
    elif device.type == "webgpu":
        check_webgpu_dtype(dtype)
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


_normal_combine_op.defbatch(batching.pointwise)


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


_bernoulli_combine_op.defbatch(batching.same_shape)


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
    if device.type == "webgpu":  # one kernel for a number p (the device has no float64)
        return draws.bernoulli(p_array, shape, dtype.np)
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


_poisson_combine_op.defbatch(batching.same_shape)


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
        wide = np.float32 if device.type == "webgpu" else np.float64  # (webgpu: no f64)
        rates = input._data.astype(wide)
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


# defined after everything here, which it imports
from ._random_inplace import (  # noqa: E402,F401  (moved to _random_inplace.py; importers use this path)
    _shape,
)
