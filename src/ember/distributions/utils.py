"""Helpers shared by the distributions: broadcasting parameters, probabilities <-> logits."""

from __future__ import annotations

import numbers

import ember

__all__ = ["broadcast_all", "probs_to_logits", "logits_to_probs", "clamp_probs",
           "lazy_property", "sum_rightmost", "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values):
    """Broadcast numbers and tensors to one shape (numbers take the first tensor's dtype and
    device, or the default dtype when all are numbers), as ``torch.distributions.utils``.

    Example::

        >>> a, b = broadcast_all(ember.zeros(2), 1.0)
        >>> b
        tensor([1., 1.])
    """
    ref = None
    for v in values:
        if isinstance(v, ember.Tensor):
            ref = v if ref is None else ref
        elif not isinstance(v, numbers.Number):
            raise ValueError("Input arguments must all be instances of numbers.Number, "
                             "ember.Tensor or objects implementing __torch_function__.")
    if ref is None:
        dtype = ember.get_default_dtype()
        return tuple(ember.tensor(float(v), dtype=dtype) for v in values)
    values = tuple(v if isinstance(v, ember.Tensor)
                   else ember.tensor(v, dtype=ref.dtype, device=ref.device) for v in values)
    return tuple(ember.broadcast_tensors(*values))


def clamp_probs(probs):
    """Clamp probabilities into ``[eps, 1 - eps]`` of their dtype.

    Example::

        >>> clamp_probs(ember.tensor([0.0, 1.0])).min() > 0
        tensor(True)
    """
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits of probabilities (log-odds when ``is_binary``), clamped away from 0 and 1.

    Example::

        >>> probs_to_logits(ember.tensor([0.5]), is_binary=True)
        tensor([0.])
    """
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid when ``is_binary``, else softmax over the last dim.

    Example::

        >>> logits_to_probs(ember.tensor([0.0]), is_binary=True)
        tensor([0.5000])
    """
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def sum_rightmost(value, dim):
    """Sum over the ``dim`` rightmost dims (a number passes through).

    Example::

        >>> sum_rightmost(ember.ones(2, 3), 1)
        tensor([3., 3.])
    """
    if dim == 0 or not isinstance(value, ember.Tensor):
        return value
    return value.sum(tuple(range(-dim, 0)))


class lazy_property:
    """A property computed on first access and then cached in the instance's ``__dict__``.

    Example::

        >>> class A:
        ...     @lazy_property
        ...     def x(self):
        ...         return 3
        >>> A().x
        3
    """

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with ember.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def _tril_positions(n, diag, device):
    """Flat (row-major) positions of the entries of an ``n x n`` matrix on or below the
    ``diag``-th diagonal."""
    rows = ember.arange(n, device=device).view(-1, 1)
    cols = ember.arange(n, device=device)
    return ember.nonzero((cols < rows + (diag + 1)).reshape(-1)).reshape(-1)


def tril_matrix_to_vec(mat, diag=0):
    """The entries on and below the ``diag``-th diagonal of (a batch of) square matrices, in
    row order.

    Example::

        >>> tril_matrix_to_vec(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([1., 3., 4.])
    """
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat.index_select(-1, _tril_positions(n, diag, mat.device))


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of :func:`tril_matrix_to_vec`: a lower triangular matrix (zeros above the
    ``diag``-th diagonal) filled in row order from the last dim of ``vec``.

    Example::

        >>> vec_to_tril_matrix(ember.tensor([1.0, 3.0, 4.0]))
        tensor([[1., 0.],
                [3., 4.]])
    """
    length = vec.shape[-1]
    # the positive root of n^2 + (1 + 2 diag) n - |diag| (diag + 1) - 2 length = 0
    b = 1 + 2 * diag
    n = (-b + (b * b + 8 * length + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > ember.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {length} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    positions = _tril_positions(n, diag, vec.device)
    # every off-triangle entry reads the one zero appended after the vector's entries
    source = ember.full((n * n,), length, dtype=ember.long, device=vec.device)
    source[positions] = ember.arange(length, device=vec.device)
    padded = ember.cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], -1)
    return padded.index_select(-1, source).reshape(tuple(vec.shape[:-1]) + (n, n))
