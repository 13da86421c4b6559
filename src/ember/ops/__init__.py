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
