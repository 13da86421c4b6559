"""Rank functions for test_surface_modules.py (``fn(rank, world_size, *args)``)."""

from __future__ import annotations

import ember.distributed as dist
from ember.distributed import collective_utils


def _fails_on_rank_one():
    if dist.get_rank() == 1:
        raise ValueError("no data on this rank")
    return dist.get_rank() * 10


def collective_utils_round(rank, world_size):
    """broadcast/all_gather of values and of functions, and the errors when a rank fails."""
    group = dist.group.WORLD
    shared = collective_utils.broadcast(lambda: f"from {dist.get_rank()}", rank=1, pg=group)
    values = collective_utils.all_gather(lambda: rank * rank, stage_name="square", pg=group)
    gathered = [None] * world_size
    collective_utils.all_gather_object_enforce_type(group, gathered, {"rank": rank})
    try:
        collective_utils.all_gather(_fails_on_rank_one, pg=group)
        failure = None
    except RuntimeError as error:
        failure = (type(error.__cause__).__name__, [index for index, _ in error.args[1]])
    try:
        collective_utils.broadcast(_fails_on_rank_one, rank=1, stage_name="load", pg=group)
        broadcast_failure = None
    except RuntimeError as error:
        broadcast_failure = str(error)
    mixed = [None] * world_size
    try:
        collective_utils.all_gather_object_enforce_type(group, mixed, rank if rank else "zero")
        type_error = None
    except TypeError as error:
        type_error = str(error)
    return shared, values, gathered, failure, broadcast_failure, type_error


def launched_worker(scale):
    """A function worker for elastic_launch: its ranks, from the environment."""
    import os

    print(f"hello from {os.environ['RANK']}", flush=True)
    return int(os.environ["RANK"]) * scale, int(os.environ["WORLD_SIZE"]), \
        int(os.environ["LOCAL_RANK"])


def failing_worker():
    """Rank 1 raises; record() writes the error for the launcher's report."""
    import os

    if os.environ["RANK"] == "1":
        raise ValueError("worker one has no data")
    return "ok"


def fails_first_attempt():
    """Fails on the first start only (the launcher restarts the group)."""
    import os

    if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0" and os.environ["RANK"] == "0":
        raise RuntimeError("first attempt")
    return int(os.environ["TORCHELASTIC_RESTART_COUNT"])
