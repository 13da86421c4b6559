"""``ember.backends.mps``: Apple's Metal backend, which ember does not have.

Example::

    >>> ember.backends.mps.is_available()
    False
"""

from __future__ import annotations

__all__ = ["is_available", "is_built", "get_core_count", "get_name", "is_macos13_or_newer",
           "is_macos_or_newer"]


def is_available():
    """False: ember has no MPS backend."""
    return False


def is_built():
    """False: ember has no MPS backend."""
    return False


def _no_mps(name):
    raise RuntimeError(f"Cannot execute {name}() without MPS backend.")


def is_macos_or_newer(major, minor):
    """Whether the MPS device runs on macOS ``major.minor`` or newer: needs MPS (raises, as
    torch does without it)."""
    _no_mps("isOnMacOSorNewer")


def is_macos13_or_newer(minor=0):
    """Whether the MPS device runs on macOS 13.``minor`` or newer: needs MPS (raises)."""
    _no_mps("isOnMacOSorNewer")


class _MPSBindingMissingError(RuntimeError, AttributeError):
    """No MPS: where torch's CPU build lacks the binding (AttributeError)."""


def get_name():
    """The MPS device's name: needs MPS (raises; AttributeError and RuntimeError, as torch's
    CPU build has no such binding)."""
    raise _MPSBindingMissingError("Cannot execute get_name() without MPS backend.")


def get_core_count():
    """The MPS device's GPU core count: needs MPS (raises, as :func:`get_name`)."""
    raise _MPSBindingMissingError("Cannot execute get_core_count() without MPS backend.")
