"""Lazy modules: layers whose input size is inferred from the first input.

Until the first call, the parameters are :class:`~ember.nn.UninitializedParameter` (and running
statistics :class:`~ember.nn.UninitializedBuffer`); the first ``forward`` materialises them with
the inferred shape, initialises them like the eager layer, and turns the module into that eager
class (``LazyLinear`` -> ``Linear``), as torch does. A state dict of an initialised module loads
into an uninitialised one.
"""

from __future__ import annotations

import itertools

from ... import _dtype as dt
from ..._tensor import tensor
from ...autograd import grad_mode
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _BatchNorm,
    _InstanceNorm,
    _NormBase,
)

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Mixin for modules whose parameter shapes depend on the first input.

    A subclass implements ``initialize_parameters(*args)`` (materialise and initialise) and sets
    ``cls_to_become`` to the eager class the module turns into afterwards.

    Example::

        >>> m = ember.nn.LazyLinear(10)
        >>> m.has_uninitialized_params()
        True
        >>> m(ember.ones(2, 3)).shape, type(m).__name__
        (ember.Size([2, 10]), 'Linear')
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(_lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars \
                    else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def initialize_parameters(self, *args, **kwargs):
        """Materialise and initialise the parameters from the first input."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether any parameter or buffer is still uninitialised."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                        self._buffers.values()))

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")


def _lazy_load_hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
                    unexpected_keys, error_msgs):
    """Materialise uninitialised tensors that the state dict has values for."""
    for name, param in itertools.chain(module._parameters.items(), module._buffers.items()):
        key = prefix + name
        if key in state_dict and param is not None and is_lazy(param):
            value = state_dict[key]
            if not is_lazy(value):
                with grad_mode.no_grad():
                    param.materialize(value.shape)


def _infer_parameters(module, args, kwargs):
    """Forward pre-hook: initialise from the first input, then become the eager class."""
    module.initialize_parameters(*args, **(kwargs or {}))
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    module._load_hook.remove()
    delattr(module, "_initialize_hook")
    delattr(module, "_load_hook")
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A :class:`Linear` whose ``in_features`` is inferred from the first input's last dim.

    Example::

        >>> m = ember.nn.LazyLinear(30)
        >>> m(ember.randn(128, 20)).shape, m.in_features
        (ember.Size([128, 30]), 20)
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        """Initialise like :class:`Linear` once the shapes are known."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Take ``in_features`` from ``input.shape[-1]``, materialise and initialise."""
        if self.has_uninitialized_params():
            with grad_mode.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} "
                                     f"is not equal to in_features from self.weight: "
                                     f"{self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self):
        """Initialise like the eager convolution once the shapes are known."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Take ``in_channels`` from the input, materialise and initialise."""
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            with grad_mode.no_grad():
                self.weight.materialize(shape)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input):
        unbatched = self._k + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) "
                               f"input to {self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == unbatched + 1 else input.shape[0]


def _lazy_conv(eager):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        eager.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                       padding_mode, device=device, dtype=dtype)
        _make_lazy(self, out_channels, bias, device, dtype)
    return __init__


def _lazy_conv_transpose(eager):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        eager.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                       dilation, padding_mode, device=device, dtype=dtype)
        _make_lazy(self, out_channels, bias, device, dtype)
    return __init__


def _make_lazy(module, out_channels, bias, device, dtype):
    module.weight = UninitializedParameter(device=device, dtype=dtype)
    module.out_channels = out_channels
    if bias:
        module.bias = UninitializedParameter(device=device, dtype=dtype)
    module._load_hook = module.register_load_state_dict_pre_hook(_lazy_load_hook)
    module._initialize_hook = module.register_forward_pre_hook(_infer_parameters,
                                                               with_kwargs=True)


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A :class:`Conv1d` whose ``in_channels`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyConv1d(33, 3)(ember.randn(20, 16, 50)).shape
        ember.Size([20, 33, 48])
    """

    cls_to_become = Conv1d
    __init__ = _lazy_conv(Conv1d)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A :class:`Conv2d` whose ``in_channels`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyConv2d(6, 5)(ember.randn(4, 1, 28, 28)).shape
        ember.Size([4, 6, 24, 24])
    """

    cls_to_become = Conv2d
    __init__ = _lazy_conv(Conv2d)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A :class:`Conv3d` whose ``in_channels`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyConv3d(4, 3)(ember.randn(1, 2, 5, 5, 5)).shape
        ember.Size([1, 4, 3, 3, 3])
    """

    cls_to_become = Conv3d
    __init__ = _lazy_conv(Conv3d)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """A :class:`ConvTranspose1d` whose ``in_channels`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyConvTranspose1d(33, 3, stride=2)(ember.randn(20, 16, 50)).shape
        ember.Size([20, 33, 101])
    """

    cls_to_become = ConvTranspose1d
    __init__ = _lazy_conv_transpose(ConvTranspose1d)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """A :class:`ConvTranspose2d` whose ``in_channels`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyConvTranspose2d(33, 3, stride=2)(ember.randn(2, 16, 5, 5)).shape
        ember.Size([2, 33, 11, 11])
    """

    cls_to_become = ConvTranspose2d
    __init__ = _lazy_conv_transpose(ConvTranspose2d)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """A :class:`ConvTranspose3d` whose ``in_channels`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyConvTranspose3d(4, 3)(ember.randn(1, 2, 3, 3, 3)).shape
        ember.Size([1, 4, 5, 5, 5])
    """

    cls_to_become = ConvTranspose3d
    __init__ = _lazy_conv_transpose(ConvTranspose3d)


class _LazyNormBase(LazyModuleMixin, _NormBase):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=dt.int64, device=device)

    def reset_parameters(self):
        """Initialise like the eager layer once ``num_features`` is known."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Take ``num_features`` from ``input.shape[1]``, materialise and initialise."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with grad_mode.no_grad():
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm1d` whose ``num_features`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyBatchNorm1d()(ember.randn(20, 100)).shape
        ember.Size([20, 100])
    """

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm2d` whose ``num_features`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyBatchNorm2d()(ember.randn(2, 3, 4, 4)).shape
        ember.Size([2, 3, 4, 4])
    """

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A :class:`BatchNorm3d` whose ``num_features`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyBatchNorm3d()(ember.randn(2, 3, 2, 2, 2)).shape
        ember.Size([2, 3, 2, 2, 2])
    """

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm1d` whose ``num_features`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyInstanceNorm1d()(ember.randn(2, 3, 8)).shape
        ember.Size([2, 3, 8])
    """

    cls_to_become = InstanceNorm1d
    _check_input_dim = InstanceNorm1d._check_input_dim
    _no_batch_dim = InstanceNorm1d._no_batch_dim


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm2d` whose ``num_features`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyInstanceNorm2d()(ember.randn(2, 3, 4, 4)).shape
        ember.Size([2, 3, 4, 4])
    """

    cls_to_become = InstanceNorm2d
    _check_input_dim = InstanceNorm2d._check_input_dim
    _no_batch_dim = InstanceNorm2d._no_batch_dim


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm3d` whose ``num_features`` is inferred from the first input.

    Example::

        >>> ember.nn.LazyInstanceNorm3d()(ember.randn(1, 2, 3, 3, 3)).shape
        ember.Size([1, 2, 3, 3, 3])
    """

    cls_to_become = InstanceNorm3d
    _check_input_dim = InstanceNorm3d._check_input_dim
    _no_batch_dim = InstanceNorm3d._no_batch_dim


# torch defines the lazy convolutions in conv.py and LazyLinear in linear.py: their __module__
# names those paths (their pickled name), and those modules hand them out from here
for _cls in (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
             LazyConvTranspose3d):
    _cls.__module__ = "ember.nn.modules.conv"
LazyLinear.__module__ = "ember.nn.modules.linear"
