"""Process groups and collectives with ``torch.distributed``'s names, signatures and errors.

The front end here checks arguments, turns tensors into contiguous arrays (copying back into
non-contiguous tensors afterwards), reserves each collective's sequence number in program order
and runs it on the group's backend, on the calling thread or, with ``async_op=True``, on a
worker thread behind a :class:`Work`.
"""

from __future__ import annotations

import io
import pickle

import numpy as np

from ._c10d_groups import (  # noqa: F401  (moved to _c10d_groups.py; importers use this path)
    _STATE,
    Backend,
    GroupMember,
    ProcessGroup,
    RedOpType,
    ReduceOp,
    Work,
    _avg_fix,
    _Buf,
    _check_dtypes,
    _check_list,
    _check_tensor,
    _device_native,
    _executor,
    _group,
    _local_host,
    _make_store,
    _reduce_fn,
    _root,
    _run,
    _shape,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    new_group,
)
from ._store import PrefixStore, Store  # noqa: F401  (PrefixStore: torch's module has it too)

__all__ = [
    "Backend", "ReduceOp", "Work", "ProcessGroup", "GroupMember", "group", "P2POp",
    "default_pg_timeout", "is_available", "is_initialized", "is_gloo_available",
    "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
    "init_process_group", "destroy_process_group", "new_group", "get_rank", "get_world_size",
    "get_backend", "get_group_rank", "get_global_rank", "get_process_group_ranks",
    "barrier", "monitored_barrier", "broadcast", "all_reduce", "reduce", "all_gather",
    "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
    "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv", "batch_isend_irecv",
    "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
    "get_default_backend_for_device", "Store",
]


# ---------------------------------------------------------------- collectives


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Block until every rank of ``group`` has reached this call.

    Example::

        >>> ember.distributed.barrier()
    """
    pg = _group(group)
    if pg is None:
        return None
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.barrier(seq), [], async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier (ember's gloo reports which rank it timed out on in its error)."""
    return barrier(group)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` of rank ``src`` into ``tensor`` on every rank of ``group``.

    Example::

        >>> t = ember.arange(4) if ember.distributed.get_rank() == 0 else ember.zeros(4,
        ...                                                                 dtype=ember.int64)
        >>> ember.distributed.broadcast(t, src=0)
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast")
    buf = _Buf(tensor, _device_native(pg))
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.broadcast(seq, buf.array, root),
                [buf] if pg.rank() != root else [], async_op, [tensor])


def _reducer(pg, op, tensor):
    fn = _reduce_fn(op, tensor.dtype)
    return fn, RedOpType(op) == RedOpType.AVG


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across all ranks with ``op``; every rank gets the result, in place.

    Example::

        >>> t = ember.ones(3)
        >>> ember.distributed.all_reduce(t)   # t == world_size everywhere
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    fn, avg = _reducer(pg, op, tensor)
    buf = _Buf(tensor, _device_native(pg))
    seq = pg._impl.next_seq()
    n = pg.size()

    def work():
        pg._impl.allreduce(seq, buf.array, fn)
        if avg:
            _avg_fix(buf.array, n)
    return _run(pg, work, [buf], async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across ranks with ``op`` into ``tensor`` of rank ``dst`` only.

    Example::

        >>> ember.distributed.reduce(t, dst=0)
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "reduce")
    fn, avg = _reducer(pg, op, tensor)
    buf = _Buf(tensor, _device_native(pg))
    seq = pg._impl.next_seq()
    n = pg.size()
    is_root = pg.rank() == root

    def work():
        pg._impl.reduce(seq, buf.array, root, fn)
        if avg and is_root:
            _avg_fix(buf.array, n)
    return _run(pg, work, [buf] if is_root else [], async_op, [tensor])


def _check_same(outputs, like, what, pg):
    if len(outputs) != pg.size():
        raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::{what}: invalid output "
                           f"tensor list at index 0 (expected length {pg.size()}, got "
                           f"{len(outputs)})")
    _check_dtypes(like, *outputs)
    for i, t in enumerate(outputs):
        if t.shape != like.shape:
            raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::{what}: invalid tensor "
                               f"size at index {i} (expected {_shape(like)}, got {_shape(t)})")


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's ``tensor`` into ``tensor_list`` (one tensor per rank) on every rank.

    Example::

        >>> out = [ember.zeros(2) for _ in range(ember.distributed.get_world_size())]
        >>> ember.distributed.all_gather(out, ember.ones(2))
    """
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    _check_same(tensor_list, tensor, "allgather", pg)
    native = _device_native(pg)
    src = _Buf(tensor, native)
    outs = [_Buf(t, native) for t in tensor_list]
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.allgather(seq, [b.array for b in outs], src.array), outs,
                async_op, list(tensor_list))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` concatenated (or stacked) into ``output_tensor``.

    ``output_tensor`` has ``world_size`` times the first dimension of ``input_tensor``, or a
    new leading dimension of size ``world_size``.

    Example::

        >>> out = ember.zeros(2 * ember.distributed.get_world_size())
        >>> ember.distributed.all_gather_into_tensor(out, ember.ones(2))
    """
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _group(group)
    if pg is None:
        return None
    _check_dtypes(output_tensor, input_tensor)
    n = pg.size()
    if output_tensor.numel() != n * input_tensor.numel():
        raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::allgather: invalid tensor "
                           f"size: output tensor must have world_size ({n}) times the elements "
                           f"of the input tensor (output {_shape(output_tensor)}, input "
                           f"{_shape(input_tensor)})")
    native = _device_native(pg)
    src = _Buf(input_tensor, native)
    out = _Buf(output_tensor, native)
    seq = pg._impl.next_seq()
    parts = list(out.array.reshape(n, -1)) if input_tensor.numel() else \
        [out.array.reshape(-1)] * n
    return _run(pg, lambda: pg._impl.allgather(seq, parts, src.array.reshape(-1)), [out],
                async_op, [output_tensor])


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst``.

    Example::

        >>> ember.distributed.gather(ember.ones(2), out_list if rank == 0 else None, dst=0)
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "gather")
    native = _device_native(pg)
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_list(gather_list, "gather_list")
        _check_same(gather_list, tensor, "gather", pg)
        outs = [_Buf(t, native) for t in gather_list]
    else:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                             "ranks.")
        outs = []
    src = _Buf(tensor, native)
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.gather(seq, [b.array for b in outs], src.array, root),
                outs, async_op, list(gather_list or []))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src``'s ``scatter_list[i]`` into ``tensor`` on rank ``i``.

    Example::

        >>> ember.distributed.scatter(t, pieces if rank == 0 else None, src=0)
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "scatter")
    native = _device_native(pg)
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_list(scatter_list, "scatter_list")
        _check_same(scatter_list, tensor, "scatter", pg)
        ins = [_Buf(t, native).array for t in scatter_list]
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source "
                             "ranks.")
        ins = None
    out = _Buf(tensor, native)
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.scatter(seq, out.array, ins, root), [out], async_op,
                [tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list[i]`` across ranks with ``op`` into ``output`` of rank ``i``.

    Example::

        >>> ember.distributed.reduce_scatter(out, [ember.ones(2)] * world_size)
    """
    _check_tensor(output, "output")
    _check_list(input_list, "input_list")
    pg = _group(group)
    if pg is None:
        return None
    _check_same(input_list, output, "reduce_scatter", pg)
    fn, avg = _reducer(pg, op, output)
    native = _device_native(pg)
    ins = [_Buf(t, native).array for t in input_list]
    out = _Buf(output, native)
    seq = pg._impl.next_seq()
    n = pg.size()

    def work():
        pg._impl.reduce_scatter(seq, out.array, ins, fn)
        if avg:
            _avg_fix(out.array, n)
    return _run(pg, work, [out], async_op, [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (``world_size`` chunks along dim 0) across ranks; chunk ``i`` lands in
    ``output`` of rank ``i``.

    Example::

        >>> ember.distributed.reduce_scatter_tensor(ember.zeros(2), ember.ones(2 * world_size))
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group)
    if pg is None:
        return None
    _check_dtypes(output, input)
    n = pg.size()
    if input.numel() != n * output.numel():
        raise RuntimeError(f"ProcessGroup{pg._backend.capitalize()}::reduce_scatter_tensor: "
                           f"input tensor must have world_size ({n}) times the elements of the "
                           f"output tensor (output {_shape(output)}, input {_shape(input)})")
    fn, avg = _reducer(pg, op, output)
    native = _device_native(pg)
    src = _Buf(input, native)
    out = _Buf(output, native)
    ins = list(src.array.reshape(n, -1))
    seq = pg._impl.next_seq()

    def work():
        flat = out.array.reshape(-1)
        pg._impl.reduce_scatter(seq, flat, ins, fn)
        if avg:
            _avg_fix(flat, n)
    return _run(pg, work, [out], async_op, [output])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """``input_tensor_list[j]`` of rank ``i`` lands in ``output_tensor_list[i]`` of rank ``j``.

    Example::

        >>> ember.distributed.all_to_all(outs, ins)
    """
    _check_list(output_tensor_list, "output_tensor_list")
    _check_list(input_tensor_list, "input_tensor_list")
    pg = _group(group)
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise RuntimeError(f"all_to_all: expected {n} input and output tensors, got "
                           f"{len(input_tensor_list)} and {len(output_tensor_list)}")
    _check_dtypes(*output_tensor_list, *input_tensor_list)
    native = _device_native(pg)
    ins = [_Buf(t, native).array for t in input_tensor_list]
    outs = [_Buf(t, native) for t in output_tensor_list]
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.alltoall(seq, [b.array for b in outs], ins), outs,
                async_op, list(output_tensor_list))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split ``input`` along dim 0 (equally, or by ``input_split_sizes``) and send piece ``j``
    to rank ``j``; the pieces received fill ``output`` in rank order.

    Example::

        >>> ember.distributed.all_to_all_single(out, ember.arange(world_size))
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group)
    if pg is None:
        return None
    _check_dtypes(output, input)
    n = pg.size()

    def splits(t, sizes, name):
        lead = t.shape[0] if t.dim() else 1
        if sizes is None or len(sizes) == 0:
            if lead % n:
                raise RuntimeError(f"all_to_all_single: {name} dim 0 ({lead}) is not divisible "
                                   f"by the world size ({n})")
            sizes = [lead // n] * n
        sizes = list(sizes)
        if len(sizes) != n or sum(sizes) != lead or min(sizes) < 0:
            raise RuntimeError(f"all_to_all_single: {name} split sizes {sizes} must be {n} "
                               f"non-negative sizes summing to dim 0 ({lead})")
        return sizes

    in_sizes = splits(input, input_split_sizes, "input")
    out_sizes = splits(output, output_split_sizes, "output")
    if output_split_sizes is None and input_split_sizes is None and \
            output.numel() != input.numel():
        raise RuntimeError(f"all_to_all_single: input and output must have the same number of "
                           f"elements ({_shape(input)} vs {_shape(output)})")
    native = _device_native(pg)
    src = _Buf(input, native)
    out = _Buf(output, native)
    a_in = src.array.reshape((src.array.shape[0] if src.array.ndim else 1), -1)
    a_out = out.array.reshape((out.array.shape[0] if out.array.ndim else 1), -1)
    ins = np.split(a_in, np.cumsum(in_sizes)[:-1]) if not native else \
        [a_in[s:e] for s, e in zip([0, *np.cumsum(in_sizes)[:-1]], np.cumsum(in_sizes))]
    outs = [a_out[s:e] for s, e in zip([0, *np.cumsum(out_sizes)[:-1]], np.cumsum(out_sizes))]
    seq = pg._impl.next_seq()
    return _run(pg, lambda: pg._impl.alltoall(seq, outs, ins), [out], async_op, [output])


# ---------------------------------------------------------------- point to point


def _peer(pg, rank, group_rank, what):
    if group_rank is not None:
        peer = group_rank
    elif rank is None:
        raise ValueError(f"{what}: a peer rank is required")
    elif pg is _STATE.default:
        peer = rank
    else:
        if rank not in pg._ranks:
            raise ValueError(f"Global rank {rank} is not part of group {pg}")
        peer = pg._ranks.index(rank)
    if not 0 <= peer < pg.size():
        raise ValueError(f"Invalid {what} rank: {peer} (the group has {pg.size()} ranks)")
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst``; returns a :class:`Work`.

    Example::

        >>> work = ember.distributed.isend(ember.ones(2), dst=1)
        >>> work.wait()
    """
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "destination")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as "
                         "the rank of the current process.")
    buf = _Buf(tensor, _device_native(pg))
    if _device_native(pg):
        return _run(pg, lambda: pg._impl.send(buf.array, peer, tag), [], True, [tensor])
    pg._impl.send(buf.array, peer, tag)  # never blocks for long: the peer always drains
    return Work(None, [tensor])


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` (blocking).

    Example::

        >>> ember.distributed.send(ember.ones(2), dst=1)
    """
    isend(tensor, dst, group, tag, group_dst).wait()


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns a :class:`Work`.

    Example::

        >>> work = ember.distributed.irecv(t, src=0)
        >>> work.wait()
    """
    return _recv(tensor, src, group, tag, group_src, True)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank.

    Example::

        >>> ember.distributed.recv(t, src=0)
        0
    """
    return _recv(tensor, src, group, tag, group_src, False)


def _recv(tensor, src, group, tag, group_src, async_op):
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return -1
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "source")
    if peer is not None and peer == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the rank "
                         "of the current process.")
    buf = _Buf(tensor, _device_native(pg))
    sender = []

    def work():
        sender.append(pg._impl.recv(buf.array, peer, tag))
        buf.done()

    if async_op:
        return Work(_executor(pg).submit(work), [tensor])
    work()
    return pg._ranks[sender[0]]


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`: ``P2POp(isend, t, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed."
                             "isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every operation of ``p2p_op_list``; returns their :class:`Work` handles."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ---------------------------------------------------------------- objects


def _to_bytes(obj):
    f = io.BytesIO()
    pickle.Pickler(f).dump(obj)
    return np.frombuffer(f.getvalue(), np.uint8)


def _from_bytes(array):
    return pickle.loads(array.tobytes())


def _tensor_of(array):
    from .. import from_numpy

    return from_numpy(np.ascontiguousarray(array))


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Broadcast the picklable objects of ``object_list`` from rank ``src``, in place.

    Example::

        >>> objs = [{"lr": 0.1}] if rank == 0 else [None]
        >>> ember.distributed.broadcast_object_list(objs, src=0)
    """
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "broadcast")
    from .. import empty, int64, uint8, zeros

    if pg.rank() == root:
        blobs = [_to_bytes(o) for o in object_list]
        sizes = _tensor_of(np.array([b.size for b in blobs], np.int64))
    else:
        sizes = zeros(len(object_list), dtype=int64)
    broadcast(sizes, group=group, group_src=root)
    total = int(sizes.sum())
    payload = _tensor_of(np.concatenate(blobs)) if pg.rank() == root and total else \
        empty(total, dtype=uint8)
    broadcast(payload, group=group, group_src=root)
    if pg.rank() != root:
        data = payload.numpy()
        offsets = np.concatenate([[0], np.cumsum(sizes.numpy())])
        for i in range(len(object_list)):
            object_list[i] = _from_bytes(data[offsets[i]:offsets[i + 1]])


def _gather_blobs(pg, group, obj, dst_root):
    from .. import empty, uint8

    blob = _to_bytes(obj)
    n = pg.size()
    size = _tensor_of(np.array([blob.size], np.int64))
    sizes = [_tensor_of(np.zeros(1, np.int64)) for _ in range(n)]
    all_gather(sizes, size, group=group)
    longest = max(int(s.item()) for s in sizes)
    padded = np.zeros(longest, np.uint8)
    padded[:blob.size] = blob
    outs = [empty(longest, dtype=uint8) for _ in range(n)]
    if dst_root is None:
        all_gather(outs, _tensor_of(padded), group=group)
    else:
        gather(_tensor_of(padded), outs if pg.rank() == dst_root else None, group=group,
               group_dst=dst_root)
        if pg.rank() != dst_root:
            return None
    return [_from_bytes(o.numpy()[:int(s.item())]) for o, s in zip(outs, sizes)]


def all_gather_object(object_list, obj, group=None):
    """Every rank's picklable ``obj`` into ``object_list`` (length world size) on every rank.

    Example::

        >>> out = [None] * ember.distributed.get_world_size()
        >>> ember.distributed.all_gather_object(out, {"rank": rank})
    """
    pg = _group(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have length {pg.size()}")
    for i, o in enumerate(_gather_blobs(pg, group, obj, None)):
        object_list[i] = o


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Every rank's picklable ``obj`` into ``object_gather_list`` on rank ``dst``.

    Example::

        >>> out = [None] * world_size if rank == 0 else None
        >>> ember.distributed.gather_object(rank, out, dst=0)
    """
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather")
    if pg.rank() == root:
        if object_gather_list is None or len(object_gather_list) != pg.size():
            raise ValueError(f"Argument ``object_gather_list`` must be specified on destination "
                             f"rank with length {pg.size()}")
    objs = _gather_blobs(pg, group, obj, root)
    if objs is not None:
        for i, o in enumerate(objs):
            object_gather_list[i] = o


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """Rank ``src``'s ``scatter_object_input_list[i]`` into
    ``scatter_object_output_list[0]`` of rank ``i``."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "scatter")
    objs = list(scatter_object_input_list) if pg.rank() == root else [None] * pg.size()
    broadcast_object_list(objs, group=group, group_src=root)
    scatter_object_output_list[0] = objs[pg.rank()]


from ._c10d_extras import *  # noqa: E402,F403  (torch's remaining c10d names)
from ._c10d_extras import __all__ as _extra_names  # noqa: E402

__all__ += _extra_names
