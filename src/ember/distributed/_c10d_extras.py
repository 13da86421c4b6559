"""The rest of torch.distributed.distributed_c10d's public API, built on ember's collectives:
coalesced and single-tensor collective forms, object send/recv, subgroup helpers, environment
and debug queries, and the option structs torch's C++ backends take.

Example::

    >>> from ember.distributed import get_node_local_rank
    >>> get_node_local_rank(fallback_rank=0)
    0
"""

from __future__ import annotations

import contextlib
import enum
import os
import pickle
import warnings

from . import distributed_c10d as _c10d

__all__ = ["AllToAllOptions", "AllreduceCoalescedOptions", "AllreduceOptions", "BackendConfig",
           "BarrierOptions", "BroadcastOptions", "DebugLevel", "GatherOptions", "GroupName",
           "ProcessGroupGloo", "ReduceOptions", "ReduceScatterOptions", "ScatterOptions",
           "all_gather_coalesced", "all_gather_single", "all_reduce_coalesced",
           "get_backend_config", "get_debug_level", "get_node_local_rank", "get_pg_count",
           "is_backend_available", "is_ucc_available", "is_xccl_available", "new_subgroups",
           "new_subgroups_by_enumeration", "record_comm", "recv_object_list", "reduce_op",
           "reduce_scatter_single", "send_object_list", "shrink_group", "split_group",
           "supports_complex", "set_debug_level", "set_debug_level_from_env"]

GroupName = str


# ---- collectives in other shapes ----

def _last_work(works, async_op):
    return works[-1] if async_op and works else None


def all_reduce_coalesced(tensors, op=_c10d.ReduceOp.SUM, group=None, async_op=False):
    """All-reduce each tensor of ``tensors`` in place (one collective per tensor here).

    Example::

        >>> ember.distributed.all_reduce_coalesced([t1, t2])  # doctest: +SKIP
    """
    warnings.warn("torch.distributed.all_reduce_coalesced will be deprecated. If you must use "
                  "it, please revisit our documentation later at https://pytorch.org/docs/main/"
                  "distributed.html#collective-functions", FutureWarning, stacklevel=2)
    works = [_c10d.all_reduce(t, op=op, group=group, async_op=async_op) for t in tensors]
    return _last_work(works, async_op)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None, async_op=False):
    """All-gather each input tensor into its list of outputs.

    Example::

        >>> ember.distributed.all_gather_coalesced([[a0, a1]], [a])  # doctest: +SKIP
    """
    warnings.warn("torch.distributed.all_gather_coalesced will be deprecated. If you must use "
                  "it, please revisit our documentation later at https://pytorch.org/docs/main/"
                  "distributed.html#collective-functions", FutureWarning, stacklevel=2)
    works = [_c10d.all_gather(outputs, tensor, group=group, async_op=async_op)
             for outputs, tensor in zip(output_tensor_lists, input_tensor_list)]
    return _last_work(works, async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """:func:`all_gather_into_tensor` under torch's functional name."""
    return _c10d.all_gather_into_tensor(output_tensor, input_tensor, group=group,
                                        async_op=async_op)


def reduce_scatter_single(output, input, op=_c10d.ReduceOp.SUM, group=None, async_op=False):
    """:func:`reduce_scatter_tensor` under torch's functional name."""
    return _c10d.reduce_scatter_tensor(output, input, op=op, group=group, async_op=async_op)


# ---- objects point to point ----

def _object_bytes(obj):
    import numpy as np
    return np.frombuffer(pickle.dumps(obj), dtype=np.uint8)


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None,
                     use_batch=False):
    """Send picklable objects to rank ``dst`` (sizes first, then one byte tensor).

    Example::

        >>> ember.distributed.send_object_list([{"step": 3}], dst=1)  # doctest: +SKIP
    """
    from .. import cat, tensor
    blobs = [_object_bytes(obj) for obj in object_list]
    sizes = tensor([len(b) for b in blobs])
    _c10d.send(sizes, dst=dst, group=group, group_dst=group_dst)
    payload = cat([tensor(b) for b in blobs]) if blobs else tensor([], dtype=None)
    _c10d.send(payload, dst=dst, group=group, group_dst=group_dst)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None,
                     use_batch=False):
    """Receive objects sent by :func:`send_object_list` into ``object_list`` (in place);
    returns the sender's rank.

    Example::

        >>> objs = [None]; ember.distributed.recv_object_list(objs, src=0)  # doctest: +SKIP
    """
    from .. import empty, int64, uint8
    sizes = empty(len(object_list), dtype=int64)
    sender = _c10d.recv(sizes, src=src, group=group, group_src=group_src)
    payload = empty(int(sizes.sum()), dtype=uint8)
    _c10d.recv(payload, src=src, group=group, group_src=group_src)
    data, start = payload.numpy().tobytes(), 0
    for i, size in enumerate(sizes.tolist()):
        object_list[i] = pickle.loads(data[start:start + size])
        start += size
    return sender


# ---- subgroups ----

def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Split the world into consecutive groups of ``group_size`` ranks; returns
    ``(this rank's subgroup, all subgroups)``.

    Example::

        >>> cur, groups = ember.distributed.new_subgroups(group_size=2)  # doctest: +SKIP
    """
    world_size = _c10d.get_world_size()
    if group_size is None:
        group_size = world_size  # one subgroup per machine in torch; ember knows no machines
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    if world_size % group_size != 0:
        raise ValueError("The world size must be divisible by 'group_size'")
    ranks = [list(range(start, start + group_size)) for start in range(0, world_size,
                                                                       group_size)]
    return new_subgroups_by_enumeration(ranks, timeout=timeout, backend=backend)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """One group per list of ranks; returns ``(this rank's subgroup, all subgroups)``."""
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    me = _c10d.get_rank()
    current, subgroups = None, []
    for ranks in ranks_per_subgroup_list:
        subgroup = _c10d.new_group(ranks, timeout=timeout, backend=backend)
        subgroups.append(subgroup)
        if me in ranks:
            if current is not None:
                raise ValueError(f"Rank {me} has appeared in both subgroup {current} and "
                                 f"{ranks}")
            current = subgroup
    return current, subgroups


def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None,
                group_desc=None, backend=None):
    """Split ``parent_pg`` (default: the world) into the groups ``split_ranks``; returns the one
    holding this rank (None if none does)."""
    if split_ranks is None:
        raise ValueError("split_ranks cannot be None")
    current, _ = new_subgroups_by_enumeration(split_ranks, timeout=timeout, backend=backend)
    return current


def shrink_group(ranks_to_exclude, group=None, shrink_flags=0, pg_options=None):
    """A new group of ``group``'s ranks (default: the world) without ``ranks_to_exclude``."""
    ranks = _c10d.get_process_group_ranks(group) if group is not None else list(
        range(_c10d.get_world_size()))
    return _c10d.new_group([r for r in ranks if r not in set(ranks_to_exclude)])


def get_pg_count():
    """The number of process groups created so far (the default one included)."""
    return _c10d._STATE.next_gid + (1 if _c10d.is_initialized() else 0)


# ---- environment and backends ----

def get_node_local_rank(fallback_rank=None):
    """This process's rank on its machine: ``LOCAL_RANK`` (set by torchrun), else
    ``fallback_rank``.

    Example::

        >>> get_node_local_rank(fallback_rank=3) if "LOCAL_RANK" not in os.environ else 3
        3
    """
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank "
                       "to allow `get_node_local_rank` to work, assuming a single node "
                       "environment.")


def is_backend_available(backend):
    """Whether ``backend`` (``"gloo"``, ``"mpi"``, ``"nccl"``, ...) can be used.

    Example::

        >>> is_backend_available("gloo")
        True
    """
    available = {"gloo": _c10d.is_gloo_available, "mpi": _c10d.is_mpi_available,
                 "nccl": _c10d.is_nccl_available}
    check = available.get(str(backend).lower())
    return bool(check()) if check is not None else False


def is_ucc_available():
    """Whether the UCC backend is built in: never in ember."""
    return False


def is_xccl_available():
    """Whether Intel's XCCL backend is built in: never in ember."""
    return False


_NO_COMPLEX = ("MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR")


def supports_complex(reduceOp):  # noqa: N803  (torch's argument name)
    """Whether ``reduceOp`` is defined on complex tensors (not MAX/MIN/PRODUCT/bitwise).

    Example::

        >>> supports_complex(ember.distributed.ReduceOp.SUM)
        True
    """
    name = getattr(reduceOp, "name", None) or str(reduceOp).rsplit(".", 1)[-1]
    return name.upper() not in _NO_COMPLEX


def get_backend_config(group=None):
    """The backend of each device type of ``group``, as torch prints it (``"cpu:gloo"``).

    Example::

        >>> ember.distributed.get_backend_config()  # doctest: +SKIP
        'cpu:gloo'
    """
    backend = str(_c10d.get_backend(group))
    return f"cuda:{backend}" if backend == "nccl" else f"cpu:{backend}"


class BackendConfig:
    """A backend per device type, parsed from ``"gloo"`` or ``"cpu:gloo,cuda:nccl"``."""

    def __init__(self, backend):
        spec = str(backend)
        if ":" in spec:
            self.device_backend_map = dict(part.split(":") for part in spec.split(","))
        else:
            self.device_backend_map = {"cpu": spec} if spec != "nccl" else {"cuda": spec}

    def get_device_backend_map(self):
        return self.device_backend_map

    def __repr__(self):
        return ",".join(f"{d}:{b}" for d, b in self.device_backend_map.items())


class DebugLevel(enum.Enum):
    """``TORCH_DISTRIBUTED_DEBUG``: how much the collectives check and log."""

    OFF = 0
    INFO = 1
    DETAIL = 2


_debug = {"level": DebugLevel.OFF}


def get_debug_level():
    """The current :class:`DebugLevel`."""
    return _debug["level"]


def set_debug_level(level):
    """Set the :class:`DebugLevel`."""
    _debug["level"] = DebugLevel(level) if not isinstance(level, DebugLevel) else level


def set_debug_level_from_env():
    """Set the :class:`DebugLevel` from ``TORCH_DISTRIBUTED_DEBUG`` (OFF, INFO, DETAIL)."""
    value = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper()
    if value not in DebugLevel.__members__:
        raise ValueError(f"The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL, "
                         f"but got {value}")
    _debug["level"] = DebugLevel[value]


@contextlib.contextmanager
def record_comm(name):
    """Label the collectives run inside the block as ``name`` (for torch's flight recorder;
    ember keeps no such record, so the block runs unchanged)."""
    yield


class _DeprecatedReduceOp:
    """``torch.distributed.reduce_op``: the old name of :class:`ReduceOp` (warns on use)."""

    def __getattr__(self, name):
        warnings.warn("torch.distributed.reduce_op is deprecated, please use "
                      "torch.distributed.ReduceOp instead", FutureWarning, stacklevel=2)
        return getattr(_c10d.ReduceOp, name)


reduce_op = _DeprecatedReduceOp()


# ---- the option structs of torch's C++ process groups (plain attribute holders) ----

def _options(name, **defaults):
    def __init__(self, **kwargs):
        for key, value in {**defaults, **kwargs}.items():
            setattr(self, key, value)

    doc = f"torch's ``{name}`` options struct: {', '.join(defaults)}."
    return type(name, (), {"__init__": __init__, "__doc__": doc})


_TIMEOUT = _c10d.default_pg_timeout
AllreduceOptions = _options("AllreduceOptions", reduceOp=_c10d.ReduceOp.SUM, timeout=_TIMEOUT,
                            asyncOp=True)
AllreduceCoalescedOptions = _options("AllreduceCoalescedOptions", reduceOp=_c10d.ReduceOp.SUM,
                                     timeout=_TIMEOUT, asyncOp=True)
ReduceOptions = _options("ReduceOptions", reduceOp=_c10d.ReduceOp.SUM, rootRank=0,
                         rootTensor=0, timeout=_TIMEOUT, asyncOp=True)
ReduceScatterOptions = _options("ReduceScatterOptions", reduceOp=_c10d.ReduceOp.SUM,
                                timeout=_TIMEOUT, asyncOp=True)
BroadcastOptions = _options("BroadcastOptions", rootRank=0, rootTensor=0, timeout=_TIMEOUT,
                            asyncOp=True)
GatherOptions = _options("GatherOptions", rootRank=0, timeout=_TIMEOUT, asyncOp=True)
ScatterOptions = _options("ScatterOptions", rootRank=0, timeout=_TIMEOUT, asyncOp=True)
BarrierOptions = _options("BarrierOptions", device_ids=[], timeout=_TIMEOUT, asyncOp=True)
AllToAllOptions = _options("AllToAllOptions", timeout=_TIMEOUT, asyncOp=True)


class ProcessGroupGloo:
    """torch's direct constructor of a Gloo process group: ember builds its Gloo groups through
    :func:`init_process_group`/:func:`new_group` (``backend="gloo"``)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.distributed.ProcessGroupGloo(...) constructs a C++ "
                                  "process group; in ember use init_process_group(backend="
                                  "'gloo') or new_group(ranks, backend='gloo')")
