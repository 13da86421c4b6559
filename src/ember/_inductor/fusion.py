"""Fused element-wise chains that training can use: the jit's fused kernel forward, and a
derivative that walks the chain backwards in one pass over arrays.

``jit``'s ``FusedOp`` runs a chain of element-wise primitives in one buffer, but falls back to
the primitives when autograd must record, because the fused op has no derivative. Here the
fused op gets one: when autograd records, the forward keeps each step's operands and result
(one array per step, as eager code keeps them) and the backward applies each step's local
derivative (the ``grad`` of the op's fusion rule, ``ops/_fusion.py``) in reverse order, all on
the device's arrays (about two array operations per step, against one autograd node, one Python
derivative call and several tensors per step in eager code). Both are straight-line Python
generated once per chain (``codegen.py``). Only the inputs that require grad are the autograd
node's inputs (a chain's scalar constants get no edge and no gradient); the others' versions
are checked at the backward as autograd checks saved tensors. A chain with a step that has no
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

from operator import attrgetter

from ..autograd import grad_mode
from ..autograd.graph import _raise_modified
from ..jit._passes import _FUSED_DTYPES
from ..ops._registry import Op, run_op, wrap
from .codegen import Chain

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

    def __init__(self, fused, reduction=None):
        self.fused = fused
        self.program = fused.program
        self.ops = fused.ops
        # (the sum op, its parameters): a sum of the chain's result that nothing else reads,
        # computed in the same op (its backward broadcasts the gradient back, on arrays)
        self.reduction = reduction
        rules = [op.fuse for op in fused.ops]
        # a chain trains in one pass when every step has an array derivative
        self.trainable = all(rule.grad is not None for rule in rules)
        self.chain = Chain(rules, [refs for _, refs, _ in fused.program]) \
            if self.trainable else None
        self._checked = None   # the input shapes and dtype last found to fit one buffer
        chain = self.chain
        reduce_op, reduce_params = reduction or (None, None)

        def kernel(xp, *tensor_arrays, arrays, kept, stash):
            """The chain, its steps' operands and results kept in ``stash``: ``arrays``
            holds every input's array; the op's own inputs (``kept``) are those that
            require grad, so that autograd links and differentiates only them."""
            out = chain.forward(xp, arrays, stash)
            return out if reduce_op is None else reduce_op.kernel(xp, out, **reduce_params)

        def meta(*tensor_arrays, arrays, kept, stash):
            shape, dtype = fused.op.meta(*arrays)
            return (shape if reduce_op is None else _reduced(shape, reduce_params)), dtype
        self.op = Op("fused_elementwise", kernel, meta=meta, save_inputs=True, register=False,
                     grad_name="FusedElementwiseBackward0")
        self.op.defderivative(self._derivative)

    def _finish(self, result):
        """``result`` (the chain's) reduced as the fused op reduces it."""
        return result if self.reduction is None else \
            self.reduction[0](result, **self.reduction[1])

    @property
    def name(self):
        return "fused_elementwise"

    def __call__(self, *tensors):
        if not grad_mode.state.enabled:
            return self._finish(self.fused(*tensors))
        positions = tuple([i for i, wants in enumerate(map(_requires_grad, tensors)) if wants])
        if not positions:
            return self._finish(self.fused(*tensors))
        arrays = list(map(_array, tensors))
        if not self.trainable or not self._fits(tensors, arrays):
            return self._finish(self.fused._unfused(tensors))
        # the inputs and their versions: the backward refuses inputs changed in place since,
        # as autograd does for the saved inputs of each primitive
        return run_op(self.op, *[tensors[p] for p in positions], arrays=arrays, kept=positions,
                      stash=[tensors, list(map(_version, tensors))])

    def _fits(self, tensors, arrays):
        """Whether the chain runs in one buffer on these inputs: one float dtype and
        device, and every operand broadcasting to the first step's shape."""
        import numpy as np

        dtypes, devices = set(map(_dtype, arrays)), set(map(_device, tensors))
        if len(dtypes) != 1 or len(devices) != 1 or dtypes.pop() not in _FUSED_DTYPES:
            return False
        shapes = tuple(map(_shape, arrays))
        if shapes != self._checked:
            start = np.broadcast_shapes(*(shapes[r] for r in self.program[0][1] if r >= 0))
            if np.broadcast_shapes(start, *shapes) != start:
                return False
            self._checked = shapes
        return True

    def _derivative(self, ctx, grad, arrays, kept, stash):
        tensors = stash[0]
        if grad_mode.state.enabled:  # create_graph: differentiate the primitives
            return self._composite_derivative(tensors, kept, grad, ctx.needs_input_grad)
        inputs = ctx.inputs  # refuses a second backward through a freed graph
        for t, version in zip(tensors, stash[1]):
            if t._vc[0] != version:
                _raise_modified(t, version, t._vc[0])
        device = inputs[0]._device
        needed = [False] * len(arrays)
        for position, wanted in zip(kept, ctx.needs_input_grad):
            needed[position] = wanted
        g = grad._data
        if self.reduction is not None:  # the sum's derivative: the gradient broadcast back
            g = _broadcast_back(device._xp, g, self.fused.op.meta(*arrays)[0],
                                self.reduction[1])
        grads = self.chain.backward(tuple(needed))(device._xp, g, stash[2:])
        return tuple(_own_arrays([grads[p] for p in kept], grad._data, device))

    def _composite_derivative(self, tensors, kept, grad, needed):
        from ..autograd import grad as autograd_grad

        wanted = [tensors[p] for p, n in zip(kept, needed) if n]
        out = self._finish(self.fused._unfused(tensors))
        found = iter(autograd_grad(out, wanted, grad, create_graph=True, allow_unused=True))
        return tuple(next(found) if n else None for n in needed)


_requires_grad = attrgetter("requires_grad")
_array, _device, _dtype, _shape = (attrgetter(name) for name in ("_data", "_device", "dtype",
                                                                   "shape"))


def _version(t):
    return t._vc[0]


def _reduced_dims(shape, params):
    dims = params.get("dims")
    return range(len(shape)) if dims is None else [d % len(shape) for d in dims] \
        if shape else []


def _reduced(shape, params):
    """The shape a sum with ``params`` (dims, keepdim) makes of ``shape``."""
    dims = set(_reduced_dims(shape, params))
    if params.get("keepdim"):
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _broadcast_back(xp, g, shape, params):
    """A sum's incoming gradient ``g`` spread over the summed ``shape``, in new memory."""
    kept = tuple(1 if i in set(_reduced_dims(shape, params)) else s
                 for i, s in enumerate(shape))
    return xp.broadcast_to(g.reshape(kept), shape).copy()


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
    _absorb_sums(graph)
    return count


def _absorb_sums(graph):
    """A trainable chain whose result only a ``sum`` (default dtype) reads takes the sum
    in: one op and one autograd node fewer, and the sum's backward is a broadcast."""
    readers = {}
    for n in graph.nodes:
        for v in n.inputs:
            readers.setdefault(v, []).append(n)
    outputs = set(graph.output_values())
    absorbed = set()
    for n in graph.nodes:
        if n.kind != "fused" or not isinstance(n.op, TrainableFused) or \
                n.op.reduction is not None or not n.op.trainable or n.outputs[0] in outputs:
            continue
        found = readers.get(n.outputs[0], [])
        if len(found) != 1:
            continue
        total = found[0]
        if total.kind != "op" or total.op.name != "sum" or len(total.inputs) != 1 or \
                total.params.get("dtype") is not None:
            continue
        n.op = TrainableFused(n.op.fused, (total.op, dict(total.params)))
        n.outputs = list(total.outputs)
        absorbed.add(id(total))
    graph.nodes = [n for n in graph.nodes if id(n) not in absorbed]
    return len(absorbed)
