"""How gradients keep their masks: the entry of a MaskedTensor's data into an operation.

Autograd records the operations on the plain data. Where a MaskedTensor enters an operation,
its data passes through :class:`_MaskGate`, which does nothing going forward; going backward it
hands on the incoming gradient as a MaskedTensor that specifies only elements the input
specified (torch gets the same from running autograd on MaskedTensors themselves). Gradients
then flow back as MaskedTensors, and the operations of the backward pass, dispatched to
MaskedTensor, ignore unspecified elements: a NaN where the input was masked out does not
reach a gradient that sums over it, and a leaf's ``.grad`` is a MaskedTensor.

Example::

    >>> x = masked_tensor(ember.tensor([1., 0.]), ember.tensor([True, False]),
    ...                   requires_grad=True)
    >>> (x / 0.5).sum().backward()
    >>> x.grad
    MaskedTensor(
      [  2.0000,       --]
    )
"""

from __future__ import annotations

import ember

from .core import MaskedTensor, _make, is_masked_tensor

__all__ = []

# A MaskedTensor made in the backward pass carries this flag: its masked-out elements hold 0,
# "no gradient". Derivatives that read the data past the mask (the engine's sums, matrix
# products) then add nothing for them, where a NaN under the mask of an input would
# otherwise come back as 0 * NaN.
_GRADIENT = "_is_masked_gradient"


def is_gradient(value):
    return is_masked_tensor(value) and value.__dict__.get(_GRADIENT, False)


def as_gradient(value):
    """The MaskedTensor ``value`` (or those in a tuple or list) as gradients: masked-out
    elements zeroed, the flag set."""
    if isinstance(value, (tuple, list)):
        return type(value)(as_gradient(item) for item in value)
    if not is_masked_tensor(value) or is_gradient(value):
        return value
    fields = value.__dict__
    fields["_masked_data"] = fields["_masked_data"].masked_fill(~fields["_masked_mask"], 0)
    fields[_GRADIENT] = True
    return value


def _masked_gradient(grad, mask):
    """``grad`` as a MaskedTensor gradient specifying only what both it and ``mask``
    specify."""
    if grad is None:
        return None
    if is_masked_tensor(grad):
        return as_gradient(_make(MaskedTensor, grad._masked_data, grad._masked_mask & mask))
    return as_gradient(_make(MaskedTensor, grad, mask.expand_as(grad)))


class _MaskGate(ember.autograd.Function):
    """Identity on ``data``; its gradient comes back masked by ``mask``."""

    @staticmethod
    def forward(ctx, data, mask):
        ctx.gate_mask = mask
        return data.view_as(data)

    @staticmethod
    def backward(ctx, grad):
        return _masked_gradient(grad, ctx.gate_mask), None


class GetData(_MaskGate):
    """The gate of :meth:`MaskedTensor.get_data` (its node is ``GetDataBackward``, as
    torch's)."""


class _BroadcastGate(ember.autograd.Function):
    """``tensor`` broadcast to ``shape``; a MaskedTensor gradient is reduced back by masked
    sums (unspecified elements left out), as torch reduces a broadcast operand's gradient."""

    @staticmethod
    def forward(ctx, tensor, shape):
        ctx.source_shape = tuple(tensor.shape)
        return tensor.expand(shape)

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.source_shape
        lead = grad.dim() - len(shape)
        dims = tuple(range(lead)) + tuple(
            lead + i for i, size in enumerate(shape) if size == 1 and grad.shape[lead + i] != 1)
        if dims:
            grad = grad.sum(dims, keepdim=True)
        if lead:
            grad = grad.reshape(shape)
        return grad, None


def gated(value, mask=None, gate=_MaskGate):
    """The plain tensor an operation should compute on for the operand ``value``: a
    MaskedTensor's data (through the gate, with ``mask`` or its own), anything else as it is.

    Example::

        >>> mt = masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False]))
        >>> gated(mt)
        tensor([1., 2.])
    """
    if not is_masked_tensor(value):
        return value
    data = value._masked_data
    if not (data.requires_grad and ember.is_grad_enabled()):
        return data
    return gate.apply(data, value._masked_mask if mask is None else mask)


def broadcast_gated(value, shape):
    """A plain operand that requires grad, broadcast to ``shape`` so that its gradient is
    reduced with masked sums; anything else as it is."""
    if (not isinstance(value, ember.Tensor) or is_masked_tensor(value)
            or not (value.requires_grad and ember.is_grad_enabled())
            or tuple(value.shape) == tuple(shape)):
        return value
    return _BroadcastGate.apply(value, tuple(shape))
