"""torch.backends.cuda's scaled-dot-product-attention switches, sharing their state with
:func:`ember.nn.attention.sdpa_kernel` (one set of enabled backends, as in torch)."""

from __future__ import annotations

import contextlib
import warnings

from ..nn.attention import _backends
from ..nn.attention._backends import SDPBackend

__all__ = ["SDPAParams", "allow_fp16_bf16_reduction_math_sdp", "can_use_cudnn_attention",
           "can_use_efficient_attention", "can_use_flash_attention", "cudnn_sdp_enabled",
           "enable_cudnn_sdp", "enable_flash_sdp", "enable_math_sdp", "enable_mem_efficient_sdp",
           "flash_sdp_enabled", "fp16_bf16_reduction_math_sdp_allowed", "is_ck_sdpa_available",
           "is_flash_attention_available", "math_sdp_enabled", "mem_efficient_sdp_enabled",
           "sdp_kernel"]

_math_reduction = {"allowed": False}


def _enabled(backend):
    return backend in _backends.enabled


def _set(backend, enabled):
    current = [b for b in _backends.enabled if b is not backend]
    _backends.set_enabled(current + [backend] if enabled else current)


def flash_sdp_enabled():
    """Whether the flash-attention backend is enabled.

    Example::

        >>> flash_sdp_enabled()
        True
    """
    return _enabled(SDPBackend.FLASH_ATTENTION)


def enable_flash_sdp(enabled):
    """Enable or disable the flash-attention backend."""
    _set(SDPBackend.FLASH_ATTENTION, enabled)


def mem_efficient_sdp_enabled():
    """Whether the memory-efficient backend is enabled."""
    return _enabled(SDPBackend.EFFICIENT_ATTENTION)


def enable_mem_efficient_sdp(enabled):
    """Enable or disable the memory-efficient backend."""
    _set(SDPBackend.EFFICIENT_ATTENTION, enabled)


def math_sdp_enabled():
    """Whether the math (reference) backend is enabled."""
    return _enabled(SDPBackend.MATH)


def enable_math_sdp(enabled):
    """Enable or disable the math backend (with flash attention off too, ember's CPU kernel
    refuses to run, as torch's)."""
    _set(SDPBackend.MATH, enabled)


def cudnn_sdp_enabled():
    """Whether the cuDNN backend is enabled."""
    return _enabled(SDPBackend.CUDNN_ATTENTION)


def enable_cudnn_sdp(enabled):
    """Enable or disable the cuDNN backend."""
    _set(SDPBackend.CUDNN_ATTENTION, enabled)


def fp16_bf16_reduction_math_sdp_allowed():
    """Whether the math backend may reduce in half precision (torch's flag; default False)."""
    return _math_reduction["allowed"]


def allow_fp16_bf16_reduction_math_sdp(enabled):
    """Allow the math backend to reduce in half precision (recorded; ember reduces in the
    input's precision)."""
    _math_reduction["allowed"] = bool(enabled)


def is_flash_attention_available():
    """Whether torch's CUDA flash-attention kernel is built in: never in ember."""
    return False


def is_ck_sdpa_available():
    """Whether ROCm's composable-kernel attention is built in: never in ember."""
    return False


class SDPAParams:
    """The arguments of one attention call, as the ``can_use_*`` checks take them.

    Example::

        >>> q = ember.ones(1, 1, 2, 4)
        >>> SDPAParams(q, q, q, None, 0.0, False, False).is_causal
        False
    """

    def __init__(self, query, key, value, attn_mask, dropout, is_causal, enable_gqa):
        self.query, self.key, self.value = query, key, value
        self.attn_mask, self.dropout = attn_mask, dropout
        self.is_causal, self.enable_gqa = is_causal, enable_gqa


def _cuda_kernel_check(name, debug):
    if debug:
        warnings.warn(f"{name}: ember has no CUDA attention kernels; the math kernel runs",
                      stacklevel=3)
    return False


def can_use_flash_attention(params, debug=False):
    """Whether torch's CUDA flash kernel could run these arguments: never in ember."""
    return _cuda_kernel_check("can_use_flash_attention", debug)


def can_use_efficient_attention(params, debug=False):
    """Whether torch's CUDA memory-efficient kernel could run these arguments: never."""
    return _cuda_kernel_check("can_use_efficient_attention", debug)


def can_use_cudnn_attention(params, debug=False):
    """Whether torch's cuDNN attention kernel could run these arguments: never in ember."""
    return _cuda_kernel_check("can_use_cudnn_attention", debug)


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Deprecated: enable the chosen backends inside the block (use
    :func:`ember.nn.attention.sdpa_kernel`).

    Example::

        >>> with sdp_kernel(enable_flash=False):  # doctest: +SKIP
        ...     pass
    """
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see `torch.nn.attention.sdpa_kernel()`"
                  " for the new context manager, with updated signature.", FutureWarning,
                  stacklevel=3)
    from ..nn.attention import sdpa_kernel
    chosen = [backend for backend, on in ((SDPBackend.FLASH_ATTENTION, enable_flash),
                                          (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
                                          (SDPBackend.MATH, enable_math),
                                          (SDPBackend.CUDNN_ATTENTION, enable_cudnn)) if on]
    with sdpa_kernel(chosen):
        yield {}
