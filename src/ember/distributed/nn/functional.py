"""Differentiable collectives, as ``torch.distributed.nn.functional``.

Each returns new tensors (its inputs are left alone) and has torch's backward: the adjoint
collective (``all_reduce`` <-> ``all_reduce``, ``broadcast`` <-> ``reduce`` to the source,
``gather`` <-> ``scatter``, ``all_gather`` <-> ``reduce_scatter``, ``all_to_all`` <-> itself).
The gradients are those of the sum over ranks of each rank's loss.

Example::

    >>> import ember.distributed.nn.functional as dnn
    >>> total = dnn.all_reduce(x * w)      # every rank: sum over ranks of x * w
    >>> total.sum().backward()             # w.grad = (sum over ranks of the gradients) * x
"""

from __future__ import annotations

from ...autograd.function import Function
from ...ops.creation import zeros_like
from ..distributed_c10d import ReduceOp, group

__all__ = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
           "all_to_all", "all_to_all_single", "all_reduce"]


def _dist():
    from ... import distributed

    return distributed


def _fresh(t):
    return t.detach().clone().contiguous()


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        ctx.is_src = _dist().get_rank(group) == src
        out = _fresh(tensor)
        _dist().broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        gx = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad)
        if not ctx.is_src:
            gx = zeros_like(gx)
        return None, None, gx


class _Reduce(Function):
    @staticmethod
    def forward(ctx, dst, op, group, tensor):
        ctx.dst, ctx.group = dst, group
        out = _fresh(tensor)
        _dist().reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad)


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst, ctx.group = dst, group
        outs = [zeros_like(tensor) for _ in range(_dist().get_world_size(group))]
        source = _fresh(tensor)
        if _dist().get_rank(group) == dst:
            _dist().gather(source, outs, dst, group=group)
        else:
            _dist().gather(source, None, dst, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grads)


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src, ctx.group = src, group
        out = zeros_like(tensors[0])
        if _dist().get_rank(group) == src:
            _dist().scatter(out, [_fresh(t) for t in tensors], src, group=group)
        else:
            _dist().scatter(out, None, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, None) + tuple(_Gather.apply(ctx.src, ctx.group, grad))


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *inputs):
        ctx.group = group
        out = zeros_like(output)
        _dist().reduce_scatter(out, [_fresh(t) for t in inputs], op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, None, None) + tuple(_AllGather.apply(ctx.group, grad))


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        outs = [zeros_like(tensor) for _ in range(_dist().get_world_size(group))]
        _dist().all_gather(outs, _fresh(tensor), group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        like = grads[0]
        return None, _ReduceScatter.apply(ReduceOp.SUM, ctx.group, like, *grads)


class _AllToAll(Function):
    @staticmethod
    def forward(ctx, group, outputs, *tensors):
        ctx.group = group
        ctx.sent_shapes = [t.shape for t in tensors]
        outs = [zeros_like(o) for o in outputs]
        _dist().all_to_all(outs, [_fresh(t) for t in tensors], group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        from ...ops.creation import empty

        back = [empty(*shape, dtype=grads[0].dtype) for shape in ctx.sent_shapes]
        return (None, None) + tuple(_AllToAll.apply(ctx.group, back, *grads))


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, tensor):
        ctx.group, ctx.sent_shape = group, tensor.shape
        ctx.splits = (output_split_sizes, input_split_sizes)
        out = zeros_like(output)
        _dist().all_to_all_single(out, _fresh(tensor), output_split_sizes, input_split_sizes,
                                  group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        from ...ops.creation import empty

        output_split_sizes, input_split_sizes = ctx.splits
        back = empty(*ctx.sent_shape, dtype=grad.dtype)
        return (None, None, None, None,
                _AllToAllSingle.apply(ctx.group, back, input_split_sizes, output_split_sizes,
                                      grad.contiguous()))


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = _fresh(tensor)
        _dist().all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad)


def broadcast(tensor, src, group=group.WORLD):
    """``src``'s ``tensor`` on every rank; backward sums the gradients onto ``src``.

    Example::

        >>> y = broadcast(x, src=0)
    """
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=group.WORLD):
    """Every rank's ``tensor`` as a tuple on ``dst`` (zeros elsewhere); backward scatters.

    Example::

        >>> parts = gather(x, dst=0)
    """
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=group.WORLD):
    """Rank ``i`` receives ``tensors[i]`` of ``src``; backward gathers onto ``src``.

    Example::

        >>> mine = scatter(list_of_chunks, src=0)
    """
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=group.WORLD):
    """The reduction of every rank's ``tensor`` on ``dst``; backward broadcasts from ``dst``.

    Example::

        >>> total = reduce(x, dst=0)
    """
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=group.WORLD):
    """Rank ``i`` gets the reduction of every rank's ``input_list[i]`` (shaped as
    ``output``); backward all-gathers.

    Example::

        >>> mine = reduce_scatter(ember.empty(2), [a, b])
    """
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=group.WORLD):
    """Every rank's ``tensor``, as a tuple on every rank; backward reduce-scatters.

    Example::

        >>> parts = all_gather(x)
    """
    return _AllGather.apply(group, tensor)


def all_to_all(output_tensor_list, input_tensor_list, group=group.WORLD):
    """Rank ``j`` receives ``input_tensor_list[j]`` of every rank, as a tuple shaped as
    ``output_tensor_list``; backward sends the gradients back.

    Example::

        >>> received = all_to_all([ember.empty(2)] * 2, [a, b])
    """
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=group.WORLD):
    """``all_to_all`` over slices of dim 0 of one tensor; backward sends the gradients back.

    Example::

        >>> out = all_to_all_single(ember.empty(4), x)
    """
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor, op=ReduceOp.SUM, group=group.WORLD):
    """The reduction of every rank's ``tensor``, on every rank; backward all-reduces the
    gradient the same way.

    Example::

        >>> total = all_reduce(x)
    """
    return _AllReduce.apply(op, group, tensor)
