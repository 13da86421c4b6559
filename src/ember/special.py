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
from .autograd import forward_ad as _fwad
from .ops import pointwise as _pw
from .ops._fusion import COMPOSITE_KERNEL, SCIPY_KERNEL, decline
from .ops._methods import tensor_method as _tensor_method
from .ops._registry import Op, write_out
from .ops._signature import signature
from .ops._util import host_values
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


# the ONNX rule every op of this module declines
_NO_ONNX = {"onnx": "a special function: no ONNX operator computes it, none is composed here"}


def _unary(name, kernel, derivative, *, deny="c", save="input", doc, example):
    return _pw.unary(name, kernel, derivative, deny=deny, save=save, doc=doc, example=example,
                     namespace=globals(), methods=False, opt_outs=_NO_ONNX)



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
                        lambda x, y, g: g * (-0.5 * x * x).exp() / _SQRT_2PI, low=False,
                        opt_outs=_NO_ONNX)


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


def _zeta_derivative(ctx, grad):
    x, q = ctx.inputs
    if ctx.needs_input_grad[0]:
        raise RuntimeError("the derivative for 'zeta' is not implemented.")
    return None, grad * -x * zeta(x + 1.0, q)


# (neither is a Tensor method in torch)
xlog1py = _pw.declare_x_log(
    "xlog1py", "log1p", 1, namespace=globals(), methods=False, opt_outs=_NO_ONNX,
    doc="``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN).",
    example="ember.special.xlog1py(ember.tensor([0., 2.]), ember.tensor([-1., 0.]))\n"
            "        tensor([0., 0.])")
zeta = _pw.binary("zeta", lambda xp, a, b: _special(xp).zeta(a, b), _zeta_derivative,
                  promote="float", deny="hc", scalar_input=True, namespace=globals(),
                  methods=False, opt_outs=_NO_ONNX,
                  doc="The Hurwitz zeta function ``sum_k (k + other) ** -input``.",
                  example="ember.special.zeta(ember.tensor([2.]), 1.)\n        tensor([1.6449])")
# torch has no forward-mode formula for zeta in its first argument: the transposed derivative
# raises its NotImplementedError there (the element-wise rule would not), and serves the second
zeta.op.defjvp(_fwad.transposed_jvp(zeta.op))


# ---------------------------------------------------------------- composites


@signature("multigammaln(Tensor input, int p, *, Tensor? out=None) -> Tensor")
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



# ---------------------------------------------------------------- Bessel and Airy functions
#
# torch marks these as not differentiable: their outputs never require grad (no derivative
# is attached to the op). Integer and bool inputs compute in the default float dtype; half
# precision and complex inputs are refused, as torch's CPU kernels do.


def _spherical_j0_kernel(xp, a):
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = xp.sin(a) / a
    ratio = xp.where(a == 0, a.dtype.type(1), ratio)
    return xp.where(xp.isinf(a), a.dtype.type(0), ratio)  # sin(x)/x -> 0 as |x| -> inf


def _exponentially_scaled(fn_name):
    """``exp(|x|) * <fn_name>(x)`` in the input's own precision, as torch's kernels evaluate
    I0 and I1: float32 overflows to inf where ``exp`` does (near 88.7), as in torch."""
    def kernel(xp, a):
        scaled = getattr(_special(xp), fn_name)(a).astype(a.dtype, copy=False)
        with np.errstate(over="ignore", invalid="ignore"):
            return scaled * xp.exp(xp.abs(a))
    return kernel


def _undifferentiable(name, kernel, doc, example):
    op = _pw.unary_op(name, kernel, None, low=False, opt_outs=_NO_ONNX)
    op.opt_out("derivative", "torch does not differentiate it")

    def fn(input, *, out=None):
        x = _pw.unary_operand(input, name, "float", "hc")
        return write_out(op(x), out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{doc} Not differentiable, as in torch.

    Example::

        >>> {example}
    """
    fn.op = op
    __all__.append(name)
    return fn


def _scipy(fn_name):
    return lambda xp, a: getattr(_special(xp), fn_name)(a)


airy_ai = _undifferentiable(
    "airy_ai", lambda xp, a: _special(xp).airy(a)[0], "The Airy function Ai.",
    "ember.special.airy_ai(ember.tensor([0.]))\n        tensor([0.3550])")
bessel_j0 = _undifferentiable(
    "bessel_j0", _scipy("j0"), "The Bessel function of the first kind, order 0.",
    "ember.special.bessel_j0(ember.tensor([0.]))\n        tensor([1.])")
bessel_j1 = _undifferentiable(
    "bessel_j1", _scipy("j1"), "The Bessel function of the first kind, order 1.",
    "ember.special.bessel_j1(ember.tensor([0.]))\n        tensor([0.])")
bessel_y0 = _undifferentiable(
    "bessel_y0", _scipy("y0"), "The Bessel function of the second kind, order 0.",
    "ember.special.bessel_y0(ember.tensor([1.]))\n        tensor([0.0883])")
bessel_y1 = _undifferentiable(
    "bessel_y1", _scipy("y1"), "The Bessel function of the second kind, order 1.",
    "ember.special.bessel_y1(ember.tensor([1.]))\n        tensor([-0.7812])")
modified_bessel_i0 = _undifferentiable(
    "modified_bessel_i0", _exponentially_scaled("i0e"),
    "The modified Bessel function of the first kind, order 0.",
    "ember.special.modified_bessel_i0(ember.tensor([0.]))\n        tensor([1.])")
modified_bessel_i1 = _undifferentiable(
    "modified_bessel_i1", _exponentially_scaled("i1e"),
    "The modified Bessel function of the first kind, order 1.",
    "ember.special.modified_bessel_i1(ember.tensor([0.]))\n        tensor([0.])")
modified_bessel_k0 = _undifferentiable(
    "modified_bessel_k0", _scipy("k0"), "The modified Bessel function of the second kind, "
    "order 0.", "ember.special.modified_bessel_k0(ember.tensor([1.]))\n        "
    "tensor([0.4210])")
modified_bessel_k1 = _undifferentiable(
    "modified_bessel_k1", _scipy("k1"), "The modified Bessel function of the second kind, "
    "order 1.", "ember.special.modified_bessel_k1(ember.tensor([1.]))\n        "
    "tensor([0.6019])")
scaled_modified_bessel_k0 = _undifferentiable(
    "scaled_modified_bessel_k0", _scipy("k0e"), "``exp(x) * modified_bessel_k0(x)``.",
    "ember.special.scaled_modified_bessel_k0(ember.tensor([1.]))\n        tensor([1.1445])")
scaled_modified_bessel_k1 = _undifferentiable(
    "scaled_modified_bessel_k1", _scipy("k1e"), "``exp(x) * modified_bessel_k1(x)``.",
    "ember.special.scaled_modified_bessel_k1(ember.tensor([1.]))\n        tensor([1.6362])")
spherical_bessel_j0 = _undifferentiable(
    "spherical_bessel_j0", _spherical_j0_kernel, "The spherical Bessel function of the first "
    "kind, order 0: ``sin(x) / x``.",
    "ember.special.spherical_bessel_j0(ember.tensor([0.]))\n        tensor([1.])")


# ---------------------------------------------------------------- incomplete gamma functions


def _gamma_density(a, x):
    """``x ** (a - 1) * exp(-x) / Gamma(a)``: the derivative of igamma in ``x``."""
    return ((a - 1) * x.log() - x - a.lgamma()).exp()


def _igamma_derivative(name, sign):
    def derivative(ctx, grad):
        a, x = ctx.inputs
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        return None, sign * grad * _gamma_density(a, x)
    return derivative


def _incomplete_gamma(name, fn_name, sign):
    op = Op(name, _pw._low_precision(lambda xp, a, x: getattr(_special(xp), fn_name)(a, x)),
            meta=_pw._same_shape_meta, kind="pointwise-binary", opt_outs=_NO_ONNX)
    op.defderivative(_igamma_derivative(name, sign))

    def fn(input, other, *, out=None):
        _pw._check_tensor(input, name)
        _pw._check_tensor(other, name, "other", 2)
        dtype = dt.result_type(input, other)
        _pw._check_dtype(f"{name}_cpu", dtype, "bic")
        a, x = _pw.binary_operands(input, other, dtype=dtype)
        return write_out(op(a, x), out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.op = op
    return fn


_igamma = _incomplete_gamma("igamma", "gammainc", 1)
_igammac = _incomplete_gamma("igammac", "gammaincc", -1)
_igamma.__doc__ = """The regularised lower incomplete gamma function
    ``P(input, other) = gamma(input, other) / Gamma(input)``; differentiable in ``other`` only,
    as in torch.

    Example::

        >>> ember.special.gammainc(ember.tensor([1.]), ember.tensor([1.]))
        tensor([0.6321])
    """
_igammac.__doc__ = """The regularised upper incomplete gamma function ``1 - P(input, other)``;
    differentiable in ``other`` only, as in torch.

    Example::

        >>> ember.special.gammaincc(ember.tensor([1.]), ember.tensor([1.]))
        tensor([0.3679])
    """
gammainc = _igamma  # also ember.igamma
gammaincc = _igammac  # also ember.igammac
__all__ += ["gammainc", "gammaincc"]
_tensor_method(_igamma, "igamma")
_tensor_method(_pw._inplace_method(_igamma), "igamma_")
_tensor_method(_igammac, "igammac")
_tensor_method(_pw._inplace_method(_igammac), "igammac_")


# ---------------------------------------------------------------- orthogonal polynomials
#
# Each is evaluated as torch's kernels do: the degree is the truncated ``n`` (0 below zero or
# when not finite), closed forms at the ends of the interval, a trigonometric formula inside
# it for high degrees, and otherwise the three-term recurrence, run for all elements at once
# up to the largest degree and read off where each element's degree is reached.


def _degrees(xp, n):
    finite = xp.isfinite(n)
    return xp.where(finite, xp.trunc(xp.where(finite, n, 0)), -1)


def _recurrence(xp, x, degree, first, step):
    """``p_degree(x)`` from ``p_0 = 1``, ``p_1 = first`` and ``p_{k+1} = step(k, p_k,
    p_{k-1})``."""
    one = xp.ones_like(x)
    result = xp.where(degree == 0, one, first)
    top = int(host_values(xp, degree.max())[0]) if degree.size else 0
    previous, current = one, first
    for k in range(1, top):
        previous, current = current, step(k, current, previous)
        result = xp.where(degree == k + 1, current, result)
    return result


def _chebyshev_step(y):
    return lambda k, current, previous: (y + y) * current - previous


def _odd_sign(xp, degree, value):
    """``value`` for even degrees, ``-value`` for odd ones."""
    return xp.where(degree % 2 == 0, value, -value)


def _chebyshev(kind, threshold, shifted=False):
    """The kernel of the Chebyshev polynomial of the first (t), second (u), third (v) or
    fourth (w) kind, of ``2x - 1`` when ``shifted``."""
    def kernel(xp, x, n):
        x, n = xp.broadcast_arrays(x, n)
        degree = _degrees(xp, n)
        y = x + x - 1 if shifted else x
        first = {"t": y, "u": y + y, "v": y + y - 1, "w": y + y + 1}[kind]
        with np.errstate(all="ignore"):
            result = _recurrence(xp, y, degree, first, _chebyshev_step(y))
            theta = xp.arccos(y)
            inside = (xp.abs(y) < 1) & (degree > threshold)
            result = xp.where(inside, _chebyshev_inside(xp, kind, theta, degree, y), result)
        top = y == 1
        bottom = (x == 0) if shifted else (y == -1)
        ones = xp.ones_like(x)
        at_top = {"t": ones, "u": degree + 1, "v": ones, "w": degree + degree + 1}[kind]
        at_bottom = _odd_sign(xp, degree, {"t": ones, "u": degree + 1,
                                           "v": degree + degree + 1, "w": ones}[kind])
        result = xp.where(top, at_top, xp.where(bottom, at_bottom, result))
        return xp.where(degree < 0, xp.zeros_like(x), result).astype(x.dtype)
    return kernel


def _chebyshev_inside(xp, kind, theta, degree, y):
    """The trigonometric forms for ``|y| < 1`` (``y = cos theta``)."""
    if kind == "t":
        return xp.cos(degree * theta)
    if kind == "u":
        sin = xp.sin(theta)
        return xp.where(sin != 0, xp.sin((degree + 1) * theta) / sin,
                        (degree + 1) * xp.cos((degree + 1) * theta) / y)
    half = theta / 2
    if kind == "v":
        return xp.where(xp.sin(half) != 1, xp.cos((degree + 0.5) * theta) / xp.cos(half),
                        _odd_sign(xp, degree, degree + degree + 1))
    return xp.where(xp.cos(half) != 1, xp.sin((degree + 0.5) * theta) / xp.sin(half),
                    xp.where(y > 0, degree + degree + 1, _odd_sign(xp, degree, 1.0 + 0 * y)))


def _hermite_h(xp, x, n):
    x, n = xp.broadcast_arrays(x, n)
    degree = _degrees(xp, n)
    with np.errstate(all="ignore"):
        result = _recurrence(xp, x, degree, x + x,
                             lambda k, current, previous: (x + x) * current - (k + k) * previous)
    return xp.where(degree < 0, xp.zeros_like(x), result).astype(x.dtype)


def _hermite_he(xp, x, n):
    x, n = xp.broadcast_arrays(x, n)
    degree = _degrees(xp, n)
    with np.errstate(all="ignore"):
        result = _recurrence(xp, x, degree, x,
                             lambda k, current, previous: x * current - k * previous)
    return xp.where(degree < 0, xp.zeros_like(x), result).astype(x.dtype)


def _laguerre_l(xp, x, n):
    x, n = xp.broadcast_arrays(x, n)
    degree = _degrees(xp, n)

    def step(k, current, previous):
        return (((k + k) + (1 - x)) * current - k * previous) / (k + 1)

    with np.errstate(all="ignore"):
        result = _recurrence(xp, x, degree, 1 - x, step)
    result = xp.where(x == 0, xp.ones_like(x), result)
    return xp.where(degree < 0, xp.zeros_like(x), result).astype(x.dtype)


def _legendre_p(xp, x, n):
    x, n = xp.broadcast_arrays(x, n)
    degree = _degrees(xp, n)

    def step(k, current, previous):
        return ((k + k + 1) * x * current - k * previous) / (k + 1)

    with np.errstate(all="ignore"):
        result = _recurrence(xp, x, degree, x, step)
    ones = xp.ones_like(x)
    result = xp.where(x == 1, ones, xp.where(x == -1, _odd_sign(xp, degree, ones), result))
    return xp.where(degree < 0, xp.zeros_like(x), result).astype(x.dtype)


def _polynomial(name, kernel, doc, example):
    op = Op(name, kernel, meta=_pw._same_shape_meta, kind="pointwise-binary",
            opt_outs=_NO_ONNX)
    op.opt_out("derivative", "torch does not differentiate the orthogonal polynomials")

    def fn(input, n, *, out=None):
        if not isinstance(input, _pw.Tensor) and not isinstance(n, _pw.Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments - "
                            f"got ({type(input).__name__}, {type(n).__name__}), but expected "
                            "one of:\n * (Tensor x, Tensor n, *, Tensor out)\n * (Number x, "
                            "Tensor n, *, Tensor out)\n * (Tensor x, Number n, *, Tensor out)")
        dtype = dt.result_type(input, n)
        if dtype.category <= dt._INT:
            dtype = dt.get_default_dtype()
        _pw._check_dtype(f"{name}_cpu", dtype, "hc")
        x, degree = _pw.binary_operands(input, n, dtype=dtype)
        return write_out(op(x, degree), out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{doc} ``n`` is truncated to an integer degree (negative degrees give 0).
    Not differentiable, as in torch.

    Example::

        >>> {example}
    """
    fn.op = op
    __all__.append(name)
    return fn


_POLY_EXAMPLE = "ember.special.{0}(ember.tensor([0.5]), 2)\n        tensor([{1}])"
chebyshev_polynomial_t = _polynomial(
    "chebyshev_polynomial_t", _chebyshev("t", 6), "The Chebyshev polynomial of the first kind "
    "T_n.", _POLY_EXAMPLE.format("chebyshev_polynomial_t", "-0.5000"))
chebyshev_polynomial_u = _polynomial(
    "chebyshev_polynomial_u", _chebyshev("u", 8), "The Chebyshev polynomial of the second kind "
    "U_n.", _POLY_EXAMPLE.format("chebyshev_polynomial_u", "0."))
chebyshev_polynomial_v = _polynomial(
    "chebyshev_polynomial_v", _chebyshev("v", 8), "The Chebyshev polynomial of the third kind "
    "V_n.", _POLY_EXAMPLE.format("chebyshev_polynomial_v", "-1."))
chebyshev_polynomial_w = _polynomial(
    "chebyshev_polynomial_w", _chebyshev("w", 8), "The Chebyshev polynomial of the fourth kind "
    "W_n.", _POLY_EXAMPLE.format("chebyshev_polynomial_w", "1."))
shifted_chebyshev_polynomial_t = _polynomial(
    "shifted_chebyshev_polynomial_t", _chebyshev("t", 6, shifted=True),
    "The shifted Chebyshev polynomial of the first kind ``T_n(2x - 1)``.",
    _POLY_EXAMPLE.format("shifted_chebyshev_polynomial_t", "-1."))
shifted_chebyshev_polynomial_u = _polynomial(
    "shifted_chebyshev_polynomial_u", _chebyshev("u", 6, shifted=True),
    "The shifted Chebyshev polynomial of the second kind ``U_n(2x - 1)``.",
    _POLY_EXAMPLE.format("shifted_chebyshev_polynomial_u", "-1."))
shifted_chebyshev_polynomial_v = _polynomial(
    "shifted_chebyshev_polynomial_v", _chebyshev("v", 6, shifted=True),
    "The shifted Chebyshev polynomial of the third kind ``V_n(2x - 1)``.",
    _POLY_EXAMPLE.format("shifted_chebyshev_polynomial_v", "-1."))
shifted_chebyshev_polynomial_w = _polynomial(
    "shifted_chebyshev_polynomial_w", _chebyshev("w", 4, shifted=True),
    "The shifted Chebyshev polynomial of the fourth kind ``W_n(2x - 1)``.",
    _POLY_EXAMPLE.format("shifted_chebyshev_polynomial_w", "-1."))
hermite_polynomial_h = _polynomial(
    "hermite_polynomial_h", _hermite_h, "The physicists' Hermite polynomial H_n.",
    _POLY_EXAMPLE.format("hermite_polynomial_h", "-1."))
hermite_polynomial_he = _polynomial(
    "hermite_polynomial_he", _hermite_he, "The probabilists' Hermite polynomial He_n.",
    _POLY_EXAMPLE.format("hermite_polynomial_he", "-0.7500"))
laguerre_polynomial_l = _polynomial(
    "laguerre_polynomial_l", _laguerre_l, "The Laguerre polynomial L_n.",
    _POLY_EXAMPLE.format("laguerre_polynomial_l", "0.1250"))
legendre_polynomial_p = _polynomial(
    "legendre_polynomial_p", _legendre_p, "The Legendre polynomial P_n.",
    _POLY_EXAMPLE.format("legendre_polynomial_p", "-0.1250"))


# Fusion (``ops/_fusion.py``): these ops have no step in a fused chain yet
decline(SCIPY_KERNEL, erfcx, i0e, i1, i1e, _ndtr_op, ndtri, log_ndtr, entr, xlog1py, zeta,
        airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, modified_bessel_i0,
        modified_bessel_i1, modified_bessel_k0, modified_bessel_k1, scaled_modified_bessel_k0,
        scaled_modified_bessel_k1, spherical_bessel_j0, _igamma, _igammac)
decline(COMPOSITE_KERNEL, chebyshev_polynomial_t, chebyshev_polynomial_u,
        chebyshev_polynomial_v, chebyshev_polynomial_w, shifted_chebyshev_polynomial_t,
        shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
        shifted_chebyshev_polynomial_w, hermite_polynomial_h, hermite_polynomial_he,
        laguerre_polynomial_l, legendre_polynomial_p)
