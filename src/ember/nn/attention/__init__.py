"""``ember.nn.attention``: backend selection for scaled dot product attention, and its extras.

:func:`sdpa_kernel` enables a chosen set of :class:`SDPBackend` values for a block, as torch's
does; ember's CPU kernel serves MATH and FLASH_ATTENTION, so disabling both raises torch's error.
:mod:`~ember.nn.attention.bias` has the causal biases, :mod:`~ember.nn.attention.flex_attention`
score and mask modifications.

Example::

    >>> from ember.nn.attention import SDPBackend, sdpa_kernel
    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     out = ember.nn.functional.scaled_dot_product_attention(*[ember.randn(1, 2, 3, 4)] * 3)
"""

from __future__ import annotations

import contextlib

from . import _backends
from ._backends import SDPBackend

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS",
           "register_flash_attention_impl", "activate_flash_attention_impl",
           "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl"]

# torch warns why a fused kernel was skipped when this is True; ember has no fused kernels
WARN_FOR_UNFUSED_KERNELS = False


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Enable only ``backends`` (one :class:`SDPBackend` or a list) inside the ``with`` block.

    Example::

        >>> with sdpa_kernel([SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION]):
        ...     pass
    """
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    backends = [backends] if isinstance(backends, SDPBackend) else list(dict.fromkeys(backends))
    previous = list(_backends.enabled)
    try:
        _backends.set_enabled(backends)
        yield {}
    finally:
        _backends.set_enabled(previous)


# --- torch's registry of alternative flash-attention implementations (FA3, FA4 on CUDA) ---

_FLASH_IMPLS: dict = {}
_active_impl = {"name": None, "handle": None}


def register_flash_attention_impl(impl, *, register_fn):
    """Register ``register_fn`` as the activation function of the implementation ``impl``.

    Example::

        >>> register_flash_attention_impl("mine", register_fn=lambda: None)
        >>> "mine" in list_flash_attention_impls()
        True
    """
    _FLASH_IMPLS[impl] = register_fn


def list_flash_attention_impls():
    """Names of the registered flash-attention implementations.

    Example::

        >>> isinstance(list_flash_attention_impls(), list)
        True
    """
    return list(_FLASH_IMPLS)


def current_flash_attention_impl():
    """The name of the active implementation, or None for the default kernel.

    Example::

        >>> current_flash_attention_impl() is None
        True
    """
    return _active_impl["name"]


def activate_flash_attention_impl(impl):
    """Activate the registered implementation ``impl`` by calling its ``register_fn``.

    Example::

        >>> register_flash_attention_impl("mine", register_fn=lambda: None)
        >>> activate_flash_attention_impl("mine"); restore_flash_attention_impl()
    """
    if impl not in _FLASH_IMPLS:
        raise ValueError(f"Unknown flash attention impl '{impl}'. "
                         f"Available implementations: {list_flash_attention_impls()}")
    restore_flash_attention_impl()
    _active_impl["handle"] = _FLASH_IMPLS[impl]()
    _active_impl["name"] = impl


def restore_flash_attention_impl():
    """Return to the default kernel, removing the active implementation's registration.

    Example::

        >>> restore_flash_attention_impl()
    """
    handle = _active_impl["handle"]
    if handle is not None and hasattr(handle, "remove"):
        handle.remove()
    _active_impl["name"] = _active_impl["handle"] = None
