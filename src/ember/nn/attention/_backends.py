"""Which scaled-dot-product-attention backends are enabled (torch keeps these flags globally).

ember computes attention with one CPU kernel, which stands for torch's MATH and (on the CPU)
FLASH_ATTENTION backends: a call fails, as in torch, only when both are disabled.
"""

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


def check_cpu_kernel():
    """Raise torch's error when every backend that could run on the CPU is disabled."""
    if not cpu_kernel_available():
        raise RuntimeError(
            "No viable backend for scaled_dot_product_attention was found. This is likely due "
            "to turning off both the math kernel and the fused kernels.")
