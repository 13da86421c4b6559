"""``nn.utils.parametrizations``: weight_norm, spectral_norm and orthogonal as parametrizations.

Each registers a small module with :func:`~ember.nn.utils.parametrize.register_parametrization`,
so the state-dict keys are torch's (``parametrizations.weight.original0``/``original1`` for weight
norm, ``parametrizations.weight.original`` plus ``parametrizations.weight.0._u``/``_v`` for
spectral norm, ``parametrizations.weight.original`` (and ``.0.base``) for orthogonal).
"""

from __future__ import annotations

from enum import Enum, auto

from ... import _dtype as dt
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...linalg import householder_product, matrix_exp, qr, solve, vector_norm
from ...ops.creation import eye, zeros_like
from ...ops.random import randn
from ...ops.shape import cat
from .._functional.distance import normalize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---------------------------------------------------------------- weight norm


def _norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dim but ``dim`` (kept, others size 1); ``dim=-1``: the
    norm of the whole tensor, as torch's ``norm_except_dim``."""
    if dim == -1:
        return vector_norm(v)
    dim = dim + v.ndim if dim < 0 else dim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return vector_norm(v, 2, dim=others, keepdim=True)


def _weight_norm(v, g, dim):
    """``v * (g / ||v||)`` with the norm taken over every dim but ``dim``."""
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def _weight_norm_compat_hook(name, dim):
    """Load state dicts written by the legacy ``weight_norm`` (``weight_g``/``weight_v``)."""

    def hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
             unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)
    return hook


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (magnitude ``original0``, direction
    ``original1``; the norm over every dim but ``dim``, over all of them for ``dim=None``).

    Example::

        >>> m = weight_norm(ember.nn.Linear(20, 40), name="weight")
        >>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
        (ember.Size([40, 1]), ember.Size([40, 20]))
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    module.register_load_state_dict_pre_hook(_weight_norm_compat_hook(name, dim))
    return module


# ---------------------------------------------------------------- spectral norm


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with grad_mode.no_grad():
            for _ in range(n_power_iterations):
                normalize(weight_mat.mv(self._v), dim=0, eps=self.eps, out=self._u)
                normalize(weight_mat.mH.mv(self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration (one step per
    forward in training mode, vectors kept in the ``_u``/``_v`` buffers).

    ``dim`` (default 0, 1 for transposed convolutions) is the output dimension.

    Example::

        >>> snm = spectral_norm(ember.nn.Linear(20, 40))
        >>> snm.parametrizations.weight[0]._u.shape
        ember.Size([40])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---------------------------------------------------------------- orthogonal


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _is_orthogonal(q):
    n, k = q.shape[-2], q.shape[-1]
    ident = eye(k, dtype=q.dtype, device=q.device)
    eps = 10.0 * n * dt.finfo(q.dtype).eps
    return bool(((q.mH @ q) - ident).abs().le(eps).all())


def _make_orthogonal(a):
    """The Q of ``a``'s QR decomposition with R's diagonal made positive (unique, as torch's
    geqrf + householder_product + sign fix)."""
    q, r = qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    base: Tensor

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], dim=-1)
            a = x - x.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = matrix_exp(a)
            else:
                ident = eye(n, dtype=a.dtype, device=a.device)
                q = solve(ident - 0.5 * a, ident + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).detach().int().unsqueeze(-2)
        if "base" in self._buffers:
            q = self.base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q):
        with grad_mode.no_grad():
            if q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {q.shape}.")
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            if n < k:
                q = q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations when "
                                              "use_trivialization=False.")
                raise NotImplementedError("assigning to the householder parametrization with "
                                          "use_trivialization=False needs geqrf, which ember "
                                          "does not have")
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:
                extra = randn(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype,
                              device=q.device)
                q = _make_orthogonal(cat([q, extra], dim=-1))
            self.base = q
            neg_id = zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal/unitary.

    ``orthogonal_map``: ``"matrix_exp"`` (default for square or complex), ``"cayley"`` or
    ``"householder"`` (default otherwise). With ``use_trivialization`` the map is applied on top
    of a ``base`` buffer, and the initial value is the orthogonalised original weight.

    Example::

        >>> m = orthogonal(ember.nn.Linear(5, 5))
        >>> bool(ember.allclose(m.weight @ m.weight.T, ember.eye(5), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1]
                          or weight.is_complex() else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
