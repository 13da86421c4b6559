"""Extrema and truth: max, min, amax, amin, aminmax, argmax, argmin, all, any,
count_nonzero."""

from __future__ import annotations

import numpy as np

from ... import return_types
from ..._device import META
from ..._tensor import Tensor
from ...autograd.forward_ad import reduction_jvp, select_jvp
from .._methods import tensor_method
from .._registry import Op, defop, write_out
from .._signature import NOT_GIVEN, signature, type_name
from .._vmap_rules import batching
from ._common import (
    _check_nonempty_dims,
    _check_tensor,
    _dims,
    _isnan,
    _keep,
    _no_complex,
    _one_dim,
    _reduce_meta,
    _reduction_onnx,
    _reject,
    _select_grad,
    _where,
    _write_out_tuple,
    reduced_shape,
)

__all__ = ["max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "all", "any",
           "count_nonzero"]


# ---------------------------------------------------------------- max, min, amax, amin


def _evenly_distribute(ctx, grad, nan_aware):
    """Gradient of a full reduction that picks a value: split evenly among the elements equal
    to it (for ``max()``/``median()``, NaN results go to the NaN elements)."""
    x = ctx.inputs[0]
    value = ctx.output
    mask = x == value
    if nan_aware and value._data.dtype.kind in "fc":
        # a NaN result goes to the NaN elements; chosen by operators, not on the host, so
        # that vmap's batched replay chooses per batch element
        mask = _where(_isnan(value), _isnan(x), mask)
    count = mask.sum()
    return (_where(mask, grad / count, 0.0),)


def _scale_by_count(ctx, grad, dims, keepdim):
    """amax/amin: the gradient over the elements equal to the result, divided by their count."""
    x = ctx.inputs[0]
    shape = x._data.shape
    mask = x == _keep(ctx.output, shape, dims, keepdim)
    count = mask.sum(dims, keepdim=True)
    return ((_keep(grad, shape, dims, keepdim) / count) * mask.to(grad.dtype),)


def _extreme_all(name, reducer):
    op = Op(name, lambda xp, a: getattr(xp, reducer)(a),
            meta=lambda a: ((), a.dtype), save_output=True, kind="reduction")
    op.defderivative(lambda ctx, grad: _evenly_distribute(ctx, grad, nan_aware=True))
    op.defjvp(reduction_jvp(op))

    @op.defbatch
    def _(xp, step, arrays, batched, batch_size):  # each element over its own dims
        batch = arrays[0]
        return getattr(xp, reducer)(batch, axis=tuple(range(1, batch.ndim)))
    return op


max_all_op = _extreme_all("max", "max")
min_all_op = _extreme_all("min", "min")


def _extreme_all_onnx(onnx_type):
    """max()/min() of every element: ``onnx_type`` (ReduceMax/ReduceMin) over all axes."""
    def mapping(ctx, x):
        if not ctx.in_dims(0):
            return ctx.op("Identity", x)
        return ctx.reduce(onnx_type, x, None, False)
    return mapping


max_all_op.defonnx(_extreme_all_onnx("ReduceMax"))
min_all_op.defonnx(_extreme_all_onnx("ReduceMin"))


def _extreme_dim(name, arg):
    def kernel(xp, a, *, dim, keepdim):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), np.int64)
        indices = getattr(xp, arg)(a, axis=dim, keepdims=True)
        values = xp.take_along_axis(a, indices, axis=dim)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return values, indices.astype(np.int64, copy=False)

    def meta(a, *, dim, keepdim):
        shape = reduced_shape(a.shape, (dim,) if a.ndim else (), keepdim)
        return (shape, a.dtype), (shape, np.dtype(np.int64))

    op = Op(name, kernel, meta=meta, save_inputs=False, save_output=True, multi_output=True,
            differentiable_outputs=(0,), kind="reduction")

    @op.defderivative
    def _(ctx, grad, grad_indices, *, dim, keepdim):
        return (_select_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0], keepdim),)

    op.defjvp(select_jvp)
    return op


max_dim_op = _extreme_dim("max_dim", "argmax")
min_dim_op = _extreme_dim("min_dim", "argmin")
max_dim_op.grad_name = "MaxBackward0"
min_dim_op.grad_name = "MinBackward0"
max_all_op.grad_name = "MaxBackward1"
min_all_op.grad_name = "MinBackward1"


def _extreme_dim_onnx(reduce_type, arg_type):
    """max(dim)/min(dim): the values (``reduce_type``) and their indices (``arg_type``)."""
    def mapping(ctx, x, dim, keepdim=False):
        if not ctx.in_dims(0):  # a 0-dim input is its own extreme, at index 0
            return ctx.op("Identity", x), ctx.scalar(0, "int64")
        axis = ctx.axis(dim)
        values = ctx.reduce(reduce_type, x, [axis], keepdim)
        return values, ctx.op(arg_type, x, axis=axis, keepdims=int(keepdim))
    return mapping


max_dim_op.defonnx(_extreme_dim_onnx("ReduceMax", "ArgMax"))
min_dim_op.defonnx(_extreme_dim_onnx("ReduceMin", "ArgMin"))
max_dim_op.defbatch(batching.along_dim)
min_dim_op.defbatch(batching.along_dim)


def _extreme(name, input, dim, keepdim, other, out):
    _check_tensor(input, name)
    if dim is NOT_GIVEN:
        dim = None
    elif isinstance(dim, Tensor):
        other, dim = dim, None
    elif type(dim) is not int and not isinstance(dim, np.integer):
        # torch's overloads take an int dim or a tensor: an explicit None, a float, a str...
        # match none of them
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(Tensor, {type_name(dim)}), but expected one of:\n * (Tensor input)\n"
                        f" * (Tensor input, int dim, bool keepdim = False)\n"
                        f" * (Tensor input, Tensor other)\n")
    if other is not None:
        from .. import pointwise

        return getattr(pointwise, "maximum" if name == "max" else "minimum")(input, other,
                                                                            out=out)
    if dim is None:
        _reject(input, f"{name}_all")
        if input._data.size == 0 and input._device is not META:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return write_out((max_all_op if name == "max" else min_all_op)(input), out, name)
    _no_complex(input, name)
    d = _one_dim(dim, input._data.ndim)
    if input._data.ndim:
        _check_nonempty_dims(input, (d,), name)
    op = max_dim_op if name == "max" else min_dim_op
    result = getattr(return_types, name)(*op(input, dim=d, keepdim=keepdim))
    return _write_out_tuple(result, out, name)


@tensor_method
def max(input, dim=NOT_GIVEN, keepdim=False, *, other=None, out=None):
    """The largest element; with ``dim``, ``(values, indices)`` along it; with a tensor as the
    second argument, the elementwise :func:`maximum`. NaN propagates.

    Example::

        >>> ember.max(ember.tensor([[1, 5], [7, 2]]), dim=1)
        ember.return_types.max(
        values=tensor([5, 7]),
        indices=tensor([1, 0]))
    """
    return _extreme("max", input, dim, keepdim, other, out)


@tensor_method
def min(input, dim=NOT_GIVEN, keepdim=False, *, other=None, out=None):
    """The smallest element; with ``dim``, ``(values, indices)`` along it; with a tensor as the
    second argument, the elementwise :func:`minimum`. NaN propagates.

    Example::

        >>> ember.min(ember.tensor([[1, 5], [7, 2]]), dim=1).values
        tensor([1, 2])
    """
    return _extreme("min", input, dim, keepdim, other, out)


def _amax_kernel(reducer):
    def kernel(xp, a, *, dims, keepdim):
        return getattr(xp, reducer)(a, axis=dims, keepdims=keepdim)
    return kernel


amax_op = Op("amax", _amax_kernel("amax"), meta=_reduce_meta(), save_output=True, kind="reduction",
             onnx=_reduction_onnx("ReduceMax"))
amin_op = Op("amin", _amax_kernel("amin"), meta=_reduce_meta(), save_output=True, kind="reduction",
             onnx=_reduction_onnx("ReduceMin"))
amax_op.defbatch(batching.reduction)
amin_op.defbatch(batching.reduction)
amax_op.defderivative(lambda ctx, grad, *, dims, keepdim: _scale_by_count(ctx, grad, dims,
                                                                          keepdim))
amin_op.defderivative(lambda ctx, grad, *, dims, keepdim: _scale_by_count(ctx, grad, dims,
                                                                          keepdim))
amax_op.defjvp(reduction_jvp(amax_op))
amin_op.defjvp(reduction_jvp(amin_op))


def _amax_args(name, input, dim):
    _check_tensor(input, name)
    _reject(input, f"{name[1:]}_values_cpu")
    dims = _dims(dim, input._data.ndim)
    if input._data.size == 0 and input._device is not META:
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        _check_nonempty_dims(input, dims, name)
    return dims


@tensor_method
@signature('amax(Tensor input, int[1] dim=[], bool keepdim=False, *, Tensor? out=None) -> Tensor')
def amax(input, dim=(), keepdim=False, *, out=None):
    """The maximum over ``dim`` (all dims by default); the gradient is split among ties.

    Example::

        >>> ember.amax(ember.tensor([[1, 5], [7, 2]]), dim=0)
        tensor([7, 5])
    """
    dims = _amax_args("amax", input, dim)
    return write_out(amax_op(input, dims=dims, keepdim=keepdim), out, "amax")


@tensor_method
@signature('amin(Tensor input, int[1] dim=[], bool keepdim=False, *, Tensor? out=None) -> Tensor')
def amin(input, dim=(), keepdim=False, *, out=None):
    """The minimum over ``dim`` (all dims by default); the gradient is split among ties.

    Example::

        >>> ember.amin(ember.tensor([[1, 5], [7, 2]]), dim=0)
        tensor([1, 2])
    """
    dims = _amax_args("amin", input, dim)
    return write_out(amin_op(input, dims=dims, keepdim=keepdim), out, "amin")


@tensor_method
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """``(min, max)`` over ``dim`` (all elements by default).

    Example::

        >>> ember.aminmax(ember.tensor([3, 1, 2]))
        ember.return_types.aminmax(
        min=tensor(1),
        max=tensor(3))
    """
    _check_tensor(input, "aminmax")
    _reject(input, "aminmax_cpu")
    if dim is None:
        if input._data.size == 0 and input._device is not META:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        dims = tuple(range(input._data.ndim))
    else:
        dims = (_one_dim(dim, input._data.ndim),) if input._data.ndim else ()
        if input._device is not META:
            for d in dims:
                if input._data.shape[d] == 0:
                    raise IndexError("aminmax(): Expected reduction dim " + str(d) +
                                     " to have non-zero size.")
    result = return_types.aminmax(amin_op(input, dims=dims, keepdim=keepdim),
                                  amax_op(input, dims=dims, keepdim=keepdim))
    return _write_out_tuple(result, out, "aminmax")


def _arg_kernel(reducer):
    def kernel(xp, a, *, dim, keepdim):
        if dim is None:
            result = getattr(xp, reducer)(a)
            if keepdim:
                result = xp.reshape(result, (1,) * a.ndim)
        else:
            result = getattr(xp, reducer)(a, axis=dim, keepdims=keepdim) if a.ndim else \
                xp.zeros((), np.int64)
        return xp.asarray(result).astype(np.int64, copy=False)
    return kernel


def _arg_meta(a, *, dim, keepdim):
    if dim is None:
        return ((1,) * a.ndim if keepdim else ()), np.dtype(np.int64)
    return reduced_shape(a.shape, (dim,) if a.ndim else (), keepdim), np.dtype(np.int64)


argmax_op = Op("argmax", _arg_kernel("argmax"), meta=_arg_meta, kind="other")
argmin_op = Op("argmin", _arg_kernel("argmin"), meta=_arg_meta, kind="other")


def _arg_onnx(onnx_type):
    """argmax/argmin (``onnx_type``) along ``dim``, or over the flattened input."""
    def mapping(ctx, x, dim=None, keepdim=False):
        if dim is None or not ctx.in_dims(0):  # (ONNX's ArgMax needs an axis to reduce)
            x = ctx.op("Reshape", x, ctx.int64s([-1]))
            return ctx.op(onnx_type, x, axis=0, keepdims=0)
        return ctx.op(onnx_type, x, axis=ctx.axis(dim), keepdims=int(keepdim))
    return mapping


argmax_op.defonnx(_arg_onnx("ArgMax"))
argmin_op.defonnx(_arg_onnx("ArgMin"))
argmax_op.defbatch(batching.along_dim)
argmin_op.defbatch(batching.along_dim)
for _op in (argmax_op, argmin_op):
    _op.opt_out("derivative", "an index result has no gradient")


def _arg(name, input, dim, keepdim, out):
    _check_tensor(input, name)
    if input._data.dtype.kind in "cb":
        kind = "complex" if input._data.dtype.kind == "c" else "bool"
        raise RuntimeError(f"{name}(): does not support {kind} input")
    if dim is not None:
        dim = _one_dim(dim, input._data.ndim)
    if input._device is not META and input._data.size == 0:
        if dim is None:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        if input._data.ndim:
            _check_nonempty_dims(input, (dim,), name)
    op = argmax_op if name == "argmax" else argmin_op
    return write_out(op(input, dim=dim, keepdim=keepdim), out, name)


@tensor_method
@signature('argmax(Tensor input, int? dim=None, bool keepdim=False, *, Tensor? out=None) -> Tensor')
def argmax(input, dim=None, keepdim=False, *, out=None):
    """The index of the largest element (of the flattened input, or along ``dim``).

    Example::

        >>> ember.argmax(ember.tensor([[1, 5], [7, 2]]), dim=1)
        tensor([1, 0])
    """
    return _arg("argmax", input, dim, keepdim, out)


@tensor_method
@signature('argmin(Tensor input, int? dim=None, bool keepdim=False, *, Tensor? out=None) -> Tensor')
def argmin(input, dim=None, keepdim=False, *, out=None):
    """The index of the smallest element (of the flattened input, or along ``dim``).

    Example::

        >>> ember.argmin(ember.tensor([[1, 5], [7, 2]]), dim=1)
        tensor([0, 1])
    """
    return _arg("argmin", input, dim, keepdim, out)


# ---------------------------------------------------------------- all, any, count_nonzero


def _logical_meta(a, *, dims, keepdim):
    out = np.dtype(np.uint8) if a.dtype == np.uint8 else np.dtype(np.bool_)
    return reduced_shape(a.shape, dims, keepdim), out


def _logical_kernel(reducer):
    def kernel(xp, a, *, dims, keepdim):
        result = getattr(xp, reducer)(a, axis=dims, keepdims=keepdim)
        return xp.asarray(result).astype(np.uint8 if a.dtype == np.uint8 else np.bool_,
                                         copy=False)
    return kernel


all_op = Op("all", _logical_kernel("all"), meta=_logical_meta, kind="reduction")
any_op = Op("any", _logical_kernel("any"), meta=_logical_meta, kind="reduction")


all_op.opt_out("onnx", "not mapped yet (composable from ONNX operators)")
any_op.opt_out("onnx", "not mapped yet (composable from ONNX operators)")
all_op.defbatch(batching.reduction)
any_op.defbatch(batching.reduction)
for _op in (all_op, any_op):
    _op.opt_out("derivative", "a boolean result has no gradient")


@tensor_method
@signature("all(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " Tensor? out=None) -> Tensor", overloaded="all")
def all(input, dim=None, keepdim=False, *, out=None):
    """Whether every element (along ``dim``) is non-zero; uint8 inputs give uint8.

    Example::

        >>> ember.all(ember.tensor([[True, False], [True, True]]), dim=1)
        tensor([False,  True])
    """
    return write_out(all_op(input, dims=_dims(dim, input._data.ndim), keepdim=keepdim), out,
                     "all")


@tensor_method
@signature("any(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " Tensor? out=None) -> Tensor", overloaded="all")
def any(input, dim=None, keepdim=False, *, out=None):
    """Whether any element (along ``dim``) is non-zero; uint8 inputs give uint8.

    Example::

        >>> ember.any(ember.tensor([[True, False], [False, False]]), dim=1)
        tensor([ True, False])
    """
    return write_out(any_op(input, dims=_dims(dim, input._data.ndim), keepdim=keepdim), out,
                     "any")


@defop("count_nonzero", meta=lambda a, *, dims: (reduced_shape(a.shape, dims, False),
                                                   np.dtype(np.int64)), kind="reduction",
       opt_outs={"onnx": "not mapped yet (composable from ONNX operators)"})
def count_nonzero_op(xp, a, *, dims):
    return xp.asarray(xp.sum(a != 0, axis=dims)).astype(np.int64, copy=False)


count_nonzero_op.defbatch(batching.reduction)


count_nonzero_op.opt_out("derivative", "a count has no gradient")


@tensor_method
@signature('count_nonzero(Tensor input, int[1]? dim=None) -> Tensor', overloaded=True)
def count_nonzero(input, dim=None):
    """The number of non-zero elements (along ``dim``), as int64.

    Example::

        >>> ember.count_nonzero(ember.tensor([[0, 1], [2, 3]]), dim=1)
        tensor([1, 2])
    """
    return count_nonzero_op(input, dims=_dims(dim, input._data.ndim))
