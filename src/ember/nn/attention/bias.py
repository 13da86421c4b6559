"""``ember.nn.attention.bias``: causal attention biases for unequal query and key lengths.

``causal_upper_left(L, S)`` lets query ``i`` attend keys ``0..i`` (``is_causal=True``);
``causal_lower_right(L, S)`` aligns the diagonal with the last key, as decoding with a cache
needs. Pass either as ``attn_mask`` to :func:`~ember.nn.functional.scaled_dot_product_attention`.

Example::

    >>> from ember.nn.attention.bias import causal_lower_right
    >>> causal_lower_right(2, 3)._materialize()
    tensor([[ True,  True, False],
            [ True,  True,  True]])
"""

from __future__ import annotations

import warnings
from enum import IntEnum

from ... import _dtype as dt
from ...ops.creation import ones

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """Where the causal diagonal starts: the top-left or the bottom-right corner.

    Example::

        >>> CausalVariant.LOWER_RIGHT.value
        2
    """

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias:
    """A causal mask of ``seq_len_q`` queries by ``seq_len_kv`` keys, materialised on demand.

    Example::

        >>> CausalBias(CausalVariant.UPPER_LEFT, 2, 3)._materialize().sum()
        tensor(3)
    """

    def __init__(self, variant, seq_len_q, seq_len_kv):
        if not isinstance(variant, CausalVariant):
            raise AssertionError("variant must be a CausalVariant")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=2)

    def _materialize(self, device=None):
        """The boolean mask (True = may attend) as a ``(seq_len_q, seq_len_kv)`` tensor."""
        allowed = ones((self.seq_len_q, self.seq_len_kv), dtype=dt.bool, device=device)
        if self.variant == CausalVariant.UPPER_LEFT:
            return allowed.tril(0)
        return allowed.tril(self.seq_len_kv - self.seq_len_q)

    def __repr__(self):
        return repr(self._materialize())


def _sizes(size):
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    return size


def causal_upper_left(*size):
    """A :class:`CausalBias` whose diagonal starts at the top-left corner (``is_causal=True``).

    Example::

        >>> causal_upper_left(2, 3)._materialize()
        tensor([[ True, False, False],
                [ True,  True, False]])
    """
    seq_len_q, seq_len_kv = _sizes(size)
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size):
    """A :class:`CausalBias` whose diagonal ends at the bottom-right corner.

    Example::

        >>> causal_lower_right(2, 3)._materialize()
        tensor([[ True,  True, False],
                [ True,  True,  True]])
    """
    seq_len_q, seq_len_kv = _sizes(size)
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
