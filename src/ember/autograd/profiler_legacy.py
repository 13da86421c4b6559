"""``ember.autograd.profiler_legacy``: torch's legacy profiler path; its ``profile`` is
:class:`ember.autograd.profiler.profile` (one CPU profiler serves both).

Example::

    >>> from ember.autograd.profiler_legacy import profile
"""

from .profiler import profile

__all__ = ["profile"]
