"""torch's top-level constants: ``pi``, ``e``, ``inf``, ``nan``, ``newaxis`` and the
``legacy_contiguous_format`` alias.

Example::

    >>> ember.pi
    3.141592653589793
"""

import math

from ._tensor import contiguous_format as legacy_contiguous_format  # torch's alias

__all__ = ["pi", "e", "inf", "nan", "newaxis", "legacy_contiguous_format"]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None
