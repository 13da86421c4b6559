"""The default DDP communication hooks: average a bucket across ranks as is
(:func:`allreduce_hook`), or sent as float16 / bfloat16 to halve the traffic
(:func:`fp16_compress_hook`, :func:`bf16_compress_hook`), as torch's. Each takes the
hook's state (a process group, or None for the default group) and a
:class:`~ember.distributed.GradBucket`, and returns a Future of the averaged flat gradients.
"""

from __future__ import annotations

import functools

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
           "fp16_compress_wrapper", "bf16_compress_wrapper"]


def _group_and_size(process_group):
    from ... import distributed_c10d as c10d

    group = process_group if process_group is not None else c10d.group.WORLD
    return group, group.size()


def _averaged(process_group, tensor):
    """A Future of ``tensor`` summed over the group and divided by its size (in place)."""
    from ... import distributed_c10d as c10d

    group, size = _group_and_size(process_group)
    tensor.div_(size)
    work = c10d.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda future: future.value()[0])


def allreduce_hook(process_group, bucket):
    """Average the bucket's gradients across the group (what DDP does without a hook).

    Example::

        >>> ddp.register_comm_hook(None, allreduce_hook)              # doctest: +SKIP
    """
    return _averaged(process_group, bucket.buffer())


def _compressed_hook(dtype, process_group, bucket):
    buffer = bucket.buffer()
    compressed = buffer.to(dtype)

    def decompress(future):
        buffer.copy_(future.value())
        return buffer

    return _averaged(process_group, compressed).then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Average the bucket sent as float16, then written back in the gradients' dtype.

    Example::

        >>> ddp.register_comm_hook(None, fp16_compress_hook)          # doctest: +SKIP
    """
    from .... import float16

    return _compressed_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Average the bucket sent as bfloat16, then written back in the gradients' dtype.

    Example::

        >>> ddp.register_comm_hook(None, bf16_compress_hook)           # doctest: +SKIP
    """
    from .... import bfloat16

    return _compressed_hook(bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    """``hook`` run on the bucket cast to ``dtype``, its result cast back."""

    @functools.wraps(hook)
    def wrapped(hook_state, bucket):
        original = bucket.buffer()
        bucket.set_buffer(original.to(dtype))
        future = hook(hook_state, bucket)
        bucket.set_buffer(original)

        def decompress(done):
            original.copy_(done.value())
            return original

        return future.then(decompress)

    return wrapped


def fp16_compress_wrapper(hook):
    """``hook`` made to communicate float16 (the bucket is cast before, back after).

    Example::

        >>> ddp.register_comm_hook(None, fp16_compress_wrapper(allreduce_hook))  # doctest: +SKIP
    """
    from .... import float16

    return _compress_wrapper(float16, hook)


def bf16_compress_wrapper(hook):
    """``hook`` made to communicate bfloat16 (the bucket is cast before, back after).

    Example::

        >>> ddp.register_comm_hook(None, bf16_compress_wrapper(allreduce_hook))  # doctest: +SKIP
    """
    from .... import bfloat16

    return _compress_wrapper(bfloat16, hook)
