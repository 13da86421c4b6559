"""ember.fft: discrete Fourier transforms, as ``torch.fft``; and ``ember.stft``/``ember.istft``.

Three primitive operators do all the work, as in torch: ``fft_c2c`` (complex to complex),
``fft_r2c`` (real to complex, full or one-sided) and ``fft_c2r`` (one-sided complex to real).
Their kernels are ``xp.fft`` (``numpy.fft`` on the CPU, ``cupy.fft`` on CUDA: the same API);
their derivatives are transforms again (the adjoint of a DFT is the inverse DFT without its
scaling), written with these ops so that higher-order gradients work. The public functions
resize the input (zero-padding or trimming to ``n``/``s`` with ember ops, so that autograd
follows) and pick the primitive and the normalisation, as torch does:

* ``norm``: ``"backward"`` (default: the forward transform is unscaled, the inverse divides by
  ``n``), ``"ortho"`` (both divide by ``sqrt(n)``), ``"forward"`` (the forward divides by ``n``);
* real input gives complex output of the same precision; integer and bool input is first cast to
  the default float dtype; float16 and bfloat16 are refused (``Unsupported dtype Half``) as by
  torch on the CPU.

Example::

    >>> ember.fft.fft(ember.tensor([1., 0., 0., 0.]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor, tensor
from .ops import creation as _cr
from .ops import pointwise as _pw
from .ops import shape as _sh
from .ops._methods import tensor_method as _tensor_method
from .ops._operands import wrap_dim
from .ops._registry import defop, write_out
from .ops._signature import signature as _signature
from .ops._vmap_rules import batching

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

# normalisation modes, as torch's fft_norm_mode: what the transform divides by
_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2
# the ``norm=`` string NumPy/CuPy need for that mode, for a forward and an inverse transform
_NP_FORWARD = ("backward", "ortho", "forward")
_NP_INVERSE = ("forward", "ortho", "backward")
_SHORT = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int64": "Long",
          "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _complex_np(d):
    return np.dtype(np.complex64) if np.dtype(d) in (np.float32, np.complex64) \
        else np.dtype(np.complex128)


def _real_np(d):
    return np.dtype(np.float32) if np.dtype(d) in (np.float32, np.complex64) \
        else np.dtype(np.float64)


# ================================================================ primitives


def _c2c_meta(a, *, dims, mode, forward):
    return a.shape, _complex_np(a.dtype)


@defop("_fft_c2c", meta=_c2c_meta, save_inputs=False, grad_name="FftC2CBackward0")
def fft_c2c(xp, a, *, dims, mode, forward):
    """Complex-to-complex DFT over ``dims``, divided as ``mode`` says."""
    fn = (xp.fft.fft if forward else xp.fft.ifft) if len(dims) == 1 \
        else (xp.fft.fftn if forward else xp.fft.ifftn)  # the 1-D calls are cheaper
    norm = (_NP_FORWARD if forward else _NP_INVERSE)[mode]
    out = fn(a, axis=dims[0], norm=norm) if len(dims) == 1 else fn(a, axes=dims, norm=norm)
    return out.astype(_complex_np(a.dtype), copy=False)


@fft_c2c.defderivative
def _(ctx, grad, *, dims, mode, forward):
    if not grad.is_complex():
        grad = grad.to(dt.complex128 if grad.dtype is dt.float64 else dt.complex64)
    return (fft_c2c(grad, dims=dims, mode=mode, forward=not forward),)


def _r2c_meta(a, *, dims, mode, onesided):
    shape = list(a.shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return tuple(shape), _complex_np(a.dtype)


@defop("_fft_r2c", meta=_r2c_meta, save_inputs=False, grad_name="FftR2CBackward0")
def fft_r2c(xp, a, *, dims, mode, onesided):
    """Real-to-complex forward DFT over ``dims``; one-sided: the last of ``dims`` keeps
    ``n // 2 + 1`` frequencies."""
    norm = _NP_FORWARD[mode]
    if len(dims) == 1:
        out = (xp.fft.rfft if onesided else xp.fft.fft)(a, axis=dims[0], norm=norm)
    else:
        out = (xp.fft.rfftn if onesided else xp.fft.fftn)(a, axes=dims, norm=norm)
    return out.astype(_complex_np(a.dtype), copy=False)


@fft_r2c.defderivative
def _(ctx, grad, *, dims, mode, onesided):
    # the one-sided transform is the full one with half its outputs dropped: the gradient puts
    # zeros in their place, and is then the real part of the adjoint (inverse, unscaled) DFT
    if not grad.is_complex():
        grad = grad.to(dt.complex128 if grad.dtype is dt.float64 else dt.complex64)
    last = dims[-1]
    full = ctx.input_shapes[0][last]
    missing = full - grad.shape[last]
    if onesided and missing > 0:
        pads = [0, 0] * (grad.ndim - last)
        pads[-1] = missing
        grad = _sh.pad(grad, pads)
    return (_pw.real(fft_c2c(grad, dims=dims, mode=mode, forward=False)),)


def _c2r_meta(a, *, dims, mode, last_size):
    shape = list(a.shape)
    shape[dims[-1]] = last_size
    return tuple(shape), _real_np(a.dtype)


@defop("_fft_c2r", meta=_c2r_meta, save_inputs=False, grad_name="FftC2RBackward0")
def fft_c2r(xp, a, *, dims, mode, last_size):
    """One-sided complex-to-real inverse DFT over ``dims``: the last of ``dims`` holds
    ``last_size // 2 + 1`` frequencies of a Hermitian signal of length ``last_size``."""
    if len(dims) == 1:
        out = xp.fft.irfft(a, last_size, axis=dims[0], norm=_NP_INVERSE[mode])
    else:
        sizes = [a.shape[d] for d in dims[:-1]] + [last_size]
        out = xp.fft.irfftn(a, s=sizes, axes=dims, norm=_NP_INVERSE[mode])
    return out.astype(_real_np(a.dtype), copy=False)


@fft_c2r.defderivative
def _(ctx, grad, *, dims, mode, last_size):
    # adjoint: a one-sided forward DFT, with the frequencies whose mirror images were dropped
    # counted twice (indices 1 .. last_size - (last_size // 2 + 1))
    if grad.is_complex():
        grad = _pw.real(grad)
    g = fft_r2c(grad, dims=dims, mode=mode, onesided=True)
    last = dims[-1]
    half = g.shape[last]
    doubled = last_size - half
    if doubled > 0:
        weight = np.ones(half, g.dtype.to_real().np)
        weight[1:1 + doubled] = 2
        shape = [1] * g.ndim
        shape[last] = half
        g = g * tensor(weight.reshape(shape), device=g.device)
    return (g,)


def _linear_jvp(op):
    """Forward AD: every transform is (real-)linear: the output's tangent is the op on the
    input's."""
    def rule(primals, tangents, result, /, **params):
        return op(tangents[0], **params)
    return rule


for _op in (fft_c2c, fft_r2c, fft_c2r):
    _op.jvp = _linear_jvp(_op)
    _op.defbatch(batching.reduction)
    _op.opt_out("onnx", "complex results: ONNX export handles real dtypes only (and ONNX's "
                        "DFT, opset 17, is not mapped)")


# ================================================================ argument handling


def _norm_mode(norm, forward):
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "ortho":
        return _BY_ROOT_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _check_input(x, fname):
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _promote(x, fname, require_complex=False, require_real=False):
    """torch's ``promote_tensor_fft``: integers to the default float dtype, half refused."""
    d = x.dtype
    if d.is_complex:
        if require_real:
            raise RuntimeError(f"{fname} expects a real input tensor, but got {_SHORT[d.name]}")
        return x
    if not d.is_floating_point:
        x = x.to(dt.get_default_dtype())
    elif d.name in ("float16", "bfloat16"):
        raise RuntimeError(f"Unsupported dtype {_SHORT[d.name]}")
    if require_complex:
        x = x.to(dt.complex128 if x.dtype is dt.float64 else dt.complex64)
    return x


def _check_int(value, fname, arg, pos):
    if value is not None and (isinstance(value, bool)
                              or not isinstance(value, (numbers.Integral,))):
        raise TypeError(f"fft_{fname}(): argument '{arg}' (position {pos}) must be int, not "
                        f"{type(value).__name__}")


def _check_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _wrap(dim, ndim):
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(dim, ndim)


def _one_dim(x, n, dim, fname):
    """``(dims, sizes)`` for a 1-D transform: ``n`` defaults to the size along ``dim``."""
    _check_int(n, fname, "n", 2)
    d = _wrap(dim, x.ndim)
    size = x.shape[d] if n is None else int(n)
    return (d,), [size]


def _many_dims(x, s, dim, fname):
    """torch's ``canonicalize_fft_shape_and_dim_args``: ``(dims, sizes)`` for an n-D one."""
    ndim = x.ndim
    if isinstance(s, numbers.Integral):
        s = (s,)
    if isinstance(dim, numbers.Integral):
        dim = (dim,)
    if dim is not None:
        dims = tuple(_wrap(int(d), ndim) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = tuple(int(n) for n in s)
        if dim is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        if dim is None:
            dims = tuple(range(ndim - len(s), ndim))
        sizes = [x.shape[d] if n == -1 else n for n, d in zip(s, dims)]
    else:
        if dim is None:
            dims = tuple(range(ndim))
        sizes = [x.shape[d] for d in dims]
    for n in sizes:
        _check_points(n)
    return dims, sizes


def _resize(x, dims, sizes):
    """``x`` trimmed or zero-padded to ``sizes`` along ``dims`` (with ops autograd follows)."""
    pads = None
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if n < have:
            x = x.narrow(d, 0, n)
        elif n > have:
            if pads is None:
                pads = [0] * (2 * x.ndim)
            pads[2 * (x.ndim - 1 - d) + 1] = n - have
    if pads is not None:
        x = _sh.pad(x, pads)
    return x


def _out(result, out, fname):
    if out is not None and isinstance(out, Tensor):
        if result.is_complex() and not out.is_complex():
            kind = "complex"
        elif not result.is_complex() and not out.is_floating_point():
            kind = "floating point"
        else:
            return write_out(result, out, f"fft_{fname}")
        raise RuntimeError(f"{fname} expects a {kind} output tensor, but got "
                           f"{_SHORT.get(out.dtype.name, out.dtype.name)}")
    return write_out(result, out, f"fft_{fname}")


# ================================================================ transforms (shared bodies)


def _c2c_or_r2c(x, dims, sizes, norm, forward, fname):
    """fft/ifft/fftn/ifftn: complex input gives c2c; real input a full r2c (conjugated for the
    inverse: the inverse DFT of a real signal is the conjugate of its forward DFT, rescaled)."""
    x = _promote(x, fname)
    mode = _norm_mode(norm, forward)
    x = _resize(x, dims, sizes)
    if not dims:
        return x.to(dt.complex128 if x.dtype is dt.float64 else dt.complex64).clone() \
            if not x.is_complex() else x.clone()
    if x.is_complex():
        return fft_c2c(x, dims=dims, mode=mode, forward=forward)
    y = fft_r2c(x, dims=dims, mode=mode, onesided=False)
    return y if forward else _pw.conj(y)


def _r2c_onesided(x, dims, sizes, norm, forward, fname):
    """rfft/rfftn (forward) and ihfft (inverse: conjugated)."""
    x = _promote(x, fname, require_real=True)
    mode = _norm_mode(norm, forward)
    x = _resize(x, dims, sizes)
    y = fft_r2c(x, dims=dims, mode=mode, onesided=True)
    return y if forward else _pw.conj(y)


def _c2r_last(x, dims, sizes, n, norm, forward, fname):
    """irfft/irfftn (inverse) and hfft (forward: of the conjugated input)."""
    x = _promote(x, fname, require_complex=True)
    mode = _norm_mode(norm, forward)
    x = _resize(x, dims, list(sizes[:-1]) + [n // 2 + 1])
    if forward:
        x = _pw.conj(x)
    return fft_c2r(x, dims=dims, mode=mode, last_size=n)


def _c2r_sizes(x, s, dim, fname):
    """torch's ``canonicalize_fft_c2r_shape_and_dim_args``: dims, sizes, output length."""
    dims, sizes = _many_dims(x, s, dim, fname)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if s is None or (not isinstance(s, numbers.Integral) and s[-1] == -1):
        last = 2 * (x.shape[dims[-1]] - 1)
    else:
        last = sizes[-1]
    _check_points(last)
    return dims, sizes, last


def _transform_1d(input, n, dim, norm, out, forward, fname, transform):
    """fft/ifft (``transform=_c2c_or_r2c``) and rfft/ihfft (``_r2c_onesided``) along one
    ``dim``, resized to ``n``."""
    _check_input(input, fname)
    dims, sizes = _one_dim(input, n, dim, fname)
    _check_points(sizes[0])
    return _out(transform(input, dims, sizes, norm, forward, fname), out, fname)


def _c2r_1d(input, n, dim, norm, out, forward, fname):
    """irfft (inverse) and hfft (forward): a real result of length ``n`` (default
    ``2 * (input.size(dim) - 1)``) along one ``dim``."""
    _check_input(input, fname)
    _check_int(n, fname, "n", 2)
    d = _wrap(dim, input.ndim)
    last = 2 * (input.shape[d] - 1) if n is None else int(n)
    _check_points(last)
    return _out(_c2r_last(input, (d,), [last], last, norm, forward, fname), out, fname)


def _fftn(input, s, dim, norm, out, forward, fname):
    """fftn/ifftn/fft2/ifft2: the complex transform over ``dim``, resized to ``s``."""
    _check_input(input, fname)
    dims, sizes = _many_dims(input, s, dim, fname)
    return _out(_c2c_or_r2c(input, dims, sizes, norm, forward, fname), out, fname)


def _rfftn(input, s, dim, norm, out, fname):
    """rfftn/rfft2: the one-sided transform of a real signal over ``dim``."""
    _check_input(input, fname)
    dims, sizes = _many_dims(input, s, dim, fname)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    return _out(_r2c_onesided(input, dims, sizes, norm, True, fname), out, fname)


def _irfftn(input, s, dim, norm, out, fname):
    """irfftn/irfft2: the real signal of a one-sided transform over ``dim``."""
    _check_input(input, fname)
    dims, sizes, last = _c2r_sizes(input, s, dim, fname)
    return _out(_c2r_last(input, dims, sizes, last, norm, False, fname), out, fname)


# ================================================================ public functions


@_signature("fft_fft(Tensor input, SymInt? n=None, int dim=-1, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim``.

    ``n`` zero-pads or trims the signal; ``norm`` is ``"backward"`` (default), ``"ortho"`` or
    ``"forward"``. Real input gives a complex result of the same precision.

    Example::

        >>> ember.fft.fft(ember.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    return _transform_1d(input, n, dim, norm, out, True, "fft", _c2c_or_r2c)


@_signature("fft_ifft(Tensor input, SymInt? n=None, int dim=-1, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional inverse discrete Fourier transform of ``input`` along ``dim``.

    Example::

        >>> ember.fft.ifft(ember.tensor([4., 0., 0., 0.])).real
        tensor([1., 1., 1., 1.])
    """
    return _transform_1d(input, n, dim, norm, out, False, "ifft", _c2c_or_r2c)


@_signature("fft_fftn(Tensor input, SymInt[1]? s=None, int[1]? dim=None, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional discrete Fourier transform over ``dim`` (default: all dims, or the
    last ``len(s)``), each resized to ``s``.

    Example::

        >>> ember.fft.fftn(ember.ones(2, 2))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    return _fftn(input, s, dim, norm, out, True, "fftn")


@_signature("fft_ifftn(Tensor input, SymInt[1]? s=None, int[1]? dim=None, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional inverse discrete Fourier transform.

    Example::

        >>> ember.fft.ifftn(ember.tensor([[4., 0.], [0., 0.]])).real
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _fftn(input, s, dim, norm, out, False, "ifftn")


@_signature("fft_fft2(Tensor input, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-dimensional discrete Fourier transform (``fftn`` over the last two dims).

    Example::

        >>> ember.fft.fft2(ember.ones(2, 2)).real
        tensor([[4., 0.],
                [0., 0.]])
    """
    return _fftn(input, s, dim, norm, out, True, "fft2")


@_signature("fft_ifft2(Tensor input, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-dimensional inverse discrete Fourier transform.

    Example::

        >>> ember.fft.ifft2(ember.tensor([[4., 0.], [0., 0.]])).real
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _fftn(input, s, dim, norm, out, False, "ifft2")


@_signature("fft_rfft(Tensor input, SymInt? n=None, int dim=-1, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional DFT of a real signal: the ``n // 2 + 1`` non-negative frequencies.

    Example::

        >>> ember.fft.rfft(ember.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    return _transform_1d(input, n, dim, norm, out, True, "rfft", _r2c_onesided)


@_signature("fft_irfft(Tensor input, SymInt? n=None, int dim=-1, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default
    ``2 * (input.size(dim) - 1)``) from its non-negative frequencies.

    Example::

        >>> ember.fft.irfft(ember.fft.rfft(ember.tensor([1., 2., 3., 4.])))
        tensor([1., 2., 3., 4.])
    """
    return _c2r_1d(input, n, dim, norm, out, False, "irfft")


@_signature("fft_rfftn(Tensor input, SymInt[1]? s=None, int[1]? dim=None, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional DFT of a real signal; the last of ``dim`` keeps ``n // 2 + 1``
    frequencies.

    Example::

        >>> ember.fft.rfftn(ember.ones(2, 4))
        tensor([[8.+0.j, 0.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j, 0.+0.j]])
    """
    return _rfftn(input, s, dim, norm, out, "rfftn")


@_signature("fft_irfftn(Tensor input, SymInt[1]? s=None, int[1]? dim=None, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of :func:`rfftn`.

    Example::

        >>> ember.fft.irfftn(ember.fft.rfftn(ember.ones(2, 4)))
        tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]])
    """
    return _irfftn(input, s, dim, norm, out, "irfftn")


@_signature("fft_rfft2(Tensor input, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-dimensional DFT of a real signal (:func:`rfftn` over the last two dims).

    Example::

        >>> ember.fft.rfft2(ember.ones(2, 2))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    return _rfftn(input, s, dim, norm, out, "rfft2")


@_signature("fft_irfft2(Tensor input, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of :func:`rfft2`.

    Example::

        >>> ember.fft.irfft2(ember.fft.rfft2(ember.ones(2, 2)))
        tensor([[1., 1.],
                [1., 1.]])
    """
    return _irfftn(input, s, dim, norm, out, "irfft2")


@_signature("fft_hfft(Tensor input, SymInt? n=None, int dim=-1, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The DFT of a Hermitian-symmetric signal given by its first half: a real result of
    length ``n`` (default ``2 * (input.size(dim) - 1)``).

    Example::

        >>> ember.fft.hfft(ember.tensor([1., 0., 0.]))
        tensor([1., 1., 1., 1.])
    """
    return _c2r_1d(input, n, dim, norm, out, True, "hfft")


@_signature("fft_ihfft(Tensor input, SymInt? n=None, int dim=-1, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of :func:`hfft`: the first ``n // 2 + 1`` frequencies of the inverse DFT of
    a real signal.

    Example::

        >>> ember.fft.ihfft(ember.tensor([1., 1., 1., 1.])).real
        tensor([1., 0., 0.])
    """
    return _transform_1d(input, n, dim, norm, out, False, "ihfft", _r2c_onesided)


def _hfftn(input, s, dim, norm, out, fname):
    _check_input(input, fname)
    dims, sizes, last = _c2r_sizes(input, s, dim, fname)
    x = _promote(input, fname, require_complex=True)
    mode = _norm_mode(norm, True)
    x = _resize(x, dims, list(sizes[:-1]) + [last // 2 + 1])
    if len(dims) > 1:
        x = fft_c2c(x, dims=dims[:-1], mode=mode, forward=True)
    y = fft_c2r(_pw.conj(x), dims=dims[-1:], mode=mode, last_size=last)
    return _out(y, out, fname)


def _ihfftn(input, s, dim, norm, out, fname):
    _check_input(input, fname)
    dims, sizes = _many_dims(input, s, dim, fname)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    x = _promote(input, fname, require_real=True)
    mode = _norm_mode(norm, False)
    x = _resize(x, dims, sizes)
    y = _pw.conj(fft_r2c(x, dims=dims[-1:], mode=mode, onesided=True))
    if len(dims) > 1:
        y = fft_c2c(y, dims=dims[:-1], mode=mode, forward=False)
    return _out(y, out, fname)


@_signature("fft_hfftn(Tensor input, SymInt[1]? s=None, int[1]? dim=None, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional DFT of a Hermitian-symmetric signal given by its one-sided half (the
    last of ``dim``): a real result.

    Example::

        >>> ember.fft.hfftn(ember.tensor([[1., 0., 0.], [0., 0., 0.]]))
        tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]])
    """
    return _hfftn(input, s, dim, norm, out, "hfftn")


@_signature("fft_ihfftn(Tensor input, SymInt[1]? s=None, int[1]? dim=None, str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of :func:`hfftn`: the one-sided N-dimensional inverse DFT of a real signal.

    Example::

        >>> ember.fft.ihfftn(ember.ones(2, 4)).real
        tensor([[1., 0., 0.],
                [0., 0., 0.]])
    """
    return _ihfftn(input, s, dim, norm, out, "ihfftn")


@_signature("fft_hfft2(Tensor input, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-dimensional :func:`hfftn` (over the last two dims).

    Example::

        >>> ember.fft.hfft2(ember.tensor([[1., 0., 0.], [0., 0., 0.]]))
        tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]])
    """
    return _hfftn(input, s, dim, norm, out, "hfft2")


@_signature("fft_ihfft2(Tensor input, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None, "
            "*, Tensor? out=None) -> Tensor")
def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-dimensional :func:`ihfftn` (over the last two dims).

    Example::

        >>> ember.fft.ihfft2(ember.ones(2, 4)).real
        tensor([[1., 0., 0.],
                [0., 0., 0.]])
    """
    return _ihfftn(input, s, dim, norm, out, "ihfft2")


# ================================================================ frequencies and shifts


def _freq(n, d, dtype, device, requires_grad, out, fname, onesided):
    _check_int(n, fname, "n", 1)
    dtype = dtype or dt.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{fname} requires a floating point or complex dtype")
    if dtype.is_complex:  # torch's arange refuses complex dtypes
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{_SHORT[dtype.name]}\'')
    count = n // 2 + 1 if onesided else n
    if count < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {count}: [{count}]")
    r = _cr.arange(count, dtype=dtype, device=device)
    if not onesided and n > 0:
        r = _pw.where(r >= (n + 1) // 2, r - n, r)
    if n * d:
        r = r * (1.0 / (n * d))
    else:  # torch multiplies by 1 / 0 = inf: 0 * inf is nan
        with np.errstate(invalid="ignore"):
            r = r * float("inf")
    r = write_out(r, out, fname)
    if requires_grad:
        r.requires_grad_()
    return r


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of a length-``n`` DFT with sample spacing ``d``:
    ``[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d * n)``.

    Example::

        >>> ember.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    return _freq(n, d, dtype, device, requires_grad, out, "fftfreq", False)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`rfft` of a length-``n`` signal: ``[0, ..., n // 2] /
    (d * n)``.

    Example::

        >>> ember.fft.rfftfreq(4)
        tensor([0.0000, 0.2500, 0.5000])
    """
    return _freq(n, d, dtype, device, requires_grad, out, "rfftfreq", True)


def _shift(input, dim, inverse):
    if not isinstance(input, Tensor):
        raise TypeError(f"{'ifftshift' if inverse else 'fftshift'}(): argument 'input' must be "
                        f"Tensor, not {type(input).__name__}")
    if dim is None:
        if input.ndim == 0:
            raise RuntimeError("`shifts` required")
        dims = tuple(range(input.ndim))
    elif isinstance(dim, numbers.Integral):
        dims = (int(dim),)
    else:
        dims = tuple(int(d) for d in dim)
    if not dims:
        return input.clone()
    sizes = [input.shape[wrap_dim(d, input.ndim)] for d in dims]
    shifts = tuple((n + 1) // 2 if inverse else n // 2 for n in sizes)
    return _sh.roll(input, shifts, dims)


@_signature("fft_fftshift(Tensor input, int[1]? dim=None) -> Tensor")
def fftshift(input, dim=None):
    """Moves the zero-frequency term to the centre (rolls each of ``dim`` by ``size // 2``).

    Example::

        >>> ember.fft.fftshift(ember.fft.fftfreq(4))
        tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, False)


@_signature("fft_ifftshift(Tensor input, int[1]? dim=None) -> Tensor")
def ifftshift(input, dim=None):
    """The inverse of :func:`fftshift` (rolls each of ``dim`` by ``(size + 1) // 2``).

    Example::

        >>> ember.fft.ifftshift(ember.fft.fftshift(ember.arange(5)))
        tensor([0, 1, 2, 3, 4])
    """
    return _shift(input, dim, True)


# ================================================================ stft / istft


def _padded_window(window, win_length, n_fft, like, fname):
    """The window as a length-``n_fft`` tensor (centred, zero-padded), or None for ones."""
    if window is None:
        if win_length < n_fft:
            w = _cr.zeros(n_fft, dtype=like.dtype.to_real() if like.is_complex() else like.dtype,
                          device=like.device)
            left = (n_fft - win_length) // 2
            w[left:left + win_length] = 1
            return w
        return None
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{fname}: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _sh.pad(window, [left, n_fft - win_length - left])
    return window


def _overlap_add_meta(frames, *, hop, length):
    return frames.shape[:-2] + (length,), frames.dtype


@defop("_overlap_add", meta=_overlap_add_meta, save_inputs=False, grad_name="UnfoldBackward0")
def overlap_add(xp, frames, *, hop, length):
    """Sums frames ``(..., n_frames, n_fft)`` placed ``hop`` apart into a signal of ``length``
    (torch's ``unfold_backward``): one slice-add per ``hop``-wide column of the frames."""
    *batch, count, n_fft = frames.shape
    blocks = -(-max(length, (count - 1) * hop + n_fft) // hop) + 1
    out = xp.zeros((*batch, blocks, hop), frames.dtype)
    for r in range(-(-n_fft // hop)):
        width = min(hop, n_fft - r * hop)
        out[..., r:r + count, :width] += frames[..., r * hop:r * hop + width]
    return out.reshape(*batch, blocks * hop)[..., :length]


@overlap_add.defderivative
def _(ctx, grad, *, hop, length):
    n_fft = ctx.input_shapes[0][-1]
    return (grad.unfold(-1, n_fft, hop),)


overlap_add.jvp = _linear_jvp(overlap_add)
overlap_add.defbatch(batching.trailing_dims)
overlap_add.opt_out("onnx", "not mapped yet (istft's overlap-add; composable from ONNX operators)")


@_tensor_method
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """The short-time Fourier transform: the DFT of windowed frames ``hop_length`` apart,
    shaped ``(*, n_fft // 2 + 1 or n_fft, n_frames)``. With ``center=False``,
    ``align_to_window=True`` starts the frames where a ``win_length`` window starts (the
    frames then cover the signal window by window) instead of where ``n_fft`` samples start.

    ``return_complex`` must be given (``True``; ``False`` returns the deprecated real view).

    Example::

        >>> ember.stft(ember.ones(8), 4, window=ember.ones(4), return_complex=True).shape
        ember.Size([3, 9])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which "
                      "is known to cause spectral leakage. Other windows such as "
                      "torch.hann_window or torch.hamming_window are recommended to reduce "
                      "spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=2)
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        signal_dim = input.ndim
        if signal_dim not in (1, 2):
            raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {signal_dim}D tensor")
        pad = n_fft // 2
        x = _sh.pad(input.reshape((1,) * (3 - signal_dim) + tuple(input.shape)), [pad, pad],
                    pad_mode)
        input = x.reshape(tuple(x.shape[-signal_dim:]))
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D tensor")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if align_to_window and win_length < n_fft:
        left = (n_fft - win_length) // 2  # the window sits centred in each n_fft frame
        x = _sh.pad(x, [left, n_fft - win_length - left])
    x = _promote(x, "stft")
    w = _padded_window(window, win_length, n_fft, x, "stft")
    frames = x.unfold(-1, n_fft, hop_length)                     # (B, n_frames, n_fft)
    if w is not None:
        frames = frames * w
    onesided = (not complex_in) if onesided is None else onesided
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    mode = _BY_ROOT_N if normalized else _NONE
    if frames.is_complex():
        y = fft_c2c(frames, dims=(2,), mode=mode, forward=True)
    else:
        y = fft_r2c(frames, dims=(2,), mode=mode, onesided=bool(onesided))
    y = y.transpose(1, 2)
    if input.ndim == 1:
        y = y.squeeze(0)
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.", UserWarning, stacklevel=2)
        return _pw.view_as_real(y)
    return y


@_tensor_method
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse short-time Fourier transform (least-squares overlap-add of the inverse DFTs
    of the frames, divided by the summed squared window).

    Example::

        >>> x, w = ember.arange(8.), ember.ones(4)
        >>> y = ember.istft(ember.stft(x, 4, 1, window=w, return_complex=True), 4, 1, window=w)
        >>> bool(ember.allclose(y, x, atol=1e-5))
        True
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if type(n_fft) is bool or not isinstance(n_fft, (int, np.integer)):
        raise TypeError(f"istft(): argument 'n_fft' (position 2) must be int, not "
                        f"{type(n_fft).__name__}")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but "
                           f"got {input.ndim}")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    fft_size, n_frames = x.shape[1], x.shape[2]
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided:
        if n_fft // 2 + 1 != fft_size:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of "
                               f"the input tensor to match n_fft / 2 + 1 when onesided=True, "
                               f"but got {fft_size}")
    elif n_fft != fft_size:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError("istft: expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError("istft: expected 0 < win_length <= n_fft")
    real_dtype = x.dtype.to_real()
    w = _padded_window(window, win_length, n_fft,
                       _cr.zeros(0, dtype=real_dtype, device=x.device), "istft")
    if w is None:
        w = _cr.ones(n_fft, dtype=real_dtype, device=x.device)
    mode = _BY_ROOT_N if normalized else _BY_N
    x = x.transpose(1, 2)                                          # (B, n_frames, fft_size)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = fft_c2c(x, dims=(2,), mode=mode, forward=False)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = x.narrow(-1, 0, n_fft // 2 + 1)
        frames = fft_c2r(x, dims=(2,), mode=mode, last_size=n_fft)
    frames = frames * w
    expected = n_fft + hop_length * (n_frames - 1)
    y = overlap_add(frames, hop=hop_length, length=expected)
    envelope = overlap_add((w * w).expand(1, n_frames, n_fft),  # torch squares a complex window too
                           hop=hop_length, length=expected)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = expected - n_fft // 2 if center else expected
    stop = min(end, expected)
    y = y[..., start:stop]
    envelope = envelope[..., start:stop]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError("istft(...): window overlap add min: "
                           f"{float(envelope.abs().min()):g}")
    y = y / envelope
    if input.ndim == 2:
        y = y.squeeze(0)
    if end > expected:
        y = _sh.pad(y, [0, end - expected])
    return y


