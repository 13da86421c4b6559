"""The autograd graph: nodes recorded as operations run, and the engine that walks them back.

Every differentiable operation run on a tensor that requires grad records a :class:`Node`. The
node remembers its op, the op's parameters, what the op's derivative needs (inputs and/or the
output, with their version numbers) and an edge to the node that produced each input
(``next_functions``). Leaves get an :class:`AccumulateGrad` node that adds into ``.grad``.

The engine (:func:`run_backward`) counts how many gradients each node waits for, then runs the
nodes whose gradients are complete, most recently recorded first, with an explicit heap and no
recursion, so that a chain of 100,000 operations backpropagates.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import sys
import threading
import weakref
from typing import NamedTuple

import numpy as np

from ..profiler._recorder import state as _profiling
from ..sparse._base import SparseTensorBase
from . import anomaly_mode, grad_mode
from .anomaly_mode import _anomaly_on

__all__ = ["Node", "AccumulateGrad", "RemovableHandle", "record", "run_backward",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "increment_version", "register_multi_grad_hook", "allow_mutation_on_saved_tensors",
           "GradientEdge", "get_gradient_edge", "region_activation_memory_budget",
           "set_override_stale_capture_stream", "set_warn_on_accumulate_grad_stream_mismatch"]

_sequence = itertools.count()
# Ties in the backward's ready queue (the AccumulateGrad nodes one node feeds all share an
# infinite sequence number) break by the order they became ready: the same in every process
# running the same program, which distributed gradient hooks (FSDP's reduce-scatters) rely on.
_ready_order = itertools.count()
_NO_GRAD_FN = "element {} of tensors does not require grad and does not have a grad_fn"

_MODIFIED_INPLACE = (
    "one of the variables needed for gradient computation has been modified by an inplace "
    "operation: [{kind} {shape}]{which} is at version {now}; expected version {then} instead. "
    "Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
    "with torch.autograd.set_detect_anomaly(True, check_nan=False).")

_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")


class RemovableHandle:
    """Returned by ``register_*hook``; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks_dict):
        self.id = next(RemovableHandle._ids)
        self._hooks = weakref.ref(hooks_dict) if hasattr(hooks_dict, "__weakref__") else \
            (lambda d=hooks_dict: d)

    def remove(self):
        """Unregister the hook (a second call does nothing)."""
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(dict):
    """A dict that RemovableHandle may reference weakly."""


class Node:
    """One recorded operation in the graph (what torch shows as ``grad_fn``).

    Example::

        >>> y = ember.ones(2, requires_grad=True).exp()
        >>> y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()
        ('ExpBackward0', 'torch::autograd::AccumulateGrad')
    """

    # What every node has (``record`` sets each of these once, without calling __init__).
    # ``_pins``: the leaves this node has edges to (one tensor, or a tuple/list of them),
    # set only when it has some and never read: a leaf's AccumulateGrad holds the leaf weakly
    # (see :func:`grad_accumulator`), so the graph keeps it alive through this slot instead.
    __slots__ = ("op", "params", "next_functions", "needs_input_grad", "_saved",
                 "_saved_versions", "_saved_out", "_saved_versions_out", "_input_meta",
                 "_out_meta", "_seq", "_pins", "__dict__", "__weakref__")

    # What few nodes get: hooks, anomaly mode's forward trace, saved-tensor hooks' unpacker
    # (and the version counters of what they packed). A node that gets one keeps it in its
    # own __dict__; the others read these defaults, so recording a node stays cheap.
    _pre_hooks = None
    _hooks = None
    _tensor_hooks = None
    _retain_hooks = None
    _trace = None
    _unpack = None
    _saved_vcs = None
    _special = False  # True once any of the above is set: the engine's plain path is off

    def __init__(self, op=None, params=None):
        self.op = op
        self.params = params
        self.next_functions = ()
        self.needs_input_grad = ()
        self._saved = None
        self._saved_versions = None
        self._saved_out = None
        self._saved_versions_out = ()
        self._input_meta = ()
        self._out_meta = ()
        self._seq = next(_sequence)
        self._pins = None

    @property
    def metadata(self):
        """A dict for the user's own annotations of this node, as torch's ``Node.metadata``."""
        return self.__dict__.setdefault("_metadata", {})

    def name(self):
        """The node's type name, as torch spells it (``'MulBackward0'``)."""
        return self.op.grad_name

    def __repr__(self):
        return f"<{self.name().rpartition('::')[2]} object at {hex(id(self))}>"

    # --------------------------------------------------------- what derivatives read

    @property
    def inputs(self):
        """The inputs saved for the derivative, checked against later in-place changes."""
        if self._saved is None:
            raise RuntimeError(_BACKWARD_TWICE)
        if self._unpack is None:
            for t, version in zip(self._saved, self._saved_versions):
                if t._vc[0] != version:
                    _raise_modified(t, version, t._vc[0])
            return self._saved
        tensors = tuple(self._unpack(p) for p in self._saved)
        for t, vc, version in zip(tensors, self._saved_vcs, self._saved_versions):
            if vc[0] != version and t._vc is vc:
                _raise_modified(t, version, vc[0])
        return tensors

    @property
    def output(self):
        """The op's result (a tuple for ops with several), saved for the derivative."""
        if self._saved_out is None:
            raise RuntimeError(_BACKWARD_TWICE)
        if self._unpack is None and not self.op.multi_output and not grad_mode.state.enabled:
            alias = self._saved_out[0]  # the common case of _unpack_output, spelled out
            if alias._vc[0] != self._saved_versions_out[0]:
                _raise_modified(alias, self._saved_versions_out[0], alias._vc[0], (0, self))
            return alias
        outs = tuple(self._unpack_output(i, alias) for i, alias in enumerate(self._saved_out))
        return outs if self.op.multi_output else outs[0]

    def _unpack_output(self, index, alias):
        version = self._saved_versions_out[index]
        if self._unpack is not None:
            vc = self._saved_vcs[len(self._saved) + index]
            alias = self._unpack(alias)
            if vc[0] != version and alias._vc is vc:
                _raise_modified(alias, version, vc[0], (index, self))
        elif alias._vc[0] != version:
            _raise_modified(alias, version, alias._vc[0], (index, self))
        if not grad_mode.state.enabled:
            return alias
        # Under create_graph the output must stay connected to this node (for double backward).
        connected = _tensor_type()._make(alias._data, alias._device, alias)
        connected.grad_fn, connected._output_nr, connected._rg = self, index, True
        connected._fw_grad = getattr(alias, "_fw_grad", None)  # forward-over-reverse
        return connected

    @property
    def input_shapes(self):
        """The shapes of the op's inputs (always recorded, even when nothing is saved)."""
        return tuple(meta[0] for meta in self._input_meta)

    @property
    def input_dtypes(self):
        """The ember dtypes of the op's inputs."""
        from .. import _dtype as dt

        return tuple(dt.from_numpy_dtype(meta[1]) for meta in self._input_meta)

    # --------------------------------------------------------- hooks

    def register_hook(self, fn):
        """Call ``fn(grad_inputs, grad_outputs)`` after this node runs; it may return new
        grad_inputs."""
        if self._hooks is None:
            self._hooks = _HookDict()
            self._special = True
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn):
        """Call ``fn(grad_outputs)`` before this node runs; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
            self._special = True
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def __call__(self, *grads):
        return self._apply(list(grads))

    # --------------------------------------------------------- running

    def _apply(self, grads):
        """Turn gradients w.r.t. the outputs into gradients w.r.t. the inputs."""
        if len(grads) == 1:
            if grads[0] is None:
                grads = [_zeros(self._out_meta[0])]
        else:
            # an output no gradient reached gets zeros, except one the op declares not
            # differentiable (indices, workspaces): no derivative reads its gradient, and its
            # zeros would cost an allocation as large as the output (None, as torch's undefined)
            differentiable = self.op.differentiable_outputs
            grads = [g if g is not None or (differentiable is not None and i not in differentiable)
                     else _zeros(meta) for i, (g, meta) in enumerate(zip(grads, self._out_meta))]
        result = self.op.derivative(self, *grads, **self.params)
        if not isinstance(result, (tuple, list)):
            result = (result,)
        input_grads = []
        for g, meta, needed in zip(result, self._input_meta, self.needs_input_grad):
            if g is None or not needed:
                g = None
            else:
                try:
                    data = g._data
                except NotImplementedError:  # a sparse gradient: already its input's
                    input_grads.append(g)
                    continue
                if data.shape != meta[0] or (data.dtype is not meta[1] and data.dtype != meta[1]):
                    g = _fit_to_input(g, meta)
            input_grads.append(g)
        return input_grads

    def _release(self):
        self._saved = None
        self._saved_out = None


class AccumulateGrad(Node):
    """The node at a leaf: adds the incoming gradient into the leaf's ``.grad``.

    The leaf keeps its node (one for its lifetime, made by :func:`grad_accumulator`) and the
    node refers to the leaf weakly, so no cycle keeps a dropped leaf alive; the graph nodes
    that have an edge to the leaf hold it (``Node._pins``), as torch's graph holds it through
    this node.

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> (x * 2).grad_fn.next_functions[0][0].variable is x
        True
    """

    __slots__ = ("_variable",)
    _special = True  # the engine's general path accumulates into .grad
    # What a leaf's node never changes is read from the class (these shadow Node's slots), so
    # that making one (again for every graph that uses a leaf) sets a single slot.
    op = params = _saved = _saved_versions = _saved_out = None
    next_functions = needs_input_grad = _saved_versions_out = _input_meta = ()
    _seq = float("inf")  # run as soon as ready, as torch does

    def __init__(self, variable):
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        """The leaf tensor this node accumulates into (None once nothing holds the leaf)."""
        return self._variable()

    @property
    def _out_meta(self):
        variable = self._variable()
        if variable is None:  # (the leaf is gone: one output still)
            return ((None, None, None),)
        return ((variable._data.shape, variable._data.dtype, variable._device),)

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def _release(self):
        pass


def _short_node_name(node):
    """``'MulBackward0'`` -> ``'Mul'``, as torch names a node in the in-place error."""
    name = node.name()
    head, sep, tail = name.rpartition("Backward")
    return head if sep and (tail == "" or tail.isdigit()) else name


def _raise_modified(t, then, now, producer=None):
    """torch's error for a saved tensor changed in place since it was saved."""
    if producer is None and t.grad_fn is not None:
        producer = (t._output_nr, t.grad_fn)
    which = "" if producer is None else \
        f", which is output {producer[0]} of {_short_node_name(producer[1])},"
    raise RuntimeError(_MODIFIED_INPLACE.format(kind=_type_name(t), shape=list(t.shape),
                                                which=which, now=now, then=then))


def _type_name(t):
    from .._tensor import _TYPE_NAMES

    return _TYPE_NAMES.get(t.dtype.name, str(t.dtype))


def _zeros(meta):
    """The zero gradient of an output no gradient reached (``meta``: its shape, dtype, device)."""
    shape, np_dtype, device = meta
    if device._xp is np:  # a CPU tensor made directly: ember.zeros parses its arguments first
        return _tensor_type()._make(np.zeros(shape, np_dtype), device)
    from .. import _dtype as dt
    from ..ops.creation import zeros

    return zeros(shape, dtype=dt.from_numpy_dtype(np_dtype), device=device)


def _fit_to_input(grad, meta):
    """Reduce a broadcast gradient to the input's shape and dtype."""
    shape, np_dtype, _ = meta
    if grad._data.shape != shape:
        grad = _late.sum_to_shape(grad, shape)  # (sum_to_size without its argument parsing)
    if grad._data.dtype != np_dtype:
        if grad._data.dtype.kind == "c" and np_dtype.kind != "c":
            grad = grad.real
        from .. import _dtype as dt

        grad = grad.to(dt.from_numpy_dtype(np_dtype))
    return grad


# ---------------------------------------------------------------- recording


def grad_accumulator(tensor):
    """The AccumulateGrad node of a leaf that requires grad: made on first use and kept by the
    leaf for its lifetime (a graph whose leaves recur, as parameters do, reuses it).

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> grad_accumulator(x) is grad_accumulator(x)
        True
    """
    try:
        return tensor._acc[0]
    except AttributeError:  # (the slot is unset until the leaf's first node is made)
        return _leaf_edge(tensor)[0]


def _leaf_edge(tensor):
    """The edge ``(AccumulateGrad node, 0)`` to a leaf, made once and kept on the leaf
    (``Tensor._acc``); the node refers back to the leaf weakly, so there is no cycle."""
    try:
        return tensor._acc
    except AttributeError:
        node = _new(AccumulateGrad)
        node._variable = weakref.ref(tensor)
        edge = tensor._acc = (node, 0)
        return edge


def _pin(node, leaf):
    """Keep ``leaf`` alive as long as ``node``, which has an edge to its AccumulateGrad."""
    try:
        pins = node._pins
    except AttributeError:  # (unset on a node that has no pins yet)
        pins = None
    node._pins = leaf if pins is None else (pins, leaf)


def edge_of(tensor):
    """The (node, output number) pair through which gradient flows to ``tensor``. A node that
    keeps an edge to a leaf must also keep the leaf (:func:`_pin`)."""
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    if tensor._rg:
        return _leaf_edge(tensor)
    return (None, 0)


def _edge_to(t, node):
    """The edge from the new ``node`` to its input ``t``: (the node that made ``t``, its output
    number), a leaf's AccumulateGrad (the leaf then pinned to ``node``), or ``_NO_EDGE``."""
    fn = t._grad_fn
    if t._base is not None and t._gfv != t._vc[0]:
        fn = t.grad_fn  # a view whose base changed in place: regenerate its node
    if fn is not None:
        return (fn, t._output_nr)
    if t._rg:
        _pin(node, t)
        return _leaf_edge(t)
    return _NO_EDGE


def record(op, inputs, params, results):
    """Attach a new node for ``op`` to ``results`` (called by the dispatcher; keep it lean).

    The common cases are spelled out (no comprehension, no call per input edge): this runs
    once per recorded operation. Two inputs: :func:`record_binary`.
    """
    if len(inputs) == 2:
        return record_binary(op, inputs[0], inputs[1], params, results)
    node = _new(Node)  # every slot is set below, once (Node.__init__ would set them twice)
    node.op = op
    node.params = params
    node._seq = next(_sequence)
    if len(inputs) == 1:
        t = inputs[0]
        fn = t._grad_fn
        if t._base is not None:
            node.next_functions = (_edge_to(t, node),)
        elif fn is not None:
            node.next_functions = ((fn, t._output_nr),)
        elif t._rg:
            try:  # the leaf's edge, as _leaf_edge gives it, without its call once made
                node.next_functions = (t._acc,)
            except AttributeError:
                node.next_functions = (_leaf_edge(t),)
            node._pins = t
        else:
            node.next_functions = (_NO_EDGE,)
        node.needs_input_grad = (t._rg,)
        data = t._data
        node._input_meta = ((data.shape, data.dtype, t._device),)
        if op.save_inputs:
            node._saved = inputs
            node._saved_versions = (t._vc[0],)
        else:
            node._saved = node._saved_versions = ()
    else:
        node._pins = None
        node.next_functions = tuple([_edge_to(t, node) for t in inputs])
        node.needs_input_grad = tuple([t._rg for t in inputs])
        node._input_meta = tuple([(t._data.shape, t._data.dtype, t._device) for t in inputs])
        if op.save_inputs:
            node._saved = inputs
            node._saved_versions = tuple([t._vc[0] for t in inputs])
        else:
            node._saved = node._saved_versions = ()
    # the output side is written out again in record_binary: folding record_binary into this
    # function (its inputs as a tuple) measured 130 ns (7%) more per recorded ``a + b``
    # (thread CPU time, both versions A/B in one process)
    if op.multi_output:
        _record_outputs(node, op, results)
    else:  # (as in record_binary)
        data = results._data
        node._out_meta = ((data.shape, data.dtype, results._device),)
        results._grad_fn = node
        results._rg = True
        if op.save_output:
            node._saved_out = (_alias(results),)
            node._saved_versions_out = (results._vc[0],)
        else:
            node._saved_out = None
            node._saved_versions_out = ()
    # one slot each says whether any thread uses saved-tensor hooks / anomaly mode
    if not _hooks_on.none and _hook_state.stack:
        _pack_saved(node)
    if not _anomaly_on.none and anomaly_mode.state.enabled:
        _trace_forward(node)
    return node


def record_binary(op, a, b, params, results):
    """:func:`record` for an op of two inputs ``a`` and ``b`` (the arithmetic operators).

    Example::

        >>> from ember.ops.pointwise.arithmetic import add_op
        >>> x, y = ember.ones(2, requires_grad=True), ember.ones(2)
        >>> out = x.detach() + y
        >>> record_binary(add_op, x, y, {}, out).name()
        'AddBackward0'
    """
    node = _new(Node)  # every slot is set below, once (Node.__init__ would set them twice)
    node.op = op
    node.params = params
    node._seq = next(_sequence)
    # the edges to a and b, as _edge_to makes them, without its call for plain tensors; a
    # leaf's edge is kept on the leaf (``_leaf_edge``) and the leaf pinned to the node
    node._pins = None
    fn = a._grad_fn
    if a._base is not None:
        edge_a = _edge_to(a, node)
    elif fn is not None:
        edge_a = (fn, a._output_nr)
    elif a._rg:
        try:
            edge_a = a._acc
        except AttributeError:
            edge_a = _leaf_edge(a)
        node._pins = a
    else:
        edge_a = _NO_EDGE
    fn = b._grad_fn
    if b._base is not None:
        edge_b = _edge_to(b, node)
    elif fn is not None:
        edge_b = (fn, b._output_nr)
    elif b._rg:
        try:
            edge_b = b._acc
        except AttributeError:
            edge_b = _leaf_edge(b)
        pins = node._pins  # (_pin, inline)
        node._pins = b if pins is None else (pins, b)
    else:
        edge_b = _NO_EDGE
    node.next_functions = (edge_a, edge_b)
    node.needs_input_grad = (a._rg, b._rg)
    data, other = a._data, b._data
    node._input_meta = ((data.shape, data.dtype, a._device), (other.shape, other.dtype, b._device))
    if op.save_inputs:
        node._saved = (a, b)
        node._saved_versions = (a._vc[0], b._vc[0])
    else:
        node._saved = node._saved_versions = ()
    if op.multi_output:
        _record_outputs(node, op, results)
    else:  # (as in record)
        data = results._data
        node._out_meta = ((data.shape, data.dtype, results._device),)
        results._grad_fn = node
        results._rg = True
        if op.save_output:
            node._saved_out = (_alias(results),)
            node._saved_versions_out = (results._vc[0],)
        else:
            node._saved_out = None
            node._saved_versions_out = ()
    if not _hooks_on.none and _hook_state.stack:
        _pack_saved(node)
    if not _anomaly_on.none and anomaly_mode.state.enabled:
        _trace_forward(node)
    return node


def _record_outputs(node, op, results):
    """The output side of :func:`record` for an op with several outputs."""
    differentiable = op.differentiable_outputs
    node._out_meta = tuple([(r._data.shape, r._data.dtype, r._device) for r in results])
    for i, r in enumerate(results):
        if differentiable is None or i in differentiable:
            r._grad_fn, r._output_nr, r._rg = node, i, True
    if op.save_output:
        node._saved_out = tuple([_alias(r) for r in results])
        node._saved_versions_out = tuple([r._vc[0] for r in results])
    else:
        node._saved_out = None
        node._saved_versions_out = ()


def _trace_forward(node):
    """Anomaly mode: remember where the forward operation of ``node`` ran."""
    node._trace = anomaly_mode.forward_trace()
    node._special = True


_NO_EDGE = (None, 0)
_new = object.__new__


def _alias(t):
    """A tensor sharing ``t``'s memory and version counter but not its graph (no cycle)."""
    return _late.Tensor._make(t._data, t._device, t)


class _LateImports:
    """Names from modules that import this one, looked up on first use and kept: an
    ``import`` statement inside a function costs 1-2 us each time it runs (measured), which
    the per-op paths here (``_alias`` for every op that saves its output) cannot afford."""

    def __getattr__(self, name):
        if name == "Tensor":
            from .._tensor import Tensor as value
        elif name == "sum_to_shape":
            from ..ops.reduce.sums import sum_to_shape as value
        elif name == "ones_like":
            from ..ops.creation import ones_like as value
        else:
            raise AttributeError(name)
        setattr(self, name, value)  # later reads find the instance attribute
        return value


_late = _LateImports()


def _tensor_type():
    """``ember.Tensor`` (imported late: ``ember._tensor`` imports this module)."""
    return _late.Tensor


# ---------------------------------------------------------------- saved-tensor hooks


class _HookState(threading.local):
    def __init__(self):
        self.stack = []
        self.disabled = None


_hook_state = _HookState()
_hooks_on = grad_mode._ThreadCount()  # saved_tensors_hooks contexts open in any thread


def _pack_saved(node):
    """Run the innermost pack hook on everything ``node`` saved (inputs, then outputs)."""
    pack, unpack = _hook_state.stack[-1]
    saved_out = node._saved_out or ()
    node._saved_vcs = tuple(t._vc for t in node._saved) + tuple(t._vc for t in saved_out)
    # Packing runs with the hooks off, as torch does (a hook may itself compute with tensors).
    stack, _hook_state.stack = _hook_state.stack, []
    try:
        node._saved = tuple(pack(t) for t in node._saved)
        if node._saved_out is not None:
            node._saved_out = tuple(pack(t) for t in saved_out)
    finally:
        _hook_state.stack = stack
    node._unpack = unpack


class saved_tensors_hooks:
    """Context manager: pack every tensor the graph saves with ``pack_hook`` and get it back with
    ``unpack_hook`` when backward needs it.

    Example::

        >>> with ember.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        ...     y = x.exp()          # the output saved for backward goes through the hooks
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hook_state.disabled is not None:
            raise RuntimeError(_hook_state.disabled)
        _hook_state.stack.append((self.pack_hook, self.unpack_hook))
        _hooks_on.change(False, True)
        return self

    def __exit__(self, *exc):
        _hook_state.stack.pop()
        _hooks_on.change(True, False)
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors saved for backward on the CPU and move them back when they are needed.

    Example::

        >>> with ember.autograd.graph.save_on_cpu():
        ...     loss = model(x).sum()
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            return tensor._device, tensor.detach().to("cpu", copy=True) \
                if tensor._device.type != "meta" else tensor.detach()

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager under which saving a tensor with hooks raises ``error_message``."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self._prev = _hook_state.disabled
        if _hook_state.stack:
            raise RuntimeError(self.error_message)
        _hook_state.disabled = self.error_message

    def __exit__(self, *exc):
        _hook_state.disabled = self._prev
        return False


# ---------------------------------------------------------------- hooks on tensors


def register_tensor_hook(tensor, hook):
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is None:
        hooks = getattr(tensor, "_hooks", None)
        if hooks is None:
            hooks = tensor._hooks = _HookDict()
    else:
        node = tensor.grad_fn
        if node._tensor_hooks is None:
            node._tensor_hooks = {}
            node._special = True
        hooks = node._tensor_hooks.setdefault(tensor._output_nr, _HookDict())
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def register_post_accumulate_hook(tensor, hook):
    if not tensor._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = getattr(tensor, "_post_acc_hooks", None)
    if hooks is None:
        hooks = tensor._post_acc_hooks = _HookDict()
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def retain_grad(tensor):
    if not tensor.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if tensor.grad_fn is None or getattr(tensor, "_retains_grad", False):
        return
    tensor._retains_grad = True
    _add_retain_hook(tensor, tensor.grad_fn)


def _add_retain_hook(tensor, node):
    if node._retain_hooks is None:
        node._retain_hooks = {}
        node._special = True
    node._retain_hooks[tensor._output_nr] = weakref.ref(tensor)


def move_retained_grad(tensor, old_node, old_output_nr=None):
    """``tensor`` got a new ``grad_fn`` (an in-place change): its ``retain_grad`` moves from
    ``old_node`` to the new node, as torch moves it; its other hooks stay with the old one."""
    hooks = old_node._retain_hooks
    nr = tensor._output_nr if old_output_nr is None else old_output_nr
    if hooks is not None and nr in hooks and hooks[nr]() is tensor:
        del hooks[nr]
    if tensor._grad_fn is not None:
        _add_retain_hook(tensor, tensor._grad_fn)


def _run_tensor_hooks(hooks, grad):
    for hook in list(hooks.values()):
        new = hook(grad)
        if new is not None:
            grad = new
    return grad


# ---------------------------------------------------------------- the engine


def _discover(roots):
    """Every node reachable from ``roots``, and how many edges point at each."""
    dependencies = {}
    order = []
    stack = list(roots)
    seen = set(roots)
    while stack:
        node = stack.pop()
        order.append(node)
        for child, _ in node.next_functions:
            if child is None:
                continue
            count = dependencies.get(child)
            if count is not None:  # reached before: it is in ``seen`` already
                dependencies[child] = count + 1
                continue
            dependencies[child] = 1
            if child not in seen:  # (a root is seen, and gets no count, until reached)
                seen.add(child)
                stack.append(child)
    return order, dependencies


def _needed_nodes(order, targets):
    """Nodes from which some target is reachable (the rest need not run)."""
    needed = {node: node in targets for node in order}
    # A node is recorded after the nodes of its inputs, so ascending sequence numbers visit
    # every child before its parents.
    for node in sorted(order, key=lambda n: n._seq):
        if not needed[node]:
            needed[node] = any(child is not None and needed.get(child, False)
                               for child, _ in node.next_functions)
    return needed


class _Everything:
    def __contains__(self, item):
        return True


_ALL = _Everything()
_ENGINE_REFS = 4  # references the engine itself holds to a gradient passed to _accumulate


def add_gradients(a, b):
    """``a + b`` for two gradients of one tensor, either of which may be sparse (torch adds
    a sparse tensor to a dense one, never a dense one to a sparse one).

    Example::

        >>> add_gradients(ember.ones(2), ember.ones(2))
        tensor([2., 2.])
    """
    if isinstance(a, SparseTensorBase) and not isinstance(b, SparseTensorBase):
        return b + a
    return a + b


def _owned_by(grad, stolen):
    """Whether the engine holds the only reference to ``grad``'s memory (so ``.grad`` may take
    it without a copy): a fresh array, not a view, referenced by this tensor alone, and not
    already handed to another leaf in this backward pass."""
    array = grad._data
    return (grad._base is None and type(array) is np.ndarray and array.base is None
            and id(array) not in stolen and sys.getrefcount(array) <= 3
            and sys.getrefcount(grad) <= _ENGINE_REFS)


def _accumulate(tensor, grad, create_graph, stolen=frozenset()):
    hooks = getattr(tensor, "_hooks", None)
    if hooks:
        grad = _run_tensor_hooks(hooks, grad)
        stolen = _ALL  # a hook may keep the tensor it was given or returns
    old = tensor.grad
    if old is None:
        if create_graph:
            tensor._grad = grad
        elif not isinstance(grad, SparseTensorBase) and _owned_by(grad, stolen):
            tensor._grad = grad.detach()  # steal the buffer: nothing else can see it
            stolen.add(id(grad._data))
        else:
            tensor._grad = grad.detach().clone()
    elif create_graph:
        tensor._grad = add_gradients(old, grad)
    else:
        tensor._grad = add_gradients(old, grad.detach()).detach()
    post = getattr(tensor, "_post_acc_hooks", None)
    if post:
        for hook in list(post.values()):
            hook(tensor)


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 accumulate=True, allow_unused=True):
    """Backpropagate from ``outputs``; return the gradients of ``inputs`` when capturing.

    With ``accumulate=True`` (``Tensor.backward``) the gradients are added into ``.grad`` of the
    leaves (or only of ``inputs`` when given); with ``accumulate=False`` (``autograd.grad``) they
    are returned, one per input, and nothing's ``.grad`` changes.
    """
    if retain_graph is None:
        retain_graph = create_graph
    roots, root_grads = [], []
    for index, (out, grad) in enumerate(zip(outputs, grad_outputs)):
        node, nr = edge_of(out)
        if node is None:
            raise RuntimeError(_NO_GRAD_FN.format(index))
        roots.append((node, nr))
        root_grads.append(grad)
    order, dependencies = _discover(list({n for n, _ in roots}))

    targets = {}  # (node, output_nr) -> index in inputs
    if inputs is not None:
        for i, t in enumerate(inputs):
            targets[edge_of(t)] = i
        target_nodes = {node for node, _ in targets}
        needed = _needed_nodes(order, target_nodes)
    else:
        needed = None
    captured = [None] * (len(inputs) if inputs is not None else 0)

    # .grad may take a gradient's memory without a copy, except the caller's own tensors
    stolen = {id(g._data) for g in root_grads}
    buffers = {}
    for (node, nr), grad in zip(roots, root_grads):
        buf = buffers.setdefault(node, [None] * max(len(node._out_meta), 1))
        buf[nr] = grad if buf[nr] is None else add_gradients(buf[nr], grad)
    ready = []
    for node in list(buffers):
        if dependencies.get(node, 0) == 0:
            heapq.heappush(ready, (-node._seq, next(_ready_order), node))
    outer_task = _task_state.task
    if _multi_grad_hooks[0]:  # register_multi_grad_hook asks which nodes this pass will run
        _task_state.task = _GraphTask(order, needed)

    plain_pass = needed is None and not targets  # no node is skipped, nothing captured
    outer_retain, _task_state.retain_graph = _task_state.retain_graph, retain_graph
    try:
        _walk(ready, buffers, dependencies, plain_pass, inputs, targets, captured, needed,
              accumulate, create_graph, retain_graph, stolen)
    finally:
        _task_state.task = outer_task
        _task_state.retain_graph = outer_retain
    return captured


def _walk(ready, buffers, dependencies, plain_pass, inputs, targets, captured, needed,
          accumulate, create_graph, retain_graph, stolen):
    """The engine's loop: run each ready node, hand its gradients to its children."""
    # set_grad_enabled(create_graph) spelled out: a mode written only when it changes (each
    # write takes the thread count's lock), both put back as they were
    state = grad_mode.state
    before = (state.enabled, state.inference)
    if before[0] != bool(create_graph):
        state.enabled = bool(create_graph)
    try:
        while ready:
            _, _, node = heapq.heappop(ready)
            grads = buffers.pop(node, None)
            if grads is None:  # no gradient reached this node: only release its children
                _pass_nothing(node, dependencies, buffers, ready)
                continue
            if _profiling.recorder is None:
                if plain_pass and not node._special:  # _execute's plain path, spelled out
                    input_grads = node._apply(grads)
                    if not retain_graph:
                        if type(node) is Node:  # Node._release, without its call
                            node._saved = node._saved_out = None
                        else:
                            node._release()
                    # _pass_to_children(node, input_grads, None, ...), without its call
                    for (child, nr), grad in zip(node.next_functions, input_grads):
                        if child is None:
                            continue
                        if grad is not None:
                            buf = buffers.get(child)
                            if buf is None:
                                buffers[child] = _new_buffer(child, nr, grad)
                            elif buf[nr] is None:
                                buf[nr] = grad
                            else:
                                buf[nr] = add_gradients(buf[nr], grad)
                        waiting = dependencies[child] - 1
                        dependencies[child] = waiting
                        if waiting == 0:
                            heapq.heappush(ready, (-child._seq, next(_ready_order), child))
                    # drop this frame's references: a leaf's .grad takes a gradient's memory
                    # only when the engine alone holds it (_owned_by, _ENGINE_REFS)
                    input_grads = grad = None
                    continue
                _execute(node, grads, inputs, targets, captured, needed, accumulate,
                         create_graph, retain_graph, buffers, dependencies, ready, stolen)
            else:  # ember.profiler times the node
                _profiling.recorder.evaluate_function(node, _execute, (
                    node, grads, inputs, targets, captured, needed, accumulate, create_graph,
                    retain_graph, buffers, dependencies, ready, stolen))
    finally:
        if (state.enabled, state.inference) != before:
            state.enabled, state.inference = before


def _execute(node, grads, inputs, targets, captured, needed, accumulate, create_graph,
             retain_graph, buffers, dependencies, ready, stolen):
    """Run one node: hooks, capture, derivative, then hand gradients to its children."""
    if not node._special and needed is None and not targets and _profiling.recorder is None:
        # the plain node (no hooks, not a leaf's, nothing captured): derivative and pass on
        input_grads = node._apply(grads)
        if not retain_graph:
            node._release()
        _pass_to_children(node, input_grads, needed, buffers, dependencies, ready)
        return
    if node._tensor_hooks:
        for nr, hooks in node._tensor_hooks.items():
            if grads[nr] is not None:
                grads[nr] = _run_tensor_hooks(hooks, grads[nr])
    if node._retain_hooks:
        for nr, ref in node._retain_hooks.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr] if create_graph else grads[nr].detach()
                t._grad = g.clone() if t.grad is None else add_gradients(t.grad, g)
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)

    if isinstance(node, AccumulateGrad):
        key = (node, 0)
        # (None when only a caller's own handle on the node, outside any graph, led here
        # after the leaf was dropped: nothing is left to accumulate into)
        variable = node._variable()
        if key in targets:
            index = targets[key]
            grad = grads[0]
            hooks = getattr(variable, "_hooks", None)
            if hooks:
                grad = _run_tensor_hooks(hooks, grad)
            if not accumulate:
                captured[index] = grad
            elif variable is not None:
                _accumulate_plain(variable, grad, create_graph)
        elif accumulate and needed is None and grads[0] is not None and variable is not None:
            _accumulate(variable, grads[0], create_graph, stolen)
        return

    if targets:
        for nr, g in enumerate(grads):
            key = (node, nr)
            if key in targets and g is not None:
                if accumulate:
                    _accumulate_plain(inputs[targets[key]], g, create_graph)
                else:
                    captured[targets[key]] = g

    if needed is not None and not any(
            child is not None and needed.get(child, False) for child, _ in node.next_functions):
        _finish(node, retain_graph)
        return
    if node._trace is not None:
        from . import anomaly_mode

        input_grads = anomaly_mode.run_checked(node, grads)
    elif _profiling.recorder is not None:
        input_grads = _profiling.recorder.apply_node(node, grads)
    else:
        input_grads = node._apply(grads)
    if node._hooks:
        for hook in list(node._hooks.values()):
            new = hook(tuple(input_grads), tuple(grads))
            if new is not None:
                input_grads = list(new)
    if not retain_graph:
        node._release()
    _pass_to_children(node, input_grads, needed, buffers, dependencies, ready)


def _pass_to_children(node, input_grads, needed, buffers, dependencies, ready):
    """Add ``node``'s input gradients into its children's buffers; queue the children that
    have now received every gradient they wait for."""
    for (child, nr), grad in zip(node.next_functions, input_grads):
        if child is None:
            continue
        if grad is not None and (needed is None or needed.get(child, False)):
            buf = buffers.get(child)
            if buf is None:
                buffers[child] = _new_buffer(child, nr, grad)
            else:
                buf[nr] = grad if buf[nr] is None else add_gradients(buf[nr], grad)
        waiting = dependencies[child] - 1
        dependencies[child] = waiting
        if waiting == 0:
            heapq.heappush(ready, (-child._seq, next(_ready_order), child))


def _new_buffer(node, nr, grad):
    """The list of gradients ``node`` receives, one per output, holding ``grad`` at ``nr``."""
    if type(node) is AccumulateGrad:  # (one output; its _out_meta is computed on each read)
        return [grad]
    count = len(node._out_meta)
    if count <= 1:
        return [grad]
    buf = [None] * count
    buf[nr] = grad
    return buf


def _pass_nothing(node, dependencies, buffers, ready):
    for child, _ in node.next_functions:
        if child is not None:
            dependencies[child] -= 1
            if dependencies[child] == 0:
                heapq.heappush(ready, (-child._seq, next(_ready_order), child))


def _finish(node, retain_graph):
    if not retain_graph:
        node._release()


def _accumulate_plain(tensor, grad, create_graph):
    """Accumulate into ``tensor.grad`` for ``backward(inputs=...)`` (hooks already ran)."""
    old = tensor.grad
    g = grad if create_graph else grad.detach()
    if old is None:
        tensor._grad = g if create_graph else g.clone()
    else:
        tensor._grad = add_gradients(old, g)


# ---------------------------------------------------------------- graph tasks and multi-hooks


class _GraphTask:
    """One backward pass, as multi-grad hooks see it: which nodes it will run."""

    def __init__(self, order, needed):
        self.nodes = set(order)
        self.needed = needed

    def will_execute(self, node):
        return node in self.nodes and (self.needed is None or self.needed.get(node, False))


class _TaskState(threading.local):
    task = None
    # whether the running backward pass keeps the graph (outside a pass: True, so a node
    # called directly keeps what it saved)
    retain_graph = True


_task_state = _TaskState()
_multi_grad_hooks = [0]  # how many multi-grad hooks exist; the engine tracks tasks only then


def increment_version(tensor):
    """Mark ``tensor`` (or each tensor of an iterable) as modified in place, as an in-place
    operation would: autograd then refuses to use an earlier saved value of it.

    Example::

        >>> x = ember.ones(2)
        >>> ember.autograd.graph.increment_version(x)
        >>> x._version
        1
    """
    from .._tensor import Tensor

    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._vc[0] += 1


class _MultiHandle:
    """The handle of a multi-grad hook: ``remove()`` removes it from every tensor."""

    def __init__(self, handles):
        self.handles = handles
        self._removed = False

    def remove(self):
        for handle in self.handles:
            handle.remove()
        if not self._removed:
            self._removed = True
            _multi_grad_hooks[0] -= 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _node_of(tensor):
    return tensor.grad_fn if tensor.grad_fn is not None else grad_accumulator(tensor)


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` once per backward pass: with mode ``"all"``, after the gradients of all
    ``tensors`` that the pass computes are known (``fn`` gets a list with None for those it
    does not compute); with mode ``"any"``, with the first of them.

    Example::

        >>> a, b = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
        >>> seen = []
        >>> handle = ember.autograd.graph.register_multi_grad_hook(
        ...     (a, b), lambda grads: seen.append([g.tolist() for g in grads]))
        >>> (a * 2 + b * 3).sum().backward()
        >>> seen
        [[[2.0, 2.0], [3.0, 3.0]]]
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    per_task = weakref.WeakKeyDictionary()  # graph task -> [expected, count, grads] or fired

    def make_hook(index):
        def hook(grad):
            task = _task_state.task
            if mode == "any":
                if task not in per_task:
                    per_task[task] = True
                    fn(grad)
                return
            if task not in per_task:
                expected = sum(task.will_execute(_node_of(t)) for t in tensors
                               if t.requires_grad)
                per_task[task] = [expected, 0, [None] * len(tensors)]
            record = per_task[task]
            record[1] += 1
            record[2][index] = grad
            if record[1] == record[0]:
                fn(record[2])

        return hook

    handles = tuple(t.register_hook(make_hook(i)) for i, t in enumerate(tensors)
                    if t.requires_grad)
    _multi_grad_hooks[0] += 1
    return _MultiHandle(handles)


class allow_mutation_on_saved_tensors:
    """Context manager under which tensors saved for backward may be changed in place:
    backward still uses the values they had when saved. (ember copies each tensor when it is
    saved, where torch copies it only when it is modified: same results, more memory.)

    Example::

        >>> x, y = ember.ones(2, requires_grad=True), ember.full((2,), 2.)
        >>> with ember.autograd.graph.allow_mutation_on_saved_tensors():
        ...     loss = (x * y).sum()
        ...     _ = y.mul_(10)
        ...     loss.backward()
        >>> x.grad
        tensor([2., 2.])
    """

    def __init__(self):
        self._hooks = saved_tensors_hooks(_copy_saved, _unpack_saved)

    def __enter__(self):
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        return self._hooks.__exit__(*exc)


def _copy_saved(tensor):
    from .grad_mode import no_grad

    with no_grad():
        return tensor.clone()


def _unpack_saved(tensor):
    return tensor


class GradientEdge(NamedTuple):
    """The node and output number through which gradient reaches a tensor (torch's type).

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> get_gradient_edge(x * 2).output_nr
        0
    """

    node: Node
    output_nr: int
    ownership_token: Node | None = None


def get_gradient_edge(tensor):
    """The :class:`GradientEdge` of ``tensor`` in the autograd graph.

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> type(get_gradient_edge(x).node).__name__
        'AccumulateGrad'
    """
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, output_nr = edge_of(tensor)
    return GradientEdge(node, output_nr)


@contextlib.contextmanager
def region_activation_memory_budget(budget):
    """torch.compile's activation-memory budget for a compiled region. Like torch's, it only
    works inside a compiled region and raises ``RuntimeError`` in eager code.

    Example::

        >>> with region_activation_memory_budget(0.5):  # doctest: +SKIP
        ...     pass
    """
    name = "torch.autograd.graph.region_activation_memory_budget"
    if isinstance(budget, bool) or not isinstance(budget, (int, float)):
        raise TypeError(f"{name}: expects a float, got {type(budget).__name__}")
    if not 0.0 <= budget <= 1.0:
        raise ValueError(f"{name}: must be in [0, 1], got {budget}")
    from ..compiler import is_compiling
    if not is_compiling():
        raise RuntimeError(f"{name} can only be used inside a torch.compile region; it has no "
                           "effect in eager mode.")
    yield


_stream_flags = {"override_stale_capture_stream": False,
                 "warn_on_accumulate_grad_stream_mismatch": True}


def set_override_stale_capture_stream(enabled):
    """Set torch's CUDA-graph-capture stream flag (ember captures no CUDA graphs).

    Example::

        >>> set_override_stale_capture_stream(False)
    """
    _stream_flags["override_stale_capture_stream"] = bool(enabled)


def set_warn_on_accumulate_grad_stream_mismatch(enabled):
    """Set torch's warning flag for gradients accumulated on another CUDA stream.

    Example::

        >>> set_warn_on_accumulate_grad_stream_mismatch(True)
    """
    _stream_flags["warn_on_accumulate_grad_stream_mismatch"] = bool(enabled)
