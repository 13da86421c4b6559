"""``ember.nn.modules.instancenorm``: torch's module path.

ember defines the normalisation layers in ``normalization.py``, their lazy forms in ``lazy.py``;
this module re-exports :class:`InstanceNorm1d`, :class:`InstanceNorm2d`, :class:`InstanceNorm3d`,
:class:`LazyInstanceNorm1d`, :class:`LazyInstanceNorm2d`, :class:`LazyInstanceNorm3d` under torch's
path, so torch's imports work unchanged.

Example::

    >>> from ember.nn.modules.instancenorm import InstanceNorm1d
"""

from .lazy import (
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    _LazyNormBase,  # noqa: F401  (torch's private bases, which real code uses)
)
from .normalization import (
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
    _NormBase,  # noqa: F401
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

# torch defines these classes in this module: their __module__ names it, so that a pickled
# model names torch's path for them (ember.save writes torch.<path>)
for _cls in (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LazyInstanceNorm1d,
              LazyInstanceNorm2d, LazyInstanceNorm3d, _InstanceNorm):
    _cls.__module__ = __name__
