"""``ember.cuda.profiler``: start/stop the CUDA profiler (needs a GPU).

Example::

    >>> from ember.cuda.profiler import start, stop
"""

from ._unavailable import _needs_gpu

__all__ = ["profile", "start", "stop"]

start = _needs_gpu("profiler.start")
stop = _needs_gpu("profiler.stop")
profile = _needs_gpu("profiler.profile")
