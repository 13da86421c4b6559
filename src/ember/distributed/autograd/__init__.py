"""``ember.distributed.autograd``: backward passes that cross RPC boundaries, as torch's.

Inside ``with dist_autograd.context() as context_id:``, every tensor that requires grad and
travels by RPC is recorded: the sender keeps it under a *send* id, the receiver gets a fresh
leaf that remembers where it came from (torch's send/recv functions). ``backward(context_id,
[loss])`` differentiates the local graph; gradients that reach a received leaf are sent back to
its sender, which continues the backward from the tensor it sent (torch's "FAST mode").
Gradients of the real leaves accumulate in the context, never in ``.grad``:
``get_gradients(context_id)`` returns them.

Example::

    >>> import ember.distributed.autograd as dist_autograd
    >>> with dist_autograd.context() as context_id:            # after rpc.init_rpc(...)
    ...     loss = rpc.rpc_sync("worker1", ember.add, args=(w, 1)).sum()
    ...     dist_autograd.backward(context_id, [loss])
    ...     grads = dist_autograd.get_gradients(context_id)     # {w: tensor of ones}
"""

from __future__ import annotations

import itertools
import threading

__all__ = ["context", "backward", "get_gradients", "is_available"]

_WORKER_BITS = 48  # a context id is worker_id << 48 | counter, as torch numbers them


class _Context:
    """One distributed backward's bookkeeping on one worker."""

    def __init__(self, context_id):
        self.id = context_id
        self.lock = threading.Lock()
        self.grads = {}      # leaf tensor -> accumulated gradient
        self.sends = {}      # send id -> tensor this worker sent (its graph stays alive)
        self.recvs = {}      # id(leaf) -> (leaf, sender worker id, send id)
        self.workers = set()  # other workers that took part (told to release the context)

    def record_send(self, tensor, send_id, dst):
        with self.lock:
            self.sends[send_id] = tensor
            self.workers.add(dst)

    def record_recv(self, leaf, src, send_id):
        with self.lock:
            self.recvs[id(leaf)] = (leaf, src, send_id)
            self.workers.add(src)

    def accumulate(self, leaf, grad):
        with self.lock:
            old = self.grads.get(leaf)
            self.grads[leaf] = grad.detach() if old is None else (old + grad).detach()


class _State(threading.local):
    current = None  # the _Context of the `with context()` block (or RPC handler) of this thread


_current = _State()
_contexts = {}
_contexts_lock = threading.Lock()
_counter = itertools.count()
_send_ids = itertools.count()
_worker = {"id": None}


def is_available():
    """Whether distributed autograd can be used (always, with ember's RPC).

    Example::

        >>> ember.distributed.autograd.is_available()
        True
    """
    return True


def _init(worker_id):
    """Called by ``rpc.init_rpc``: context ids start with this worker's id."""
    _worker["id"] = worker_id


def _require_init():
    if _worker["id"] is None:
        raise RuntimeError("Need to initialize distributed autograd using "
                           "torch.distributed.autograd.init()")


def _lookup(context_id):
    with _contexts_lock:
        ctx = _contexts.get(context_id)
    if ctx is None:
        raise RuntimeError(f"Could not find autograd context with id: {context_id}")
    return ctx


def _get_or_create(context_id):
    with _contexts_lock:
        ctx = _contexts.get(context_id)
        if ctx is None:
            ctx = _contexts[context_id] = _Context(context_id)
        return ctx


def _current_context():
    return _current.current


def _release(context_id):
    """Forget a context here; the workers it involved are told to forget it too."""
    with _contexts_lock:
        ctx = _contexts.pop(context_id, None)
    if ctx is None:
        return
    from ..rpc import api

    for worker in ctx.workers:
        if worker != _worker["id"]:
            api._notify(worker, _release, (context_id,))


def _forget_all():
    """At RPC shutdown: no context outlives the agent."""
    with _contexts_lock:
        _contexts.clear()


class context:  # noqa: N801 - torch's name
    """A distributed autograd context: ``with context() as context_id:``.

    Example::

        >>> with dist_autograd.context() as context_id:
        ...     pass                                   # forward, backward, optimizer step
    """

    def __enter__(self):
        _require_init()
        if _current.current is not None:
            raise RuntimeError("Already have an autograd context id for this thread.")
        context_id = (_worker["id"] << _WORKER_BITS) | next(_counter)
        _current.current = _get_or_create(context_id)
        return context_id

    def __exit__(self, *exc):
        ctx, _current.current = _current.current, None
        _release(ctx.id)
        return False


class _use_context:  # noqa: N801 - a context manager, named like one
    """Run an RPC handler inside the caller's context (or none)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        self.saved, _current.current = _current.current, self.ctx

    def __exit__(self, *exc):
        _current.current = self.saved
        return False


def get_gradients(context_id):
    """The gradients that ``backward`` accumulated in this context, ``{leaf: grad}``.

    Example::

        >>> with dist_autograd.context() as context_id:
        ...     dist_autograd.backward(context_id, [(w * 2).sum()])
        ...     dist_autograd.get_gradients(context_id)[w]     # tensor of twos
    """
    ctx = _lookup(context_id)
    with ctx.lock:
        return dict(ctx.grads)


def backward(context_id, roots, retain_graph=False):
    """Run the distributed backward pass from the scalar ``roots`` in ``context_id``.

    Example::

        >>> with dist_autograd.context() as context_id:
        ...     loss = rpc.rpc_sync("worker1", ember.mul, args=(w, 3)).sum()
        ...     dist_autograd.backward(context_id, [loss])
    """
    from ...ops.creation import ones_like

    ctx = _lookup(context_id)
    roots = list(roots)
    for root in roots:
        if root.numel() != 1:
            raise RuntimeError(f"a root of shape {list(root.shape)} is not a scalar, all roots "
                               f"need to be scalar")
        if not root.requires_grad:
            raise RuntimeError("requires_grad not set on root")
    _run_local(ctx, roots, [ones_like(r) for r in roots], retain_graph)


def _leaves(tensors):
    """Every leaf (AccumulateGrad node's tensor) the graph of ``tensors`` reaches."""
    from ...autograd import graph

    roots = [graph.edge_of(t)[0] for t in tensors]
    order, _ = graph._discover([r for r in roots if r is not None])
    return [node.variable for node in order if isinstance(node, graph.AccumulateGrad)]


def _run_local(ctx, tensors, grads, retain_graph):
    """Backward on this worker; gradients of received leaves go back to their senders."""
    from ...autograd import graph

    leaves = _leaves(tensors)
    if not leaves:
        return
    captured = graph.run_backward(tensors, grads, retain_graph, False, inputs=leaves,
                                  accumulate=False)
    to_send = []
    for leaf, grad in zip(leaves, captured):
        if grad is None:
            continue
        received = ctx.recvs.get(id(leaf))
        if received is None:
            ctx.accumulate(leaf, grad)
        else:
            to_send.append((received[1], received[2], grad.detach()))
    from ..rpc import api

    futures = [api._call_async(src, _backward_from_send, (ctx.id, send_id, grad), ctx=None)
               for src, send_id, grad in to_send]
    for fut in futures:
        fut.wait()


def _backward_from_send(context_id, send_id, grad):
    """On the sender: continue the backward from the tensor sent under ``send_id``."""
    ctx = _lookup(context_id)
    tensor = ctx.sends[send_id]
    # other sends may share this graph, and each runs its own pass: keep it until release
    _run_local(ctx, [tensor], [grad], retain_graph=True)


def _next_send_id():
    return next(_send_ids)
