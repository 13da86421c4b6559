"""nn.functional: distances and similarities (pairwise_distance, cosine_similarity, pdist,
normalize).

All are composites of ember ops (``linalg.vector_norm`` and pointwise ops), so gradients and
double backward follow from the primitives. ``ember.cdist`` lives with the linear algebra ops.
"""

from __future__ import annotations

from ... import _dtype as dt
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...ops._operands import broadcast_shapes, wrap_dim
from ...ops._registry import _short_name, autocast_policy, write_out
from ...ops.creation import triu_indices
from ...ops.linalg import linalg_vector_norm

__all__ = ["pairwise_distance", "cosine_similarity", "pdist", "normalize"]


def _check_tensor(x, name, arg, position):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(x).__name__}")


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm distance between ``x1`` and ``x2`` along the last dim: ``||x1 - x2 + eps||_p``.

    Example::

        >>> F.pairwise_distance(ember.tensor([[0., 0.]]), ember.tensor([[3., 4.]]), eps=0.0)
        tensor([5.])
    """
    _check_tensor(x1, "pairwise_distance", "x1", 1)
    _check_tensor(x2, "pairwise_distance", "x2", 2)
    dim = max(x1.ndim, x2.ndim) - 1
    return linalg_vector_norm(x1 - x2 + eps, p, dim, keepdim)


@autocast_policy(cuda="fp32")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast).

    Each input is divided by its norm clamped below at ``eps`` before the dot product, as in
    torch 2.x (the clamp does not take part in the gradient).

    Example::

        >>> F.cosine_similarity(ember.tensor([[1., 0.]]), ember.tensor([[1., 1.]]))
        tensor([0.7071])
    """
    _check_tensor(x1, "cosine_similarity", "x1", 1)
    _check_tensor(x2, "cosine_similarity", "x2", 2)
    common = dt.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{_short_name(common)}")
    if x1.dtype is not common:
        x1 = x1.to(common)
    if x2.dtype is not common:
        x2 = x2.to(common)
    shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    if tuple(x1.shape) != shape:
        x1 = x1.expand(shape)
    if tuple(x2.shape) != shape:
        x2 = x2.expand(shape)
    dim = wrap_dim(dim, len(shape))
    n1 = linalg_vector_norm(x1, 2, dim, True).clone()
    n2 = linalg_vector_norm(x2, 2, dim, True).clone()
    with grad_mode.no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@autocast_policy(cuda="fp32")
def pdist(input, p=2):
    """The p-norm distances between all pairs of rows of ``input`` (N, M): the upper triangle
    of the distance matrix, flattened, ``N * (N - 1) / 2`` values.

    Example::

        >>> F.pdist(ember.tensor([[0., 0.], [3., 4.], [6., 8.]]))
        tensor([ 5., 10.,  5.])
    """
    _check_tensor(input, "pdist", "input", 1)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    rows, cols = triu_indices(n, n, 1, device=input.device)
    diff = input.index_select(0, rows) - input.index_select(0, cols)
    return linalg_vector_norm(diff, p, 1)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input`` divided by its p-norm along ``dim`` (the norm clamped below at ``eps``).

    Example::

        >>> F.normalize(ember.tensor([[3., 4.]]))
        tensor([[0.6000, 0.8000]])
    """
    _check_tensor(input, "normalize", "input", 1)
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    return write_out(input / denom, out, "div")
