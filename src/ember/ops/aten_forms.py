"""ATen's own operators, with ATen's signatures: those torch reaches only through
``torch.ops.aten`` (``slice``, ``native_dropout_backward``, ``_batch_norm_with_update``,
``_upsample_bilinear2d_aa``...) and ATen's forms of operators ember has under other names
(``gelu``, ``_softmax``, ``avg_pool2d`` with ``stride=[]`` for "the kernel size",
``upsample_bilinear2d``, losses with integer reductions, ``_to_copy``, ``sym_size``, the
``*_backward`` operators...), each delegating to ember's differentiable operators. What
decompositions and exported graphs call; ``ember.ops.aten`` finds the names of
``ATEN_ONLY`` here before ember's own functions (``index_put`` is torch's, but ATen's takes
None for a whole dim where ``torch.index_put`` does not).

The gradients the ``*_backward`` operators return are themselves differentiable, as torch's
double-backward formulas are: the normalisation ones by their textbook formulas, the
convolution and pooling ones by ember's autograd through the forward operator
(``create_graph`` when an input requires grad).

Example::

    >>> import ember
    >>> ember.ops.aten.gelu(ember.tensor([1.]), approximate="tanh")
    tensor([0.8412])
    >>> ember.ops.aten.sym_size.int(ember.ones(2, 3), 1)
    3
"""

from __future__ import annotations

import builtins

ATEN_ONLY = (
    "slice", "_batch_norm_with_update", "native_dropout_backward",
    "max_pool2d_with_indices_backward", "_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa",
    "_softmax", "_log_softmax", "_log_softmax_backward_data", "gelu", "elu", "hardtanh",
    "leaky_relu", "avg_pool2d", "avg_pool3d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "reflection_pad1d",
    "reflection_pad2d", "reflection_pad3d", "replication_pad1d", "replication_pad2d",
    "replication_pad3d", "upsample_bilinear2d", "upsample_bicubic2d", "upsample_nearest2d",
    "col2im", "_cdist_forward", "_pdist_forward", "_native_batch_norm_legit_no_training",
    "embedding_dense_backward", "_to_copy", "copy", "alias", "_local_scalar_dense", "sym_size",
    "sym_stride", "sym_numel", "sym_storage_offset", "sym_is_contiguous",
    "native_layer_norm_backward", "native_group_norm_backward", "convolution_backward",
    "avg_pool2d_backward", "_adaptive_avg_pool2d_backward", "_fft_c2c", "_fft_r2c", "_fft_c2r",
    "index", "_unsafe_index", "index_put", "_unsafe_index_put", "_unsafe_view", "expand",
    "lift_fresh", "lift_fresh_copy", "glu", "hardswish", "hardsigmoid", "silu", "mish", "relu6",
    "softshrink", "softplus", "log_sigmoid", "linear", "im2col", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "max_unpool2d", "max_unpool3d",
    "mT", "mH", "stft", "unique_consecutive", "kl_div", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "triplet_margin_loss",
)


def _ember():
    import ember

    return ember


def _functional():
    from ..nn import functional

    return functional


# ---------------------------------------------------------------- views and normalisation


def slice(self, dim=0, start=None, end=None, step=1):  # noqa: A001 - aten's name
    """``self[..., start:end:step]`` along ``dim`` (a view), as ``aten::slice.Tensor``.

    Example::

        >>> ember.ops.aten.slice(ember.arange(10).reshape(2, 5), 1, -3)
        tensor([[2, 3, 4],
                [7, 8, 9]])
    """
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    from .internal import _wrap_dim
    dim = _wrap_dim(dim, self.dim())
    return self[(builtins.slice(None),) * dim + (builtins.slice(start, end, step),)]


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """Training-mode batch norm that updates the running statistics in place; returns the
    output, the batch mean, its reciprocal standard deviation and an empty ``reserve``
    (uint8: a buffer only cuDNN fills).

    Example::

        >>> mean, var = ember.zeros(2), ember.ones(2)
        >>> _ = ember.ops.aten._batch_norm_with_update(ember.ones(3, 2), None, None, mean,
        ...                                             var, 0.5, 1e-5)
        >>> mean
        tensor([0.5000, 0.5000])
    """
    ember = _ember()
    out, mean, rstd = ember.native_batch_norm(input, weight, bias, running_mean, running_var,
                                              True, momentum, eps)
    return out, mean, rstd, ember.empty(0, dtype=ember.uint8, device=input.device)


def native_dropout_backward(grad_output, mask, scale):
    """The gradient of ``native_dropout``: ``grad_output * mask * scale``.

    Example::

        >>> ember.ops.aten.native_dropout_backward(ember.ones(2), ember.tensor([True, False]), 2.)
        tensor([2., 0.])
    """
    return grad_output * (mask.type_as(grad_output) * scale)


# ---------------------------------------------------------------- antialiasing, max-pool gradient


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
                                     ceil_mode, indices):
    """The gradient of ``max_pool2d`` for ``grad_output``: each output's gradient added at
    the input position its ``indices`` entry names (within its plane).

    Example::

        >>> x = ember.tensor([[[1., 3.], [2., 0.]]])
        >>> out, idx = ember.nn.functional.max_pool2d(x, 2, return_indices=True)
        >>> ember.ops.aten.max_pool2d_with_indices_backward(ember.ones_like(out), x, 2, 2, 0,
        ...                                                  1, False, idx)
        tensor([[[0., 1.],
                 [0., 0.]]])
    """
    ember = _ember()
    planes = ember.zeros(self.shape, dtype=grad_output.dtype, device=grad_output.device)
    flat = planes.flatten(-2).scatter_add(-1, indices.flatten(-2), grad_output.flatten(-2))
    return flat.view(self.shape)


def _upsample_bilinear2d_aa(input, output_size, align_corners, *scales, scale_factors=None,
                            scales_h=None, scales_w=None):
    """Antialiased bilinear resampling of the last two dims (``interpolate(...,
    mode='bilinear', antialias=True)``). Takes torch's two overloads: ``(input, output_size,
    align_corners, scales_h, scales_w)`` and ``vec``'s ``(input, output_size, align_corners,
    scale_factors)``, where ``output_size`` may be None.

    Example::

        >>> ember.ops.aten._upsample_bilinear2d_aa(ember.arange(4.).view(1, 1, 1, 4), [1, 2],
        ...                                         False, None)
        tensor([[[[0.7143, 2.2857]]]])
    """
    return _upsample("bilinear_aa", input, output_size, align_corners, scales, scale_factors,
                     scales_h, scales_w)


def _upsample_bicubic2d_aa(input, output_size, align_corners, *scales, scale_factors=None,
                           scales_h=None, scales_w=None):
    """Antialiased bicubic resampling of the last two dims (``interpolate(...,
    mode='bicubic', antialias=True)``), with the overloads of
    :func:`_upsample_bilinear2d_aa`.

    Example::

        >>> ember.ops.aten._upsample_bicubic2d_aa(ember.arange(4.).view(1, 1, 1, 4), [1, 2],
        ...                                        False, None)
        tensor([[[[0.5868, 2.4132]]]])
    """
    return _upsample("bicubic_aa", input, output_size, align_corners, scales, scale_factors,
                     scales_h, scales_w)


# ---------------------------------------------------------------- softmax and activations


def _half_to_float(self, half_to_float):
    if half_to_float:
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")


def _softmax(self, dim, half_to_float):
    """``softmax`` along ``dim`` (``half_to_float`` asks for float32 results from half
    inputs, which torch's CPU refuses).

    Example::

        >>> ember.ops.aten._softmax(ember.tensor([0., 0.]), 0, False)
        tensor([0.5000, 0.5000])
    """
    _half_to_float(self, half_to_float)
    return _ember().softmax(self, dim)


def _log_softmax(self, dim, half_to_float):
    """``log_softmax`` along ``dim`` (see :func:`_softmax`).

    Example::

        >>> ember.ops.aten._log_softmax(ember.tensor([0., 0.]), 0, False)
        tensor([-0.6931, -0.6931])
    """
    _half_to_float(self, half_to_float)
    return _ember().log_softmax(self, dim)


def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    """The gradient of ``log_softmax`` given its ``output``: ``grad_output - exp(output) *
    sum(grad_output, dim)``, in ``grad_output``'s dtype as torch's CPU kernel.

    Example::

        >>> y = ember.log_softmax(ember.tensor([0., 0.]), 0)
        >>> ember.ops.aten._log_softmax_backward_data(ember.tensor([1., 0.]), y, 0,
        ...                                           ember.float32)
        tensor([ 0.5000, -0.5000])
    """
    return grad_output - output.exp() * grad_output.sum(dim, keepdim=True)


def gelu(self, *, approximate="none"):
    """``nn.functional.gelu``.

    Example::

        >>> ember.ops.aten.gelu(ember.tensor([0.]))
        tensor([0.])
    """
    return _functional().gelu(self, approximate=approximate)


def elu(self, alpha=1, scale=1, input_scale=1):
    """ATen's ELU: ``scale * x`` for positive ``x``, else ``scale * alpha * (exp(x *
    input_scale) - 1)`` (SELU and CELU are its special cases).

    Example::

        >>> ember.ops.aten.elu(ember.tensor([-1., 2.]), 1., 2.)
        tensor([-1.2642,  4.0000])
    """
    ember = _ember()
    negative = alpha * ember.expm1(self * input_scale)
    return scale * ember.where(self > 0, self, negative)


def hardtanh(self, min_val=-1, max_val=1):
    """``nn.functional.hardtanh``.

    Example::

        >>> ember.ops.aten.hardtanh(ember.tensor([-3., 0.5]))
        tensor([-1.0000,  0.5000])
    """
    return _functional().hardtanh(self, min_val, max_val)


def leaky_relu(self, negative_slope=0.01):
    """``nn.functional.leaky_relu``.

    Example::

        >>> ember.ops.aten.leaky_relu(ember.tensor([-1., 1.]), 0.5)
        tensor([-0.5000,  1.0000])
    """
    return _functional().leaky_relu(self, negative_slope)


def _same_as_functional(name, doc_example):
    """ATen's ``name(self, ...)`` where nn.functional's takes the same arguments in the same
    order (its ``inplace=`` aside)."""
    def form(self, *args, **kwargs):
        return getattr(_functional(), name)(self, *args, **kwargs)
    form.__name__ = form.__qualname__ = name
    form.__doc__ = f"``nn.functional.{name}``.\n\n    Example::\n\n        {doc_example}\n"
    return form


glu = _same_as_functional("glu", ">>> ember.ops.aten.glu(ember.tensor([1., 0.]))\n"
                                 "        tensor([0.5000])")
hardswish = _same_as_functional("hardswish", ">>> ember.ops.aten.hardswish(ember.tensor([3.]))"
                                             "\n        tensor([3.])")
hardsigmoid = _same_as_functional("hardsigmoid", ">>> ember.ops.aten.hardsigmoid(ember.tensor("
                                                 "[0.]))\n        tensor([0.5000])")
silu = _same_as_functional("silu", ">>> ember.ops.aten.silu(ember.tensor([0.]))\n"
                                   "        tensor([0.])")
mish = _same_as_functional("mish", ">>> ember.ops.aten.mish(ember.tensor([0.]))\n"
                                   "        tensor([0.])")
relu6 = _same_as_functional("relu6", ">>> ember.ops.aten.relu6(ember.tensor([9.]))\n"
                                     "        tensor([6.])")
softshrink = _same_as_functional("softshrink", ">>> ember.ops.aten.softshrink(ember.tensor("
                                               "[1.]), 0.5)\n        tensor([0.5000])")
softplus = _same_as_functional("softplus", ">>> ember.ops.aten.softplus(ember.tensor([0.]), 1, "
                                           "20)\n        tensor([0.6931])")
linear = _same_as_functional("linear", ">>> ember.ops.aten.linear(ember.ones(1, 2), "
                                       "ember.ones(3, 2)).shape\n        ember.Size([1, 3])")


def log_sigmoid(self):
    """``nn.functional.logsigmoid``.

    Example::

        >>> ember.ops.aten.log_sigmoid(ember.tensor([0.]))
        tensor([-0.6931])
    """
    return _functional().logsigmoid(self)


# ---------------------------------------------------------------- losses (reduction: an enum)

_REDUCTIONS = ("none", "mean", "sum")


def mse_loss(self, target, reduction=1):
    """``nn.functional.mse_loss`` with ATen's reduction number (0 none, 1 mean, 2 sum).

    Example::

        >>> ember.ops.aten.mse_loss(ember.zeros(2), ember.ones(2), 2)
        tensor(2.)
    """
    return _functional().mse_loss(self, target, reduction=_REDUCTIONS[reduction])


def l1_loss(self, target, reduction=1):
    """``nn.functional.l1_loss`` with ATen's reduction number.

    Example::

        >>> ember.ops.aten.l1_loss(ember.zeros(2), ember.ones(2))
        tensor(1.)
    """
    return _functional().l1_loss(self, target, reduction=_REDUCTIONS[reduction])


def smooth_l1_loss(self, target, reduction=1, beta=1.0):
    """``nn.functional.smooth_l1_loss`` with ATen's reduction number.

    Example::

        >>> ember.ops.aten.smooth_l1_loss(ember.zeros(1), ember.ones(1), 0, 2.)
        tensor([0.2500])
    """
    return _functional().smooth_l1_loss(self, target, reduction=_REDUCTIONS[reduction],
                                        beta=beta)


def huber_loss(self, target, reduction=1, delta=1.0):
    """``nn.functional.huber_loss`` with ATen's reduction number.

    Example::

        >>> ember.ops.aten.huber_loss(ember.zeros(1), ember.full((1,), 3.), 0, 1.)
        tensor([2.5000])
    """
    return _functional().huber_loss(self, target, reduction=_REDUCTIONS[reduction],
                                    delta=delta)


def binary_cross_entropy(self, target, weight=None, reduction=1):
    """``nn.functional.binary_cross_entropy`` with ATen's reduction number.

    Example::

        >>> ember.ops.aten.binary_cross_entropy(ember.tensor([0.5]), ember.tensor([1.]), None, 0)
        tensor([0.6931])
    """
    return _functional().binary_cross_entropy(self, target, weight,
                                              reduction=_REDUCTIONS[reduction])


def _mean_by_default(name, position, example):
    """ATen's ``name``: torch's top-level function of that name, whose Python binding
    reduces nothing by default, with the schema's default ``reduction=1`` (mean);
    ``position`` is the reduction's place among the positional arguments."""
    def form(*args, **kwargs):
        if len(args) <= position:
            kwargs.setdefault("reduction", 1)
        return getattr(_ember(), name)(*args, **kwargs)
    form.__name__ = form.__qualname__ = name
    form.__doc__ = (f"``torch.{name}`` with ATen's default reduction, the mean.\n\n"
                    f"    Example::\n\n        {example}\n")
    return form


kl_div = _mean_by_default("kl_div", 2, ">>> ember.ops.aten.kl_div(ember.zeros(2), ember.ones(2))"
                                       "\n        tensor(0.)")
binary_cross_entropy_with_logits = _mean_by_default(
    "binary_cross_entropy_with_logits", 4,
    ">>> ember.ops.aten.binary_cross_entropy_with_logits(ember.zeros(2), ember.ones(2))\n"
    "        tensor(0.6931)")
cosine_embedding_loss = _mean_by_default(
    "cosine_embedding_loss", 4,
    ">>> ember.ops.aten.cosine_embedding_loss(ember.ones(2, 2), ember.ones(2, 2), "
    "ember.ones(2))\n        tensor(0.)")
hinge_embedding_loss = _mean_by_default(
    "hinge_embedding_loss", 3,
    ">>> ember.ops.aten.hinge_embedding_loss(ember.ones(2), ember.ones(2))\n"
    "        tensor(1.)")
margin_ranking_loss = _mean_by_default(
    "margin_ranking_loss", 4,
    ">>> ember.ops.aten.margin_ranking_loss(ember.zeros(2), ember.ones(2), ember.ones(2))\n"
    "        tensor(1.)")
triplet_margin_loss = _mean_by_default(
    "triplet_margin_loss", 7,
    ">>> ember.ops.aten.triplet_margin_loss(ember.ones(1, 2), ember.ones(1, 2), "
    "ember.ones(1, 2))\n        tensor(1.)")


# ---------------------------------------------------------------- pooling and padding


def _stride(stride):
    """ATen's ``stride=[]``: the kernel size (nn.functional's None)."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride


def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """``nn.functional.avg_pool2d``; an empty ``stride`` is the kernel size.

    Example::

        >>> ember.ops.aten.avg_pool2d(ember.arange(4.).view(1, 2, 2), [2, 2])
        tensor([[[1.5000]]])
    """
    return _functional().avg_pool2d(self, kernel_size, _stride(stride), padding, ceil_mode,
                                     count_include_pad, divisor_override)


def avg_pool3d(self, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """``nn.functional.avg_pool3d``; an empty ``stride`` is the kernel size.

    Example::

        >>> ember.ops.aten.avg_pool3d(ember.ones(1, 2, 2, 2), [2, 2, 2]).shape
        ember.Size([1, 1, 1, 1])
    """
    return _functional().avg_pool3d(self, kernel_size, _stride(stride), padding, ceil_mode,
                                     count_include_pad, divisor_override)


def _adaptive_avg_pool2d(self, output_size):
    """``nn.functional.adaptive_avg_pool2d``.

    Example::

        >>> ember.ops.aten._adaptive_avg_pool2d(ember.arange(4.).view(1, 2, 2), [1, 1])
        tensor([[[1.5000]]])
    """
    return _functional().adaptive_avg_pool2d(self, output_size)


def _adaptive_avg_pool3d(self, output_size):
    """``nn.functional.adaptive_avg_pool3d``.

    Example::

        >>> ember.ops.aten._adaptive_avg_pool3d(ember.ones(1, 2, 2, 2), [1, 1, 1]).shape
        ember.Size([1, 1, 1, 1])
    """
    return _functional().adaptive_avg_pool3d(self, output_size)


def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """``nn.functional.max_pool2d`` with the indices of the maxima (within each plane).

    Example::

        >>> out, idx = ember.ops.aten.max_pool2d_with_indices(ember.arange(4.).view(1, 2, 2),
        ...                                                   [2, 2])
        >>> idx
        tensor([[[3]]])
    """
    return _functional().max_pool2d(self, kernel_size, _stride(stride), padding, dilation,
                                     ceil_mode, return_indices=True)


def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """``nn.functional.max_pool3d`` with the indices of the maxima (within each volume).

    Example::

        >>> out, idx = ember.ops.aten.max_pool3d_with_indices(ember.ones(1, 2, 2, 2), [2, 2, 2])
        >>> out.shape
        ember.Size([1, 1, 1, 1])
    """
    return _functional().max_pool3d(self, kernel_size, _stride(stride), padding, dilation,
                                     ceil_mode, return_indices=True)


def _padder(mode, dims):
    def pad(self, padding):
        return _functional().pad(self, padding, mode=mode)
    pad.__name__ = pad.__qualname__ = f"{'reflection' if mode == 'reflect' else 'replication'}" \
                                      f"_pad{dims}d"
    pad.__doc__ = (f"``nn.functional.pad(self, padding, mode='{mode}')`` over the last {dims} "
                   f"dim{'s' if dims > 1 else ''}.\n\n    Example::\n\n        >>> "
                   f"ember.ops.aten.{pad.__name__}(ember.arange(3.).view(1, {'1, ' * (dims - 1)}"
                   f"3), [1, 1] + [0, 0] * {dims - 1}).shape[-1]\n        5\n")
    return pad


reflection_pad1d, reflection_pad2d, reflection_pad3d = (_padder("reflect", d) for d in (1, 2, 3))
replication_pad1d, replication_pad2d, replication_pad3d = (
    _padder("replicate", d) for d in (1, 2, 3))


def im2col(self, kernel_size, dilation, padding, stride):
    """``nn.functional.unfold``: the sliding blocks of ``self`` as columns.

    Example::

        >>> ember.ops.aten.im2col(ember.ones(1, 1, 3, 3), [2, 2], [1, 1], [0, 0], [1, 1]).shape
        ember.Size([1, 4, 4])
    """
    return _functional().unfold(self, kernel_size, dilation, padding, stride)


def _unpool(self, indices, output_size):
    """Each value of ``self`` put at the position its index names within its plane (or
    volume) of ``output_size``, zeros elsewhere."""
    dims = len(output_size)
    lead = tuple(self.shape[:-dims])
    flat = self.new_zeros(lead + (_numel(output_size),))
    written = flat.scatter(-1, indices.flatten(-dims), self.flatten(-dims))
    return written.view(lead + tuple(output_size))


def _numel(sizes):
    total = 1
    for size in sizes:
        total *= size
    return total


def max_unpool2d(self, indices, output_size):
    """The inverse of ``max_pool2d`` given its ``indices``: an ``output_size`` plane per
    channel, zero where no maximum came from.

    Example::

        >>> ember.ops.aten.max_unpool2d(ember.tensor([[[5.]]]), ember.tensor([[[3]]]), [2, 2])
        tensor([[[0., 0.],
                 [0., 5.]]])
    """
    return _unpool(self, indices, output_size)


def max_unpool3d(self, indices, output_size, stride, padding):
    """The inverse of ``max_pool3d`` given its ``indices`` (``stride`` and ``padding`` are
    not needed to place them).

    Example::

        >>> ember.ops.aten.max_unpool3d(ember.ones(1, 1, 1, 1), ember.tensor([[[[7]]]]),
        ...                             [2, 2, 2], [2, 2, 2], [0, 0, 0]).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 1.])
    """
    return _unpool(self, indices, output_size)


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    """``nn.functional.fold``: sums the sliding blocks of ``self`` into an image.

    Example::

        >>> ember.ops.aten.col2im(ember.ones(1, 4, 1), [2, 2], [2, 2], [1, 1], [0, 0],
        ...                       [1, 1]).shape
        ember.Size([1, 1, 2, 2])
    """
    return _functional().fold(self, output_size, kernel_size, dilation, padding, stride)


# ---------------------------------------------------------------- resampling


def _upsample(mode, input, output_size, align_corners, scales, scale_factors, scales_h,
              scales_w):
    """The output size and coordinate scales as torch's upsample operators take them (the
    ``vec`` overload's ``scale_factors`` or ``scales_h``/``scales_w``), then interpolate's
    resampling."""
    import math

    from ..nn._functional.vision import _resample
    if scales and (scales[0] is None or isinstance(scales[0], (list, tuple))):
        scale_factors = scales[0]  # vec: (input, output_size, [align_corners,] scale_factors)
    elif scales:
        scales_h, scales_w = (tuple(scales) + (scales_w,))[:2]
    if scale_factors is None and (scales_h is not None or scales_w is not None):
        scale_factors = [scales_h, scales_w]
    if output_size is None:
        output_size = [math.floor(float(size) * factor)
                       for size, factor in zip(input.shape[-2:], scale_factors)]
    antialias = mode.endswith("_aa")
    return _resample(input, list(output_size), scale_factors, mode.removesuffix("_aa"),
                     align_corners, antialias)


def upsample_bilinear2d(input, output_size, align_corners, *scales, scale_factors=None,
                        scales_h=None, scales_w=None):
    """Bilinear resampling of the last two dims, as ``interpolate(..., mode='bilinear')``.
    Takes torch's overloads ``(input, output_size, align_corners, scales_h, scales_w)`` and
    ``vec``'s ``(input, output_size, align_corners, scale_factors)``.

    Example::

        >>> ember.ops.aten.upsample_bilinear2d(ember.tensor([[[[0., 1.]]]]), [1, 4], True)
        tensor([[[[0.0000, 0.3333, 0.6667, 1.0000]]]])
    """
    return _upsample("bilinear", input, output_size, align_corners, scales, scale_factors,
                     scales_h, scales_w)


def upsample_bicubic2d(input, output_size, align_corners, *scales, scale_factors=None,
                       scales_h=None, scales_w=None):
    """Bicubic resampling of the last two dims, with the overloads of
    :func:`upsample_bilinear2d`.

    Example::

        >>> ember.ops.aten.upsample_bicubic2d(ember.ones(1, 1, 2, 2), [3, 3], False).shape
        ember.Size([1, 1, 3, 3])
    """
    return _upsample("bicubic", input, output_size, align_corners, scales, scale_factors,
                     scales_h, scales_w)


def upsample_nearest2d(input, output_size, *scales, scale_factors=None, scales_h=None,
                       scales_w=None):
    """Nearest-neighbour resampling of the last two dims: ``(input, output_size, scales_h,
    scales_w)`` or ``vec``'s ``(input, output_size, scale_factors)``.

    Example::

        >>> ember.ops.aten.upsample_nearest2d(ember.tensor([[[[1., 2.]]]]), None, [1., 2.])
        tensor([[[[1., 1., 2., 2.]]]])
    """
    return _upsample("nearest", input, output_size, None, scales, scale_factors, scales_h,
                     scales_w)


# ---------------------------------------------------------------- Fourier transforms
# ``normalization``: 0 leaves the sum unscaled, 1 divides by sqrt(n), 2 by n (as ember.fft's
# primitives number their modes)


def _fft_dims(self, dim):
    return tuple(d % self.dim() for d in dim)


def _fft_c2c(self, dim, normalization, forward):
    """The complex DFT of ``self`` over ``dim`` (the inverse without ``forward``).

    Example::

        >>> ember.ops.aten._fft_c2c(ember.tensor([1+0j, 0j]), [0], 0, True)
        tensor([1.+0.j, 1.+0.j])
    """
    from ..fft import fft_c2c
    return fft_c2c(self, dims=_fft_dims(self, dim), mode=normalization, forward=forward)


def _fft_r2c(self, dim, normalization, onesided):
    """The DFT of real ``self`` over ``dim``; ``onesided`` keeps ``n // 2 + 1`` frequencies
    of the last dim.

    Example::

        >>> ember.ops.aten._fft_r2c(ember.tensor([1., 0., 0.]), [0], 0, True)
        tensor([1.+0.j, 1.+0.j])
    """
    from ..fft import fft_r2c
    return fft_r2c(self, dims=_fft_dims(self, dim), mode=normalization, onesided=onesided)


def _fft_c2r(self, dim, normalization, last_dim_size):
    """The real inverse DFT of the one-sided ``self`` over ``dim``, the last dim holding a
    signal of ``last_dim_size`` points.

    Example::

        >>> ember.ops.aten._fft_c2r(ember.tensor([3+0j, 0j]), [0], 2, 3)
        tensor([1., 1., 1.])
    """
    from ..fft import fft_c2r
    return fft_c2r(self, dims=_fft_dims(self, dim), mode=normalization,
                   last_size=last_dim_size)


# ---------------------------------------------------------------- distances and norms

_CDIST_MODES = {None: "use_mm_for_euclid_dist_if_necessary",
                0: "use_mm_for_euclid_dist_if_necessary", 1: "use_mm_for_euclid_dist",
                2: "donot_use_mm_for_euclid_dist"}


def _cdist_forward(x1, x2, p, compute_mode):
    """``cdist`` with torch's integer compute modes (None/0: matrix products when large,
    1: always, 2: never).

    Example::

        >>> ember.ops.aten._cdist_forward(ember.zeros(1, 2), ember.ones(1, 2), 2., None)
        tensor([[1.4142]])
    """
    return _ember().cdist(x1, x2, p, _CDIST_MODES[compute_mode])


def _pdist_forward(self, p=2.0):
    """``pdist``: the distances between the rows of ``self``.

    Example::

        >>> ember.ops.aten._pdist_forward(ember.tensor([[0., 0.], [3., 4.]]))
        tensor([5.])
    """
    return _ember().pdist(self, p)


def _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var,
                                         momentum, eps):
    """Evaluation-mode ``native_batch_norm`` (the running statistics normalise).

    Example::

        >>> out, _, _ = ember.ops.aten._native_batch_norm_legit_no_training(
        ...     ember.ones(2, 1), None, None, ember.ones(1), ember.ones(1), 0.1, 0.)
        >>> out
        tensor([[0.],
                [0.]])
    """
    return _ember().native_batch_norm(input, weight, bias, running_mean, running_var, False,
                                      momentum, eps)


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    """The gradient of ``embedding``'s weight: each row of ``grad_output`` added to the row
    its index names, none to ``padding_idx``; ``scale_grad_by_freq`` divides by how often
    each index occurs.

    Example::

        >>> ember.ops.aten.embedding_dense_backward(ember.ones(3, 1), ember.tensor([0, 0, 2]),
        ...                                         3, -1, False)
        tensor([[2.],
                [0.],
                [1.]])
    """
    ember = _ember()
    flat = indices.reshape(-1)
    rows = grad_output.reshape(flat.numel(), -1)
    if scale_grad_by_freq:
        counts = ember.bincount(flat, minlength=num_weights)
        rows = rows / counts[flat].unsqueeze(1).to(rows.dtype)
    if padding_idx >= 0:
        rows = rows * (flat != padding_idx).unsqueeze(1).to(rows.dtype)
    zeros = ember.zeros(num_weights, rows.shape[1], dtype=rows.dtype, device=rows.device)
    return zeros.index_add(0, flat, rows)


# ---------------------------------------------------------------- indexing


def _python_key(indices):
    """ATen's index list (None: the whole dim) as a Python index."""
    return tuple(builtins.slice(None) if index is None else index for index in indices)


def index(self, indices):
    """``self[indices]`` for ATen's list of index tensors, None taking a whole dim.

    Example::

        >>> ember.ops.aten.index(ember.arange(6).view(2, 3), [None, ember.tensor([2, 0])])
        tensor([[2, 0],
                [5, 3]])
    """
    return self[_python_key(indices)]


def _unsafe_index(self, indices):
    """:func:`index` (torch skips its bounds checks; ember checks).

    Example::

        >>> ember.ops.aten._unsafe_index(ember.arange(3), [ember.tensor([2])])
        tensor([2])
    """
    return index(self, indices)


def index_put(self, indices, values, accumulate=False):
    """``self`` with ``values`` written (added, with ``accumulate``) at ``indices``, ATen's
    list of index tensors where None takes a whole dim.

    Example::

        >>> ember.ops.aten.index_put(ember.zeros(2, 2), [None, ember.tensor([1])],
        ...                          ember.ones(1), True)
        tensor([[0., 1.],
                [0., 1.]])
    """
    ember = _ember()
    if all(index is not None for index in indices):
        return ember.index_put(self, tuple(indices), values, accumulate)
    from .index import _index_shape, _parse, _short, _value_for, index_put_op
    if values.dtype != self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_short(self)} for the destination and {_short(values)} for the "
                           f"source.")
    _, _, found, positions = _parse(self, _python_key(indices), tensor_scalars_as_int=False)
    if not found:  # every dim whole
        whole = values.expand(self.shape)
        return self + whole if accumulate else whole.clone()
    target = _index_shape(tuple(self.shape), [tuple(i.shape) for i in found], positions)
    return index_put_op(self, _value_for(self, values, target, True), *found,
                        positions=positions, accumulate=accumulate)


def _unsafe_index_put(self, indices, values, accumulate=False):
    """:func:`index_put` (torch skips its bounds checks; ember checks).

    Example::

        >>> ember.ops.aten._unsafe_index_put(ember.zeros(3), [ember.tensor([0, 0])],
        ...                                  ember.ones(2), True)
        tensor([2., 0., 0.])
    """
    return index_put(self, indices, values, accumulate)


def _unsafe_view(self, size):
    """``self.reshape(size)`` (torch's view that needs no later aliasing checks).

    Example::

        >>> ember.ops.aten._unsafe_view(ember.arange(4), [2, 2]).shape
        ember.Size([2, 2])
    """
    return self.reshape(size)


# ---------------------------------------------------------------- copies and sizes


def _to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None,
             non_blocking=False, memory_format=None):
    """A new tensor with ``self``'s values, converted to ``dtype``/``device`` (always a copy).

    Example::

        >>> ember.ops.aten._to_copy(ember.tensor([1.5]), dtype=ember.int64)
        tensor([1])
    """
    return self.to(device=device, dtype=dtype, non_blocking=non_blocking, copy=True)


def copy(self, src, non_blocking=False):
    """The functional ``copy_``: ``src`` broadcast to ``self``'s shape in ``self``'s dtype,
    as a new tensor.

    Example::

        >>> ember.ops.aten.copy(ember.zeros(2, 2), ember.tensor([1, 2]))
        tensor([[1., 2.],
                [1., 2.]])
    """
    return src.to(self.dtype).expand(self.shape).clone()


def alias(self):
    """A view of all of ``self``.

    Example::

        >>> x = ember.zeros(2)
        >>> ember.ops.aten.alias(x).add_(1) is not x, x
        (True, tensor([1., 1.]))
    """
    return self.view(self.shape)


def expand(self, size, *, implicit=False):
    """``self.expand(size)`` (``implicit``: an expansion torch inserted itself; no effect).

    Example::

        >>> ember.ops.aten.expand(ember.ones(1, 2), [3, 2], implicit=True).shape
        ember.Size([3, 2])
    """
    return self.expand(size)


def lift_fresh(self):
    """``self``: torch's marker for a constant tensor entering a traced program.

    Example::

        >>> x = ember.ones(1)
        >>> ember.ops.aten.lift_fresh(x) is x
        True
    """
    return self


def lift_fresh_copy(self):
    """A copy of ``self`` (the functional form of :func:`lift_fresh`).

    Example::

        >>> ember.ops.aten.lift_fresh_copy(ember.ones(1))
        tensor([1.])
    """
    return self.clone()


def mT(self):  # noqa: N802 - ATen's name
    """``self.mT``: the last two dims swapped (a view).

    Example::

        >>> ember.ops.aten.mT(ember.ones(2, 3)).shape
        ember.Size([3, 2])
    """
    return self.mT


def mH(self):  # noqa: N802 - ATen's name
    """``self.mH``: the conjugate of the last two dims swapped.

    Example::

        >>> ember.ops.aten.mH(ember.tensor([[1j, 2.]]))
        tensor([[0.-1.j],
                [2.-0.j]])
    """
    return self.mH


def stft(self, n_fft, hop_length=None, win_length=None, window=None, normalized=False,
         onesided=None, return_complex=None, align_to_window=None, *, center=None,
         pad_mode="reflect"):
    """ATen's ``stft``: no centring padding (``torch.stft``'s ``center=True`` pads in
    Python first); its ``center`` overload is reached with ``center=``/``pad_mode=`` given
    by keyword.

    Example::

        >>> ember.ops.aten.stft(ember.ones(8), 4, 2, return_complex=True).shape
        ember.Size([3, 3])
    """
    return _ember().stft(self, n_fft, hop_length, win_length, window,
                         center=bool(center), pad_mode=pad_mode, normalized=normalized,
                         onesided=onesided, return_complex=return_complex)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """``unique_consecutive`` with ATen's three results: the values, the inverse indices
    and the counts (empty when not asked for).

    Example::

        >>> ember.ops.aten.unique_consecutive(ember.tensor([1, 1, 2]), False, True)
        (tensor([1, 2]), tensor([], dtype=ember.int64), tensor([2, 1]))
    """
    ember = _ember()
    found = ember.unique_consecutive(self, return_inverse=True, return_counts=True, dim=dim)
    empty = ember.empty(0, dtype=ember.int64, device=self.device)
    return (found[0], found[1] if return_inverse else empty,
            found[2] if return_counts else empty)


def _local_scalar_dense(self):
    """The Python number of a one-element tensor (``item()``).

    Example::

        >>> ember.ops.aten._local_scalar_dense(ember.tensor([3]))
        3
    """
    return self.item()


def sym_size(self, dim=None):
    """``self.size(dim)``; all sizes without ``dim`` (the ``default`` overload).

    Example::

        >>> ember.ops.aten.sym_size(ember.ones(2, 3))
        [2, 3]
    """
    return list(self.shape) if dim is None else self.size(dim)


def sym_stride(self, dim=None):
    """``self.stride(dim)``; all strides without ``dim``.

    Example::

        >>> ember.ops.aten.sym_stride(ember.ones(2, 3), 0)
        3
    """
    return list(self.stride()) if dim is None else self.stride(dim)


def sym_numel(self):
    """``self.numel()``.

    Example::

        >>> ember.ops.aten.sym_numel(ember.ones(2, 3))
        6
    """
    return self.numel()


def sym_storage_offset(self):
    """``self.storage_offset()``.

    Example::

        >>> ember.ops.aten.sym_storage_offset(ember.arange(4)[1:])
        1
    """
    return self.storage_offset()


def sym_is_contiguous(self, memory_format=None):
    """``self.is_contiguous()``.

    Example::

        >>> ember.ops.aten.sym_is_contiguous(ember.ones(2, 3).t())
        False
    """
    if memory_format is None:
        return self.is_contiguous()
    return self.is_contiguous(memory_format=memory_format)


# ---------------------------------------------------------------- backward operators


def _vjp(forward, primals, cotangent, wanted):
    """The gradients of ``forward(*primals)`` for ``cotangent``, for the primals ``wanted``
    marks (None for the others), themselves differentiable (``create_graph``)."""
    ember = _ember()
    # a graph for double backward only when someone can ask for it (as torch's results)
    tracked = ember.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (*primals, cotangent))
    with ember.enable_grad():
        leaves = [p if p is None or p.requires_grad else p.detach().requires_grad_(want)
                  for p, want in zip(primals, wanted)]
        output = forward(*leaves)
        asked = [leaf for leaf, want in zip(leaves, wanted) if want and leaf is not None]
        grads = iter(ember.autograd.grad(output, asked, cotangent, create_graph=tracked,
                                         allow_unused=True, materialize_grads=True)
                     if asked else ())
    return tuple(next(grads) if want and leaf is not None else None
                 for leaf, want in zip(leaves, wanted))


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    """The gradients of ``native_layer_norm`` for ``grad_out`` from its saved ``mean`` and
    ``rstd``: (input, weight, bias), each None where ``output_mask`` is False.

    Example::

        >>> x = ember.tensor([[0., 2.], [1., 3.]])
        >>> _, mean, rstd = ember.native_layer_norm(x, [2], None, None, 1e-5)
        >>> gi, gw, gb = ember.ops.aten.native_layer_norm_backward(
        ...     ember.ones(2, 2), x, [2], mean, rstd, ember.ones(2), None, [True, True, True])
        >>> gb
        tensor([2., 2.])
    """
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    batch = tuple(range(input.dim() - len(normalized_shape)))
    mean, rstd = _tracking_statistics(input, mean, rstd, dims)
    normalized = (input - mean) * rstd
    return _normalization_grads(grad_out, normalized, rstd, weight, dims, batch, output_mask)


def native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group,  # noqa: N803
                               output_mask):
    """The gradients of ``native_group_norm`` for ``grad_out`` from its saved ``mean`` and
    ``rstd`` (``(N, group)`` each): (input, weight, bias), each None where ``output_mask`` is
    False.

    Example::

        >>> x = ember.arange(8.).view(2, 2, 2)
        >>> _, mean, rstd = ember.native_group_norm(x, None, None, 2, 2, 2, 1, 1e-5)
        >>> gi, gw, gb = ember.ops.aten.native_group_norm_backward(
        ...     ember.ones(2, 2, 2), x, mean, rstd, ember.ones(2), 2, 2, 2, 1, [True, True, True])
        >>> gb
        tensor([4., 4.])
    """
    grouped = input.reshape(N, group, -1)
    mean, rstd = _tracking_statistics(grouped, mean.reshape(N, group, 1),
                                      rstd.reshape(N, group, 1), (2,))
    normalized = (grouped - mean) * rstd
    per_channel = (N, C, HxW)
    channel_weight = None if weight is None else \
        weight.reshape(1, C, 1).expand(per_channel).reshape(N, group, -1)
    grads = _normalization_grads(grad_out.reshape(N, group, -1), normalized, rstd,
                                 channel_weight, (2,), (0, 2),
                                 (output_mask[0], False, False))
    grad_input = None if grads[0] is None else grads[0].reshape(input.shape)
    channels = grad_out.reshape(per_channel)
    grad_weight = (channels * normalized.reshape(per_channel)).sum((0, 2)) \
        if output_mask[1] else None
    grad_bias = channels.sum((0, 2)) if output_mask[2] else None
    return grad_input, grad_weight, grad_bias


def _tracking_statistics(input, mean, rstd, dims):
    """The saved ``mean`` and ``rstd`` (values unchanged) made to vary with ``input`` as the
    statistics they are: what the gradient of a backward operator needs (torch's
    double-backward formulas differentiate through them). ``d rstd = -rstd**3 / 2 d var``."""
    if not input.requires_grad:
        return mean, rstd
    mean, rstd = mean.detach(), rstd.detach()
    batch_mean = input.mean(dims, keepdim=True)
    variance = input.var(dims, unbiased=False, keepdim=True)
    tracked_mean = mean + (batch_mean - batch_mean.detach()).reshape(mean.shape)
    tracked_rstd = rstd - 0.5 * rstd ** 3 * (variance - variance.detach()).reshape(rstd.shape)
    return tracked_mean, tracked_rstd


def _normalization_grads(grad_out, normalized, rstd, weight, dims, batch, output_mask):
    """The textbook gradients of ``normalized * weight + bias`` where ``normalized`` is
    ``(x - mean(x)) * rstd`` over ``dims``: the input's, the weight's and the bias's (summed
    over ``batch``)."""
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad_normal = grad_out if weight is None else grad_out * weight
        grad_input = rstd * (grad_normal - grad_normal.mean(dims, keepdim=True)
                             - normalized * (grad_normal * normalized).mean(dims, keepdim=True))
    if output_mask[1] and weight is not None:
        grad_weight = (grad_out * normalized).sum(batch)
    if output_mask[2]:
        grad_bias = grad_out.sum(batch)
    return grad_input, grad_weight, grad_bias


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """The gradients of ``convolution`` for ``grad_output``: (input, weight, bias), each
    None where ``output_mask`` is False (``bias_sizes``: the bias's shape, None without).

    Example::

        >>> gi, gw, gb = ember.ops.aten.convolution_backward(
        ...     ember.ones(1, 1, 2), ember.ones(1, 1, 3), ember.ones(1, 1, 2), [1], [1], [0],
        ...     [1], False, [0], 1, [True, True, True])
        >>> gi, gb
        (tensor([[[1., 2., 1.]]]), tensor([2.]))
    """
    ember = _ember()
    bias = None if bias_sizes is None else \
        ember.zeros(bias_sizes, dtype=grad_output.dtype, device=grad_output.device)

    def forward(x, w, b):
        return ember.convolution(x, w, b, stride, padding, dilation, transposed,
                                 output_padding, groups)
    return _vjp(forward, (input, weight, bias), grad_output, output_mask)


def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    """The gradient of ``avg_pool2d`` for ``grad_output``.

    Example::

        >>> ember.ops.aten.avg_pool2d_backward(ember.ones(1, 1, 1), ember.ones(1, 2, 2),
        ...                                    [2, 2], [2, 2], [0, 0], False, True, None)
        tensor([[[0.2500, 0.2500],
                 [0.2500, 0.2500]]])
    """
    def forward(x):
        return avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override)
    return _vjp(forward, (self,), grad_output, (True,))[0]


def _adaptive_avg_pool2d_backward(grad_output, self):
    """The gradient of ``_adaptive_avg_pool2d`` for ``grad_output``.

    Example::

        >>> ember.ops.aten._adaptive_avg_pool2d_backward(ember.ones(1, 1, 1), ember.ones(1, 2, 2))
        tensor([[[0.2500, 0.2500],
                 [0.2500, 0.2500]]])
    """
    def forward(x):
        return _adaptive_avg_pool2d(x, grad_output.shape[-2:])
    return _vjp(forward, (self,), grad_output, (True,))[0]
