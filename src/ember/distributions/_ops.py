"""Sampling primitives torch computes with its own samplers (gamma, Dirichlet, binomial) and
their implicit-reparameterisation gradients.

The draws come from a NumPy/CuPy generator seeded by one 63-bit word from ember's generator, so
``ember.manual_seed`` makes them reproducible (they are not torch's numbers: torch's gamma and
binomial samplers are its own). The gradients of a gamma/Dirichlet sample with respect to the
concentration are the implicit ones torch uses, ``dx/da = -(dF/da) / f``, with ``dF/da`` taken
by a central difference of the regularised incomplete gamma/beta function.
"""

from __future__ import annotations

import numpy as np

import ember

from .._device import META
from ..ops._registry import defop
from ..ops._vmap_rules import batching


def _special(xp):
    if xp is np:
        import scipy.special as sp
    else:  # pragma: no cover - GPU
        import cupyx.scipy.special as sp
    return sp


def _rng(xp, seed):
    if xp is np:
        return np.random.Generator(np.random.PCG64(seed))
    return xp.random.RandomState(seed)  # pragma: no cover - GPU


def _seed_word(device):
    if ember.device(device).type == "meta":
        return 0
    return int(ember.randint(0, 2 ** 62, (), device="cpu").item())


def _same(a, **params):
    return a.shape, a.dtype


@defop("_standard_gamma", meta=_same, save_inputs=True, save_output=True, kind="random")
def _standard_gamma_op(xp, alpha, seed=0):
    x = _rng(xp, seed).standard_gamma(alpha.astype(np.float64))
    x = xp.asarray(x).astype(alpha.dtype)
    tiny = np.finfo(x.dtype).tiny if x.dtype.kind == "f" else 1e-38
    return xp.maximum(x, xp.asarray(tiny, dtype=x.dtype))


_standard_gamma_op.opt_out("batch", "a random draw: vmap runs it element by element")
_standard_gamma_op.opt_out("onnx", "a random draw: ONNX's samplers cannot give ember's numbers")


@_standard_gamma_op.defderivative
def _(ctx, grad, **params):
    (alpha,) = ctx.inputs
    return (grad * _standard_gamma_grad_op(ctx.output, alpha),)


@defop("_standard_gamma_grad", meta=_same, save_inputs=False)
def _standard_gamma_grad_op(xp, x, alpha):
    """d x / d alpha of a standard gamma sample ``x`` at concentration ``alpha``."""
    sp = _special(xp)
    a = alpha.astype(np.float64)
    xd = x.astype(np.float64)
    h = 1e-5 * xp.maximum(a, 1e-3)
    h = xp.minimum(h, 0.5 * a)
    p = sp.gammainc(a, xd)
    lower = p < 0.5
    dp = xp.where(lower, sp.gammainc(a + h, xd) - sp.gammainc(a - h, xd),
                  sp.gammaincc(a - h, xd) - sp.gammaincc(a + h, xd)) / (2 * h)
    log_pdf = (a - 1) * xp.log(xd) - xd - sp.gammaln(a)
    return (-dp / xp.exp(log_pdf)).astype(x.dtype)


_standard_gamma_grad_op.opt_out("derivative", "torch does not differentiate it")
_standard_gamma_grad_op.defbatch(batching.same_shape)
_standard_gamma_grad_op.opt_out("onnx", "a sampler's gradient: exported models run inference")


def standard_gamma(alpha):
    """Standard gamma samples of concentration ``alpha`` (differentiable w.r.t. ``alpha``)."""
    if alpha.device.type == "meta":
        return ember.empty(alpha.shape, dtype=alpha.dtype, device="meta")
    return _standard_gamma_op(alpha, seed=_seed_word(alpha.device))


@defop("_dirichlet_grad", meta=_same, save_inputs=False)
def _dirichlet_grad_op(xp, x, alpha, total):
    """d x / d alpha of a Beta(alpha, total - alpha) sample ``x`` (the second parameter held
    fixed), divided by ``1 - x``."""
    sp = _special(xp)
    a = alpha.astype(np.float64)
    t = total.astype(np.float64)
    xd = x.astype(np.float64)
    b = t - a
    h = xp.minimum(1e-5 * xp.maximum(a, 1e-3), 0.5 * a)
    p = sp.betainc(a, b, xd)
    dp = xp.where(p < 0.5, sp.betainc(a + h, b, xd) - sp.betainc(a - h, b, xd),
                  sp.betaincc(a - h, b, xd) - sp.betaincc(a + h, b, xd)) / (2 * h)
    # torch's convention: the other components shrink in proportion, so the marginal's
    # derivative is divided by (1 - x) (the backward multiplies by (1 - x) again)
    log_pdf = (a - 1) * xp.log(xd) + b * xp.log1p(-xd) - sp.betaln(a, b)
    return (-dp / xp.exp(log_pdf)).astype(x.dtype)


_dirichlet_grad_op.opt_out("derivative", "torch does not differentiate it")
_dirichlet_grad_op.defbatch(batching.same_shape)
_dirichlet_grad_op.opt_out("onnx", "a sampler's gradient: exported models run inference")


@defop("_sample_dirichlet", meta=_same, save_inputs=True, save_output=True,
       kind="random")
def _sample_dirichlet_op(xp, alpha, seed=0):
    g = xp.asarray(_rng(xp, seed).standard_gamma(alpha.astype(np.float64)))
    total = g.sum(-1, keepdims=True)
    x = g / total
    x = x.astype(alpha.dtype)
    f = np.finfo(x.dtype)
    return xp.clip(x, f.tiny, 1 - f.eps)


_sample_dirichlet_op.opt_out("batch", "a random draw: vmap runs it element by element")
_sample_dirichlet_op.opt_out("onnx", "a random draw: ONNX's samplers cannot give ember's numbers")


@_sample_dirichlet_op.defderivative
def _(ctx, grad, **params):
    (alpha,) = ctx.inputs
    x = ctx.output
    total = alpha.sum(-1, True).expand_as(alpha)
    g = _dirichlet_grad_op(x, alpha, total)
    return (g * (grad - (x * grad).sum(-1, True)),)


def sample_dirichlet(alpha):
    """Dirichlet samples with concentration ``alpha`` (differentiable w.r.t. ``alpha``)."""
    if alpha.device.type == "meta":
        return ember.empty(alpha.shape, dtype=alpha.dtype, device="meta")
    return _sample_dirichlet_op(alpha, seed=_seed_word(alpha.device))


@defop("_binomial", meta=_same, save_inputs=False, kind="random")
def _binomial_op(xp, count, prob, seed=0):
    n = xp.rint(count).astype(np.int64)
    x = _rng(xp, seed).binomial(n, xp.clip(prob.astype(np.float64), 0.0, 1.0))
    return xp.asarray(x).astype(count.dtype)


_binomial_op.opt_out("derivative", "a random draw of counts has no gradient")
_binomial_op.opt_out("batch", "a random draw: vmap runs it element by element")
_binomial_op.opt_out("onnx", "a random draw: ONNX's samplers cannot give ember's numbers")


def binomial(count, prob):
    """Binomial samples (no gradient)."""
    if count.device.type == "meta" or count.device == META:
        return ember.empty(count.shape, dtype=count.dtype, device="meta")
    with ember.no_grad():
        return _binomial_op(count, prob, seed=_seed_word(count.device))


@defop("_gammainc", meta=lambda a, x: (np.broadcast_shapes(a.shape, x.shape), x.dtype))
def _gammainc_op(xp, a, x):
    """The regularised lower incomplete gamma function P(a, x) (torch.special.gammainc)."""
    out = _special(xp).gammainc(a.astype(np.float64), x.astype(np.float64))
    return xp.asarray(out).astype(x.dtype)


_gammainc_op.defbatch(batching.pointwise)
_gammainc_op.opt_out("onnx", "a special function: no ONNX operator computes it")


@_gammainc_op.defderivative
def _(ctx, grad):
    a, x = ctx.inputs
    # d/dx P(a, x) = x^(a-1) e^(-x) / Gamma(a); torch has no derivative w.r.t. a either
    dx = ember.exp(ember.xlogy(a - 1, x) - x - ember.lgamma(a))
    return (None, grad * dx)


def gammainc(a, x):
    """``P(a, x)``, differentiable w.r.t. ``x`` only (as torch)."""
    a, x = ember.broadcast_tensors(a, x)
    return _gammainc_op(a, x)
