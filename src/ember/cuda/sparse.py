"""``ember.cuda.sparse``: torch's legacy sparse CUDA tensor types (need a GPU).

Example::

    >>> from ember.cuda.sparse import FloatTensor
"""

from ._unavailable import _gpu_class

__all__ = ["BFloat16Tensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
           "HalfTensor", "IntTensor", "LongTensor", "ShortTensor"]

BFloat16Tensor = _gpu_class("sparse.BFloat16Tensor")
ByteTensor = _gpu_class("sparse.ByteTensor")
CharTensor = _gpu_class("sparse.CharTensor")
DoubleTensor = _gpu_class("sparse.DoubleTensor")
FloatTensor = _gpu_class("sparse.FloatTensor")
HalfTensor = _gpu_class("sparse.HalfTensor")
IntTensor = _gpu_class("sparse.IntTensor")
LongTensor = _gpu_class("sparse.LongTensor")
ShortTensor = _gpu_class("sparse.ShortTensor")
