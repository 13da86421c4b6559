"""``skip_init``: build a module without running its parameter initialisation.

Example::

    >>> m = ember.nn.utils.skip_init(ember.nn.Linear, 5, 1)
    >>> m.weight.shape
    ember.Size([1, 5])
"""

from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialised parameters and buffers: the module is
    built on the ``meta`` device (no memory, no initialisation) and then given empty memory on
    ``kwargs['device']`` (default: the CPU). ``module_cls`` must take a ``device`` argument.

    Example::

        >>> ember.nn.utils.skip_init(ember.nn.Linear, 2, 3).weight.device
        device(type='cpu')
    """
    from ..modules.module import Module

    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    module = module_cls(*args, device="meta", **kwargs)
    _give_empty_memory(module, final_device)
    return module


def _give_empty_memory(module, device):
    """Replace every meta parameter and buffer of ``module`` by empty memory on ``device``."""
    import ember

    for submodule in module.modules():
        for name, param in submodule._parameters.items():
            if param is not None:
                fresh = ember.empty(param.shape, dtype=param.dtype, device=device)
                submodule._parameters[name] = ember.nn.Parameter(fresh, param.requires_grad)
        for name, buffer in submodule._buffers.items():
            if buffer is not None:
                submodule._buffers[name] = ember.empty(buffer.shape, dtype=buffer.dtype,
                                                       device=device)
