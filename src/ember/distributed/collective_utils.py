"""``torch.distributed.collective_utils``: run a step on one rank (or on all) and share its
result, or its failure, with every rank of a group.

Each value travels wrapped in a :class:`SyncPayload` (the stage name, whether it succeeded, the
value or the exception) through the object collectives, so that an exception on one rank
becomes a ``RuntimeError`` on every rank instead of a hang.

Example::

    >>> from ember.distributed import collective_utils
    >>> collective_utils.broadcast(lambda: 42)      # no group: run here, return the value
    42
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import distributed_c10d as _c10d

__all__ = ["SyncPayload", "broadcast", "all_gather", "all_gather_object_enforce_type"]


@dataclasses.dataclass
class SyncPayload:
    """What one rank sends: the stage it is at, success, its value or its exception.

    Example::

        >>> SyncPayload(stage_name="load", success=True, payload=3).payload
        3
    """

    stage_name: str | None
    success: bool
    payload: Any
    exception: Exception | None = None


def _evaluate(data_or_fn):
    """``(value, exception)``: the data itself, or the function's result or error."""
    if not callable(data_or_fn):
        return data_or_fn, None
    try:
        return data_or_fn(), None
    except Exception as error:  # noqa: BLE001 - the error is sent to every rank
        return None, error


def broadcast(data_or_fn, *, success=True, stage_name=None, rank=0, pg=None):
    """The value of ``data_or_fn`` (data, or a function called) on ``rank``, sent to every rank
    of ``pg``. If it failed there (or ``success=False``), every rank raises ``RuntimeError``.

    Example::

        >>> broadcast(lambda: "ready", stage_name="setup")
        'ready'
    """
    if not success and data_or_fn is not None:
        raise AssertionError("Data or Function is expected to be None if not successful")
    payload, exception = None, None
    runs_here = pg.rank() == rank if pg is not None else rank == 0
    if runs_here:
        payload, exception = _evaluate(data_or_fn)
    sent = SyncPayload(stage_name, success and exception is None, payload, exception)
    if pg is not None:
        box = [sent]
        _c10d.broadcast_object_list(box, src=rank, group=pg)
        sent = box[0]
    if not sent.success:
        message = f"Rank {rank} failed"
        if stage_name is not None:
            message += f": stage {sent.stage_name}"
        if sent.exception is not None:
            message += f": exception {sent.exception}"
        raise RuntimeError(message) from sent.exception
    return sent.payload


def all_gather(data_or_fn, stage_name=None, pg=None):
    """Every rank's value of ``data_or_fn`` (data, or a function called on each rank), as a
    list in rank order. A failure on any rank raises ``RuntimeError`` on all of them.

    Example::

        >>> all_gather(lambda: 7)                   # no group: this rank's value alone
        [7]
    """
    payload, exception = _evaluate(data_or_fn)
    mine = SyncPayload(stage_name, exception is None, payload, exception)
    if pg is None:
        if exception is not None:
            raise RuntimeError(f"all_gather failed with exception {exception}") from exception
        return [payload]
    gathered = [None] * _c10d.get_world_size(pg)
    all_gather_object_enforce_type(pg, gathered, mine)
    expected_stage = gathered[0].stage_name
    mismatch, failures, values = "", [], []
    for index, item in enumerate(gathered):
        if item.stage_name != expected_stage:
            mismatch += f"Unexpected stage name received from rank {index}: {item.stage_name} "
        elif not item.success and item.exception is not None:
            failures.append((index, item.exception))
        else:
            values.append(item.payload)
    if failures:
        raise RuntimeError(mismatch, failures) from failures[0][1]
    return values


def _same_type(first, other):
    return type(first) is type(other)


def all_gather_object_enforce_type(pg, object_list, obj, type_checker=_same_type):
    """``all_gather_object`` into ``object_list``, then ``TypeError`` when an object's type
    does not pass ``type_checker`` against the first one's (by default: the same type).

    Example::

        >>> gathered = [None] * ember.distributed.get_world_size()
        >>> all_gather_object_enforce_type(None, gathered, {"step": 1})
    """
    _c10d.all_gather_object(object_list, obj, group=pg)
    if not object_list:
        return
    first = object_list[0]
    for index, other in enumerate(object_list[1:], 1):
        if not type_checker(first, other):
            raise TypeError(f"Object type at index {index} is {type(other)}, while first "
                            f"object type is {type(first)}")
