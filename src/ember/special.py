"""ember.special: special functions, as ``torch.special``.

Functions that also live in the top-level namespace (``erf``, ``lgamma``, ``sigmoid``, ...) are
the same objects under torch.special's names. The rest (``erfcx``, ``i0e``, ``i1``, ``i1e``,
``ndtr``, ``ndtri``, ``log_ndtr``, ``xlog1py``, ``entr``, ``zeta``) are ops declared here with the
pointwise helpers: scipy.special kernels on the CPU (cupyx.scipy.special on CUDA), float16 and
bfloat16 computed in float32, derivatives written with ember ops.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype as dt
from .ops import pointwise as _pw
from .ops._registry import Op, write_out
from .ops.pointwise import _special

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "ndtr", "gammaln", "digamma", "psi",
           "polygamma", "multigammaln", "i0", "xlogy", "sinc", "round", "exp2", "expm1",
           "log1p", "softmax", "log_softmax", "logsumexp", "xlog1py", "zeta"]

expit = _pw.sigmoid
logit = _pw.logit
erf = _pw.erf
erfc = _pw.erfc
erfinv = _pw.erfinv
gammaln = _pw.lgamma
digamma = psi = _pw.digamma
polygamma = _pw.polygamma
i0 = _pw.i0
xlogy = _pw.xlogy
sinc = _pw.sinc
exp2 = _pw.exp2
expm1 = _pw.expm1
log1p = _pw.log1p

_SQRT_2PI = math.sqrt(2 * math.pi)


def _unary(name, kernel, derivative, *, deny="c", save="input", doc, example):
    return _pw.unary(name, kernel, derivative, deny=deny, save=save, doc=doc, example=example,
                     globs=globals(), methods=False)



def _tiny_safe(x):
    """``x`` with |x| <= eps replaced by eps, and the mask of the replaced places."""
    eps = dt.finfo(x.dtype).eps
    tiny = x.abs() <= eps
    return _pw.where(tiny, eps, x), tiny


def _i1_derivative(x, y, g):
    safe, tiny = _tiny_safe(x)
    return g * _pw.where(tiny, 0.5, safe.i0() - y / safe)


def _i1e_derivative(x, y, g):
    safe, tiny = _tiny_safe(x)
    return g * _pw.where(tiny, 0.5, i0e(safe) - y * (safe.sgn() + 1 / safe))


erfcx = _unary("erfcx", lambda xp, a: _special(xp).erfcx(a),
       lambda x, y, g: g * (2 * x * y - 2 / math.sqrt(math.pi)), deny="hc", save="both",
       doc="The scaled complementary error function ``exp(x ** 2) * erfc(x)``.",
       example="ember.special.erfcx(ember.tensor([0.]))\n        tensor([1.])")
i0e = _unary("i0e", lambda xp, a: _special(xp).i0e(a),
       lambda x, y, g: g * (i1e(x) - x.sgn() * y), save="both",
       doc="The exponentially scaled modified Bessel function of order 0: ``exp(-|x|) i0(x)``.",
       example="ember.special.i0e(ember.tensor([0.]))\n        tensor([1.])")
i1 = _unary("i1", lambda xp, a: _special(xp).i1(a), _i1_derivative, save="both",
       doc="The modified Bessel function of the first kind, order 1.",
       example="ember.special.i1(ember.tensor([0.]))\n        tensor([0.])")
i1e = _unary("i1e", lambda xp, a: _special(xp).i1e(a), _i1e_derivative, save="both",
       doc="The exponentially scaled modified Bessel function of order 1: ``exp(-|x|) i1(x)``.",
       example="ember.special.i1e(ember.tensor([0.]))\n        tensor([0.])")
def _ndtr_kernel(xp, a):
    if a.dtype not in _pw._LOW:
        return _special(xp).ndtr(a)
    # torch's reduced-float kernel rounds (1 + erf(x / sqrt 2)) * 0.5 step by step
    dtype, f32 = a.dtype, _pw._F32
    scaled = (a.astype(f32) * f32.type(math.sqrt(0.5))).astype(dtype).astype(f32)
    erf = _special(xp).erf(scaled).astype(dtype).astype(f32)
    return ((1 + erf).astype(dtype).astype(f32) * 0.5).astype(dtype)


_ndtr_op = _pw.unary_op("ndtr", _ndtr_kernel,
                        lambda x, y, g: g * (-0.5 * x * x).exp() / _SQRT_2PI, low=False)


def ndtr(input, *, out=None):
    """The standard normal cumulative distribution function.

    Example::

        >>> ember.special.ndtr(ember.tensor([0.]))
        tensor([0.5000])
    """
    x = _pw.unary_operand(input, "ndtr", "float", "c", cpu_name="erf_vml_cpu")
    return write_out(_ndtr_op(x), out, "ndtr")




def round(input, *, decimals=0, out=None):
    """Round to the nearest integer (or to ``decimals`` digits), halves to even; unlike
    ``ember.round``, integer inputs are refused, as in torch.special.

    Example::

        >>> ember.special.round(ember.tensor([0.5, 1.5]))
        tensor([0., 2.])
    """
    _pw.unary_operand(input, "round", "keep", "bic", cpu_name="round_vml_cpu")
    return _pw.round(input, decimals=decimals, out=out)


ndtri = _unary("ndtri", lambda xp, a: _special(xp).ndtri(a),
       lambda x, y, g: g * _SQRT_2PI * (0.5 * y * y).exp(), deny="hc", save="output",
       doc="The inverse of :func:`ndtr` (the standard normal quantile function).",
       example="ember.special.ndtri(ember.tensor([0.5]))\n        tensor([0.])")
log_ndtr = _unary("log_ndtr", lambda xp, a: _special(xp).log_ndtr(a),
       lambda x, y, g: g / _SQRT_2PI * (-(y + 0.5 * x * x)).exp(), deny="hc", save="both",
       doc="The log of :func:`ndtr`, accurate far in the lower tail.",
       example="ember.special.log_ndtr(ember.tensor([0.]))\n        tensor([-0.6931])")


def _entr_kernel(xp, a):
    with np.errstate(divide="ignore", invalid="ignore"):
        result = -a * xp.log(a)
    result = xp.where(a == 0, a.dtype.type(0), result)
    result = xp.where(a < 0, a.dtype.type(-np.inf), result)
    return xp.where(xp.isnan(a), a, result)


entr = _unary("entr", _entr_kernel, lambda x, y, g: g * -(1 + x.log()),
       doc="The elementwise entropy ``-x log x`` (0 at 0, -inf below 0).",
       example="ember.special.entr(ember.tensor([0., 0.5]))\n        tensor([0.0000, 0.3466])")


# ---------------------------------------------------------------- xlog1py, zeta


def _xlog1py_kernel(xp, a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        result = xp.where(a == 0, a.dtype.type(0), a * xp.log1p(b))
    return xp.where(xp.isnan(b), b, result)


def _xlog1py_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    grad_a = grad_b = None
    if need_a:
        grad_a = _pw.where((a == 0) & (b <= -1), 0.0, xlog1py(grad, b))
    if need_b:
        grad_b = grad * a / (b + 1)
    return grad_a, grad_b


def _zeta_derivative(ctx, grad):
    x, q = ctx.inputs
    if ctx.needs_input_grad[0]:
        raise RuntimeError("the derivative for 'zeta' is not implemented.")
    return None, grad * -x * zeta(x + 1.0, q)


def _binary(name, kernel, derivative, *, deny, doc, example):
    op = Op(name, _pw._low_precision(kernel), meta=_pw._same_shape_meta)
    op.defderivative(derivative)

    def fn(input, other, *, out=None):
        if not isinstance(input, _pw.Tensor) and not isinstance(other, _pw.Tensor):
            _pw._check_tensor(input, name)
        dtype = dt.result_type(input, other)
        if dtype.category <= dt._INT:
            dtype = dt.get_default_dtype()
        _pw._check_dtype(f"{name}_cpu", dtype, deny)
        a, b = _pw.binary_operands(input, other, dtype=dtype)
        return write_out(op(a, b), out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{doc}

    Example::

        >>> {example}
    """
    fn.op = op
    return fn


xlog1py = _binary("xlog1py", _xlog1py_kernel, _xlog1py_derivative, deny="c",
                  doc="``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is "
                      "NaN).",
                  example="ember.special.xlog1py(ember.tensor([0., 2.]), ember.tensor([-1., 0.]))"
                          "\n        tensor([0., 0.])")
zeta = _binary("zeta", lambda xp, a, b: _special(xp).zeta(a, b), _zeta_derivative, deny="hc",
               doc="The Hurwitz zeta function ``sum_k (k + other) ** -input``.",
               example="ember.special.zeta(ember.tensor([2.]), 1.)\n        tensor([1.6449])")


# ---------------------------------------------------------------- composites


def multigammaln(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension ``p`` (``ember.mvlgamma``).

    Example::

        >>> ember.special.multigammaln(ember.tensor([2.5]), 2)
        tensor([1.2347])
    """
    return _pw.mvlgamma(input, p, out=out)


def softmax(input, dim, *, dtype=None):
    """``exp(x) / sum(exp(x), dim)``, computed stably; ``dtype`` casts the input first.

    Example::

        >>> ember.special.softmax(ember.tensor([0., 0.]), 0)
        tensor([0.5000, 0.5000])
    """
    from .nn import functional

    return functional.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """``log(softmax(x, dim))``, computed stably; ``dtype`` casts the input first.

    Example::

        >>> ember.special.log_softmax(ember.tensor([0., 0.]), 0)
        tensor([-0.6931, -0.6931])
    """
    from .nn import functional

    return functional.log_softmax(input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input), dim))``, computed without overflow (``ember.logsumexp``).

    Example::

        >>> ember.special.logsumexp(ember.tensor([0., 0.]), 0)
        tensor(0.6931)
    """
    from .ops.reduce import logsumexp as _logsumexp

    return _logsumexp(input, dim, keepdim, out=out)

