"""Operator definitions, one module per family.

============  =====================================================================
module        operators
============  =====================================================================
pointwise     arithmetic, comparisons, logic, elementwise math (``exp``, ``sin``...)
reduce        sums, means, norms, sorting, scans, ``unique``...
shape         views (``view``, ``transpose``...) and rearrangements (``cat``...)
index         ``__getitem__``/``__setitem__``, gather/scatter, masks
linalg        ``matmul`` and ``ember.linalg``
creation      factories, ranges, copies and dtype/device conversion
random        generators and sampling
============  =====================================================================
"""

from . import profiler  # noqa: E402,F401  (ember.ops.profiler: torch.ops.profiler's range ops)
from ._namespaces import import_module, load_library, loaded_libraries  # noqa: E402,F401


def __getattr__(name):
    """``ember.ops.<name>`` for a name that is no submodule: torch's operator namespace
    (``ember.ops.aten``, a custom ``ember.ops.mylib``), made on first use."""
    import importlib.util

    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        # ``from ember.ops import <submodule>`` asks this hook before importing it
        return importlib.import_module(f"{__name__}.{name}")
    from ._namespaces import namespace
    return namespace(name)
