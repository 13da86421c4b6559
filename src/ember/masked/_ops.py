"""Masked reductions and normalizations: torch.masked's operations on strided tensors.

Each operation takes a boolean ``mask`` (broadcast to the input's shape; ``True`` keeps an
element) and works as if the masked-out elements were absent: they are replaced by the
operation's identity (0 for sums, 1 for products, -inf for maxima, ...) before the ordinary
reduction runs. Where every element of a slice is masked out, the identity is the result
(``sum`` gives 0, ``amax`` gives -inf), or ``nan`` for ``mean``, ``median``, ``var`` and
``std``, whose identity is undefined.

Example::

    >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
    >>> m = ember.tensor([[True, False, True], [False, False, False]])
    >>> ember.masked.sum(x, 1, mask=m)
    tensor([4., 0.])
    >>> ember.masked.amax(x, 1, mask=m)
    tensor([3., -inf])
"""

from __future__ import annotations

import math

import ember

from .maskedtensor.core import is_masked_tensor

_PROMOTED_TO_INT64 = ("uint8", "bool", "int8", "int16", "int32")

_REDUCTIONS = frozenset({"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median",
                         "norm", "var", "std", "logsumexp"})
_NORMALIZATIONS = frozenset({"softmax", "log_softmax", "softmin", "normalize", "cumsum",
                             "cumprod"})


# --------------------------------------------------------------------------- helpers

def _canonical_dim(dim, ndim):
    """``dim`` (None, an int or a sequence) as a sorted tuple of non-negative dims.

    ``None`` and ``()`` mean every dimension, as in torch.masked."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    rank = max(ndim, 1)
    dims = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d >= rank or d < -rank:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-rank}, {rank - 1}], but got {d})")
        if d % rank in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        dims.append(d % rank)
    return tuple(sorted(dims))


def _input_mask(input, *args, mask=None, **kwargs):
    """The boolean mask of ``input``'s shape that ``mask`` describes (broadcast, cast).

    Example::

        >>> ember.masked._input_mask(ember.zeros(2, 3), mask=ember.tensor([1, 0, 1]))
        tensor([[ True, False,  True],
                [ True, False,  True]])
    """
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = ember.broadcast_to(mask, tuple(input.shape))
    return mask.to(dtype=ember.bool)


def _output_mask(op, input, *args, **kwargs):
    """Which elements of ``op(input, *args, **kwargs)`` have at least one masked-in source.

    A reduction's output element is masked in when any element it reduces is; a
    normalization keeps the input's mask. Example::

        >>> m = ember.tensor([[True, False], [False, False]])
        >>> ember.masked._output_mask(ember.masked.sum, ember.zeros(2, 2), 1, mask=m)
        tensor([ True, False])
    """
    name = getattr(op, "__name__", None)
    if name in _REDUCTIONS:
        if name == "norm" and args:
            args = args[1:]  # drop ord
        dim = args[0] if args else kwargs.get("dim")
        inmask = _input_mask(input, mask=kwargs.get("mask"))
        dims = _canonical_dim(dim, input.ndim)
        keepdim = bool(kwargs.get("keepdim", False))
        return inmask.any(dim=dims, keepdim=keepdim) if dims else inmask
    if name in _NORMALIZATIONS:
        return _input_mask(input, mask=kwargs.get("mask"))
    raise ValueError(f"_output_mask expected masked operation (got {op!r})")


def _identity(name, input, ord=None):
    """The value that ``name``'s reduction ignores, as a 0-dim tensor of ``input``'s dtype."""
    dtype = input.dtype
    floating = dtype.is_floating_point
    if name in ("sum", "cumsum"):
        value = 0
    elif name in ("prod", "cumprod"):
        value = 1
    elif name in ("amax", "argmax", "logaddexp", "logsumexp"):
        value = -math.inf if floating or dtype.is_complex else ember.iinfo(dtype).min
    elif name in ("amin", "argmin"):
        value = math.inf if floating else ember.iinfo(dtype).max
    elif name == "norm":
        value = math.inf if ord == -math.inf else 0
    elif name == "median":
        return ember.tensor(math.nan, dtype=dtype if floating else ember.float32,
                            device=input.device)
    else:
        raise NotImplementedError(f"identity of {name} on {dtype} input")
    return ember.tensor(value, dtype=dtype, device=input.device)


def _fill_masked(name, input, mask, ord=None):
    """``input`` with its masked-out elements replaced by ``name``'s identity.

    A MaskedTensor input is filled where its own mask is False (``mask`` is not used for
    that, as in torch.masked; the operations still count elements by ``mask``)."""
    if is_masked_tensor(input):
        input, mask = input.get_data(), input.get_mask()
    if mask is None:
        return input
    return ember.where(_input_mask(input, mask=mask), input, _identity(name, input, ord))


def _sum_dtype(input, dtype):
    """torch.masked's accumulation dtype: small integers and bool accumulate in int64."""
    if dtype is not None:
        return dtype
    return ember.int64 if input.dtype.name in _PROMOTED_TO_INT64 else input.dtype


# --------------------------------------------------------------------------- reductions

def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Sum of the masked-in elements over ``dim`` (every dim when None); 0 where none is.

    Example::

        >>> ember.masked.sum(ember.tensor([1, 2, 3]), mask=ember.tensor([True, False, True]))
        tensor(4)
    """
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return ember.sum(_fill_masked("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Product of the masked-in elements over ``dim``; 1 where none is.

    Example::

        >>> ember.masked.prod(ember.tensor([2., 3., 4.]), mask=ember.tensor([True, True, False]))
        tensor(6.)
    """
    dtype = _sum_dtype(input, dtype)
    result = _fill_masked("prod", input, mask).to(dtype=dtype)
    for d in reversed(_canonical_dim(dim, input.ndim)):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    """Cumulative sum along ``dim`` in which masked-out elements count as 0.

    Example::

        >>> ember.masked.cumsum(ember.tensor([1., 2., 3.]), 0,
        ...                     mask=ember.tensor([True, False, True]))
        tensor([1., 1., 4.])
    """
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.cumsum(_fill_masked("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """Cumulative product along ``dim`` in which masked-out elements count as 1.

    Example::

        >>> ember.masked.cumprod(ember.tensor([2., 3., 4.]), 0,
        ...                      mask=ember.tensor([True, False, True]))
        tensor([2., 2., 8.])
    """
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.cumprod(_fill_masked("prod", input, mask), d, dtype=dtype).to(dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Largest masked-in element over ``dim``; -inf (or the dtype's minimum) where none is.

    Example::

        >>> ember.masked.amax(ember.tensor([1., 5., 3.]), mask=ember.tensor([True, False, True]))
        tensor(3.)
    """
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    return ember.amax(_fill_masked("amax", input, mask), dims, bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Smallest masked-in element over ``dim``; inf (or the dtype's maximum) where none is.

    Example::

        >>> ember.masked.amin(ember.tensor([1., 5., 3.]), mask=ember.tensor([False, True, True]))
        tensor(3.)
    """
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    return ember.amin(_fill_masked("amin", input, mask), dims, bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the largest masked-in element along ``dim`` (of the flattened input if None),
    in ``dtype`` (the input's by default, as torch.masked).

    Example::

        >>> ember.masked.argmax(ember.tensor([1., 5., 3.]), 0,
        ...                     mask=ember.tensor([True, False, True]))
        tensor(2.)
    """
    dtype = input.dtype if dtype is None else dtype
    return ember.argmax(_fill_masked("argmax", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the smallest masked-in element along ``dim`` (of the flattened input if None),
    in ``dtype`` (the input's by default, as torch.masked).

    Example::

        >>> ember.masked.argmin(ember.tensor([1., 5., 3.]), 0,
        ...                     mask=ember.tensor([False, True, True]))
        tensor(2.)
    """
    dtype = input.dtype if dtype is None else dtype
    return ember.argmin(_fill_masked("argmin", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def _count(input, dim, keepdim, mask):
    """How many masked-in elements each output element reduces."""
    if mask is None:
        ones = ember.ones(tuple(input.shape), dtype=ember.int64, device=input.device)
        return sum(ones, dim, keepdim=keepdim)
    return _input_mask(input, mask=mask).sum(dim=_canonical_dim(dim, input.ndim),
                                             keepdim=bool(keepdim))


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mean of the masked-in elements over ``dim``; nan where none is.

    Example::

        >>> ember.masked.mean(ember.tensor([1., 2., 6.]), mask=ember.tensor([True, False, True]))
        tensor(3.5000)
    """
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, dim, keepdim, mask)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Median of the masked-in elements along one ``dim``; nan where none is.

    Example::

        >>> ember.masked.median(ember.tensor([1., 9., 2., 4.]), 0,
        ...                     mask=ember.tensor([True, False, True, True]))
        tensor(2.)
    """
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=ember.float32)
    output = ember.nanmedian(_fill_masked("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if ember.isnan(output).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return output.to(dtype=dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp(x))) over the masked-in elements of ``dim``; -inf where none is.

    Example::

        >>> ember.masked.logsumexp(ember.tensor([0., 50., 0.]), 0,
        ...                        mask=ember.tensor([True, False, True]))
        tensor(0.6931)
    """
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    return ember.logsumexp(_fill_masked("logsumexp", input, mask), dims,
                           keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(exp(input) + exp(other)) where masked-out elements of either count as -inf.

    Example::

        >>> ember.masked.logaddexp(ember.tensor([0., 0.]), ember.tensor([0., 0.]),
        ...                        input_mask=ember.tensor([True, False]),
        ...                        other_mask=ember.tensor([True, False]))
        tensor([0.6931,   -inf])
    """
    dtype = input.dtype if dtype is None else dtype
    return ember.logaddexp(_fill_masked("logaddexp", input, input_mask),
                           _fill_masked("logaddexp", other, other_mask)).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Vector ``ord``-norm of the masked-in elements over ``dim``.

    Example::

        >>> ember.masked.norm(ember.tensor([3., 9., 4.]), 2.0,
        ...                   mask=ember.tensor([True, False, True]))
        tensor(5.)
    """
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    return ember.linalg.vector_norm(_fill_masked("norm", input, mask, ord), ord, dims,
                                    bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction is not None:
        raise RuntimeError("Only one of unbiased and correction may be given")
    if correction is None:
        correction = 0.0 if unbiased is False else 1.0
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = ember.float32
    compute_dtype = dtype if dtype.is_floating_point or dtype.is_complex else ember.float32
    count = _count(input, dim, True, mask)
    sample_mean = sum(input, dim, keepdim=True, dtype=dtype, mask=mask) / count
    x = input - sample_mean
    squares = x * x.conj() if x.is_complex() else x * x
    total = sum(squares, dim, keepdim=keepdim, dtype=compute_dtype, mask=mask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if correction != 0:
        real = compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype
        count = ember.clamp(count.to(real) - float(correction), min=0)
    output = (total / count).to(dtype=dtype)
    return ember.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Variance of the masked-in elements over ``dim`` (Bessel's correction by default).

    Example::

        >>> ember.masked.var(ember.tensor([1., 9., 3.]), mask=ember.tensor([True, False, True]))
        tensor(2.)
    """
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Standard deviation of the masked-in elements over ``dim``.

    Example::

        >>> ember.masked.std(ember.tensor([1., 9., 3.]), mask=ember.tensor([True, False, True]))
        tensor(1.4142)
    """
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


# --------------------------------------------------------------------------- normalizations

def softmax(input, dim, *, dtype=None, mask=None):
    """Softmax along ``dim`` over the masked-in elements; masked-out ones get 0.

    Example::

        >>> ember.masked.softmax(ember.tensor([1., 5., 1.]), 0,
        ...                      mask=ember.tensor([True, False, True]))
        tensor([0.5000, 0.0000, 0.5000])
    """
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.nn.functional.softmax(_fill_masked("amax", input, mask), d, dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """Log-softmax along ``dim`` over the masked-in elements; masked-out ones get -inf.

    Example::

        >>> ember.masked.log_softmax(ember.tensor([1., 5., 1.]), 0,
        ...                          mask=ember.tensor([True, False, True]))
        tensor([-0.6931,    -inf, -0.6931])
    """
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.nn.functional.log_softmax(_fill_masked("amax", input, mask), d, dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    """Softmin along ``dim`` over the masked-in elements; masked-out ones get 0.

    Example::

        >>> ember.masked.softmin(ember.tensor([1., -5., 1.]), 0,
        ...                      mask=ember.tensor([True, False, True]))
        tensor([0.5000, 0.0000, 0.5000])
    """
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return ember.nn.functional.softmin(_fill_masked("amin", input, mask), d, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """``input`` divided by its masked ``ord``-norm along ``dim`` (at least ``eps``).

    Masked-out elements become 0. Example::

        >>> ember.masked.normalize(ember.tensor([3., 7., 4.]), 2.0, 0,
        ...                        mask=ember.tensor([True, False, True]))
        tensor([0.6000, 0.0000, 0.8000])
    """
    dtype = input.dtype if dtype is None else dtype
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = ember.maximum(nrm, ember.full((), eps, dtype=nrm.dtype, device=nrm.device))
    return ember.divide(_fill_masked("sum", input, mask), denom)
