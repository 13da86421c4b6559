"""``torch.distributed.debug``: torch's debug HTTP server (stacks and flight-recorder dumps
of every rank, served from rank 0). ember's collectives keep no flight recorder and it has no
such server, so both functions raise ``NotImplementedError``; to see where ranks hang, run
them with ``faulthandler.dump_traceback_later`` or ``py-spy dump``.
"""

from __future__ import annotations

__all__ = ["start_debug_server", "stop_debug_server"]

_MESSAGE = ("torch.distributed.debug.{name}: ember has no distributed debug server (its "
            "collectives keep no flight recorder); use faulthandler.dump_traceback_later or "
            "py-spy dump on each rank instead")


def start_debug_server(port=25999, worker_port=0, start_method=None, dump_dir=None,
                       dump_interval=60.0, enabled_dumps=None, handlers=None,
                       fetch_timeout=60.0):
    """torch's debug server: not in ember (``NotImplementedError``, see the module).

    Example::

        >>> ember.distributed.debug.start_debug_server()              # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError(_MESSAGE.format(name="start_debug_server"))


def stop_debug_server():
    """torch's debug server: not in ember (``NotImplementedError``, see the module).

    Example::

        >>> ember.distributed.debug.stop_debug_server()               # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError(_MESSAGE.format(name="stop_debug_server"))
