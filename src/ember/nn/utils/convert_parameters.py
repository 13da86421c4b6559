"""Flatten parameters into one vector and write a vector back into parameters."""

from __future__ import annotations

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops.shape import cat

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param, old):
    device = param.device
    if old is not None and device != old:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return device


def parameters_to_vector(parameters):
    """All ``parameters`` flattened and concatenated into one 1-D tensor (differentiable).

    Example::

        >>> ember.nn.utils.parameters_to_vector(ember.nn.Linear(3, 2).parameters()).shape
        ember.Size([8])
    """
    device = None
    flat = []
    for param in parameters:
        device = _check_device(param, device)
        flat.append(param.view(-1))
    return cat(flat)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters`` (in place, via ``.data``).

    Example::

        >>> net = ember.nn.Linear(3, 2)
        >>> ember.nn.utils.vector_to_parameters(ember.zeros(8), net.parameters())
        >>> float(net.weight.abs().sum())
        0.0
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    with no_grad():
        for param in parameters:
            device = _check_device(param, device)
            count = param.numel()
            param.data = vec[pointer:pointer + count].view_as(param).data
            pointer += count
