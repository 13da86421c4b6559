"""``ember.nn.modules.batchnorm``: torch's module path.

ember defines the normalisation layers in ``normalization.py``, their lazy forms in ``lazy.py``;
this module re-exports :class:`BatchNorm1d`, :class:`BatchNorm2d`, :class:`BatchNorm3d`,
:class:`LazyBatchNorm1d`, :class:`LazyBatchNorm2d`, :class:`LazyBatchNorm3d`,
:class:`SyncBatchNorm` under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.nn.modules.batchnorm import BatchNorm1d
"""

# torch's private bases live here too: real code subclasses them and checks isinstance
from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, _LazyNormBase
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase
from .sync_batchnorm import SyncBatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d",
           "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm"]

# torch defines these classes in this module: their __module__ names it, so that a pickled
# model names torch's path for them (ember.save writes torch.<path>)
for _cls in (BatchNorm1d, BatchNorm2d, BatchNorm3d, LazyBatchNorm1d, LazyBatchNorm2d,
              LazyBatchNorm3d, SyncBatchNorm, _NormBase, _BatchNorm, _LazyNormBase):
    _cls.__module__ = __name__
