"""``torch.version``: the version of ember and of the GPU toolkits it was built for.

ember is pure Python: ``cuda``, ``hip``, ``rocm`` and ``xpu`` are None as in torch's CPU build
(CUDA support comes from CuPy at run time: see ``ember.cuda.is_available()``).

Example::

    >>> ember.version.__version__ == ember.__version__
    True
    >>> ember.version.cuda is None
    True
"""

from typing import Optional  # noqa: F401  (torch.version exports it)

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

__version__ = "0.1.0"
debug = False
cuda: Optional[str] = None  # noqa: UP045  (torch's annotation)
git_version = "unknown"
hip: Optional[str] = None  # noqa: UP045
rocm: Optional[str] = None  # noqa: UP045
xpu: Optional[str] = None  # noqa: UP045
