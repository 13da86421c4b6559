"""Converting convolution weights to another memory format (``channels_last``, ...).

ember's convolution kernels read any strides, so a converted weight gives the same results;
the conversion exists so that code written for torch runs and its weights keep torch's strides.
"""

from __future__ import annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, conv_types):
    if isinstance(module, conv_types):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, conv_types)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Give every Conv2d/ConvTranspose2d weight in ``module`` the strides of ``memory_format``.

    Returns ``module`` (changed in place).

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Conv2d(3, 8, 3))
        >>> net = ember.nn.utils.convert_conv2d_weight_memory_format(net, ember.channels_last)
        >>> net[0].weight.is_contiguous(memory_format=ember.channels_last)
        True
    """
    from ..modules.conv import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Give every Conv3d/ConvTranspose3d weight in ``module`` the strides of ``memory_format``.

    Example::

        >>> net = ember.nn.utils.convert_conv3d_weight_memory_format(
        ...     ember.nn.Conv3d(2, 4, 3), ember.channels_last_3d)
    """
    from ..modules.conv import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
