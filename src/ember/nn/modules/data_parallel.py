"""DataParallel: torch's single-process multi-device wrapper, with its attributes.

Without a GPU it is a transparent wrapper (``device_ids == []``), exactly as torch's is on a
CPU-only machine. With GPUs, ember runs the whole batch on ``device_ids[0]`` and moves the
output to ``output_device``: the same numbers torch computes (apart from BatchNorm statistics,
which torch's replicas compute per slice of the batch), without splitting the batch. For real
data parallelism use :class:`~ember.nn.parallel.DistributedDataParallel`.
"""

from __future__ import annotations

import itertools

from ..._device import device as _device
from ..._tensor import Tensor
from .module import Module

__all__ = ["DataParallel", "data_parallel"]


def _gpu_indices():
    from ... import cuda

    return list(range(cuda.device_count())) if cuda.is_available() else []


def _device_index(value):
    if isinstance(value, int):
        return value
    value = _device(value)
    return 0 if value.index is None else value.index


def _move(value, target):
    """Tensors inside ``value`` (nested tuples, lists, dicts) moved to ``target``."""
    if isinstance(value, Tensor):
        return value.to(target)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(_move(v, target) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_move(v, target) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _move(v, target)) for k, v in value.items())
    return value


class DataParallel(Module):
    """Wrap ``module`` for data parallelism over ``device_ids`` (default: every GPU).

    Attributes as torch's: ``module`` (so state dict keys start with ``module.``),
    ``device_ids``, and on a machine with GPUs ``output_device``, ``dim`` and
    ``src_device_obj``. The module's parameters must be on ``device_ids[0]``.

    Example::

        >>> net = ember.nn.DataParallel(ember.nn.Linear(4, 2))
        >>> net(ember.randn(3, 4)).shape, list(net.state_dict())
        (ember.Size([3, 2]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        available = _gpu_indices()
        if not available:
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = available
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = _device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in itertools.chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError("module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        output = self.module(*_move(inputs, self.src_device_obj),
                             **_move(kwargs, self.src_device_obj))
        return _move(output, _device("cuda", self.output_device))


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """Evaluate ``module(*inputs, **module_kwargs)`` on GPUs as :class:`DataParallel` would.

    As in torch, a machine without a GPU raises ``RuntimeError``.

    Example::

        >>> net = ember.nn.Linear(4, 2).cuda()
        >>> ember.nn.parallel.data_parallel(net, ember.randn(3, 4, device="cuda")).shape
        ember.Size([3, 2])
    """
    if not _gpu_indices():
        raise RuntimeError("device type could not be determined")
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    wrapper = DataParallel(module, device_ids, output_device, dim)
    return wrapper(*inputs, **(module_kwargs or {}))


# torch defines DataParallel in torch.nn.parallel.data_parallel: its pickled name, a module
# that hands it out from here
DataParallel.__module__ = "ember.nn.parallel.data_parallel"
