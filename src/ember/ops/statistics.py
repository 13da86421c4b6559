"""Statistics over the observations of a tensor: ``cov``, ``corrcoef`` (and their Tensor
methods) and ``histogramdd``.

Example::

    >>> ember.cov(ember.tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _dtype as dt
from .. import return_types as _return_types
from .._tensor import Tensor
from .._tensor_functions import require_tensor as _check_tensor
from ._methods import tensor_method
from ._signature import signature
from .reduce import bin_positions
from .reduce.histograms import _check_finite_range

__all__ = ["cov", "corrcoef", "histogramdd"]


@signature("cov(Tensor input, *, int correction=1, Tensor? fweights=None, "
           "Tensor? aweights=None) -> Tensor")
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in the
    columns; a 1-D input is one variable and gives a 0-dim result), with frequency weights
    ``fweights``, observation weights ``aweights`` and Bessel's ``correction``.

    Example::

        >>> ember.cov(ember.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if type(correction) is not int:
        raise TypeError(f"cov(): argument 'correction' must be int, not "
                        f"{type(correction).__name__}")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    if input.dtype is dt.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
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


@signature("corrcoef(Tensor input) -> Tensor")
def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input``
    (``cov`` normalised by the standard deviations, clipped to [-1, 1]).

    Example::

        >>> ember.corrcoef(ember.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
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
        from .creation import complex as complex_

        return complex_(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


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
        else:  # torch's range without data
            lo, hi = 0.0, 1.0
        _check_finite_range(lo, hi, f"torch.histogramdd: dimension {i}'s range")
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
    hist = _histogram_counts(points, edges, w)
    if density:
        widths = np.ix_(*[np.diff(e.astype(np.float64)) for e in edges])
        volume = functools.reduce(np.multiply, widths)
        total = hist.sum()
        hist = hist / (total * volume)
    from .._tensor import tensor as _tensor

    return histogramdd_result(
        _tensor(hist.astype(np_dtype), device=input.device),
        tuple(_tensor(e, device=input.device) for e in edges))


def _histogram_counts(points, edges, weight):
    """The (weighted) count of the rows of ``points`` in each cell of the grid of ``edges``
    (one edge array per column), binned per column as torch bins (see ``bin_positions``).

    Example::

        >>> _histogram_counts(np.array([[0.5, 2.]]), [np.array([0., 1.]), np.array([2., 3.])],
        ...                   None)
        array([[1.]])
    """
    shape = tuple(e.shape[0] - 1 for e in edges)
    kept = np.ones(points.shape[0], dtype=bool)
    columns = []
    for d, e in enumerate(edges):
        inside, bins = bin_positions(np, e, points[:, d])
        column = np.zeros(points.shape[0], np.int64)
        column[inside] = bins
        kept &= inside
        columns.append(column)
    cells = np.ravel_multi_index([c[kept] for c in columns], shape) if shape else \
        np.zeros(int(kept.sum()), np.int64)
    w = None if weight is None else weight[kept].astype(np.float64)
    return np.bincount(cells, weights=w, minlength=int(np.prod(shape))).reshape(shape) \
        .astype(np.float64)


@tensor_method("cov")
def _cov_method(self, *, correction=1, fweights=None, aweights=None):
    """:func:`ember.cov` of this tensor.

    Example::

        >>> ember.tensor([[0., 1., 2.], [2., 1., 0.]]).cov()
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    return cov(self, correction=correction, fweights=fweights, aweights=aweights)


@tensor_method("corrcoef")
def _corrcoef_method(self):
    """:func:`ember.corrcoef` of this tensor.

    Example::

        >>> ember.tensor([[0., 1., 2.], [2., 1., 0.]]).corrcoef()
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    return corrcoef(self)
