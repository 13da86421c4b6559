"""``ember.nn.attention.flex_attention``: attention with user score and mask modifications.

``score_mod(score, b, h, q_idx, kv_idx)`` rewrites each attention score and
``mask_mod(b, h, q_idx, kv_idx)`` says which scores take part. torch compiles these into a fused
kernel; ember evaluates them once on broadcast index tensors (shapes ``(B,1,1,1)``,
``(1,H,1,1)``, ``(1,1,L,1)``, ``(1,1,1,S)``) over the full score matrix, which gives torch's
unfused (eager) results. A mod must therefore be written with tensor operations, as torch's
documentation requires of them too.

Example::

    >>> from ember.nn.attention.flex_attention import create_block_mask, flex_attention
    >>> causal = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx
    >>> q = ember.randn(1, 2, 4, 8)
    >>> mask = create_block_mask(causal, None, None, 4, 4)
    >>> flex_attention(q, q, q, block_mask=mask).shape
    ember.Size([1, 2, 4, 8])
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple, TypedDict

from ... import _dtype as dt
from ..._tensor import Tensor, tensor
from ...ops.creation import arange, zeros

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions",
           "create_block_mask", "create_mask", "or_masks", "and_masks", "noop_mask"]


class FlexKernelOptions(TypedDict, total=False):
    """Tuning options of torch's compiled kernel; accepted and ignored by ember's reference."""

    num_warps: int
    num_stages: int
    BLOCK_M: int
    BLOCK_N: int
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool
    BACKEND: str


class AuxRequest(NamedTuple):
    """Which auxiliary outputs :func:`flex_attention` should return.

    Example::

        >>> AuxRequest(lse=True).lse
        True
    """

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs of :func:`flex_attention` (None where not requested).

    Example::

        >>> AuxOutput().lse is None
        True
    """

    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(batch, head, token_q, token_kv):
    """A ``mask_mod`` that keeps every score.

    Example::

        >>> bool(noop_mask(0, 0, 1, 2))
        True
    """
    return _as_tensor(True)


def or_masks(*mask_mods):
    """A ``mask_mod`` keeping a score when any of ``mask_mods`` keeps it.

    Example::

        >>> m = or_masks(lambda b, h, q, k: q >= k, lambda b, h, q, k: k == 0)
    """
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = _as_tensor(False)
        for mod in mask_mods:
            result = result | mod(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods):
    """A ``mask_mod`` keeping a score when all of ``mask_mods`` keep it.

    Example::

        >>> m = and_masks(lambda b, h, q, k: q >= k, lambda b, h, q, k: q - k < 2)
    """
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = _as_tensor(True)
        for mod in mask_mods:
            result = result & mod(b, h, q_idx, kv_idx)
        return result

    return and_mask


def _as_tensor(value):
    return tensor(value)


def _indices(B, H, Q_LEN, KV_LEN, device):
    """Index tensors that broadcast to ``(B, H, Q_LEN, KV_LEN)``."""
    return (arange(B, device=device).view(B, 1, 1, 1), arange(H, device=device).view(1, H, 1, 1),
            arange(Q_LEN, device=device).view(1, 1, Q_LEN, 1),
            arange(KV_LEN, device=device).view(1, 1, 1, KV_LEN))


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """Evaluate a ``mask_mod`` (4 arguments) or ``score_mod`` (5) over the whole grid.

    A mask_mod gives a bool tensor of shape ``(B, H, Q_LEN, KV_LEN)``; a score_mod gives, like
    torch's, the bool tensor of positions whose modified zero score is not ``-inf``.

    Example::

        >>> create_mask(lambda b, h, q, k: q >= k, 1, 1, 2, 2)
        tensor([[[[ True, False],
                  [ True,  True]]]])
    """
    B, H = B or 1, H or 1
    b, h, q_idx, kv_idx = _indices(B, H, Q_LEN, KV_LEN, device)
    if _is_score_mod(mod_fn):
        scores = mod_fn(zeros((B, H, Q_LEN, KV_LEN), device=device), b, h, q_idx, kv_idx)
        return scores != float("-inf")
    return mod_fn(b, h, q_idx, kv_idx).to(dt.bool).expand(B, H, Q_LEN, KV_LEN).contiguous()


def _is_score_mod(fn):
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return len(params) == 5


class BlockMask:
    """A ``mask_mod`` evaluated over a ``(B, H, Q_LEN, KV_LEN)`` grid, with its block sizes.

    torch stores which ``BLOCK_SIZE`` tiles are empty, partial or full so its kernel can skip
    them; ember keeps the dense mask, which its reference computation uses directly.

    Example::

        >>> bm = create_block_mask(lambda b, h, q, k: q >= k, None, None, 4, 4)
        >>> bm.shape
        (1, 1, 4, 4)
    """

    def __init__(self, mask, BLOCK_SIZE=(128, 128), mask_mod=None):
        self._mask = mask
        self.mask_mod = mask_mod if mask_mod is not None else noop_mask
        self.BLOCK_SIZE = tuple(BLOCK_SIZE)
        self.seq_lengths = (mask.shape[-2], mask.shape[-1])

    @property
    def shape(self):
        return tuple(self._mask.shape)

    def to_dense(self):
        """Which ``BLOCK_SIZE`` tiles hold any kept score, as a ``(B, H, q_blocks, kv_blocks)`` int
        tensor (torch's block-level view)."""
        q_block, kv_block = self.BLOCK_SIZE
        B, H, L, S = self.shape
        rows, cols = math.ceil(L / q_block), math.ceil(S / kv_block)
        padded = self._mask.new_zeros((B, H, rows * q_block, cols * kv_block))
        padded[:, :, :L, :S] = self._mask
        tiles = padded.view(B, H, rows, q_block, cols, kv_block)
        return tiles.any(dim=5).any(dim=3).to(dt.int32)

    def sparsity(self):
        """Percentage of tiles that hold no kept score.

        Example::

            >>> create_block_mask(lambda b, h, q, k: q >= k, None, None, 4, 4).sparsity()
            0.0
        """
        dense = self.to_dense()
        return 100.0 * (1.0 - float(dense.sum()) / dense.numel())

    def __repr__(self):
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%)"


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=128, _compile=False,
                      separate_full_blocks=True, compute_dq_write_order=False, dq_kv_order=True):
    """Evaluate ``mask_mod`` into a :class:`BlockMask` (``B``/``H`` None: broadcast over them).

    Example::

        >>> create_block_mask(lambda b, h, q, k: q >= k, 2, None, 8, 8).shape
        (2, 1, 8, 8)
    """
    block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    return BlockMask(mask, block, mask_mod)


def _repeat_kv_heads(query, key, value, enable_gqa):
    hq, hk = query.shape[-3], key.shape[-3]
    if hq == hk:
        return key, value
    if not enable_gqa or hq % hk:
        raise ValueError(f"Expect query and key/value to have the same number of heads but got "
                         f"Hq={hq} and Hkv={hk}. Try setting enable_gqa=True for GQA.")
    return key.repeat_interleave(hq // hk, dim=-3), value.repeat_interleave(hq // hk, dim=-3)


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None, *, return_aux=None):
    """Attention whose scores pass through ``score_mod`` and are masked by ``block_mask``.

    ``query`` is ``(B, Hq, L, E)``, ``key``/``value`` ``(B, Hkv, S, E)``/``(B, Hkv, S, Ev)``.
    Rows with no kept score give zeros (and a log-sum-exp of ``-inf``), as torch's do.

    Example::

        >>> q = ember.randn(1, 1, 3, 4)
        >>> out = flex_attention(q, q, q, score_mod=lambda s, b, h, qi, ki: s - (qi - ki).abs())
        >>> out.shape
        ember.Size([1, 1, 3, 4])
    """
    if return_lse:
        warnings.warn("return_lse is deprecated and will be removed in v2.10. Please use "
                      "return_aux=AuxRequest(lse=True) instead.", FutureWarning, stacklevel=2)
    key, value = _repeat_kv_heads(query, key, value, enable_gqa)
    B, H, L, E = query.shape
    S = key.shape[-2]
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = (query * scale).matmul(key.transpose(-2, -1)).to(dt.float32 if query.dtype in (
        dt.float16, dt.bfloat16) else query.dtype)
    if score_mod is not None:
        scores = score_mod(scores, *_indices(B, H, L, S, query.device))
    if block_mask is not None:
        scores = scores.masked_fill(block_mask._mask.logical_not(), float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    empty_row = row_max == float("-inf")
    shifted = (scores - row_max.masked_fill(empty_row, 0.0)).exp()
    total = shifted.sum(dim=-1, keepdim=True)
    weights = shifted / total.masked_fill(empty_row, 1.0)
    out = weights.to(value.dtype).matmul(value)
    lse = (total.log() + row_max).squeeze(-1)
    if return_aux is not None:
        aux = AuxOutput(lse=lse if return_aux.lse else None,
                        max_scores=row_max.squeeze(-1) if return_aux.max_scores else None)
        return out, aux
    return (out, lse) if return_lse else out
