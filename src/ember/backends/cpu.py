"""``ember.backends.cpu``: the CPU's capabilities, as ``torch.backends.cpu``.

Example::

    >>> ember.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    True
"""

from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """The widest SIMD level NumPy dispatches to here: ``'AVX512'``, ``'AVX2'`` or
    ``'DEFAULT'``."""
    import numpy as np

    try:
        found = np.__config__.CONFIG["SIMD Extensions"]["found"]
    except (AttributeError, KeyError, TypeError):
        return "DEFAULT"
    found = {str(f).upper() for f in found}
    if any(f.startswith("AVX512") for f in found):
        return "AVX512"
    return "AVX2" if "AVX2" in found else "DEFAULT"
