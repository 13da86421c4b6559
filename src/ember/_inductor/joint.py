"""The joint forward-backward graph: a captured graph that trains runs its forward as
straight-line array code without autograd, and its backward as a second graph, traced once.

Eager code records one autograd node per operator and walks them backwards, each node
calling its derivative through ember's operators. For a captured graph the whole walk is
known when the graph is compiled, so it is traced once, as torch's AOTAutograd does:

1. *Joint trace.* The captured graph runs on stand-ins of its inputs and parameters (same
   arrays, same ``requires_grad``, no hooks; buffers it writes are cloned so the trace
   changes no state) with autograd recording, then ``autograd.grad`` runs from its outputs
   with placeholder output gradients, all under ``jit``'s tracer: the derivatives are written
   with ember's operators (a fused first-order backward kernel is an operator too), so the
   trace holds the forward and the backward in one graph.
2. *Partition.* Nodes that read an output gradient, and cheap nodes (parameter reads,
   constants, views) only they need, form the backward graph; the rest is the forward.
   The forward values the backward reads are the *saved* values: the forward returns them
   with its outputs.
3. *Compile.* Both graphs go through DCE, CSE, constant folding and element-wise fusion,
   and become generated Python calling each operator's kernel on arrays
   (``op.kernel(xp, a, b, **params)``), deleting each temporary after its last use.

At run time the forward runs without autograd and ONE node joins the outputs to the inputs
and parameters that require grad; its derivative runs the backward graph. A second
backward without ``retain_graph`` raises autograd's error; inputs changed in place since
the forward raise it too. Under ``create_graph`` the node runs the captured graph again with
autograd recording and differentiates that, so higher-order gradients stay exact (graphs
that draw random numbers or write buffers refuse, as torch refuses double backward through
compiled graphs). A custom ``autograd.Function`` is traced through: its forward's
operators join the forward, and its backward's (run by ``autograd.grad`` on the traced
values) join the backward, so the user's Python runs once, when the graph is traced, as in
torch.compile; one whose code reads values into Python or NumPy, prints, draws random
numbers, writes its inputs or makes tensors outside ember's operators is refused. Graphs
the joint trace cannot serve (calls other than random factories, input checks and custom
Functions, in-place writes to inputs, outputs that are views of inputs, other devices)
keep the replay with autograd recording each operator (``EMBER_LOGS=aot`` says why).
A dynamic variant's captured graph (symbolic sizes) is traced at the call's concrete sizes:
a call at other sizes gets a joint graph traced for them from the same captured graph,
kept per input layout (at most ``cache_size_limit`` joint graphs; no recapture, no
recompile counted).

Example::

    >>> from ember._inductor.capture import capture
    >>> w = ember.ones(3, requires_grad=True)
    >>> found = capture(lambda x: (x * w).sum(), [ember.ones(3)])
    >>> run = compile_joint(found.graph, found.captured, [ember.ones(3)])
    >>> run([ember.ones(3) * 2])[0].backward()
    >>> w.grad
    tensor([2., 2., 2.])
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from operator import attrgetter

import numpy as np

from .._tensor import Tensor, _trace_state
from ..autograd import grad_mode
from ..autograd.graph import _BACKWARD_TWICE, Node, _raise_modified, _task_state, record
from ..jit._ir import CALL, CONSTANT, COPY, GET_ATTR, OP, Graph
from ..jit._ir import Node as GraphNode
from ..jit._sizes import SIZE_CONSUMERS
from ..jit._tracer import Tracer, paused, tracing
from ..ops._registry import Op, assign_inplace, autocast_state, wrap
from .array_code import ArrayCode
from .fusion import _own_arrays
from .joint_passes import fuse_bias_products, sum_columns_by_product

__all__ = ["compile_joint", "JointUnsupported"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# ember's frames between user code and the check that it called into ember
_PLUMBING = ("_tensor.py", "overrides.py", "_traceback.py", os.path.join("_inductor", "joint.py"))

# calls a joint graph runs as they are (their results need no gradient): random factories
# and dropout's mask draw fresh numbers per call; input checks repeat the check
_PLAIN_CALLS = frozenset({"ember.rand", "ember.randn", "ember.rand_like", "ember.randn_like",
                          "ember.randint", "ember.randint_like", "ember.randperm",
                          "ember.bernoulli", "ember.normal", "ember.multinomial",
                          "nn.functional.dropout_mask"})
# operators whose derivative calls the user's code (which the trace must not run)
_USER_CODE_IN_BACKWARD = frozenset({"backward_hook"})
# calls that only pack or unpack arguments: run as they are, never recorded (the tensors
# they hand on are already traced)
_STRUCTURAL_CALLS = frozenset({"operator.getitem", "jit.tuple", "jit.list"})
# the calls of a symbolic-size graph (a dynamic variant's): size reads and functions given
# traced sizes, run with the example's sizes while the trace records the operators they
# call (``empty`` is left out: its values would become a constant)
_SIZE_CALLS = frozenset({name for _, _, name, _, _ in SIZE_CONSUMERS if "empty" not in name}
                        | {"method:size", "method:numel", "method:unsqueeze"})


class JointUnsupported(Exception):
    """The joint graph cannot serve this captured graph (the message says why); the graph
    runs with autograd recording each operator instead.

    Example::

        >>> str(JointUnsupported("a call"))
        'a call'
    """


def compile_joint(graph, attrs, tensors, fallback=None):
    """A callable running ``graph`` (a captured graph, flat outputs) on a list of tensors
    as a forward graph without autograd and one autograd node whose backward runs the
    traced backward graph. ``attrs`` maps ``get_attr`` names to live tensors; ``tensors``
    are the example inputs; ``fallback(tensors)`` runs a call the traced graph does not
    fit (other shapes, other ``requires_grad``). Raises :class:`JointUnsupported`.

    Example::

        >>> from ember._inductor.capture import capture
        >>> x = ember.ones(2, requires_grad=True)
        >>> found = capture(lambda x: x.exp(), [x])
        >>> y, = compile_joint(found.graph, found.captured, [x])([x])
        >>> y.grad_fn.name()
        'CompiledFunctionBackward'
    """
    _check_supported(graph, attrs, tensors)
    trace = _JointTrace(graph, attrs, tensors)
    forward, backward = trace.partition()
    return JointRun(graph, attrs, tensors, trace, forward, backward, fallback)


# ---------------------------------------------------------------- what the joint graph serves


def _check_supported(graph, attrs, tensors):
    devices = {t._device for t in tensors}
    for n in graph.nodes:
        if n.kind == GET_ATTR:
            devices.add(attrs[n.params["name"]]._device)
        elif n.kind == CALL and not (_plain_call(n) or _custom_function(n) is not None or
                                     _run_as_traced(n)):
            raise JointUnsupported(f"the graph calls {n.params['fn']} (only random factories, "
                                   "input checks and custom autograd.Functions run inside a "
                                   "joint graph)")
        elif n.kind not in (OP, GET_ATTR, CONSTANT, COPY, CALL):
            raise JointUnsupported(f"a {n.kind} node")
        elif n.kind == OP and n.op.name in _USER_CODE_IN_BACKWARD:
            raise JointUnsupported("a module's backward hooks run Python code in the "
                                   "backward (tracing it would run them)")
        elif _writes(n) and n.inputs[0] in graph.inputs:
            raise JointUnsupported("the graph writes into an input in place")
    if len(devices) != 1 or next(iter(devices))._xp is None:
        raise JointUnsupported("the tensors are not on one device with an array module")


def _writes(node):
    """Whether ``node`` writes its first input in place (a ``copy_``, also one made in
    another grad mode)."""
    return node.kind == COPY or node.kind == CALL and node.params["fn"] == "grad_mode.copy_"


def _in_other_grad_mode(node):
    """An operator or write recorded inside a block with another grad mode (BatchNorm's
    running statistics under ``no_grad``): traced as the operator itself in that mode."""
    from .capture import InGradMode

    return isinstance(node.op, InGradMode) and (
        isinstance(node.op.function, Op) or node.op.function is assign_inplace)


def _run_as_traced(node):
    """Whether the call ``node`` runs under the joint trace as it is (packing arguments,
    sizes, functions of sizes), the trace recording the operators it calls, if any."""
    fn = node.params["fn"]
    return fn in _STRUCTURAL_CALLS or fn in _SIZE_CALLS or (
        fn.startswith("operator.") and node.outputs[0].dtype == "int")


def _custom_function(node):
    """The ``autograd.Function`` subclass whose ``apply`` the call ``node`` runs, or None."""
    from ..autograd.function import Function

    owner = getattr(node.op, "__self__", None)
    is_function = isinstance(owner, type) and issubclass(owner, Function)
    return owner if is_function and node.params["fn"].endswith(".apply") else None


def _plain_call(node):
    from .capture import expect_false, expect_shape

    if node.op in (expect_false, expect_shape) or _in_other_grad_mode(node):
        return True
    return node.params["fn"] in _PLAIN_CALLS and node.outputs[0].dtype not in ("tuple", "int")


# ---------------------------------------------------------------- the joint trace


class _JointTrace:
    """The forward and backward of ``graph`` traced into one ``jit`` graph (see the module
    docstring), with the forward's outputs, the output gradients' placeholders and the
    gradients of the inputs and parameters that require grad."""

    def __init__(self, graph, attrs, tensors):
        written = {n.inputs[0] for n in graph.nodes if _writes(n)}
        self.attr_names = [n.params["name"] for n in graph.nodes if n.kind == GET_ATTR]
        written_names = {n.params["name"] for n in graph.nodes
                         if n.kind == GET_ATTR and n.outputs[0] in written}
        self.written_names = written_names
        stand_attrs = {name: _stand_in(attrs[name], clone=name in written_names)
                       for name in self.attr_names}
        inputs = [_stand_in(t) for t in tensors]
        tracer = _JointTracer({id(t): name for name, t in stand_attrs.items()},
                              strict=False, dynamic_sizes=False)
        for i, t in enumerate(inputs):
            tracer.add_input(t, f"x{i}")
        self.graph = tracer.graph
        self.forward_inputs = list(tracer.graph.inputs)
        with tracing(tracer), grad_mode.enable_grad(), _autocast_off(), \
                _random_state_kept(tensors), _user_reads_refused(tracer):
            outputs = _run_eagerly(graph, stand_attrs, inputs)
            _check_output_aliases(outputs, list(inputs) + list(stand_attrs.values()))
            self.outputs = [tracer.value_of(t) for t in outputs]
            self._differentiate(tracer, outputs, inputs, stand_attrs)
        # the layouts the trace saw: view operators replay the traced strides
        self.input_layouts = tuple(map(_layout, tensors))
        self.random = any(n.kind == CALL and n.params["fn"] in _PLAIN_CALLS
                          for n in graph.nodes)
        self.writes_attrs = bool(written_names)

    def _differentiate(self, tracer, outputs, inputs, stand_attrs):
        """Trace ``autograd.grad`` of the outputs that require grad, from placeholder
        output gradients (new graph inputs), to the inputs and parameters that do."""
        from ..autograd import grad as autograd_grad

        self.diff_outputs = _unique([i for i, t in enumerate(outputs) if t.requires_grad],
                                    outputs)
        self.diff_inputs = [i for i, t in enumerate(inputs) if t.requires_grad]
        self.diff_attrs = [name for name in dict.fromkeys(self.attr_names)
                           if stand_attrs[name].requires_grad]
        wrt = [inputs[i] for i in self.diff_inputs] + \
            [stand_attrs[name] for name in self.diff_attrs]
        if not wrt or not self.diff_outputs:
            raise JointUnsupported("nothing in the graph requires grad")
        with paused():
            seeds = [_ones_like(outputs[i]) for i in self.diff_outputs]
        self.grad_inputs = [tracer.add_input(g, f"grad{k}") for k, g in enumerate(seeds)]
        known = len(tracer.graph.constants)
        device = wrt[0]._device
        drawn = _generator_states(device)
        grads = autograd_grad([outputs[i] for i in self.diff_outputs], wrt, seeds,
                              allow_unused=True)
        if _generator_states(device) != drawn:
            raise JointUnsupported("a custom Function's backward draws random numbers (a "
                                   "trace would keep one draw)")
        _check_new_constants(tracer.graph, known)
        self.grads = [None if g is None else tracer.value_of(g) for g in grads]

    def partition(self):
        """``(forward graph, backward graph)``: the forward returns its outputs and then the
        saved values; the backward takes the saved values and then the output gradients,
        and returns the gradients that are not None."""
        joint = self.graph
        reads_grad = set(self.grad_inputs)
        for n in joint.nodes:
            if any(v in reads_grad for v in n.inputs):
                reads_grad.update(n.outputs)
                if n.kind == COPY and n.inputs[0] not in reads_grad:
                    raise JointUnsupported("the backward writes into a forward value")
        forward_needed = _ancestors(joint, set(self.outputs))
        in_backward = _backward_nodes(joint, reads_grad, forward_needed, self.written_names)
        backward_nodes = [n for n in joint.nodes if id(n) in in_backward]
        forward_nodes = [n for n in joint.nodes if id(n) not in in_backward]
        made_in_backward = {v for n in backward_nodes for v in n.outputs} | reads_grad
        grad_values = [g for g in self.grads if g is not None]
        saved = list(dict.fromkeys(v for v in [v for n in backward_nodes for v in n.inputs]
                                   + grad_values if v not in made_in_backward))
        forward = _subgraph(joint, self.forward_inputs, forward_nodes, self.outputs + saved)
        backward = _subgraph(joint, saved + self.grad_inputs, backward_nodes, grad_values)
        # the inputs and parameters whose memory the backward reads (saved directly or
        # through views): autograd's in-place check watches their version counters
        producers = {v: n for n in joint.nodes for v in n.outputs}
        sources = {_view_source(producers, v) for v in saved}
        self.saved_inputs = [i for i, v in enumerate(self.forward_inputs) if v in sources]
        self.saved_attrs = sorted({n.params["name"] for n in forward_nodes
                                   if n.kind == GET_ATTR and n.outputs[0] in sources} |
                                  {n.params["name"] for n in backward_nodes
                                   if n.kind == GET_ATTR})
        return forward, backward


@contextlib.contextmanager
def _autocast_off():
    """The graph holds the casts autocast made when it was captured: none again."""
    saved, autocast_state.on = autocast_state.on, False
    try:
        yield
    finally:
        autocast_state.on = saved


def _random_state_kept(tensors):
    """The generators as they were before the trace (which draws dropout's masks again):
    the next calls draw the numbers eager calls would."""
    from ..ops.random import fork_rng

    webgpu = any(t._device.type == "webgpu" for t in tensors)
    return fork_rng(device_type="webgpu" if webgpu else "cuda")


class _JointTracer(Tracer):
    """``jit``'s tracer, refusing what would bake a value into the joint graph."""

    def python_value(self, tensor, what):
        frame = _user_caller()
        where = "" if frame is None else f" in {_where(frame)}"
        raise JointUnsupported(f"a tensor was read as a Python {what} while tracing{where}")


def _check_output_aliases(outputs, stand_ins):
    """Outputs must be new tensors: an input, a parameter or a view of one keeps eager
    code's aliasing only when autograd records each operator."""
    for t in outputs:
        if not isinstance(t, Tensor):
            raise JointUnsupported("an output is not a tensor")
        for s in stand_ins:
            if t is s or t._base is not None and (t._base is s or t._base is s._base):
                raise JointUnsupported("an output is an input or parameter, or a view of one")


def _view_source(producers, value):
    """The value whose memory ``value`` shares, following view operators back
    (``producers``: each value's node)."""
    node = producers.get(value)
    while node is not None and node.kind == OP and node.op.view:
        value = node.inputs[0]
        node = producers.get(value)
    return value


def _stand_in(t, clone=False):
    """A tensor for the joint trace: ``t``'s values (a copy when ``clone``), its
    ``requires_grad``, no graph and no hooks."""
    with paused(), grad_mode.no_grad():
        s = t.detach().clone() if clone else t.detach()
    if t.requires_grad:
        s.requires_grad_(True)
    return s


def _ones_like(t):
    return Tensor._make(np.ones(t._data.shape, t._data.dtype) if t._device._xp is np else
                        t._device._xp.ones(t._data.shape, t._data.dtype), t._device)


def _unique(positions, outputs):
    seen, kept = set(), []
    for i in positions:
        if id(outputs[i]) not in seen:
            seen.add(id(outputs[i]))
            kept.append(i)
    return kept


def _run_eagerly(graph, attrs, inputs):
    """The captured graph's flat outputs computed with ember's operators (autograd records
    them); calls run with the tracer paused and are recorded whole."""
    tracer = _trace_state.tracer
    call = _call if tracer is None else (lambda n, args: _record_call(tracer, n, args))
    env = dict(zip(graph.inputs, inputs))
    for n in graph.nodes:
        args = [env[v] for v in n.inputs]
        if n.kind == GET_ATTR:
            env[n.outputs[0]] = attrs[n.params["name"]]
        elif n.kind == CONSTANT:
            env[n.outputs[0]] = graph.constants[n.params["name"]]
        elif n.kind == COPY:
            env[n.outputs[0]] = assign_inplace(args[0], args[1], check_dtype=False)
        elif n.kind == CALL and (_in_other_grad_mode(n) or _run_as_traced(n)):
            env[n.outputs[0]] = _call(n, args)
        elif n.kind == CALL and tracer is not None and _custom_function(n) is not None:
            env[n.outputs[0]] = _trace_function(n, args)
        elif n.kind == CALL:
            env[n.outputs[0]] = call(n, args)
        else:
            result = n.op(*args, **n.params)
            for v, t in zip(n.outputs, result if n.op.multi_output else (result,)):
                env[v] = t
    return [env[v] for v in graph.output_values()]


def _trace_function(node, args):
    """A custom ``autograd.Function``'s ``apply`` run under the joint tracer: the operators
    of its forward are recorded, and the node it records calls its backward, whose
    operators are recorded when ``autograd.grad`` reaches it (as torch.compile traces a
    Function's forward and backward into its graphs). What the trace could not repeat
    raises :class:`JointUnsupported`: random numbers drawn (one draw would be kept) and
    writes into the Function's inputs (``mark_dirty``)."""
    cls = _custom_function(node)
    tensors = [t for a in args for t in (a if isinstance(a, (tuple, list)) else (a,))
               if isinstance(t, Tensor)]
    versions = [t._vc[0] for t in tensors]
    device = tensors[0]._device if tensors else None
    drawn = _generator_states(device)
    tracer = _trace_state.tracer
    known = len(tracer.graph.constants)
    result = _call(node, args)
    if any(t._vc[0] != v for t, v in zip(tensors, versions)):
        raise JointUnsupported(f"{cls.__name__}.forward writes into an input in place")
    if _generator_states(device) != drawn:
        raise JointUnsupported(f"{cls.__name__}.forward draws random numbers (a trace would "
                               "keep one draw)")
    for t in result if isinstance(result, tuple) else (result,):
        if isinstance(t, Tensor):
            tracer.value_of(t)  # an output made outside ember's operators: a constant now
    _check_new_constants(tracer.graph, known, f"{cls.__name__}.forward")
    return result


def _generator_states(device):
    """The states of the generators ``device``'s random operators draw from (the CPU's
    always), as bytes: a change means random numbers were drawn."""
    from ..ops.random import cuda_generator, default_generator

    generators = [default_generator]
    if device is not None and device.type == "cuda":
        generators.append(cuda_generator(device.index or 0))
    elif device is not None and device.type == "webgpu":
        from ..webgpu._random import default_generator as webgpu_generator

        generators.append(webgpu_generator())
    with paused():
        return [bytes(np.asarray(g.get_state()._data)) for g in generators]


def _user_caller():
    """The frame of the user's code that called into ember here (a custom Function's
    ``forward``/``backward``), or None when ember's own code made the call."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.endswith(_PLUMBING):
        frame = frame.f_back
    if frame is None or os.path.abspath(frame.f_code.co_filename).startswith(_EMBER_DIR):
        return None
    return frame


def _where(frame):
    """``Class.method (file.py:line)`` of a user's frame."""
    name = frame.f_code.co_qualname.rsplit("<locals>.", 1)[-1]
    return f"{name} ({os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno})"


@contextlib.contextmanager
def _user_reads_refused(tracer):
    """While ``tracer`` runs, user code (a custom Function's forward or backward, the only
    user code a joint trace runs) reading a tensor into NumPy or printing raises
    :class:`JointUnsupported` naming its line: the graph would bake the values in, or lose
    the side effect."""
    import builtins

    originals = [(Tensor, "numpy", Tensor.__dict__["numpy"]),
                 (Tensor, "__array__", Tensor.__dict__["__array__"]),
                 (builtins, "print", builtins.print)]

    def refusing(what, original):
        def call(*args, **kwargs):
            if _trace_state.tracer is tracer and threading.get_ident() == tracer.thread:
                frame = _user_caller()
                if frame is not None:
                    raise JointUnsupported(f"{what} in {_where(frame)}: user code inside the "
                                           "graph did what a graph cannot record")
            return original(*args, **kwargs)
        return call

    names = {"numpy": "Tensor.numpy()", "__array__": "a tensor converted to a NumPy array",
             "print": "print()"}
    for owner, name, original in originals:
        setattr(owner, name, refusing(names[name], original))
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _record_call(tracer, node, args):
    """Run the call ``node`` unrecorded and record it whole; its arguments that are not
    tensors (a symbolic graph's sizes, now the example's ints) become constants."""
    with paused():
        result = _call(node, args)
    if result.requires_grad:
        raise JointUnsupported(f"{node.params['fn']} returned a tensor that requires grad")
    ins = []

    def concrete(template):
        if "v" not in template:
            return template
        value = args[template["v"]]
        if isinstance(value, Tensor):
            ins.append(tracer.value_of(value))
            return {"v": len(ins) - 1}
        if isinstance(value, (tuple, list)) and any(isinstance(v, Tensor) for v in value):
            raise JointUnsupported(f"{node.params['fn']} takes tensors inside a sequence")
        return {"c": value}
    params = dict(node.params, args=[concrete(t) for t in node.params["args"]],
                  kwargs={k: concrete(t) for k, t in node.params["kwargs"].items()})
    out = tracer.new_value(result)
    tracer.graph.nodes.append(GraphNode(CALL, node.op, ins, params, [out]))
    return result


def _call(node, args):
    def operand(template):
        return args[template["v"]] if "v" in template else template["c"]
    return node.op(*[operand(t) for t in node.params["args"]],
                   **{k: operand(t) for k, t in node.params["kwargs"].items()})


def _check_new_constants(graph, known, part="the backward"):
    """Constants ``part`` (the backward, a custom Function's forward) made: a tensor the
    tracer did not see being made. Zeros and other filled tensors are fine; anything else
    may hold values computed from the example inputs outside ember's operators, which a
    replay would repeat wrongly."""
    for name in list(graph.constants)[known:]:
        data = graph.constants[name]._data
        flat = data.reshape(-1)
        if flat.size > 1 and not bool((flat == flat[0]).all()):
            raise JointUnsupported(f"{part} read a tensor computed outside ember's operators")


def _backward_nodes(joint, reads_grad, forward_needed, written_names):
    """The ids of the backward graph's nodes: those that read an output gradient, and
    those only the backward needs (computed there instead of saved: the same work, and
    the forward saves their operands, often saved anyway, instead of their results).
    Writes, calls (random numbers drawn in the forward) and reads of buffers the forward
    writes stay in the forward."""
    consumers = {}
    for n in joint.nodes:
        for v in n.inputs:
            consumers.setdefault(v, []).append(n)
    chosen = set()
    for n in reversed(joint.nodes):
        if any(v in reads_grad for v in n.outputs):
            chosen.add(id(n))
        elif id(n) in forward_needed or n.kind in (COPY, CALL) or (
                n.kind == GET_ATTR and n.params["name"] in written_names):
            continue
        elif all(id(c) in chosen for v in n.outputs for c in consumers.get(v, ())):
            chosen.add(id(n))
    return chosen


def _ancestors(graph, values):
    """The ids of the nodes ``values`` depend on (and the writes among them)."""
    needed, wanted = set(), set(values)
    for n in reversed(graph.nodes):
        if any(v in wanted for v in n.outputs):
            needed.add(id(n))
            wanted.update(n.inputs)
    return needed


def _subgraph(joint, inputs, nodes, outputs):
    graph = Graph()
    graph._next = joint._next
    graph.inputs = list(inputs)
    graph.nodes = list(nodes)
    graph.constants = dict(joint.constants)
    graph.output = ("tuple", list(outputs))
    return _optimized(graph)


def _optimized(graph):
    from ..jit._passes import fuse_elementwise
    from .backends import simplify

    simplify(graph)
    fuse_bias_products(graph)
    sum_columns_by_product(graph)
    fuse_elementwise(graph)
    return graph


# ---------------------------------------------------------------- running


class JointRun:
    """The callable a joint graph compiles to: ``run(tensors) -> flat outputs`` (the
    forward's array code, then one ``CompiledFunctionBackward`` node whose derivative runs
    the backward's array code; ``fallback(tensors)`` for calls the trace does not fit).

    Example::

        >>> from ember._inductor.capture import capture
        >>> x = ember.ones(2, requires_grad=True)
        >>> found = capture(lambda x: (x * 3).sum(), [x])
        >>> run = compile_joint(found.graph, found.captured, [x])
        >>> run([x])[0].backward()
        >>> x.grad
        tensor([3., 3.])
    """

    def __init__(self, graph, attrs, tensors, trace, forward, backward, fallback):
        self.device = tensors[0]._device if tensors else \
            attrs[trace.attr_names[0]]._device
        xp = self.device._xp
        self.read = attrs.__getitem__
        self.trace = trace
        self.graph = graph        # the captured graph: create_graph differentiates it
        self.attrs = attrs
        self.fallback = fallback
        self.forward = ArrayCode(forward, attrs, xp, self.device, "forward").function()
        self.backward = ArrayCode(backward, attrs, xp, self.device, "backward").function()
        self.grad_positions = _grad_positions(trace)
        # the graph's parameters and captured tensors (a module's replaced parameter
        # recompiles, so these stay the graph's)
        self.attr_tensors = [attrs[name] for name in dict.fromkeys(trace.attr_names)]
        # their requires_grad, with the inputs', compared in one list per call; a tensor
        # that is not a view now never becomes one (_base is only ever cleared), so its
        # requires_grad is its _rg field, read without the property's Python call
        self.attr_leaves = [t for t in self.attr_tensors if t._base is None]
        self.attr_views = [t for t in self.attr_tensors if t._base is not None]
        self.requires = self._requires(tensors)
        self.input_layouts = list(trace.input_layouts)
        self.diff_attrs = trace.diff_attrs
        self.diff_inputs = trace.diff_inputs
        self.diff_outputs = trace.diff_outputs
        self.out_count = len(trace.outputs)
        self.op = Op("compiled_function", None, multi_output=True, save_inputs=False,
                     register=False, grad_name="CompiledFunctionBackward")
        self.op.defderivative(self._derivative)
        self.saved_inputs = trace.saved_inputs
        self.saved_attrs = trace.saved_attrs
        self.other_layouts = {}   # a dynamic variant's other layouts -> their joint graphs

    def __call__(self, tensors):
        # (attrgetters mapped in C build the lists: no Python function per tensor)
        if not grad_mode.state.enabled or self._requires(tensors) != self.requires:
            return self.fallback(tensors)
        if list(map(_SHAPE_STRIDES, map(_ARRAY, tensors))) != self.input_layouts:
            return self._at_other_layout(tensors)
        arrays = list(map(_ARRAY, tensors))
        saved = self.forward(arrays)
        device = self.device
        outputs = [wrap(a, device) for a in saved[:self.out_count]]
        del saved[:self.out_count]
        wrt = [tensors[i] for i in self.diff_inputs] + [self.read(n) for n in self.diff_attrs]
        watched = [tensors[i] for i in self.saved_inputs] + \
            [self.read(n) for n in self.saved_attrs]
        node = record(self.op, wrt, {"saved": saved, "tensors": list(tensors),
                                     "watched": [(t, t._vc[0]) for t in watched]},
                      tuple(outputs[i] for i in self.diff_outputs))
        node.__class__ = _JointNode
        return tuple(outputs)

    def _at_other_layout(self, tensors):
        """A call at other sizes (or strides) than the traced ones, which the guard key lets
        through only for a dynamic variant: a joint graph traced for this layout from the
        same captured graph (no recapture, no recompile counted), kept per layout; past
        ``cache_size_limit`` joint graphs, or where the trace fails, the replay."""
        key = tuple(map(_layout, tensors))
        run = self.other_layouts.get(key)
        if run is None:
            run = self._trace_layout(key, tensors)
        return run(tensors)

    def _trace_layout(self, key, tensors):
        from .state import config, log, log_enabled

        if len(self.other_layouts) + 1 >= config.cache_size_limit:
            return self.fallback
        try:
            run = compile_joint(self.graph, self.attrs, tensors, self.fallback)
        except Exception as reason:  # noqa: BLE001 (anything the trace meets: the replay)
            if log_enabled("aot"):
                log.info("no joint forward-backward graph for input shapes %s: %s",
                         [shape for shape, _ in key], reason)
            run = self.fallback
        self.other_layouts[key] = run
        return run

    def _requires(self, tensors):
        return [*map(_REQUIRES_GRAD, tensors), *map(_RG_FIELD, self.attr_leaves),
                *map(_REQUIRES_GRAD, self.attr_views)]

    def _derivative(self, ctx, *grads, saved, tensors, watched):
        if ctx._saved is None:
            raise RuntimeError(_BACKWARD_TWICE)
        for t, version in watched:
            if t._vc[0] != version:
                _raise_modified(t, version, t._vc[0])
        replayable = not (self.trace.random or self.trace.writes_attrs)
        if grad_mode.state.enabled and replayable:
            return self._differentiate_again(ctx, grads, tensors)
        xp = self.device._xp
        arrays = saved + [_contiguous(g._data, xp) for g in grads]
        if not _task_state.retain_graph:
            # the graph goes once this backward ends: the generated code frees each saved
            # value after its last use, as eager autograd frees each node's
            saved.clear()
        found = self.backward(arrays)
        arrays = [None if p is None else found[p] for p in self.grad_positions]
        result = tuple(_own_arrays(arrays, grads[0]._data, self.device))
        if grad_mode.state.enabled:  # create_graph: the first order, refusing the second
            wrt = [tensors[i] for i in self.diff_inputs] + \
                [self.read(n) for n in self.diff_attrs]
            record(_NO_DOUBLE_BACKWARD, wrt, {}, tuple(g for g in result if g is not None))
        return result

    def _differentiate_again(self, ctx, grads, tensors):
        """``create_graph``: the captured graph run again with autograd recording,
        differentiated with a graph of its own (a replay would draw other random numbers
        or update buffers again, so graphs that do keep the compiled first order and
        refuse the second, as torch refuses double backward through compiled graphs)."""
        from ..autograd import grad as autograd_grad

        wrt = [tensors[i] for i in self.diff_inputs] + [self.read(n) for n in self.diff_attrs]
        with _autocast_off():
            outputs = _run_eagerly(self.graph, self.attrs, tensors)
        wanted = [(t, i) for i, (t, need) in enumerate(zip(wrt, ctx.needs_input_grad)) if need]
        found = autograd_grad([outputs[i] for i in self.diff_outputs], [t for t, _ in wanted],
                              list(grads), create_graph=True, allow_unused=True)
        result = [None] * len(wrt)
        for (_, i), g in zip(wanted, found):
            result[i] = g
        return tuple(result)


def _refuse_double_backward(ctx, *grads):
    raise RuntimeError("torch.compile with aot_autograd does not currently support double "
                       "backward (ember.compile differentiates a compiled graph twice only "
                       "when it draws no random numbers and updates no buffers)")


# the node of first-order gradients computed under create_graph by a graph that cannot be
# replayed: differentiating them again raises, as torch does
_NO_DOUBLE_BACKWARD = Op("compiled_function_backward", None, multi_output=True,
                         save_inputs=False, register=False,
                         grad_name="CompiledFunctionBackwardBackward")
_NO_DOUBLE_BACKWARD.defderivative(_refuse_double_backward)


class _JointNode(Node):
    """A joint graph's autograd node: releasing it frees the saved values."""

    __slots__ = ()

    def _release(self):
        Node._release(self)
        self.params["saved"].clear()


def _layout(t):
    data = t._data
    return data.shape, data.strides


def _contiguous(array, xp):
    """An output gradient as the trace saw it (in C order): an expanded gradient (a
    ``sum``'s) would otherwise meet view operators' traced strides."""
    flags = getattr(array, "flags", None)
    if flags is not None and flags.c_contiguous:
        return array
    return xp.ascontiguousarray(array)


_ARRAY = attrgetter("_data")
_SHAPE_STRIDES = attrgetter("shape", "strides")  # an array's (shape, strides), as _layout
_REQUIRES_GRAD = attrgetter("requires_grad")
_RG_FIELD = attrgetter("_rg")  # requires_grad of a tensor that is not a view


def _grad_positions(trace):
    positions, k = [], 0
    for g in trace.grads:
        positions.append(None if g is None else k)
        k += g is not None
    return positions


# ---------------------------------------------------------------- generated array code
