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


histogramdd_result = _return_types._make("histogramdd", ["hist", "bin_edges"])
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
