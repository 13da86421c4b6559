"""Rank functions for test_c10d_paths.py (``fn(rank, world_size, *args)``)."""

from __future__ import annotations

import ember
import ember.distributed as dist


def objects_point_to_point(rank, world_size):
    """Rank 0 sends two objects to rank 1, which returns what it received."""
    if rank == 0:
        dist.send_object_list([{"step": 3}, "text"], dst=1)
        return None
    received = [None, None]
    dist.recv_object_list(received, src=0)
    return received


def subgroups_and_coalesced(rank, world_size):
    """Subgroups of two ranks, then coalesced and single-tensor collectives in them."""
    current, groups = dist.new_subgroups(group_size=2)
    members = dist.get_process_group_ranks(current)
    tensors = [ember.full((2,), float(rank)), ember.full((1,), float(rank + 1))]
    dist.all_reduce_coalesced(tensors, group=current)
    out = ember.zeros(2 * 2)
    dist.all_gather_single(out, ember.full((2,), float(rank)), group=current)
    return members, [t.tolist() for t in tensors], out.tolist(), len(groups)
