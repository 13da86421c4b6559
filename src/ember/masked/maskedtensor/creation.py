"""The two ways to make a MaskedTensor, as ``torch.tensor`` and ``torch.as_tensor``.

Example::

    >>> masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False])).get_mask()
    tensor([ True, False])
"""

from __future__ import annotations

from .core import MaskedTensor, _new

__all__ = ["as_masked_tensor", "masked_tensor"]


def masked_tensor(data, mask, requires_grad=False):
    """A new leaf MaskedTensor holding copies of ``data`` and the bool ``mask``.

    Example::

        >>> mt = masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False]),
        ...                    requires_grad=True)
        >>> mt.requires_grad, mt.is_leaf
        (True, True)
    """
    return _new(MaskedTensor, data, mask, requires_grad, stacklevel=3)


def as_masked_tensor(data, mask):
    """A MaskedTensor of ``data`` and ``mask`` that keeps ``data``'s autograd history:
    gradients flow back to ``data``.

    Example::

        >>> x = ember.tensor([1., 2.], requires_grad=True)
        >>> as_masked_tensor(x * 2, ember.tensor([True, False])).requires_grad
        True
    """
    return MaskedTensor._from_values(data, mask)
