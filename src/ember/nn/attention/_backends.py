"""Which scaled-dot-product-attention backends are enabled (torch keeps these flags globally).

ember computes attention with one CPU kernel, which stands for torch's MATH and (on the CPU)
FLASH_ATTENTION backends: a call fails, as in torch, only when both are disabled.
"""

import warnings
from enum import IntEnum


class SDPBackend(IntEnum):
    """The backends of :func:`~ember.nn.functional.scaled_dot_product_attention` (torch's values).

    Example::

        >>> SDPBackend.MATH.value
        0
    """

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# in priority order; ERROR is never enabled
enabled: list = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
                 SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE]


def set_enabled(backends):
    """Enable exactly ``backends`` (keeping their order as the priority)."""
    enabled[:] = [b for b in backends if b is not SDPBackend.ERROR]


def cpu_kernel_available():
    """True while a backend that runs on the CPU (MATH or FLASH_ATTENTION) is enabled."""
    return SDPBackend.MATH in enabled or SDPBackend.FLASH_ATTENTION in enabled


def check_cpu_kernel(query=None, key=None, value=None, attn_mask=None, dropout_p=0.0,
                     enable_gqa=False):
    """Raise torch's error when no enabled CPU backend can take these arguments: both MATH
    and FLASH_ATTENTION disabled, or MATH disabled and the arguments outside what torch's
    CPU flash kernel accepts (it warns why, then refuses, as torch)."""
    if not cpu_kernel_available():
        raise RuntimeError(
            "No viable backend for scaled_dot_product_attention was found. This is likely due "
            "to turning off both the math kernel and the fused kernels.")
    if SDPBackend.MATH in enabled or query is None:
        return
    reason = flash_cpu_refusal(query, key, value, attn_mask, dropout_p, enable_gqa)
    if reason is not None:
        warnings.warn("Flash attention kernel not used because:", UserWarning, stacklevel=4)
        warnings.warn(reason, UserWarning, stacklevel=4)
        raise RuntimeError("No available kernel.  Aborting execution.")


def flash_cpu_refusal(query, key, value, attn_mask=None, dropout_p=0.0, enable_gqa=False):
    """Why torch's CPU flash-attention kernel would refuse these arguments (None: it takes
    them): it needs 4-D inputs of one batch size, equal head dims, the same number of heads
    (or grouped key/value heads with ``enable_gqa``), no dropout, a 2-D or 4-D mask and a
    contiguous last dimension.

    Example::

        >>> import ember
        >>> q = ember.ones(1, 2, 3, 4)
        >>> flash_cpu_refusal(q, q, q, dropout_p=0.1)
        'Both fused kernels do not support non-zero dropout.'
    """
    if dropout_p > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    dims = (query.dim(), key.dim(), value.dim())
    if dims != (4, 4, 4):
        return ("All fused kernels requires query, key and value to be 4 dimensional, but got "
                f"Query dim: {dims[0]}, Key dim: {dims[1]}, Value dim: {dims[2]} instead.")
    if not query.shape[0] == key.shape[0] == value.shape[0]:
        return "Batch sizes of query, key and value must be equal."
    heads = (query.shape[1], key.shape[1], value.shape[1])
    grouped = enable_gqa and heads[1] == heads[2] and heads[1] > 0 and heads[0] % heads[1] == 0
    if not (heads[0] == heads[1] == heads[2] or grouped):
        return ("Number of heads of query, key and value must be equal (or key/value heads "
                f"divide the query's with enable_gqa), but got {heads}.")
    if attn_mask is not None and attn_mask.dim() not in (2, 4):
        return f"The attention mask must be 2 or 4 dimensional, but got {attn_mask.dim()}."
    head_dims = (query.shape[-1], key.shape[-1], value.shape[-1])
    if not head_dims[0] == head_dims[1] == head_dims[2]:
        return f"Flash attention requires equal head dims for query, key and value: {head_dims}."
    if any(t.shape[-1] > 1 and t.stride(-1) != 1 for t in (query, key, value)):
        return "All fused kernels require the last dimension of the input to have stride 1."
    return None
