"""Complex numbers: conj, conj_physical, resolve_conj, resolve_neg, is_conj, is_neg, real, imag,
view_as_real and view_as_complex (views of a complex tensor's parts)."""

from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ...autograd.forward_ad import linear_jvp
from .._fusion import OTHER_DTYPE, decline
from .._methods import tensor_method
from .._registry import _short_name, defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._declare import (
    _same_shape_meta,
)

__all__ = ["conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "real",
           "imag", "view_as_real", "view_as_complex"]


# the ONNX opt-out of the complex-number ops below
_COMPLEX = {"onnx": "a complex-number op: ONNX export handles real dtypes only"}


@defop("conj_physical", meta=_same_shape_meta, save_inputs=False, grad_name="ConjBackward0",
       kind="pointwise-unary", opt_outs=_COMPLEX)
def conj_op(xp, a):
    return xp.conj(a)


@conj_op.defderivative
def _conj_derivative(ctx, grad):
    return (grad.conj(),)


conj_op.defjvp(linear_jvp(conj_op))


@tensor_method
@signature("conj(Tensor input) -> Tensor")
def conj(input):
    """The complex conjugate (the input itself for real tensors).

    Example::

        >>> ember.conj(ember.tensor([1 + 2j]))
        tensor([1.-2.j])
    """
    if input._data.dtype.kind != "c":
        return input
    return conj_op(input)


@tensor_method
@signature("conj_physical(Tensor input, *, Tensor? out=None) -> Tensor")
def conj_physical(input, *, out=None):
    """The complex conjugate as a new tensor (ember's :func:`conj` always computes it, so the
    two agree; the input itself for real tensors, or a copy into ``out``).

    Example::

        >>> ember.conj_physical(ember.tensor([1 - 1j]))
        tensor([1.+1.j])
    """
    if out is not None:
        return write_out(conj(input), out, "conj_physical")
    return conj(input)


@tensor_method
@signature('resolve_conj(Tensor input) -> Tensor')
def resolve_conj(input):
    """``input`` itself: ember never keeps a lazy conjugate bit (``is_conj()`` is always False).

    Example::

        >>> ember.resolve_conj(ember.tensor([1j])).is_conj()
        False
    """
    return input


@tensor_method
@signature('resolve_neg(Tensor input) -> Tensor')
def resolve_neg(input):
    """``input`` itself: ember never keeps a lazy negative bit (``is_neg()`` is always False).

    Example::

        >>> ember.resolve_neg(ember.tensor([1.])).is_neg()
        False
    """
    return input


@tensor_method
@signature('is_conj(Tensor input) -> bool')
def is_conj(input):
    """False: ember's :func:`conj` computes the conjugate instead of setting a conjugate bit.

    Example::

        >>> ember.is_conj(ember.tensor([1j]).conj())
        False
    """
    return False


@tensor_method
@signature("is_neg(Tensor input) -> bool")
def is_neg(input):
    """False: ember has no lazy negative bit.

    Example::

        >>> ember.is_neg(ember.tensor([1.]))
        False
    """
    return False


@defop("real", meta=lambda a: (a.shape, dt.from_numpy_dtype(a.dtype).to_real()),
       save_inputs=False, view=True, kind="pointwise-unary", opt_outs=_COMPLEX)
def real_op(xp, a):
    return a.real


@real_op.defderivative
def _real_derivative(ctx, grad):
    return (grad.to(dt.from_numpy_dtype(ctx._input_meta[0][1])),)


@defop("imag", meta=lambda a: (a.shape, dt.from_numpy_dtype(a.dtype).to_real()),
       save_inputs=False, view=True, kind="pointwise-unary", opt_outs=_COMPLEX)
def imag_op(xp, a):
    return a.imag


@imag_op.defderivative
def _imag_derivative(ctx, grad):
    return (grad * 1j,)


@signature("real(Tensor input) -> Tensor")
def real(input):
    """The real part, a view for complex tensors (the input itself for real ones).

    Example::

        >>> ember.real(ember.tensor([1 + 2j]))
        tensor([1.])
    """
    return real_op(input) if input._data.dtype.kind == "c" else input


tensor_method(property(real), "real")


@signature("imag(Tensor input) -> Tensor")
def imag(input):
    """The imaginary part of a complex tensor, as a view.

    Example::

        >>> ember.imag(ember.tensor([1 + 2j]))
        tensor([2.])
    """
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return imag_op(input)


tensor_method(property(imag), "imag")


def _view_as_real_meta(a):
    return a.shape + (2,), dt.from_numpy_dtype(a.dtype).to_real()


@defop("view_as_real", meta=_view_as_real_meta, save_inputs=False, view=True,
       grad_name="ViewAsRealBackward0", kind="view", opt_outs=_COMPLEX)
def view_as_real_op(xp, a):
    real = dt.from_numpy_dtype(a.dtype).to_real().np
    if xp is np:
        return a[..., None].view(real)
    parts = a.real  # a view of the real parts; the imaginary parts follow one element later
    return xp.lib.stride_tricks.as_strided(parts, a.shape + (2,),
                                           parts.strides + (parts.itemsize,))


view_as_real_op.defbatch(batching.trailing_dims)


@view_as_real_op.defderivative
def _view_as_real_derivative(ctx, grad):
    return (view_as_complex(grad.contiguous()),)


def _view_as_complex_meta(a):
    return a.shape[:-1], dt.from_numpy_dtype(a.dtype).to_complex()


@defop("view_as_complex", meta=_view_as_complex_meta, save_inputs=False, view=True,
       grad_name="ViewAsComplexBackward0", kind="view", opt_outs=_COMPLEX)
def view_as_complex_op(xp, a):
    return a.view(dt.from_numpy_dtype(a.dtype).to_complex().np)[..., 0]


view_as_complex_op.defbatch(batching.trailing_dims)


@view_as_complex_op.defderivative
def _view_as_complex_derivative(ctx, grad):
    return (view_as_real(grad),)


@signature("view_as_real(Tensor input) -> Tensor")
def view_as_real(input):
    """A real view of a complex tensor, with a last dimension of size 2 holding the real and
    imaginary parts (writes through it change ``input``).

    Example::

        >>> ember.view_as_real(ember.tensor([1 + 2j, 3 - 4j]))
        tensor([[ 1.,  2.],
                [ 3., -4.]])
    """
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return view_as_real_op(input)


@signature("view_as_complex(Tensor input) -> Tensor")
def view_as_complex(input):
    """A complex view of a real tensor whose last dimension (size 2, stride 1) holds the real
    and imaginary parts.

    Example::

        >>> ember.view_as_complex(ember.tensor([[1., 2.], [3., -4.]]))
        tensor([1.-0.j, 3.-4.j])
    """
    dtype = input.dtype
    if dtype is dt.float16:
        raise RuntimeError("view_as_complex of a float16 tensor would be complex32, which ember "
                           "does not have; convert to float32 first")
    if dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {_short_name(dtype)}")
    shape, strides = input.shape, input.stride()
    if not shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return view_as_complex_op(input)


# Fusion (``ops/_fusion.py``): these ops have no step in a fused chain, and why
decline(OTHER_DTYPE, conj_op, real_op, imag_op)
