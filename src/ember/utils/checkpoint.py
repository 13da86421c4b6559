"""Activation checkpointing: trade compute for memory by recomputing a segment in backward.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` keeping none of the tensors its
graph saves for backward (a saved-tensor pack hook keeps only their position); the first time
backward needs one, ``fn`` runs again on the same inputs and the recomputed tensors are used.
With ``use_reentrant=True`` the segment is one :class:`~ember.autograd.Function` whose backward
recomputes the segment and backpropagates through it (torch's older variant).

Example::

    >>> x = ember.randn(4, requires_grad=True)
    >>> y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False)
    >>> y.sum().backward()      # sin and exp are recomputed here
"""

from __future__ import annotations

import warnings

from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "CheckpointPolicy", "DefaultDeviceType", "GraphExecGroup", "SAC_IGNORED_OPS",
           "SelectiveCheckpointContext", "check_backward_validity",
           "create_selective_checkpoint_contexts", "detach_variable", "get_device_states",
           "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop",
           "set_device_states"]


class CheckpointError(RuntimeError):
    """Raised when recomputation does not reproduce the forward pass."""


class _replayed_rng:
    """Run a block with the CPU generator in a saved state, then put the current state back:
    recomputation then draws the same random numbers (dropout masks) as the forward did."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        if self.state is not None:
            from ..ops import random

            self.current = random.get_rng_state()
            random.set_rng_state(self.state)

    def __exit__(self, *exc):
        if self.state is not None:
            from ..ops import random

            random.set_rng_state(self.current)


def _rng_state(preserve):
    if not preserve:
        return None
    from ..ops import random

    return random.get_rng_state()


class _Frame:
    """One checkpointed call: recomputes it on first unpack and hands out its saved tensors."""

    def __init__(self, function, args, kwargs, rng_state=None):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.rng_state = rng_state
        self.count = 0
        self.recomputed = None

    def pack(self, tensor):
        index = self.count
        self.count += 1
        return index

    def unpack(self, index):
        if self.recomputed is None:
            self._recompute()
        if index >= len(self.recomputed):
            raise CheckpointError("torch.utils.checkpoint: trying to use a tensor saved during "
                                  "the forward pass that was not saved during recomputation: the "
                                  "checkpointed function is not deterministic.")
        return self.recomputed[index]

    def _recompute(self):
        saved = []

        def keep(tensor):
            saved.append(tensor)
            return tensor

        args = tuple(a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
                     for a in self.args)
        with grad_mode.enable_grad(), saved_tensors_hooks(keep, lambda t: t), \
                _replayed_rng(self.rng_state):
            self.function(*args, **self.kwargs)
        if len(saved) != self.count:
            raise CheckpointError(f"torch.utils.checkpoint: A different number of tensors was "
                                  f"saved during the original forward and recomputation.\n"
                                  f"Number of tensors saved during forward: {self.count}\n"
                                  f"Number of tensors saved during recomputation: {len(saved)}")
        self.recomputed = saved


class _ReentrantCheckpoint(Function):
    @staticmethod
    def forward(ctx, function, preserve_rng_state, *args):
        ctx.function = function
        ctx.rng_state = _rng_state(preserve_rng_state)
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.plain_args = args
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_positions])
        return function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from .. import autograd

        tensors = ctx.saved_tensors
        args = list(ctx.plain_args)
        detached = []
        for i, t in zip(ctx.tensor_positions, tensors):
            d = t.detach().requires_grad_(t.requires_grad)
            args[i] = d
            detached.append(d)
        with grad_mode.enable_grad(), _replayed_rng(ctx.rng_state):
            outputs = ctx.function(*args)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        result = [None] * len(args)
        for i, d in zip(ctx.tensor_positions, detached):
            result[i] = d.grad
        return (None, None, *result)


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute in backward.

    Example::

        >>> y = checkpoint(layer, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return _ReentrantCheckpoint.apply(function, preserve_rng_state, *args)
    frame = _Frame(function, args, kwargs, _rng_state(preserve_rng_state))
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a sequence of functions (or an ``nn.Sequential``) in ``segments`` checkpointed parts.

    Example::

        >>> y = checkpoint_sequential([f, g, h], 2, x, use_reentrant=False)
    """
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = (len(functions) + segments - 1) // max(segments, 1)

    def run(start, end):
        def forward(x):
            for fn in functions[start:end]:
                x = fn(x)
            return x
        return forward

    end = -1
    for start in range(0, len(functions) - size, size):
        end = start + size
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(max(end, 0), len(functions))(input)


from ._checkpoint_extras import (  # noqa: E402  (torch.utils.checkpoint's other names)
    SAC_IGNORED_OPS,
    CheckpointPolicy,
    DefaultDeviceType,
    GraphExecGroup,
    SelectiveCheckpointContext,
    check_backward_validity,
    create_selective_checkpoint_contexts,
    detach_variable,
    get_device_states,
    noop_context_fn,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
    set_device_states,
)

CheckpointFunction = _ReentrantCheckpoint  # torch's name of the reentrant checkpoint Function
