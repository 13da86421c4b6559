"""Fused element-wise chains that training can use: the jit's fused kernel forward, and a
derivative that walks the chain backwards in one pass over arrays.

``jit``'s ``FusedOp`` runs a chain of element-wise primitives in one buffer, but falls back to
the primitives when autograd must record, because the fused op has no derivative. Here the
fused op gets one: the backward recomputes the chain's intermediate values from the saved
inputs and applies each step's local derivative in reverse order, all on the device's arrays
(about two array operations per step, against one autograd node, one Python derivative call
and several tensors per step in eager code). Under ``create_graph`` (a derivative that must
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
from ..ops._registry import Op, run_op, wrap

__all__ = ["TrainableFused", "make_trainable"]


def _local(name, xp, g, args, out):
    """The gradients of one step ``out = name(*args)`` for each operand, given ``g``."""
    if name == "add":
        return g, g
    if name == "sub":
        return g, -g
    if name == "mul":
        return g * args[1], g * args[0]
    if name == "div":
        ga = g / args[1]
        return ga, -ga * out
    if name == "neg":
        return (-g,)
    if name == "exp":
        return (g * out,)
    if name == "log":
        return (g / args[0],)
    if name == "tanh":
        return (g * (1 - out * out),)
    if name == "sin":
        return (g * xp.cos(args[0]),)
    if name == "cos":
        return (-g * xp.sin(args[0]),)
    if name == "sqrt":
        return (g / (2 * out),)
    if name == "abs":
        return (g * xp.sign(args[0]),)
    if name == "reciprocal":
        return (-g * out * out,)
    if name == "sigmoid":
        return (g * out * (1 - out),)
    if name == "rsqrt":
        return (-0.5 * g * out * out * out,)
    if name == "_relu":
        return (g * (args[0] > 0),)
    raise NotImplementedError(name)  # pragma: no cover - the fusible set is listed in jit


class TrainableFused:
    """A jit ``FusedOp`` whose :class:`Op` has a derivative (see the module docstring)."""

    multi_output = False

    def __init__(self, fused):
        self.fused = fused
        self.program = fused.program
        self.ops = fused.ops
        self._steps = [(name, tuple(refs), _STEP_FUNCTIONS[name]) for name, refs, _ in
                       fused.program]
        self.op = Op("fused_elementwise", fused.op.kernel, meta=fused.op.meta,
                     save_inputs=True, register=False, grad_name="FusedElementwiseBackward0")
        self.op.defderivative(self._derivative)

    @property
    def name(self):
        return "fused_elementwise"

    def __call__(self, *tensors):
        if not grad_mode.state.enabled or not any(t.requires_grad for t in tensors):
            return self.fused(*tensors)
        dtype = tensors[0]._data.dtype
        if any(t._data.dtype != dtype for t in tensors) or dtype not in _FLOAT_DTYPES \
                or not self._one_buffer(tensors):
            return self.fused._unfused(tensors)
        return run_op(self.op, *tensors)

    def _one_buffer(self, tensors):
        import numpy as np

        shapes = [t._data.shape for t in tensors]
        first = np.broadcast_shapes(*(shapes[r] for r in self.program[0][1] if r >= 0))
        return np.broadcast_shapes(first, *shapes) == first

    def _derivative(self, ctx, grad):
        inputs = ctx.inputs
        if grad_mode.state.enabled:  # create_graph: differentiate the primitives
            return self._composite_derivative(inputs, grad, ctx.needs_input_grad)
        device = inputs[0]._device
        xp = device._xp
        arrays = [t._data for t in inputs]
        values = []        # each step's operands and result, recomputed
        acc = None
        for _name, refs, step in self._steps:
            args = [acc if r < 0 else arrays[r] for r in refs]
            acc = step(xp, args, None)
            values.append((args, acc))
        grads = [None] * len(arrays)
        needed = ctx.needs_input_grad
        g = grad._data
        for (name, refs, _), (args, out) in zip(reversed(self._steps), reversed(values)):
            local = _local(name, xp, g, args, out)
            g = None
            for r, piece in zip(refs, local):
                if r < 0:
                    g = piece
                elif needed[r]:
                    grads[r] = piece if grads[r] is None else grads[r] + piece
        return tuple(None if a is None else wrap(a, device) for a in grads)

    def _composite_derivative(self, inputs, grad, needed):
        from ..autograd import grad as autograd_grad

        wanted = [t for t, n in zip(inputs, needed) if n]
        out = self.fused._unfused(inputs)
        found = iter(autograd_grad(out, wanted, grad, create_graph=True, allow_unused=True))
        return tuple(next(found) if n else None for n in needed)


def make_trainable(graph):
    """Give every fused node of ``graph`` a derivative (in place); return how many."""
    count = 0
    for n in graph.nodes:
        if n.kind == "fused" and not isinstance(n.op, TrainableFused):
            n.op = TrainableFused(n.op)
            count += 1
    return count


def _steps():
    from ..jit._passes import _STEPS

    return {name: entry[0] for name, entry in _STEPS.items()}


_STEP_FUNCTIONS = _steps()


def _float_dtypes():
    from ..jit._passes import _FUSED_DTYPES

    return _FUSED_DTYPES


_FLOAT_DTYPES = _float_dtypes()
