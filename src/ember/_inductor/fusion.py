"""Fused element-wise chains that training can use: the jit's fused kernel forward, and a
derivative that walks the chain backwards in one pass over arrays.

``jit``'s ``FusedOp`` runs a chain of element-wise primitives in one buffer, but falls back to
the primitives when autograd must record, because the fused op has no derivative. Here the
fused op gets one: when autograd records, the forward keeps each step's result (one array
per step, as eager code keeps them) and the backward applies each step's local derivative
(the ``grad`` of the op's fusion rule, ``ops/_fusion.py``) in reverse order, all on the
device's arrays (about two array operations per step, against one autograd node, one Python
derivative call and several tensors per step in eager code); a chain with a step that has no
such ``grad`` runs its primitives instead. Under ``create_graph`` (a derivative that must
itself be differentiable) it recomputes the chain with ember's primitives and differentiates
that instead, so higher-order gradients stay exact.

Example::

    >>> from ember.jit._passes import FusedOp
    >>> ops = [ember.ops._registry.registry[n][0] for n in ("exp", "neg")]
    >>> fused = TrainableFused(FusedOp([["exp", [0], {}], ["neg", [-1], {}]], ops))
    >>> x = ember.zeros(2, requires_grad=True)
    >>> fused(x).sum().backward()
    >>> x.grad
    tensor([-1., -1.])
"""

from __future__ import annotations

from ..autograd import grad_mode
from ..jit._passes import _FUSED_DTYPES
from ..ops._registry import Op, run_op, wrap

__all__ = ["TrainableFused", "make_trainable"]


class TrainableFused:
    """A jit ``FusedOp`` whose :class:`Op` has a derivative (see the module docstring).

    Example::

        >>> from ember._inductor.capture import capture
        >>> from ember._inductor.backends import optimize
        >>> graph = optimize(capture(lambda x: (x * 2).exp(), [ember.ones(2)]).graph)
        >>> type(graph.nodes[-1].op).__name__
        'TrainableFused'
    """

    multi_output = False

    def __init__(self, fused):
        self.fused = fused
        self.program = fused.program
        self.ops = fused.ops
        rules = [op.fuse for op in fused.ops]
        # a chain trains in one pass when every step has an array derivative
        self.trainable = all(rule.grad is not None for rule in rules)
        self._steps = [(rule.grad, tuple(refs)) for rule, (_, refs, _) in
                       zip(rules, fused.program)]
        steps = [(refs, rule.step) for rule, (_, refs, _) in zip(rules, fused.program)]

        def kernel(xp, *arrays, stash):
            """The chain, each step into a new array kept in ``stash`` for the backward."""
            acc = None
            for refs, step in steps:
                args = [acc if r < 0 else arrays[r] for r in refs]
                acc = step(xp, args, None)
                stash.append((args, acc))
            return acc
        self.op = Op("fused_elementwise", kernel, meta=lambda *a, stash: fused.op.meta(*a),
                     save_inputs=True, register=False, grad_name="FusedElementwiseBackward0")
        self.op.defderivative(self._derivative)

    @property
    def name(self):
        return "fused_elementwise"

    def __call__(self, *tensors):
        if not grad_mode.state.enabled or not any(t.requires_grad for t in tensors):
            return self.fused(*tensors)
        dtype = tensors[0]._data.dtype
        if not self.trainable or any(t._data.dtype != dtype for t in tensors) \
                or dtype not in _FUSED_DTYPES or not self._one_buffer(tensors):
            return self.fused._unfused(tensors)
        return run_op(self.op, *tensors, stash=[])

    def _one_buffer(self, tensors):
        import numpy as np

        shapes = [t._data.shape for t in tensors]
        first = np.broadcast_shapes(*(shapes[r] for r in self.program[0][1] if r >= 0))
        return np.broadcast_shapes(first, *shapes) == first

    def _derivative(self, ctx, grad, stash):
        inputs = ctx.inputs
        if grad_mode.state.enabled:  # create_graph: differentiate the primitives
            return self._composite_derivative(inputs, grad, ctx.needs_input_grad)
        device = inputs[0]._device
        xp = device._xp
        grads = [None] * len(inputs)
        needed = ctx.needs_input_grad
        g = grad._data
        # each step's operands and result, kept by the forward
        for (local_grad, refs), (args, out) in zip(reversed(self._steps), reversed(stash)):
            local = local_grad(xp, g, args, out, [r < 0 or needed[r] for r in refs])
            g = None
            for r, piece in zip(refs, local):
                if r < 0:
                    g = piece
                elif needed[r]:
                    grads[r] = piece if grads[r] is None else grads[r] + piece
        return tuple(_own_arrays(grads, grad._data, device))

    def _composite_derivative(self, inputs, grad, needed):
        from ..autograd import grad as autograd_grad

        wanted = [t for t, n in zip(inputs, needed) if n]
        out = self.fused._unfused(inputs)
        found = iter(autograd_grad(out, wanted, grad, create_graph=True, allow_unused=True))
        return tuple(next(found) if n else None for n in needed)


def _own_arrays(grads, incoming, device):
    """The gradients as tensors, each with memory of its own: the engine may hand a
    gradient's memory to ``.grad`` and add into it later, so no two results (nor the
    incoming gradient) may share an array."""
    seen = {id(incoming)}
    for a in grads:
        if a is None:
            yield None
            continue
        if id(a) in seen:
            a = a.copy()
        seen.add(id(a))
        yield wrap(a, device)


def make_trainable(graph):
    """Give every fused node of ``graph`` a derivative (in place); return how many.

    Example::

        >>> from ember._inductor.capture import capture
        >>> make_trainable(capture(lambda x: x + 1, [ember.ones(1)]).graph)
        0
    """
    count = 0
    for n in graph.nodes:
        if n.kind == "fused" and not isinstance(n.op, TrainableFused):
            n.op = TrainableFused(n.op)
            count += 1
    return count
