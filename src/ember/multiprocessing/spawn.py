"""``ember.multiprocessing.spawn``: start worker processes running ``fn(i, *args)``.

Example::

    >>> from ember.multiprocessing.spawn import start_processes
    >>> ctx = start_processes(print, nprocs=1, join=False, start_method="fork")  # doctest: +SKIP
"""

from . import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
)

__all__ = ["spawn", "SpawnContext", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]

class SpawnContext(ProcessContext):
    """torch's older name of :class:`ProcessContext` (a subclass, as in torch)."""


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """:func:`spawn` with any start method (``"spawn"``, ``"fork"``, ``"forkserver"``).

    Example::

        >>> start_processes(worker, args=(1,), nprocs=2, start_method="fork")  # doctest: +SKIP
    """
    return spawn(fn, args=args, nprocs=nprocs, join=join, daemon=daemon,
                 start_method=start_method)
