"""``ember.backends.cpu``: the CPU's capabilities, as ``torch.backends.cpu``.

Example::

    >>> ember.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    True
"""

from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """The widest SIMD level of this CPU that torch's kernels use: ``'AVX512'`` (AVX-512 F,
    BW, VL and DQ), ``'AVX2'`` (with FMA) or ``'DEFAULT'``, read from the features NumPy
    detects at run time.

    Example::

        >>> get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
        True
    """
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:
        return _capability_from_build()
    if all(features.get(f"AVX512{part}") for part in ("F", "BW", "VL", "DQ")):
        return "AVX512"
    return "AVX2" if features.get("AVX2") and features.get("FMA3") else "DEFAULT"


def _capability_from_build():
    """The level from NumPy's build record (the SIMD groups it found: ``AVX512_*`` or
    ``X86_V4`` for AVX-512, ``AVX2`` or ``X86_V3`` for AVX2)."""
    import numpy as np

    try:
        found = np.__config__.CONFIG["SIMD Extensions"]["found"]
    except (AttributeError, KeyError, TypeError):
        return "DEFAULT"
    found = {str(f).upper() for f in found}
    if "X86_V4" in found or any(f.startswith("AVX512") for f in found):
        return "AVX512"
    return "AVX2" if found & {"AVX2", "X86_V3"} else "DEFAULT"
