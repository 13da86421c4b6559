"""``ember.nn.attention.varlen``: torch's variable-length (packed) flash attention.

torch runs it only with its CUDA flash-attention kernel; ember has no such kernel, so the
functions raise ``NotImplementedError`` naming what to use instead: split the packed
sequences at ``cu_seq_q``/``cu_seq_k`` and call
:func:`~ember.nn.functional.scaled_dot_product_attention` on each (``is_causal=True`` for the
``window_size=(-1, 0)`` case).

Example::

    >>> from ember.nn.attention.varlen import AuxRequest
    >>> AuxRequest(lse=True).lse
    True
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["varlen_attn", "varlen_attn_out", "AuxRequest"]


class AuxRequest(NamedTuple):
    """Which auxiliary outputs :func:`varlen_attn` should return (torch's fields)."""

    lse: bool = False


def _unavailable(name):
    raise NotImplementedError(
        f"torch.nn.attention.varlen.{name} needs torch's CUDA flash-attention kernel, which "
        "ember does not have; split the packed sequences at cu_seq_q/cu_seq_k and call "
        "ember.nn.functional.scaled_dot_product_attention on each instead")


def varlen_attn(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, return_aux=None,
                scale=None, window_size=(-1, -1), enable_gqa=False, seqused_k=None,
                block_table=None, num_splits=None):
    """torch's packed-sequence flash attention: raises ``NotImplementedError`` in ember.

    Example::

        >>> varlen_attn(None, None, None, None, None, 0, 0)  # doctest: +SKIP
    """
    _unavailable("varlen_attn")


def varlen_attn_out(out, query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, return_aux=None,
                    scale=None, window_size=(-1, -1), enable_gqa=False, seqused_k=None,
                    block_table=None, num_splits=None):
    """torch's packed-sequence flash attention into ``out``: raises ``NotImplementedError``.

    Example::

        >>> varlen_attn_out(None, None, None, None, None, None, 0, 0)  # doctest: +SKIP
    """
    _unavailable("varlen_attn_out")
