"""``ember.cuda.amp.common``: torch's helper telling whether CUDA AMP cannot run.

Example::

    >>> from ember.cuda.amp.common import amp_definitely_not_available
    >>> amp_definitely_not_available()
    True
"""

__all__ = ["amp_definitely_not_available"]


def amp_definitely_not_available():
    """True when neither a CUDA GPU nor XLA is available (so CUDA autocast cannot run)."""
    from .. import is_available
    try:
        import torch_xla  # noqa: F401
        return False
    except ImportError:
        return not is_available()
