"""DistributedDataParallel: gradients averaged across the ranks during backward.

At construction rank 0's parameters and buffers are broadcast to every rank. The parameters
that need gradients are packed, in reverse order of ``parameters()`` (roughly the order their
gradients become ready), into buckets of at most ``bucket_cap_mb`` megabytes. A post-accumulate
hook on each parameter marks it ready; when every parameter of a bucket is ready its gradients
are copied into the bucket's flat buffer, divided by the world size and summed across the ranks
with an asynchronous ``all_reduce`` (buckets start strictly in index order, so every rank issues
the same collectives in the same order), while the rest of backward runs. When the last bucket
has started, the hook waits for all of them and writes the averages back into ``.grad``.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..._tensor import Tensor
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


def _dist():
    """``ember.distributed``, imported on first use (``import ember`` stays lean)."""
    from ... import distributed

    return distributed


def _xp(array):
    if isinstance(array, np.ndarray):
        return np
    import cupy

    return cupy


def _coalesced_broadcast(tensors, src, group):
    """Broadcast ``tensors`` from ``src`` in one message per dtype and device."""
    by_kind = {}
    for t in tensors:
        by_kind.setdefault((t._data.dtype, t._device), []).append(t)
    for (_, device), ts in by_kind.items():
        xp = _xp(ts[0]._data)
        flat = xp.concatenate([t._data.reshape(-1) for t in ts]) if ts else None
        _dist().broadcast(Tensor._make(flat, device), src=src, group=group)
        offset = 0
        for t in ts:
            n = t._data.size
            t._data[...] = flat[offset:offset + n].reshape(t._data.shape)
            t._bump_version()
            offset += n


class _Bucket:
    __slots__ = ("params", "offsets", "flat", "pending", "work")

    def __init__(self, params, flat):
        self.params = params
        self.flat = flat
        self.offsets = []
        offset = 0
        for p in params:
            self.offsets.append(offset)
            offset += p._data.size
        self.pending = len(params)
        self.work = None


class _HookWork:
    """A communication hook's Future as a bucket's pending work: waiting copies the reduced
    tensor it gives into the bucket's flat buffer."""

    __slots__ = ("future", "bucket")

    def __init__(self, future, bucket):
        self.future, self.bucket = future, bucket

    def wait(self):
        reduced = self.future.wait()
        flat = self.bucket.flat
        if not isinstance(reduced, Tensor) or reduced.numel() != flat.numel():
            raise RuntimeError("A communication hook's Future must give a tensor with the "
                               "bucket's number of elements")
        if reduced is not flat:
            flat._data[...] = reduced._data.reshape(-1).astype(flat._data.dtype)


class DistributedDataParallel(Module):
    """Data-parallel wrapper of ``module``: each rank runs its share of the batch, backward
    averages the gradients across ranks, so every replica takes the same optimiser step.

    Example::

        >>> model = DistributedDataParallel(net)
        >>> loss = loss_fn(model(x_local), y_local)
        >>> loss.backward()              # .grad now holds the average over all ranks
        >>> with model.no_sync():        # accumulate locally, without communication
        ...     loss_fn(model(x2), y2).backward()
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        if not _dist().is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure "
                             "to call init_process_group.")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {p._device.type for p in module.parameters()}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel's input module must be on the same type "
                             f"of devices, but input module parameters locate in {devices}.")
        if device_ids is not None and "cuda" not in devices:
            raise ValueError(f"DistributedDataParallel device_ids and output_device arguments "
                             f"only work with single-device/multiple-device GPU modules or CPU "
                             f"modules, but got device_ids {device_ids}, output_device "
                             f"{output_device}, and module parameters {devices}.")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.process_group = process_group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._world = _dist().get_world_size(process_group)
        self._src = _dist().get_global_rank(process_group, 0) if process_group is not None else 0
        # rank 0's state everywhere
        states = list(module.parameters()) + list(module.buffers())
        if states and self._world > 1 and init_sync:
            _coalesced_broadcast(states, self._src, process_group)
        self._build_buckets(params)
        self._hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                       for i, p in enumerate(self._params)]
        self._armed = False
        self._ready = None
        self._used = None
        self._comm_hook = None  # (state, hook) from register_comm_hook

    # ------------------------------------------------------------ buckets

    def _build_buckets(self, params):
        self._params = list(reversed(params))
        self._buckets = []
        self._where = []  # param index -> (bucket index, position)
        current, size, kind = [], 0, None
        groups = []
        for p in self._params:
            key = (p._data.dtype, p._device)
            nbytes = p._data.nbytes
            if current and (key != kind or size + nbytes > self.bucket_bytes_cap):
                groups.append(current)
                current, size = [], 0
            current.append(p)
            size += nbytes
            kind = key
        if current:
            groups.append(current)
        index = {id(p): i for i, p in enumerate(self._params)}
        self._where = [None] * len(self._params)
        for b, ps in enumerate(groups):
            xp = _xp(ps[0]._data)
            flat = xp.zeros(sum(p._data.size for p in ps), ps[0]._data.dtype)
            self._buckets.append(_Bucket(ps, Tensor._make(flat, ps[0]._device)))
            for j, p in enumerate(ps):
                self._where[index[id(p)]] = (b, j)

    def _make_hook(self, i):
        def hook(param):
            if self._armed and self.require_backward_grad_sync:
                self._mark_ready(i)
        return hook

    def _mark_ready(self, i):
        if self._ready[i]:
            raise RuntimeError("Expected to mark a variable ready only once. This error is "
                               "caused by one of the following reasons: 1) Use of a module "
                               "parameter outside the `forward` function, or 2) Reused "
                               "parameters in multiple reentrant backward passes.")
        self._ready[i] = True
        b, _ = self._where[i]
        bucket = self._buckets[b]
        bucket.pending -= 1
        self._launch_ready()

    def _launch_ready(self):
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            self._launch(self._buckets[self._next])
            self._next += 1
        if self._next == len(self._buckets) and self._armed:
            self._finish()

    def _launch(self, bucket):
        flat = bucket.flat._data
        if self._comm_hook is not None:
            self._fill(bucket)
            bucket.work = _HookWork(self._run_hook(bucket), bucket)
            return
        for p, offset in zip(bucket.params, bucket.offsets):
            n = p._data.size
            if p.grad is None:
                flat[offset:offset + n] = 0
            else:
                grad = p.grad._data
                if grad.dtype != flat.dtype:
                    grad = grad.astype(flat.dtype)
                flat[offset:offset + n] = grad.reshape(-1)
        if flat.dtype.kind in "fc":
            flat /= self._world
        elif flat.dtype.name == "bfloat16":
            flat[...] = (flat.astype(np.float32) / self._world).astype(flat.dtype)
        bucket.work = _dist().all_reduce(bucket.flat, group=self.process_group, async_op=True)

    def _fill(self, bucket):
        """Copy the bucket's gradients into its flat buffer (zeros for missing ones)."""
        flat = bucket.flat._data
        for p, offset in zip(bucket.params, bucket.offsets):
            n = p._data.size
            if p.grad is None:
                flat[offset:offset + n] = 0
            else:
                flat[offset:offset + n] = p.grad._data.reshape(-1)

    def _run_hook(self, bucket):
        """The registered communication hook on ``bucket``: a Future of the reduced flat
        gradients."""
        from ...distributed import GradBucket

        index = self._buckets.index(bucket)
        views = [bucket.flat[offset:offset + p.numel()].view(p.shape)
                 for p, offset in zip(bucket.params, bucket.offsets)]
        state, hook = self._comm_hook
        return hook(state, GradBucket(index, bucket.flat, views, bucket.params,
                                      index == len(self._buckets) - 1))

    def register_comm_hook(self, state, hook):
        """Reduce each bucket of gradients with ``hook(state, bucket)`` instead of averaging
        it: ``bucket`` is a :class:`~ember.distributed.GradBucket`, and the hook returns a
        Future of the reduced flat tensor (see
        ``ember.distributed.algorithms.ddp_comm_hooks``). Register before the first backward.

        Example::

            >>> from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
            >>> ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        """
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        self._comm_hook = (state, hook)

    def _register_builtin_comm_hook(self, comm_hook_type):
        """Register one of the built-in hooks by its ``BuiltinCommHookType``."""
        from ...distributed import BuiltinCommHookType
        from ...distributed.algorithms.ddp_comm_hooks import default_hooks

        hooks = {BuiltinCommHookType.ALLREDUCE: default_hooks.allreduce_hook,
                 BuiltinCommHookType.FP16_COMPRESS: default_hooks.fp16_compress_hook}
        self.register_comm_hook(self.process_group, hooks[comm_hook_type])

    def _finish(self):
        self._armed = False
        used_anywhere = None
        if self.find_unused_parameters:
            first = self._buckets[0].flat
            xp = _xp(first._data)
            flags = Tensor._make(xp.asarray(self._used, dtype=np.uint8),
                                 first._device)  # where the backend wants it (NCCL: the GPU)
            _dist().all_reduce(flags, op=_dist().ReduceOp.MAX, group=self.process_group)
            used_anywhere = flags._host_array().astype(bool)
        index = {id(p): i for i, p in enumerate(self._params)}
        for bucket in self._buckets:
            bucket.work.wait()
            bucket.work = None
            flat = bucket.flat
            for p, offset in zip(bucket.params, bucket.offsets):
                i = index[id(p)]
                if used_anywhere is not None and not used_anywhere[i]:
                    continue
                n = p._data.size
                view = flat._data[offset:offset + n].reshape(p._data.shape)
                if self.gradient_as_bucket_view:
                    p.grad = Tensor._make(view, p._device, base=flat)
                elif p.grad is not None and p.grad._data.flags.writeable and \
                        p.grad._data.dtype == view.dtype and p.grad._data.base is not flat._data:
                    p.grad._data[...] = view
                    p.grad._bump_version()
                else:
                    p.grad = Tensor._make(view.copy(), p._device)

    # ------------------------------------------------------------ forward

    def _arm(self, outputs):
        if self._armed and any(self._ready):
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss.")
        self._ready = [False] * len(self._params)
        for bucket in self._buckets:
            bucket.pending = len(bucket.params)
        self._next = 0
        self._armed = True
        if self.find_unused_parameters:
            reached = _reached_leaves(outputs)
            self._used = [id(p) in reached for p in self._params]
            for i, used in enumerate(self._used):
                if not used:
                    self._ready[i] = True
                    self._buckets[self._where[i][0]].pending -= 1
            self._launch_ready()

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers and self.require_forward_param_sync and self._world > 1:
            buffers = list(self.module.buffers())
            if buffers:
                _coalesced_broadcast(buffers, self._src, self.process_group)
        outputs = self.module(*inputs, **kwargs)
        from ... import is_grad_enabled

        if is_grad_enabled() and self.require_backward_grad_sync:
            self._arm(outputs)
        else:
            self._armed = False
        return outputs

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without communication; the first
        backward after it averages the accumulated gradients.

        Example::

            >>> with ddp.no_sync():
            ...     ddp(x1).sum().backward()
            >>> ddp(x2).sum().backward()     # synchronises x1's and x2's gradients
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _reached_leaves(outputs):
    """ids of the leaf tensors the autograd graph of ``outputs`` reaches."""
    roots = []

    def collect(o):
        if isinstance(o, Tensor):
            if o.grad_fn is not None:
                roots.append(o.grad_fn)
            elif o.requires_grad:
                reached.add(id(o))
        elif isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
        elif isinstance(o, dict):
            for x in o.values():
                collect(x)

    reached = set()
    collect(outputs)
    seen = set()
    stack = roots
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            reached.add(id(variable))
        for nxt, _ in getattr(node, "next_functions", ()):
            stack.append(nxt)
    return reached
