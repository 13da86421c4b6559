"""``ember.jit.unsupported_tensor_ops``: torch's documentation generator listing the Tensor
methods TorchScript cannot compile.

Example::

    >>> from ember.jit.unsupported_tensor_ops import execWrapper
    >>> namespace = {}; execWrapper("x = 1", {}, namespace); namespace["x"]
    1
"""

__all__ = ["execWrapper"]


def execWrapper(code, glob, loc):  # noqa: N802  (torch's name)
    """``exec(code, glob, loc)``."""
    exec(code, glob, loc)
