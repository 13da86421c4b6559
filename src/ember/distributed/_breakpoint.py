"""``torch.distributed.breakpoint``: stop one rank in the debugger while the others wait."""

from __future__ import annotations

import logging
import pdb
import sys
import traceback

log = logging.getLogger("ember.distributed")
_calls_seen = {}


class _RankPdb(pdb.Pdb):
    """pdb reading the terminal: a launched rank's stdin is not the user's keyboard."""

    def interaction(self, *args, **kwargs):
        saved = sys.stdin
        try:
            with open("/dev/stdin") as terminal:
                sys.stdin = terminal
                super().interaction(*args, **kwargs)
        finally:
            sys.stdin = saved


def _set_timeout(group, seconds):
    """A group's timeout for its collectives from now on (its backend's too)."""
    group._timeout = seconds
    if hasattr(group._impl, "timeout"):
        group._impl.timeout = seconds


def breakpoint(rank=0, skip=0, timeout_s=3600):
    """Enter the debugger on ``rank`` only; the other ranks wait in a barrier until it
    continues. ``skip``: let the first ``skip`` calls pass. ``timeout_s``: the groups'
    timeout while waiting, so a long session does not time the others out.

    Example::

        >>> ember.distributed.breakpoint(rank=1)     # rank 1 gets a (Pdb) prompt
    """
    from . import distributed_c10d as c10d

    if skip > 0:
        key = hash(traceback.format_exc())
        _calls_seen[key] = _calls_seen.get(key, 0) + 1
        if _calls_seen[key] <= skip:
            log.warning("Skip the breakpoint, counter=%d", _calls_seen[key])
            return
    if timeout_s is not None:
        for group in c10d._STATE.groups:
            _set_timeout(group, timeout_s)
    if c10d.get_rank() == rank:
        debugger = _RankPdb()
        debugger.message("\n!!! ATTENTION !!!\n\nType 'up' to get to the frame that called "
                         f"dist.breakpoint(rank={rank})\n")
        debugger.set_trace(sys._getframe(1))
    c10d.barrier()
