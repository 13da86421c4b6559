"""torch's ``native_*`` entry points and the other lower-level functions its top-level
namespace exposes, composed from ember's operators (so autograd comes for free):

* ``native_layer_norm``/``native_batch_norm``/``native_group_norm`` return the normalised
  tensor with the statistics torch's kernels save (mean and reciprocal standard deviation);
* ``native_dropout`` returns the output with its keep mask; ``native_norm`` (sparse only, as
  in torch), ``nuclear_norm``, ``norm_except_dim``;
* ``empty_permuted``, ``nonzero_static``, ``slice_inverse``, ``conv_tbc``,
  ``affine_grid_generator``, ``grid_sampler_3d``, ``from_file``, ``cudnn_is_acceptable``;
* the ``*_copy`` forms of the sparse accessors (``values_copy``, ``indices_copy``, ...).
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._signature import signature
from .pointwise._declare import _check_dtype

__all__ = ["native_layer_norm", "native_batch_norm", "native_group_norm", "native_dropout",
           "native_norm", "nuclear_norm", "norm_except_dim", "empty_permuted", "nonzero_static",
           "slice_inverse", "conv_tbc", "affine_grid_generator", "grid_sampler_3d", "from_file",
           "cudnn_is_acceptable", "sparse_compressed_tensor", "values_copy", "indices_copy",
           "crow_indices_copy", "col_indices_copy", "ccol_indices_copy", "row_indices_copy",
           "is_distributed", "dequantize"]


def _affine(out, weight, bias, shape):
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


@signature("native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, "
           "Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)")
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """Layer norm over the last ``len(normalized_shape)`` dims, with the mean and reciprocal
    standard deviation it used (shaped ``input``'s leading dims plus ones).

    Example::

        >>> out, mean, rstd = ember.native_layer_norm(ember.ones(2, 3), [3], None, None, 1e-5)
        >>> mean.shape
        ember.Size([2, 1])
    """
    from ..nn._functional import normalization as norms

    normalized_shape, dims = norms._normalized_dims(input, normalized_shape)
    norms._check_affine_shape(weight, "weight", normalized_shape)
    norms._check_affine_shape(bias, "bias", normalized_shape)
    norms._check_mixed(input, weight, bias)
    norms._compute(input, "LayerNormKernelImpl")  # (refuses the dtypes torch has no kernel for)
    mean, rstd = _moments(input, dims, eps)
    out = _affine((input - mean) * rstd, weight, bias, normalized_shape)
    return out, mean, rstd


def _moments(input, dims, eps):
    """The mean and ``1 / sqrt(var + eps)`` over ``dims`` (kept) that torch's norm kernels save:
    their running (Welford) mean, NaN where an infinity is followed by other elements."""
    from .reduce import var_mean

    var, mean = var_mean(input, dims, correction=0, keepdim=True)
    return mean, (var + eps).rsqrt()


@signature("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
           "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, "
           "Tensor)")
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """Batch norm over every dim but the channels (dim 1). Training normalises with the batch
    statistics, updates the running ones in place and returns the batch mean and reciprocal
    standard deviation; evaluation uses the running statistics and returns empty tensors.

    Example::

        >>> out, mean, invstd = ember.native_batch_norm(ember.ones(4, 2), None, None, None,
        ...                                             None, True, 0.1, 1e-5)
        >>> mean
        tensor([1., 1.])
    """
    from ..nn._functional import normalization as norms

    _check_dtype("batch_norm", input.dtype, "bic")
    norms._check_mixed(input, weight, bias, running_mean, running_var)
    if input.dim() >= 2:
        channels = input.shape[1]
        weight, bias, running_mean, running_var = (
            _first_channels(t, channels, name) for t, name in (
                (weight, "weight"), (bias, "bias"), (running_mean, "running_mean"),
                (running_var, "running_var")))
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be "
                         "None")
    if training and input.numel() == 0:
        raise RuntimeError(f"input tensor must have at least one element, but got input_sizes "
                           f"= {list(input.shape)}")
    shape = (1, -1) + (1,) * (input.dim() - 2)
    dims = (0,) + tuple(range(2, input.dim()))
    if training:
        mean = input.mean(dims)
        var = input.var(dims, unbiased=False)
        invstd = (var + eps).rsqrt()
        if running_mean is not None or running_var is not None:
            _update_running_stats(input, mean, var, running_mean, running_var, momentum, dims)
        out = _channel_scale_shift(input, mean, invstd, weight, bias, shape)
        # torch saves the statistics for its backward: they are outputs without a gradient
        return out, mean.detach(), invstd.detach()
    out = _channel_scale_shift(input, running_mean, (running_var + eps).rsqrt(), weight, bias,
                               shape)
    empty = input.new_empty(0)
    return out, empty, empty.clone()


def _channel_scale_shift(input, mean, rstd, weight, bias, shape):
    """Batch norm's ``(input - mean) * rstd * weight + bias`` in torch's kernel's form."""
    from ..nn._functional.normalization import scale_shift

    vectors = [None if v is None else v.reshape(shape) for v in (mean, rstd, weight, bias)]
    return scale_shift(input, *vectors)


def _first_channels(vector, channels, name):
    """The entries of a per-channel ``vector`` that torch's CPU batch norm reads, one for each
    of the ``channels``: a longer vector's tail is ignored (and left as it was); a shorter
    one is refused, where torch's kernel reads past its end."""
    if vector is None or vector.dim() != 1 or vector.shape[0] == channels:
        return vector
    if vector.shape[0] < channels:
        raise RuntimeError(f"native_batch_norm: {name} has {vector.shape[0]} elements for "
                           f"{channels} channels")
    return vector[:channels]


def _update_running_stats(input, mean, var, running_mean, running_var, momentum, dims):
    from ..autograd.grad_mode import no_grad

    count = builtins.int(np.prod([input.shape[d] for d in dims]))
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
        if running_var is not None:
            unbiased = var.detach() * (count / builtins.max(count - 1, 1))
            running_var.mul_(1 - momentum).add_(unbiased * momentum)


@signature("native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, "
           "SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)")
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):  # noqa: N803 - torch's names
    """Group norm of ``input`` (``N`` samples, ``C`` channels of ``HxW`` elements) in
    ``group`` groups, with each sample and group's mean and reciprocal standard deviation.

    Example::

        >>> out, mean, rstd = ember.native_group_norm(ember.ones(2, 4, 3), None, None, 2, 4,
        ...                                           3, 2, 1e-5)
        >>> mean.shape
        ember.Size([2, 2])
    """
    from ..nn._functional import normalization as norms

    norms._check_mixed(input, weight, bias)
    norms._compute(input, "GroupNormKernelImpl")  # (refuses the dtypes torch has no kernel for)
    if input.numel() != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.")
    grouped = input.reshape(N, group, C // group * HxW)
    mean, rstd = _moments(grouped, (2,), eps)
    out = norms.group_scale_shift(input.reshape(N, C, HxW), mean, rstd, weight, bias)
    return out.reshape(input.shape), mean.reshape(N, group), rstd.reshape(N, group)


def native_dropout(input, p, train):
    """Dropout that also returns its keep mask (bool). ``train=False`` keeps everything.

    Example::

        >>> out, mask = ember.native_dropout(ember.ones(3), 0.5, False)
        >>> mask
        tensor([True, True, True])
    """
    from .creation import ones_like

    if train is False:
        return input.clone(), ones_like(input, dtype=dt.bool)
    if p == 1:
        return input * 0, input.new_zeros(input.shape, dtype=dt.bool)
    mask = ones_like(input).bernoulli_(1 - p).to(dt.bool)
    return input * mask / (1 - p), mask


_NO_KERNEL = ("Could not run 'aten::{}' with arguments from the 'CPU' backend. This could be "
              "because the operator doesn't exist for this backend, or was omitted during the "
              "selective/custom build process (if using custom build).")


@signature("native_norm(Tensor input, Scalar? p=2, int[1]? dim=None, bool keepdim=False, "
           "ScalarType? dtype=None) -> Tensor", overloaded=True, any_layout=True)
def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The ``p``-norm of a sparse tensor's specified values (torch has it for sparse tensors
    only; use :func:`ember.linalg.vector_norm` for dense ones).

    Example::

        >>> ember.native_norm(ember.tensor([3., 0., 4.]).to_sparse())
        tensor(5.)
    """
    if not getattr(input, "is_sparse", False) or not hasattr(input, "_values"):
        raise NotImplementedError(_NO_KERNEL.format("native_norm") +
                                  " Use ember.linalg.vector_norm for a dense tensor.")
    if dim is not None:
        return input.to_dense().norm(p, dim, keepdim, dtype=dtype)
    values = input.coalesce().values()
    return values.norm(p) if dtype is None else values.to(dtype).norm(p)


@signature("nuclear_norm(Tensor input, PyObject dim=None, bool keepdim=False, *, "
           "Tensor? out=None) -> Tensor", overloaded=True)  # (dim: int[2], or keepdim)
def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of the singular values of each matrix (the last two dims, or ``dim``), as
    ``ember.linalg.matrix_norm(input, 'nuc')``; deprecated in torch, which warns.

    Example::

        >>> ember.nuclear_norm(ember.eye(3))
        tensor(3.)
    """
    from ._registry import write_out
    from .linalg import linalg_matrix_norm

    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead", UserWarning,
                  stacklevel=2)
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    dims = (-2, -1) if dim is None else tuple(dim)
    return write_out(linalg_matrix_norm(input, "nuc", dims, keepdim), out, "nuclear_norm")


@signature("norm_except_dim(Tensor v, int pow=2, int dim=0) -> Tensor")
def norm_except_dim(v, pow=2, dim=0):  # noqa: A002 - torch's name
    """The ``pow``-norm over every dim but ``dim``, kept as size-1 dims (``dim=-1``: over
    everything, a scalar); weight normalisation divides by it.

    Example::

        >>> ember.norm_except_dim(ember.ones(2, 3), 2, 0)
        tensor([[1.7321],
                [1.7321]])
    """
    if dim == -1:
        return v.norm(pow)
    kept = [1] * v.dim()
    kept[dim] = v.shape[dim]
    if dim == v.dim() - 1 and dim != 0:
        return v.reshape(-1, v.shape[dim]).norm(pow, 0).reshape(kept)
    # as torch, the dim moves first and the rest flattens (an empty dim makes -1 ambiguous)
    rows = v.transpose(0, dim).reshape(v.shape[dim], -1)
    return rows.norm(pow, 1).reshape(kept)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of ``size`` whose memory runs along ``physical_layout`` (the
    dims from outermost to innermost): ``(0, 2, 3, 1)`` is channels last.

    Example::

        >>> ember.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1)).stride()
        (60, 1, 15, 3)
    """
    from .creation import empty

    size, physical_layout = tuple(size), tuple(physical_layout)
    if sorted(physical_layout) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(physical_layout)}")
    stored = empty([size[d] for d in physical_layout], dtype=dtype, device=device,
                   pin_memory=pin_memory)
    result = stored.permute(tuple(np.argsort(physical_layout).tolist()))
    return result.requires_grad_() if requires_grad else result


@signature("nonzero_static(Tensor input, *, SymInt size, int fill_value=-1) -> Tensor")
def nonzero_static(input, *, size, fill_value=-1):
    """:meth:`ember.Tensor.nonzero_static` as a function.

    Example::

        >>> ember.nonzero_static(ember.tensor([0, 2]), size=2)
        tensor([[ 1],
                [-1]])
    """
    return input.nonzero_static(size=size, fill_value=fill_value)


@signature("slice_inverse(Tensor input, Tensor src, int dim=0, SymInt? start=None, "
           "SymInt? end=None, SymInt step=1) -> Tensor")
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """:meth:`ember.Tensor.slice_inverse` as a function.

    Example::

        >>> ember.slice_inverse(ember.arange(4.), ember.zeros(2), 0, 1, 3)
        tensor([0., 1.])
    """
    return input.slice_inverse(src, dim, start, end, step)


@signature("conv_tbc(Tensor input, Tensor weight, Tensor bias, int pad=0) -> Tensor")
def conv_tbc(input, weight, bias, pad=0):
    """A 1-d convolution of a time x batch x channels ``input`` with a kernel x in x out
    ``weight``, giving time x batch x out (fairseq's layout).

    Example::

        >>> ember.conv_tbc(ember.ones(5, 2, 3), ember.ones(3, 3, 4), ember.zeros(4)).shape
        ember.Size([3, 2, 4])
    """
    from ..nn._functional.extras import conv_tbc as functional_conv_tbc

    return functional_conv_tbc(input, weight, bias, pad)


@signature("affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor")
def affine_grid_generator(theta, size, align_corners):
    """``ember.nn.functional.affine_grid(theta, size, align_corners)``.

    Example::

        >>> theta = ember.tensor([[[1., 0., 0.], [0., 1., 0.]]])
        >>> ember.affine_grid_generator(theta, [1, 1, 2, 2], False).shape
        ember.Size([1, 2, 2, 2])
    """
    from ..nn.functional import affine_grid

    if len(size) not in (4, 5):  # (torch's kernel words it so; nn.functional raises its own)
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    return affine_grid(theta, list(size), align_corners=align_corners)


_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@signature("grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, "
           "int padding_mode, bool align_corners) -> Tensor")
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``ember.nn.functional.grid_sample`` on a 5-d input, with torch's integer codes for the
    mode (0 bilinear, 1 nearest) and the padding (0 zeros, 1 border, 2 reflection).

    Example::

        >>> grid = ember.zeros(1, 1, 1, 1, 3)
        >>> ember.grid_sampler_3d(ember.ones(1, 1, 2, 2, 2), grid, 0, 0, False)
        tensor([[[[[1.]]]]])
    """
    from ..nn.functional import grid_sample

    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    return grid_sample(input, grid, mode=_INTERPOLATION[interpolation_mode],
                       padding_mode=_PADDING[padding_mode], align_corners=align_corners)


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False):
    """The first ``size`` elements stored in the binary file ``filename`` (native byte order),
    as a 1-d tensor. With ``shared=True`` the tensor maps the file, so writes reach it.

    Example::

        >>> import tempfile, numpy as np
        >>> path = tempfile.mktemp(); np.arange(3, dtype=np.float32).tofile(path)
        >>> ember.from_file(path, size=3)
        tensor([0., 1., 2.])
    """
    from .._tensor import tensor as _tensor

    dtype = dt.get_default_dtype() if dtype is None else dt.to_dtype(dtype)
    if shared:
        array = np.memmap(filename, dtype=dtype.np, mode="r+", shape=(size,))
        result = Tensor._make(np.asarray(array).view(type=np.ndarray), _cpu())
    else:
        array = np.fromfile(filename, dtype=dtype.np, count=size)
        if array.size < size:
            raise RuntimeError(f"unexpected EOF, expected {size * dtype.itemsize} more bytes. "
                               f"The file might be corrupted.")
        result = _tensor(array, dtype=dtype)
    return result if device is None else result.to(device)


def _cpu():
    from .._device import CPU

    return CPU


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory=False,
                             requires_grad=False, check_invariants=None):
    """A CSR (``layout=ember.sparse_csr``) or CSC (``ember.sparse_csc``) matrix from its
    compressed and plain indices: :func:`ember.sparse_csr_tensor` or
    :func:`ember.sparse_csc_tensor` by layout (ember has no block layouts).

    Example::

        >>> s = ember.sparse_compressed_tensor(ember.tensor([0, 1, 2]), ember.tensor([1, 0]),
        ...                                    ember.tensor([1., 2.]), (2, 2),
        ...                                    layout=ember.sparse_csr)
        >>> s.to_dense()
        tensor([[0., 1.],
                [2., 0.]])
    """
    from .. import sparse
    from .._tensor import sparse_csc, sparse_csr

    build = {sparse_csr: sparse.sparse_csr_tensor, sparse_csc: sparse.sparse_csc_tensor}
    if layout not in build:
        name = "none" if layout is None else str(layout).rpartition(".")[2]
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {name}")
    return build[layout](compressed_indices, plain_indices, values, size, dtype=dtype,
                         device=device, pin_memory=pin_memory, requires_grad=requires_grad,
                         check_invariants=check_invariants)


def cudnn_is_acceptable(tensor):
    """Whether cuDNN would take ``tensor``: never in ember (it calls cuDNN through CuPy only
    inside its own convolutions).

    Example::

        >>> ember.cudnn_is_acceptable(ember.ones(2))
        False
    """
    return False


@signature("is_distributed(Tensor input) -> bool")
def is_distributed(input):
    """False, as torch answers for every tensor.

    Example::

        >>> ember.is_distributed(ember.ones(2))
        False
    """
    return False


def dequantize(tensor):
    """A non-quantized tensor (or each of a list of them) as float32, as torch's.

    Example::

        >>> ember.dequantize(ember.arange(2))
        tensor([0., 1.])
    """
    if isinstance(tensor, (list, tuple)):
        for i, item in enumerate(tensor):
            if not isinstance(item, Tensor):
                raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                                f"{type(item).__name__}")
        return [t.dequantize() for t in tensor]
    if not isinstance(tensor, Tensor):
        raise TypeError(f"dequantize() received an invalid combination of arguments - got "
                        f"({type(tensor).__name__}), but expected one of:\n"
                        f" * (Tensor input)\n * (tuple of Tensors tensors)\n")
    return tensor.dequantize()


def _accessor_copy(name):
    def copy(input):
        return getattr(input, name)().clone()
    copy.__name__ = copy.__qualname__ = f"{name}_copy"
    copy.__doc__ = (f"A copy of ``input.{name}()``: a sparse tensor's; a dense one raises "
                    f"torch's RuntimeError.\n\n    Example::\n\n        >>> ember.values_copy("
                    f"ember.eye(2).to_sparse().coalesce())\n        tensor([1., 1.])\n")
    return signature(f"{name}_copy(Tensor input) -> Tensor", any_layout=True)(copy)


values_copy = _accessor_copy("values")
indices_copy = _accessor_copy("indices")
crow_indices_copy = _accessor_copy("crow_indices")
col_indices_copy = _accessor_copy("col_indices")
ccol_indices_copy = _accessor_copy("ccol_indices")
row_indices_copy = _accessor_copy("row_indices")
