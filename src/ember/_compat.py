"""Top-level torch functions that programs call in passing: matmul precision, determinism,
the default device, ``typename``, ``compile``, and small tensor utilities (``cov``,
``corrcoef``, ``cartesian_prod``, ``combinations``, ``block_diag``, ``histogramdd``).

Example::

    >>> ember.set_float32_matmul_precision("high")
    >>> ember.get_float32_matmul_precision()
    'high'
"""

from __future__ import annotations

import builtins
import functools
import itertools
import math
import warnings

import numpy as np

from . import _dtype as dt
from . import return_types as _return_types
from ._tensor import Tensor

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_default_device",
           "get_default_device", "typename", "compile", "cov", "corrcoef", "cartesian_prod",
           "combinations", "block_diag", "histogramdd"]

# ---------------------------------------------------------------- global switches

_matmul_precision = ["highest"]
_deterministic = [False, False]  # mode, warn_only


def set_float32_matmul_precision(precision):
    """Set the internal precision of float32 matrix products: ``'highest'`` (default),
    ``'high'`` or ``'medium'`` (TF32/bfloat16 passes on GPUs that have them).

    Kept and reported (also as ``ember.backends.cuda.matmul.allow_tf32``), with no effect on
    ember's kernels: NumPy's BLAS is always full float32, and CuPy's cuBLAS follows its own
    ``CUPY_TF32`` setting. An unknown name warns and changes nothing, as torch.

    Example::

        >>> ember.set_float32_matmul_precision("high")
    """
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _matmul_precision[0] = precision


def get_float32_matmul_precision():
    """The float32 matmul precision set by :func:`set_float32_matmul_precision`.

    Example::

        >>> ember.get_float32_matmul_precision()
        'highest'
    """
    return _matmul_precision[0]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic algorithms (``mode``: a bool), as torch. ember's kernels are
    deterministic already (NumPy on the CPU; on the GPU CuPy's scatter-adds use atomics,
    which this flag does not change), so the flag is kept and reported only.

    Example::

        >>> ember.use_deterministic_algorithms(True)
        >>> ember.are_deterministic_algorithms_enabled()
        True
    """
    if type(mode) is not bool:
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if type(warn_only) is not bool:
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _deterministic[:] = [mode, warn_only]


def are_deterministic_algorithms_enabled():
    """Whether :func:`use_deterministic_algorithms` was turned on."""
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled():
    """Whether deterministic mode only warns (``warn_only=True``)."""
    return _deterministic[1]


def set_default_device(device):
    """Make factories (``zeros``, ``randn``, ``tensor``, ...) create tensors on ``device``
    when they are given none (``None`` resets to the CPU).

    Example::

        >>> ember.set_default_device("meta")
        >>> ember.zeros(2).device
        device(type='meta')
        >>> ember.set_default_device(None)
    """
    from . import _device

    _device.DEFAULT[0] = _device.CPU if device is None else _device.canonical(device)


def get_default_device():
    """The device factories use when given none (see :func:`set_default_device`).

    Example::

        >>> ember.get_default_device()
        device(type='cpu')
    """
    from . import _device

    return _device.DEFAULT[0]


def typename(obj):
    """The type name of ``obj``: a tensor's legacy type string (``'torch.FloatTensor'``, as
    ``Tensor.type()``), otherwise the object's qualified class name.

    Example::

        >>> ember.typename(ember.zeros(2))
        'torch.FloatTensor'
        >>> ember.typename(1)
        'int'
    """
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


# ---------------------------------------------------------------- compile


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """torch.compile's signature, running ``model`` eagerly: ember compiles nothing yet.

    Returns ``model`` itself for an :class:`ember.nn.Module` (so its attributes and
    ``state_dict`` stay as they are) and a wrapper that calls the function for anything
    else; works as a decorator with or without arguments. ``mode`` and ``options`` are
    checked as torch checks them (not both).

    Example::

        >>> @ember.compile
        ... def f(x):
        ...     return x * 2
        >>> f(ember.ones(2))
        tensor([2., 2.])
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable)
        return decorate
    if not callable(model):
        raise RuntimeError("torch.compile: expected a callable, got "
                           f"{type(model).__name__}")
    from .nn import Module

    if isinstance(model, Module):
        return model

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return model(*args, **kwargs)
    compiled._torchdynamo_orig_callable = model
    return compiled


# ---------------------------------------------------------------- small tensor utilities


def _check_tensor(value, name, arg="input"):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(value).__name__}")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in the
    columns; a 1-D input is one variable and gives a 0-dim result), with frequency weights
    ``fweights``, observation weights ``aweights`` and Bessel's ``correction``.

    Example::

        >>> ember.cov(ember.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    _check_tensor(input, "cov")
    if type(correction) is not int:
        raise TypeError(f"cov(): argument 'correction' must be int, not "
                        f"{type(correction).__name__}")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(dt.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", n_obs)
        if fweights.is_floating_point() or fweights.is_complex() or fweights.dtype is dt.bool:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                               f"fweights with {_scalar_name(fweights)} dtype")
        if bool((fweights < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", n_obs)
        if not aweights.is_floating_point():
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {_scalar_name(aweights)} dtype")
        if bool((aweights < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        w_sum = n_obs
        norm_factor = n_obs - correction
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm_factor = w_sum
        elif aweights is None:
            norm_factor = w_sum - correction
        else:
            norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    if bool(norm_factor <= 0) if isinstance(norm_factor, Tensor) else norm_factor <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = norm_factor * 0 if isinstance(norm_factor, Tensor) else 0
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xm.matmul(xw.t().conj())
    if isinstance(norm_factor, Tensor):
        c = c / norm_factor.to(c.dtype if not c.is_complex() else c.real.dtype)
    else:
        c = c / norm_factor
    return c.squeeze()


def _check_weights(weights, name, n_obs):
    if not isinstance(weights, Tensor):
        raise TypeError(f"cov(): argument '{name}' must be Tensor, not "
                        f"{type(weights).__name__}")
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {weights.ndim} dimensions")
    if weights.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {weights.numel()} != {n_obs}")


def _scalar_name(t):
    return t.type().split(".")[-1].replace("Tensor", "")


def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input``
    (``cov`` normalised by the standard deviations, clipped to [-1, 1]).

    Example::

        >>> ember.corrcoef(ember.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    _check_tensor(input, "corrcoef")
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but "
                           f"got an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    stddev = (d.real if c.is_complex() else d).sqrt()
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    if c.is_complex():
        from .ops.creation import complex as complex_

        return complex_(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors, one row per combination (``itertools.product``
    order); one tensor is returned as it is.

    Example::

        >>> ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if len(tensors) == 0:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        _check_tensor(t, "cartesian_prod", "tensors")
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    from .ops.shape import meshgrid, stack

    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of a 1-D tensor, one per row
    (``itertools.combinations`` order; ``with_replacement``: as
    ``itertools.combinations_with_replacement``).

    Example::

        >>> ember.combinations(ember.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    _check_tensor(input, "combinations")
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if type(r) is not int:
        raise TypeError(f"combinations(): argument 'r' must be int, not {type(r).__name__}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    choose = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    flat = np.fromiter(itertools.chain.from_iterable(choose(range(input.shape[0]), r)),
                       dtype=np.int64)
    from ._tensor import tensor as _tensor

    index = _tensor(flat, device=input.device)
    return input.index_select(0, index).reshape(-1, r)


def block_diag(*tensors):
    """A block-diagonal matrix from 0-, 1- and 2-D tensors (a 1-D tensor is one row), in
    their promoted dtype.

    Example::

        >>> ember.block_diag(ember.tensor([[1, 2]]), ember.tensor(3))
        tensor([[1, 2, 0],
                [0, 0, 3]])
    """
    from .nn.functional import pad
    from .ops.creation import zeros
    from .ops.shape import cat

    if len(tensors) == 0:
        return zeros((1, 0))
    blocks = []
    result_dtype = None
    for i, t in enumerate(tensors):
        _check_tensor(t, "block_diag", "tensors")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
        result_dtype = t.dtype if result_dtype is None else \
            dt.promote_types(result_dtype, t.dtype)
    device = tensors[0].device
    for i, t in enumerate(tensors):
        if t.device != device:
            raise RuntimeError(f"torch.block_diag: input tensors must all be on the same "
                               f"device. Input 0 is on device {device} and input {i} is on "
                               f"device {t.device}.")
    total = builtins.sum(b.shape[1] for b in blocks)
    rows = []
    left = 0
    for b in blocks:
        width = b.shape[1]
        rows.append(pad(b.to(result_dtype), (left, total - left - width)))
        left += width
    return cat(rows, 0)


histogramdd_result = _return_types.histogramdd
_return_types.histogramdd = histogramdd_result


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """A D-dimensional histogram of the points in the rows of ``input`` (shape (..., D)):
    ``bins`` is an int (per dim), a list of ints, or a list of D 1-D edge tensors; ``range``
    gives ``[min0, max0, min1, max1, ...]``. Returns ``(hist, bin_edges)``; edges are in
    ``input``'s dtype, the last bin of each dim is closed. CPU only, not differentiable.

    Example::

        >>> ember.histogramdd(ember.tensor([[0., 0.], [1., 1.]]), bins=2).hist
        tensor([[1., 0.],
                [0., 1.]])
    """
    _check_tensor(input, "histogramdd")
    if not input.is_floating_point():
        raise NotImplementedError(f'"histogramdd" not implemented for '
                                  f"'{_scalar_name(input)}'")
    if input.ndim < 2:
        raise RuntimeError(f"torch.histogramdd: input tensor should have at least 2 dimensions, "
                           f"but got {input.ndim}")
    d = input.shape[-1]
    points = input.detach().reshape(-1, d).cpu().numpy()
    np_dtype = points.dtype
    if isinstance(bins, Tensor):
        bins = [bins]
    if isinstance(bins, int):
        bins = [bins] * d
    bins = list(bins)
    if len(bins) != d:
        raise RuntimeError(f"torch.histogramdd: expected {d} sequences of bin edges for each "
                           f"of the {d} input dimensions, but got {len(bins)} bin edge "
                           f"sequences")
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should "
                           f"have {2 * d} elements, but got {len(range)}")
    edges = []
    for i, b in enumerate(bins):
        if isinstance(b, Tensor):
            edges.append(b.detach().cpu().numpy().astype(np_dtype))
            continue
        if range is not None:
            lo, hi = float(range[2 * i]), float(range[2 * i + 1])
        elif points.shape[0]:
            lo, hi = float(points[:, i].min()), float(points[:, i].max())
        else:
            lo, hi = 0.0, 0.0
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: max must be larger than min, but got min "
                               f"{lo} max {hi}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        if b <= 0:
            raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {b} for "
                               f"dimension {i}")
        edges.append(np.linspace(np.asarray(lo, np_dtype), np.asarray(hi, np_dtype), b + 1,
                                 dtype=np_dtype))
    w = None if weight is None else weight.detach().reshape(-1).cpu().numpy()
    hist, _ = np.histogramdd(points.astype(np.float64),
                             bins=[e.astype(np.float64) for e in edges], weights=w)
    if density:
        widths = np.ix_(*[np.diff(e.astype(np.float64)) for e in edges])
        volume = functools.reduce(np.multiply, widths)
        total = hist.sum()
        hist = hist / (total * volume)
    from ._tensor import tensor as _tensor

    return histogramdd_result(
        _tensor(hist.astype(np_dtype), device=input.device),
        tuple(_tensor(e, device=input.device) for e in edges))


# ================================================================ torch.* names added for
# programs that use them in passing: constants, switches, in-place and functional aliases

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None

__all__ += ["pi", "e", "inf", "nan", "newaxis", "set_warn_always", "is_warn_always_enabled",
            "set_anomaly_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
            "set_flush_denormal", "get_device", "is_same_size", "is_signed", "is_inference",
            "is_nonzero", "detach"]

_warn_always = [False]


def set_warn_always(b):
    """Make warnings that torch gives once per process (``TORCH_WARN_ONCE``) show every time.

    ember's warnings go through Python's ``warnings`` module, whose filters decide how often
    they show; the flag is kept and reported.

    Example::

        >>> ember.set_warn_always(True)
        >>> ember.is_warn_always_enabled()
        True
    """
    if type(b) is not bool:
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always[0] = b


def is_warn_always_enabled():
    """Whether :func:`set_warn_always` is on.

    Example::

        >>> ember.is_warn_always_enabled()
        False
    """
    return _warn_always[0]


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection (see ``ember.autograd.detect_anomaly``) on or off for this
    thread, without a context.

    Example::

        >>> ember.set_anomaly_enabled(True); ember.is_anomaly_enabled()
        True
        >>> ember.set_anomaly_enabled(False)
    """
    from .autograd import anomaly_mode

    anomaly_mode.state.enabled = builtins.bool(enabled)
    anomaly_mode.state.check_nan = builtins.bool(check_nan)


def is_anomaly_enabled():
    """Whether anomaly detection is on.

    Example::

        >>> ember.is_anomaly_enabled()
        False
    """
    from .autograd import anomaly_mode

    return anomaly_mode.state.enabled


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection checks gradients for NaN.

    Example::

        >>> ember.is_anomaly_check_nan_enabled()
        True
    """
    from .autograd import anomaly_mode

    return anomaly_mode.state.check_nan


def set_flush_denormal(mode):
    """Ask the CPU to flush denormal floats to zero. NumPy offers no such switch, so ember
    leaves the FPU as it is and returns False ("not supported"), as torch does on CPUs
    without the feature.

    Example::

        >>> ember.set_flush_denormal(True)
        False
    """
    if type(mode) is not bool:
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def _require_tensor(value, name, arg="input", position=1):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


def get_device(input):
    """The CUDA ordinal of ``input``'s device, -1 on the CPU.

    Example::

        >>> ember.get_device(ember.zeros(2))
        -1
    """
    _require_tensor(input, "get_device", "self")
    return input.get_device()


def is_same_size(input, other):
    """Whether two tensors have the same shape.

    Example::

        >>> ember.is_same_size(ember.zeros(2, 3), ember.ones(2, 3))
        True
    """
    _require_tensor(input, "is_same_size")
    _require_tensor(other, "is_same_size", "other", 2)
    return input.shape == other.shape


def is_signed(input):
    """Whether ``input``'s dtype is signed (all but uint8 and bool).

    Example::

        >>> ember.is_signed(ember.zeros(2, dtype=ember.uint8))
        False
    """
    _require_tensor(input, "is_signed")
    return input.is_signed()


def is_inference(input):
    """Whether ``input`` is an inference tensor. ember does not mark the tensors made under
    ``inference_mode`` (they act as tensors made under ``no_grad``), so this is always False.

    Example::

        >>> ember.is_inference(ember.zeros(2))
        False
    """
    _require_tensor(input, "is_inference")
    return False


def is_nonzero(input):
    """The truth of a one-element tensor (``bool(input)``); torch's error for other sizes.

    Example::

        >>> ember.is_nonzero(ember.tensor([0.5]))
        True
    """
    _require_tensor(input, "is_nonzero")
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item())


def detach(input):
    """``input.detach()``: the same data, cut from the graph.

    Example::

        >>> ember.detach(ember.ones(2, requires_grad=True)).requires_grad
        False
    """
    _require_tensor(input, "detach")
    return input.detach()


Tensor.is_same_size = is_same_size
Tensor.is_nonzero = is_nonzero
Tensor.is_inference = is_inference


# ---------------------------------------------------------------- top-level in-place aliases

# torch.abs_(t) is t.abs_(): the in-place methods that torch also lists at the top level
_INPLACE_ALIASES = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_",
    "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_",
    "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "i0_",
    "index_put_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_",
    "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
    "gcd_", "lcm_", "ldexp_", "resize_as_", "conj_physical_")


def _inplace_alias(name):
    def alias(input, *args, **kwargs):
        _require_tensor(input, name)
        return getattr(input, name)(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"""``input.{name}(...)``: the in-place method ``Tensor.{name}``, called as a
    function (it changes ``input`` and returns it).

    Example (the pattern, shown with ``neg_``)::

        >>> t = ember.tensor([1., -2.])
        >>> ember.neg_(t) is t, t
        (True, tensor([-1.,  2.]))
    """
    return alias


for _name in _INPLACE_ALIASES:
    globals()[_name] = _inplace_alias(_name)
__all__ += list(_INPLACE_ALIASES)
del _name


# ---------------------------------------------------------------- top-level forms of nn ops
#
# torch lists many nn.functional operators at the top level with the signatures of its native
# operators, which differ from the functional ones: ``reduction`` is an int (0: none,
# 1: mean, 2: sum), ``dropout(input, p, train)`` has no defaults, ``batch_norm`` takes the
# weight before the running statistics, ``embedding`` the weight before the indices.

def _reduction_name(reduction):
    """torch's ``at::Reduction`` code as nn.functional's name (codes other than 1 and 2 reduce
    nothing, as in torch)."""
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def _F():
    from .nn import functional

    return functional


def _same_signature(name):
    """A top-level alias of ``nn.functional.<name>`` where both take the same arguments."""
    def alias(*args, **kwargs):
        return getattr(_F(), name)(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"""``ember.nn.functional.{name}``, as torch lists it at the top level
    (same arguments).

    Example (the pattern, shown with ``pixel_shuffle``)::

        >>> ember.pixel_shuffle(ember.zeros(1, 4, 2, 2), 2).shape
        ember.Size([1, 1, 4, 4])
    """
    return alias


_SAME_SIGNATURE = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                   "conv_transpose3d", "layer_norm", "group_norm", "adaptive_avg_pool1d",
                   "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "cosine_similarity",
                   "pairwise_distance", "pdist", "prelu", "hardshrink", "bilinear", "rms_norm")
for _name in _SAME_SIGNATURE:
    globals()[_name] = _same_signature(_name)
native_channel_shuffle = _same_signature("channel_shuffle")
native_channel_shuffle.__name__ = native_channel_shuffle.__qualname__ = "native_channel_shuffle"
__all__ += [*_SAME_SIGNATURE, "native_channel_shuffle"]
del _name


def selu(input):
    """SELU, element-wise (``nn.functional.selu``).

    Example::

        >>> ember.selu(ember.tensor([0.]))
        tensor([0.])
    """
    return _F().selu(input)


def selu_(input):
    """SELU in place.

    Example::

        >>> ember.selu_(ember.tensor([0.]))
        tensor([0.])
    """
    return _F().selu_(input)


def celu(input, alpha=1.0):
    """CELU, element-wise (``nn.functional.celu``).

    Example::

        >>> ember.celu(ember.tensor([1.]))
        tensor([1.])
    """
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    """CELU in place.

    Example::

        >>> ember.celu_(ember.tensor([1.]))
        tensor([1.])
    """
    return _F().celu_(input, alpha)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomized leaky ReLU (``nn.functional.rrelu``); outside training the slope is
    ``(lower + upper) / 2``.

    Example::

        >>> ember.rrelu(ember.tensor([-3.]), 0.25, 0.75)
        tensor([-1.5000])
    """
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomized leaky ReLU in place.

    Example::

        >>> ember.rrelu_(ember.tensor([-3.]), 0.25, 0.75)
        tensor([-1.5000])
    """
    return _F().rrelu_(input, lower, upper, training)


def threshold(input, threshold, value):
    """``value`` where ``input <= threshold``, else ``input``.

    Example::

        >>> ember.threshold(ember.tensor([0.5, 2.]), 1., -1.)
        tensor([-1.,  2.])
    """
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """:func:`threshold` in place.

    Example::

        >>> ember.threshold_(ember.tensor([0.5, 2.]), 1., -1.)
        tensor([-1.,  2.])
    """
    return _F().threshold_(input, threshold, value)


def _check_dropout(input, p, train, name):
    _require_tensor(input, name)
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p, train):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` when
    ``train`` (torch's top-level form: all three arguments required).

    Example::

        >>> ember.dropout(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_dropout(input, p, train, "dropout")
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    """:func:`dropout` in place.

    Example::

        >>> ember.dropout_(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_dropout(input, p, train, "dropout_")
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """Alpha dropout (keeps SELU's mean and variance) when ``train``.

    Example::

        >>> ember.alpha_dropout(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_dropout(input, p, train, "alpha_dropout")
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """:func:`alpha_dropout` in place.

    Example::

        >>> ember.alpha_dropout_(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_dropout(input, p, train, "alpha_dropout_")
    return _F().alpha_dropout(input, p, train, inplace=True)


def _feature_mask_shape(input):
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return (*input.shape[:2], *([1] * (input.ndim - 2)))


def feature_dropout(input, p, train):
    """Dropout of whole feature maps: each ``input[n, c]`` is zeroed with probability ``p``
    (the rest scaled by ``1 / (1 - p)``) when ``train``.

    Example::

        >>> ember.feature_dropout(ember.ones(1, 2, 2), 0.5, False)
        tensor([[[1., 1.],
                 [1., 1.]]])
    """
    _check_dropout(input, p, train, "feature_dropout")
    if not train or p == 0:
        return input.clone() if train else input
    keep = input.new_empty(_feature_mask_shape(input)).bernoulli_(1 - p)
    return input * keep / (1 - p) if p < 1 else input * keep


def feature_dropout_(input, p, train):
    """:func:`feature_dropout` in place.

    Example::

        >>> ember.feature_dropout_(ember.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    _check_dropout(input, p, train, "feature_dropout_")
    if not train or p == 0:
        return input
    return input.copy_(feature_dropout(input, p, train))


def feature_alpha_dropout(input, p, train):
    """Alpha dropout of whole feature maps (``nn.functional.feature_alpha_dropout``).

    Example::

        >>> ember.feature_alpha_dropout(ember.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    _check_dropout(input, p, train, "feature_alpha_dropout")
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """:func:`feature_alpha_dropout` in place.

    Example::

        >>> ember.feature_alpha_dropout_(ember.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    _check_dropout(input, p, train, "feature_alpha_dropout_")
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """Batch normalisation with torch's top-level argument order (weight and bias before the
    running statistics; all arguments required).

    Example::

        >>> ember.batch_norm(ember.tensor([[1.], [3.]]), None, None, None, None, True, 0.1,
        ...                  0., True)
        tensor([[-1.],
                [ 1.]])
    """
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """Instance normalisation with torch's top-level argument order (all required).

    Example::

        >>> ember.instance_norm(ember.tensor([[[1., 3.]]]), None, None, None, None, True, 0.1,
        ...                     0., True)
        tensor([[[-1.,  1.]]])
    """
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by ``indices`` (torch's top-level order: weight first;
    ``padding_idx=-1`` means none).

    Example::

        >>> ember.embedding(ember.eye(3), ember.tensor([2, 0]))
        tensor([[0., 0., 1.],
                [1., 0., 0.]])
    """
    pad = None if padding_idx == -1 else padding_idx
    return _F().embedding(indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq,
                          sparse=sparse)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale, in place and without recording, the rows of ``input`` named in ``indices``
    whose ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm`` (as ``embedding``'s
    ``max_norm`` does).

    Example::

        >>> w = ember.tensor([[3., 4.], [0.3, 0.4]])
        >>> ember.embedding_renorm_(w, ember.tensor([0, 1]), 1.0, 2.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    from .autograd.grad_mode import no_grad

    _require_tensor(input, "embedding_renorm_")
    with no_grad():
        rows = indices.reshape(-1).unique()
        picked = input.index_select(0, rows)
        norms = picked.norm(p=norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0).to(input.dtype)
        input.index_copy_(0, rows, picked * scale)
    return input


def _default_stride(stride, kernel_size):
    """torch's native pools take ``stride=[]`` (the default) to mean the kernel size."""
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        return None
    return stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-D max pooling (torch's top-level form: no ``return_indices``).

    Example::

        >>> ember.max_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2)
        tensor([[3., 2.]])
    """
    return _F().max_pool1d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-D max pooling (torch's top-level form: no ``return_indices``).

    Example::

        >>> ember.max_pool2d(ember.arange(4.).reshape(1, 2, 2), 2)
        tensor([[[3.]]])
    """
    return _F().max_pool2d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """3-D max pooling (torch's top-level form: no ``return_indices``).

    Example::

        >>> ember.max_pool3d(ember.arange(8.).reshape(1, 2, 2, 2), 2)
        tensor([[[[7.]]]])
    """
    return _F().max_pool3d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """1-D max pooling returning ``(values, indices)``.

    Example::

        >>> ember.max_pool1d_with_indices(ember.tensor([[1., 3., 2., 0.]]), 2)[1]
        tensor([[1, 2]])
    """
    return _F().max_pool1d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           dilation, ceil_mode, return_indices=True)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling.

    Example::

        >>> ember.avg_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2)
        tensor([[2., 1.]])
    """
    return _F().avg_pool1d(input, kernel_size, _default_stride(stride, kernel_size), padding,
                           ceil_mode, count_include_pad)


def adaptive_max_pool1d(input, output_size):
    """1-D adaptive max pooling returning ``(values, indices)`` (torch's top-level form).

    Example::

        >>> ember.adaptive_max_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2)[0]
        tensor([[3., 2.]])
    """
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


def constant_pad_nd(input, pad, value=0):
    """Pad the last dims of ``input`` with ``value`` (``pad`` as ``nn.functional.pad``'s;
    negative amounts crop).

    Example::

        >>> ember.constant_pad_nd(ember.tensor([1., 2.]), (1, 0), 9.)
        tensor([9., 1., 2.])
    """
    return _F().pad(input, pad, "constant", value)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """The general convolution behind ``conv1d``/``2d``/``3d`` and their transposes, chosen by
    the weight's rank and ``transposed``.

    Example::

        >>> ember.convolution(ember.ones(1, 1, 3), ember.ones(1, 1, 2), None, [1], [0], [1],
        ...                   False, [0], 1)
        tensor([[[2., 2.]]])
    """
    F = _F()
    spatial = weight.ndim - 2
    if spatial not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, but got "
                           f"{weight.ndim}-D")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[spatial - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def _reduced(loss, reduction):
    """Apply an int ``reduction`` to an element-wise loss."""
    name = _reduction_name(reduction)
    if name == "mean":
        return loss.mean()
    if name == "sum":
        return loss.sum()
    return loss


def kl_div(input, target, reduction=1, log_target=False):
    """The Kullback-Leibler divergence loss (``input`` holds log-probabilities); ``reduction``
    1 (mean) averages over all elements.

    Example::

        >>> p = ember.tensor([0.5, 0.5])
        >>> ember.kl_div(p.log(), p)
        tensor(0.)
    """
    return _reduced(_F().kl_div(input, target, reduction="none", log_target=log_target),
                    reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    """Binary cross-entropy on logits (``reduction``: 0 none, 1 mean, 2 sum).

    Example::

        >>> ember.binary_cross_entropy_with_logits(ember.tensor([0.]), ember.tensor([1.]))
        tensor(0.6931)
    """
    return _F().binary_cross_entropy_with_logits(input, target, weight,
                                                 reduction=_reduction_name(reduction),
                                                 pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """``nn.functional.cosine_embedding_loss`` with an int ``reduction``.

    Example::

        >>> ember.cosine_embedding_loss(ember.ones(1, 2), ember.ones(1, 2), ember.tensor([1]))
        tensor(0.)
    """
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction_name(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    """``nn.functional.hinge_embedding_loss`` with an int ``reduction``.

    Example::

        >>> ember.hinge_embedding_loss(ember.tensor([0.5]), ember.tensor([-1.]))
        tensor(0.5000)
    """
    return _F().hinge_embedding_loss(input, target, margin,
                                     reduction=_reduction_name(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """``nn.functional.margin_ranking_loss`` with an int ``reduction``.

    Example::

        >>> ember.margin_ranking_loss(ember.tensor([1.]), ember.tensor([2.]), ember.tensor([1.]))
        tensor(1.)
    """
    return _F().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction_name(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """``nn.functional.poisson_nll_loss`` with torch's top-level arguments (all required;
    ``reduction`` an int).

    Example::

        >>> ember.poisson_nll_loss(ember.tensor([0.]), ember.tensor([1.]), True, False, 1e-8, 1)
        tensor(1.)
    """
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction_name(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction=1):
    """``nn.functional.triplet_margin_loss`` with an int ``reduction``.

    Example::

        >>> a = ember.zeros(1, 2)
        >>> ember.triplet_margin_loss(a, a, a)
        tensor(1.)
    """
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction_name(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    """``nn.functional.ctc_loss`` with an int ``reduction``.

    Example::

        >>> lp = ember.zeros(1, 1, 2).log_softmax(2)
        >>> ember.ctc_loss(lp, ember.tensor([[1]]), [1], [1])
        tensor(0.6931)
    """
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         reduction=_reduction_name(reduction), zero_infinity=zero_infinity)


__all__ += ["selu", "selu_", "celu", "celu_", "rrelu", "rrelu_", "threshold", "threshold_",
            "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout",
            "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
            "batch_norm", "instance_norm", "embedding", "embedding_renorm_", "max_pool1d",
            "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
            "adaptive_max_pool1d", "constant_pad_nd", "convolution", "kl_div",
            "binary_cross_entropy_with_logits", "cosine_embedding_loss", "hinge_embedding_loss",
            "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss", "ctc_loss"]


# ---------------------------------------------------------------- Tensor methods torch has


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all indices equal) with ``fill_value`` in place; a tall 2-D
    matrix with ``wrap=True`` starts the diagonal again every ``cols + 1`` rows.

    Example::

        >>> ember.zeros(2, 3).fill_diagonal_(5)
        tensor([[5., 0., 0.],
                [0., 5., 0.]])
    """
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(self.shape, dtype=bool)
    np.fill_diagonal(mask, True, wrap=builtins.bool(wrap))
    from ._tensor import tensor

    return self.masked_fill_(tensor(mask, device=self.device), fill_value)


def _tril_(self, diagonal=0):
    """:func:`ember.tril` in place.

    Example::

        >>> ember.ones(2, 2).tril_()
        tensor([[1., 0.],
                [1., 1.]])
    """
    from .ops._registry import inplace
    from .ops.shape import tril

    return inplace(tril, self, diagonal)


def _triu_(self, diagonal=0):
    """:func:`ember.triu` in place.

    Example::

        >>> ember.ones(2, 2).triu_(1)
        tensor([[0., 1.],
                [0., 0.]])
    """
    from .ops._registry import inplace
    from .ops.shape import triu

    return inplace(triu, self, diagonal)


def _conj_physical_(self):
    """Conjugate this tensor's elements in place (a no-op for real tensors).

    Example::

        >>> ember.tensor([1+1j]).conj_physical_()
        tensor([1.-1.j])
    """
    from .ops._registry import inplace
    from .ops.pointwise import conj_physical

    return inplace(conj_physical, self)


def _cov_method(self, *, correction=1, fweights=None, aweights=None):
    """:func:`ember.cov` of this tensor.

    Example::

        >>> ember.tensor([[0., 1., 2.], [2., 1., 0.]]).cov()
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    return cov(self, correction=correction, fweights=fweights, aweights=aweights)


def _corrcoef_method(self):
    """:func:`ember.corrcoef` of this tensor.

    Example::

        >>> ember.tensor([[0., 1., 2.], [2., 1., 0.]]).corrcoef()
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    return corrcoef(self)


Tensor.fill_diagonal_ = _fill_diagonal_
Tensor.tril_ = _tril_
Tensor.triu_ = _triu_
Tensor.conj_physical_ = _conj_physical_
Tensor.cov = _cov_method
Tensor.corrcoef = _corrcoef_method


def set_default_tensor_type(t):
    """Make tensors default to the floating dtype of the legacy type ``t``
    (``ember.DoubleTensor`` or its name ``'torch.DoubleTensor'``); deprecated as in torch:
    use :func:`ember.set_default_dtype`.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.set_default_tensor_type(ember.DoubleTensor); ember.tensor([1.]).dtype
        ember.float64
        >>> ember.set_default_tensor_type(ember.FloatTensor)
    """
    from . import _tensor

    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        name = t.split(".")[-1]
        if name not in vars(_tensor) or not isinstance(vars(_tensor)[name],
                                                       _tensor._LegacyTensorType):
            raise AttributeError(f"module 'torch' has no attribute '{name}'")
        t = vars(_tensor)[name]
    if not isinstance(t, _tensor._LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dt.set_default_dtype(t.dtype)


def _prelu_method(self, weight):
    """:func:`ember.prelu` of this tensor.

    Example::

        >>> ember.tensor([-2., 2.]).prelu(ember.tensor([0.25]))
        tensor([-0.5000,  2.0000])
    """
    return _F().prelu(self, weight)


from ._tensor import contiguous_format as legacy_contiguous_format  # noqa: E402  (torch's alias)

Tensor.prelu = _prelu_method
__all__ += ["set_default_tensor_type", "legacy_contiguous_format"]


# ------------------------------------------------------------------ top-level leftovers
# (ember.cuda helper's section: device-generic Stream/Event, small torch top-level functions)


class Stream:
    """A device-generic stream (``torch.Stream``): on ``cuda`` an :class:`ember.cuda.Stream`,
    on ``cpu`` (and ``meta``) the one in-order queue, whose work is always done.

    Example::

        >>> ember.Stream().query()
        True
    """

    def __new__(cls, device=None, *, priority=0):
        from ._device import to_device

        target = to_device("cpu" if device is None else device)
        if target.type == "cuda":
            from . import cuda

            if not cuda.is_available():
                raise RuntimeError("PyTorch is not linked with support for cuda devices "
                                   "(ember needs CuPy and a GPU)")
            return cuda.Stream(target, priority=priority)
        stream = super().__new__(cls)
        stream.device = target
        stream.device_type, stream.device_index, stream.stream_id = target.type, -1, 0
        return stream

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait_event(self, event):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self, event=None):
        raise RuntimeError(f"{self.device_type} backend doesn't support events.")

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device == self.device

    def __hash__(self):
        return hash((self.device_type, self.stream_id))

    def __repr__(self):
        return (f"ember.Stream device_type={self.device_type}, device_index={self.device_index},"
                f" stream_id={self.stream_id}")


class Event:
    """A device-generic event (``torch.Event``): on ``cuda`` an :class:`ember.cuda.Event`; a CPU
    event is always reached but cannot be recorded (torch's CPU backend has no events).

    Example::

        >>> ember.Event().query()
        True
    """

    def __new__(cls, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        from ._device import to_device

        target = to_device("cpu" if device is None else device)
        if target.type == "cuda":
            from . import cuda

            if not cuda.is_available():
                raise RuntimeError("PyTorch is not linked with support for cuda devices "
                                   "(ember needs CuPy and a GPU)")
            with cuda.device(target):
                return cuda.Event(enable_timing, blocking, interprocess)
        event = super().__new__(cls)
        event.device, event.enable_timing = target, enable_timing
        return event

    def record(self, stream=None):
        raise RuntimeError(f"{self.device.type} backend doesn't support events.")

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def elapsed_time(self, end_event):
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise RuntimeError(f"{self.device.type} backend doesn't support events.")


def binomial(count, prob, generator=None):
    """Binomial counts: ``count`` trials with success probability ``prob``, element-wise.

    ember draws with its own sampler (not torch's numbers for a seed; see the migration notes).

    Example::

        >>> ember.binomial(ember.tensor([0., 5.]), ember.tensor([0.5, 1.]))
        tensor([0., 5.])
    """
    from .distributions import _ops

    if not (isinstance(count, Tensor) and isinstance(prob, Tensor)):
        raise TypeError("binomial(): argument 'count' and 'prob' must be Tensor")
    return _ops.binomial(*_broadcast_pair(count, prob))


def _broadcast_pair(a, b):
    from . import broadcast_tensors

    return broadcast_tensors(a, b)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """Deprecated (kept by torch for the JIT): ``linalg.vector_norm(input, 2, dim, keepdim)``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.frobenius_norm(ember.tensor([[3., 4.]]), dim=(1,))
        tensor([5.])
    """
    from . import linalg

    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning, stacklevel=2)
    return linalg.vector_norm(input, 2.0, dim, keepdim, out=out)


def _affine(x, weight, bias):
    from .nn import functional as F

    return F.linear(x, weight, bias)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One step of an Elman RNN: ``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Example::

        >>> w = ember.zeros(2, 3); ember.rnn_tanh_cell(ember.ones(1, 3), ember.zeros(1, 2), w,
        ...                                            ember.zeros(2, 2))
        tensor([[0., 0.]])
    """
    return (_affine(input, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One step of an Elman RNN with ReLU: ``relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Example::

        >>> w = ember.zeros(2, 3); ember.rnn_relu_cell(ember.ones(1, 3), ember.ones(1, 2), w,
        ...                                            ember.eye(2))
        tensor([[1., 1.]])
    """
    return (_affine(input, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).relu()


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step; ``hx`` is ``(h, c)``; returns ``(h', c')``. Gates in torch's order:
    input, forget, cell, output.

    Example::

        >>> z = ember.zeros(1, 2); h, c = ember.lstm_cell(ember.ones(1, 3), (z, z),
        ...     ember.zeros(8, 3), ember.zeros(8, 2)); c
        tensor([[0., 0.]])
    """
    h, c = hx
    gates = _affine(input, w_ih, b_ih) + _affine(h, w_hh, b_hh)
    in_gate, forget_gate, cell_gate, out_gate = gates.chunk(4, -1)
    c_next = forget_gate.sigmoid() * c + in_gate.sigmoid() * cell_gate.tanh()
    h_next = out_gate.sigmoid() * c_next.tanh()
    return h_next, c_next


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step; gates in torch's order: reset, update, new.

    Example::

        >>> ember.gru_cell(ember.ones(1, 3), ember.ones(1, 2), ember.zeros(6, 3),
        ...                ember.zeros(6, 2))
        tensor([[0.5000, 0.5000]])
    """
    x_reset, x_update, x_new = _affine(input, w_ih, b_ih).chunk(3, -1)
    h_reset, h_update, h_new = _affine(hx, w_hh, b_hh).chunk(3, -1)
    reset = (x_reset + h_reset).sigmoid()
    update = (x_update + h_update).sigmoid()
    new = (x_new + reset * h_new).tanh()
    return new + update * (hx - new)


_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`ember.nn.functional.grid_sample` with torch's integer codes: interpolation 0
    bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection.

    Example::

        >>> x = ember.arange(4.).view(1, 1, 2, 2)
        >>> ember.grid_sampler(x, ember.zeros(1, 1, 1, 2), 0, 0, False)
        tensor([[[[1.5000]]]])
    """
    from .nn import functional as F

    if interpolation_mode not in _GRID_MODES:
        raise RuntimeError(f"grid_sampler(): unknown interpolation mode {interpolation_mode}")
    if padding_mode not in _GRID_PADDINGS:
        raise RuntimeError(f"grid_sampler(): unknown padding mode {padding_mode}")
    return F.grid_sample(input, grid, _GRID_MODES[interpolation_mode],
                         _GRID_PADDINGS[padding_mode], align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` for 4-D inputs.

    Example::

        >>> x = ember.arange(4.).view(1, 1, 2, 2)
        >>> ember.grid_sampler_2d(x, ember.zeros(1, 1, 1, 2), 1, 0, True)
        tensor([[[[3.]]]])
    """
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def _warn_autocast_renamed(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def get_autocast_cpu_dtype():
    """Deprecated: ``get_autocast_dtype('cpu')``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.get_autocast_cpu_dtype()
        ember.bfloat16
    """
    from .amp import autocast_mode

    _warn_autocast_renamed("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return autocast_mode.get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """Deprecated: ``get_autocast_dtype('cuda')``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.get_autocast_gpu_dtype()
        ember.float16
    """
    from .amp import autocast_mode

    _warn_autocast_renamed("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return autocast_mode.get_autocast_dtype("cuda")


def set_autocast_cpu_dtype(dtype):
    """Deprecated: ``set_autocast_dtype('cpu', dtype)``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.set_autocast_cpu_dtype(ember.bfloat16)
    """
    from .amp import autocast_mode

    _warn_autocast_renamed("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    autocast_mode.set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    """Deprecated: ``set_autocast_dtype('cuda', dtype)``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.set_autocast_gpu_dtype(ember.float16)
    """
    from .amp import autocast_mode

    _warn_autocast_renamed("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    autocast_mode.set_autocast_dtype("cuda", dtype)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """torch's top-level ``embedding_bag``: :func:`ember.nn.functional.embedding_bag` with the
    weight first and ``mode`` as a code (0 sum, 1 mean, 2 max), returning ``(output,
    offset2bag, bag_size, max_indices)`` filled as torch's CPU kernel fills them.

    Example::

        >>> w = ember.arange(6.).reshape(3, 2)
        >>> ember.embedding_bag(w, ember.tensor([0, 1, 2]), ember.tensor([0, 1]), mode=1)[2]
        tensor([1, 2])
    """
    from .nn import functional as F
    from .nn._functional.embedding import _embedding_bag_bookkeeping

    if not isinstance(offsets, Tensor):
        raise TypeError(f"embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
                        f"{type(offsets).__name__}")
    if not isinstance(mode, int) or isinstance(mode, bool):
        raise TypeError(f"embedding_bag(): argument 'mode' (position 5) must be int, not "
                        f"{type(mode).__name__}")
    if mode not in _BAG_MODES:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    num_weights = weight.shape[0]
    if padding_idx is None:
        padding_idx = -1
    elif -num_weights <= padding_idx < num_weights:
        padding_idx %= num_weights
    else:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, "
                           f"-{num_weights} through {num_weights - 1}, but got {padding_idx}")
    flat = indices.reshape(-1)  # torch's kernel reads the indices flat, whatever their shape
    if per_sample_weights is not None:
        per_sample_weights = per_sample_weights.reshape(-1)
    name = _BAG_MODES[mode]
    output = F.embedding_bag(flat, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                             mode=name, sparse=sparse, per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset,
                             padding_idx=None if padding_idx < 0 else padding_idx)
    extras = _embedding_bag_bookkeeping(flat, weight, offsets, name, padding_idx,
                                        include_last_offset)
    return (output,) + extras


__all__ += ["Stream", "Event", "binomial", "frobenius_norm", "rnn_tanh_cell", "rnn_relu_cell",
            "lstm_cell", "gru_cell", "grid_sampler", "grid_sampler_2d", "get_autocast_cpu_dtype",
            "get_autocast_gpu_dtype", "set_autocast_cpu_dtype", "set_autocast_gpu_dtype",
            "embedding_bag"]
