"""Graph passes: dead-code elimination, common-subexpression elimination, constant folding,
freezing, and fusion of element-wise chains.

Each pass rewrites a :class:`Graph` in place and returns how many nodes it removed or made.
``freeze`` and ``optimize_for_inference`` work on a copy and return a new module.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import grad_mode
from ..ops._registry import Op, device_type_of, run_op
from ._ir import (
    CALL,
    CONSTANT,
    COPY,
    FUSED,
    GET_ATTR,
    IF,
    LOOP,
    OP,
    SIDE_EFFECTS,
    WHILE,
    Graph,
    Node,
    rename_tree,
)
from ._tracer import paused

__all__ = ["eliminate_dead_code", "eliminate_common_subexpressions", "fold_constants",
           "fuse_elementwise", "clone_graph", "freeze", "optimize_for_inference", "make_fused"]


def clone_graph(graph):
    """A copy of ``graph`` with its own values and nodes (constants shared)."""
    new = Graph()
    mapping = {}

    def get(v):
        if v not in mapping:
            w = new.new_value(v.shape, v.dtype, v.name)
            mapping[v] = w
        return mapping[v]
    new.inputs = [get(v) for v in graph.inputs]
    new.nodes = [Node(n.kind, n.op, [get(v) for v in n.inputs], dict(n.params),
                      [get(v) for v in n.outputs]) for n in graph.nodes]
    new.output = rename_tree(graph.output, {v: get(v) for v in graph.output_values()})
    new.constants = dict(graph.constants)
    return new


def _has_effect(fn):
    """Whether a scripted call may change state or raise: ``x.add_()``, ``x += y``,
    ``raise``, a Python call."""
    return fn.endswith("_") or fn.startswith(("operator.i", "python:")) or \
        fn in ("jit.raise", "jit.set_grad")


def eliminate_dead_code(graph):
    """Drop nodes whose outputs nothing reads (in-place writes are kept). Returns the count."""
    live = set(graph.output_values())
    kept = []
    for n in reversed(graph.nodes):
        if n.kind in SIDE_EFFECTS or n.kind in (IF, LOOP) or any(v in live for v in n.outputs) \
                or (n.kind == CALL and _has_effect(n.params["fn"])):
            kept.append(n)
            live.update(n.inputs)
    removed = len(graph.nodes) - len(kept)
    graph.nodes = kept[::-1]
    used = {n.params["name"] for n in graph.nodes if n.kind == CONSTANT}
    for name in [k for k in graph.constants if k not in used]:
        del graph.constants[name]
    return removed


def _key(n, graph):
    if n.kind == OP:
        return (id(n.op), tuple(v.id for v in n.inputs), repr(sorted(n.params.items())))
    if n.kind == CONSTANT:
        t = graph.constants[n.params["name"]]
        if t._data.size <= 64 and t._device.type == "cpu":  # small constants by value
            return (CONSTANT, t._data.dtype.str, t._data.shape, t._data.tobytes())
    if n.kind in (GET_ATTR, CONSTANT):
        return (n.kind, n.params["name"])
    return None


def eliminate_common_subexpressions(graph):
    """Reuse the result of an identical earlier node (same op, inputs and parameters) instead
    of computing it again; an in-place write ends every match across it. Returns the count."""
    seen, mapping, kept = {}, {}, []
    written = {n.inputs[0] for n in graph.nodes if n.kind == COPY}
    for n in graph.nodes:
        n.inputs = [mapping.get(v, v) for v in n.inputs]
        if n.kind == COPY:
            seen.clear()
            kept.append(n)
            continue
        key = None if any(v in written for v in n.outputs) else _key(n, graph)
        earlier = seen.get(key) if key is not None else None
        if earlier is not None:
            mapping.update(zip(n.outputs, earlier.outputs))
            continue
        if key is not None:
            seen[key] = n
        kept.append(n)
    removed = len(graph.nodes) - len(kept)
    graph.nodes = kept
    graph.output = rename_tree(graph.output, mapping)
    _drop_unread_constants(graph)
    return removed


def _drop_unread_constants(graph):
    read = set(graph.output_values())
    for n in graph.nodes:
        read.update(n.inputs)
    graph.nodes = [n for n in graph.nodes if n.kind != CONSTANT or n.outputs[0] in read]
    used = {n.params["name"] for n in graph.nodes if n.kind == CONSTANT}
    for name in [k for k in graph.constants if k not in used]:
        del graph.constants[name]


def fold_constants(graph):
    """Compute once the op nodes whose inputs are all constants and make their results
    constants (then drop what became dead). Returns the number of nodes folded."""
    constant_of = {}
    written = {n.inputs[0] for n in graph.nodes if n.kind == COPY}
    folded = 0
    new_nodes = []
    with paused(), grad_mode.no_grad():
        for n in graph.nodes:
            if n.kind == CONSTANT:
                constant_of[n.outputs[0]] = graph.constants[n.params["name"]]
            elif (n.kind in (OP, FUSED) and n.inputs and all(v in constant_of for v in n.inputs)
                  and not any(v in written for v in n.outputs)):
                result = n.op(*[constant_of[v] for v in n.inputs], **(
                    n.params if n.kind == OP else {}))
                results = result if isinstance(result, tuple) else (result,)
                for v, t in zip(n.outputs, results):
                    name = _fresh_name(graph, "folded")
                    graph.constants[name] = t
                    constant_of[v] = t
                    new_nodes.append(Node(CONSTANT, None, [], {"name": name}, [v]))
                folded += 1
                continue
            new_nodes.append(n)
    graph.nodes = new_nodes
    eliminate_dead_code(graph)
    return folded


def _fresh_name(graph, prefix):
    k = len(graph.constants)
    while f"{prefix}{k}" in graph.constants:
        k += 1
    return f"{prefix}{k}"


# ---------------------------------------------------------------- freezing


def _check_module(m, what):
    from ._module import ScriptModule

    if not isinstance(m, ScriptModule):
        raise RuntimeError(f"{what} expects a ScriptModule as input. Please use "
                           "ember.jit.trace to trace your 'nn.Module'.")


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """A copy of the traced module ``mod`` (in eval mode) whose parameters and buffers are
    constants of the graph, folded where they meet only other constants, with dead code and
    common subexpressions removed (torch.jit.freeze). ``preserved_attrs`` stay attributes.

    Example::

        >>> net = ember.nn.Linear(3, 2).eval()
        >>> frozen = ember.jit.freeze(ember.jit.trace(net, ember.randn(1, 3)))
        >>> list(frozen.parameters())
        []
    """
    from ._module import ScriptModule
    from ._scripted import ScriptedModule

    _check_module(mod, "Freezing")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    keep = set(preserved_attrs or ())
    if isinstance(mod, ScriptedModule):
        return _freeze_scripted(mod, keep)
    graph = clone_graph(mod.graph)
    written = set()
    for n in graph.nodes:
        if n.kind == COPY:
            written.add(n.inputs[0])
    producers = {v: n for n in graph.nodes for v in n.outputs}
    mutated = {producers[v].params["name"] for v in written
               if v in producers and producers[v].kind == GET_ATTR}
    attrs = mod._attributes()
    kept_attrs = {k: a for k, a in attrs.items() if k in keep or k in mutated}
    with grad_mode.no_grad(), paused():
        for n in graph.nodes:
            if n.kind == GET_ATTR and n.params["name"] not in kept_attrs:
                name = "frozen." + n.params["name"]
                graph.constants[name] = attrs[n.params["name"]][1].detach()
                n.kind, n.params = CONSTANT, {"name": name}
    eliminate_common_subexpressions(graph)
    fold_constants(graph)
    eliminate_common_subexpressions(graph)
    frozen = ScriptModule(graph, kept_attrs, {"": False}, mod.original_name)
    frozen.eval()
    object.__setattr__(frozen, "_frozen", True)
    return frozen


def _all_nodes(graph):
    """The nodes of ``graph`` and of the blocks (if/loop bodies) inside it, outermost first."""
    for n in graph.nodes:
        yield n
        if n.kind in (IF, LOOP, WHILE):
            blocks = ([n.params["then"], n.params["else"]] if n.kind == IF else
                      [n.params["cond"], n.params["body"]] if n.kind == WHILE else
                      [n.params["body"]])
            for block in blocks:
                yield from _all_nodes(block)


def _freeze_scripted(mod, keep):
    """:func:`freeze` of a module made by ``ember.jit.script``: a copy whose ``forward`` reads
    the parameters and buffers it names (in every branch and loop body) as constants, which
    leave the copy's attributes. What the graph reads besides (ember's own layers, called
    whole, whose parameters stop requiring grad; ``training``) stays, and so do attributes
    the graph writes or ``keep`` names."""
    import copy

    frozen = copy.deepcopy(mod)
    graph = frozen.graph
    nodes = list(_all_nodes(graph))
    producers = {v: n for n in nodes for v in n.outputs}
    written = {producers[n.inputs[0]].params["name"] for n in nodes
               if n.kind == COPY and n.inputs[0] in producers
               and producers[n.inputs[0]].kind == GET_ATTR}
    tensors = {name: tensor for name, (_, tensor, _) in frozen._attributes().items()
               if name not in keep and name not in written}
    used_elsewhere = {n.params["name"] for method in frozen._methods.values()
                      for n in _all_nodes(method) if n.kind == GET_ATTR}
    with grad_mode.no_grad():
        for n in nodes:
            name = n.params["name"] if n.kind == GET_ATTR else None
            if name in tensors:
                graph.constants["frozen." + name] = tensors[name].detach()
                n.kind, n.params = CONSTANT, {"name": "frozen." + name}
    for name in tensors.keys() & {n.params["name"][len("frozen."):] for n in nodes
                                  if n.kind == CONSTANT} - used_elsewhere:
        *path, leaf = name.split(".")
        owner = frozen._module_at(".".join(path))
        owner._parameters.pop(leaf, None)
        owner._buffers.pop(leaf, None)
    for name, p in frozen.named_parameters():
        if name not in keep:  # read by a layer called whole: a constant too
            p.requires_grad_(False)
    frozen._graph_changed()
    object.__setattr__(frozen, "_frozen", True)
    return frozen.eval()


# ---------------------------------------------------------------- element-wise fusion


# each op's step (``Op.fuse``, ``ops/_fusion.py``) computes its values in the dtype of its
# operands: only float32/float64 chains without promotion are fused
_FLOATS = ("float32", "float64")
_FUSED_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


_FULL, _SCALAR, _ROW = "full", "scalar", "row"


def _operand_kind(operand_shape, shape):
    """How a chain's C loop reads an operand of ``operand_shape`` against the result's
    ``shape``: whole (``_FULL``), one element for all (``_SCALAR``), or one row repeated along
    the leading dims (``_ROW``: its shape, leading ones dropped, is ``shape``'s trailing
    dims, as a bias); None when it broadcasts otherwise.

    Example::

        >>> _operand_kind((256,), (32, 256)), _operand_kind((32, 1), (32, 256))
        ('row', None)
    """
    from .._inductor.c_loops import is_row

    if operand_shape == shape:
        return _FULL
    if math.prod(operand_shape) == 1:
        return _SCALAR
    return _ROW if is_row(operand_shape, shape) else None


class FusedOp:
    """A fused chain of element-wise primitives: one :class:`Op` whose kernel evaluates the
    chain in one buffer (``out=`` of each step), on NumPy or CuPy; one generated C loop
    on NumPy (``_inductor/c_loops.py``), one CuPy kernel on CUDA (``cuda_kernels.py``) and
    one WGSL shader on webgpu (``webgpu/_fused.py``) compute the whole chain per element
    where they can. When autograd must record (grad mode and an input that requires
    grad), or the inputs do not share one floating dtype, it runs the chain's primitives
    instead."""

    def __init__(self, program, ops):
        self.program = program
        self.ops = ops
        self._checked = None  # the input shapes last found to fit one buffer
        self._shader = None  # the webgpu shader of the chain (False: it has none)
        self._c_loops = {}   # (dtype, each operand's kind) -> C loop or False
        self._c_shapes = (None,) * 4  # input shapes, result shape, operand kinds, row size
        self._cuda_kernels = {}  # dtype -> the chain's CuPy kernel or False
        steps = [(op.fuse.step, tuple(refs)) for op, (_, refs, _) in zip(ops, program)]

        def kernel(xp, *arrays):
            if xp is np:
                result = self._run_c_loop(arrays)
                if result is not None:
                    return result
            elif device_type_of(xp) == "webgpu":
                result = self._run_shader(arrays)
                if result is not None:
                    return result
            elif device_type_of(xp) == "cuda":
                result = self._run_cuda_kernel(xp, arrays)
                if result is not None:
                    return result
            acc = None
            for step, refs in steps:
                args = [acc if r < 0 else arrays[r] for r in refs]
                acc = step(xp, args, acc)
            return acc

        def meta(*arrays):
            return np.broadcast_shapes(*(a.shape for a in arrays)), arrays[0].dtype
        self.op = Op("fused_elementwise", kernel, meta=meta, save_inputs=False,
                     register=False)

    def __call__(self, *tensors):
        dtype = tensors[0]._data.dtype
        if (grad_mode.state.enabled and any(t.requires_grad for t in tensors)) or \
                any(t._data.dtype != dtype for t in tensors) or dtype not in _FUSED_DTYPES:
            # autograd must record, or the inputs' dtypes differ from the traced ones (the
            # primitives then promote as eager code does)
            return self._unfused(tensors)
        shapes = tuple(t._data.shape for t in tensors)
        if shapes != self._checked:
            # the buffer has the first step's shape: every later operand must broadcast to it
            first = np.broadcast_shapes(*(shapes[r] for r in self.program[0][1] if r >= 0))
            if np.broadcast_shapes(first, *shapes) != first:
                return self._unfused(tensors)
            self._checked = shapes
        return run_op(self.op, *tensors)

    def _run_cuda_kernel(self, cupy, arrays):
        """The chain as one CuPy ``ElementwiseKernel`` (``_inductor/cuda_kernels.py``;
        CuPy broadcasts and reads strided operands), or None where a step has no C form."""
        dtype = arrays[0].dtype
        kernel = self._cuda_kernels.get(dtype)
        if kernel is None:
            from .._inductor.cuda_kernels import chain_kernel

            kernel = self._cuda_kernels[dtype] = chain_kernel(
                self.program, self.ops, dtype, cupy) or False
        return kernel(*arrays) if kernel else None

    def _run_c_loop(self, arrays):
        """The chain as one generated C loop over NumPy ``arrays`` (``_inductor/c_loops.py``),
        or None where it has none: operands other than full arrays of the result's shape,
        one-element arrays and rows repeated along its leading dims (one row size), a step
        without a C form, no C compiler."""
        shapes = tuple([a.shape for a in arrays])
        dtype = arrays[0].dtype
        if shapes != self._c_shapes[0]:  # (the last call's shapes: most calls repeat them)
            shape = np.broadcast_shapes(*shapes)
            kinds = tuple([_operand_kind(s, shape) for s in shapes])
            inner = {math.prod(s) for s, kind in zip(shapes, kinds) if kind == _ROW}
            if None in kinds or len(inner) > 1:
                return None
            self._c_shapes = (shapes, shape, kinds, inner.pop() if inner else 0)
        _, shape, kinds, inner = self._c_shapes
        key = (dtype, kinds)
        function = self._c_loops.get(key)
        if function is None:
            from .._inductor.c_loops import chain_function

            function = self._c_loops[key] = chain_function(
                self.program, self.ops, dtype, {i for i, k in enumerate(kinds) if k == _SCALAR},
                {i for i, k in enumerate(kinds) if k == _ROW}) or False
        if not function:
            return None
        operands = [a if k == _SCALAR or a.flags.c_contiguous else np.ascontiguousarray(a)
                    for a, k in zip(arrays, kinds)]
        out = np.empty(shape, dtype)
        if inner:
            function((*operands, out), out.size, inner)
        else:
            function((*operands, out), out.size)
        return out

    def _run_shader(self, arrays):
        """The chain as one WGSL shader over webgpu ``arrays`` (``webgpu/_fused.py``), or
        None when it has no shader or these arrays cannot run it."""
        if self._shader is None:
            from ..webgpu._fused import fused_shader

            self._shader = fused_shader(self.program, self.ops) or False
        return self._shader(arrays) if self._shader else None

    def _unfused(self, tensors):
        acc = None
        for op, (_, refs, params) in zip(self.ops, self.program):
            acc = op(*[acc if r < 0 else tensors[r] for r in refs], **params)
        return acc

    @property
    def name(self):
        return "fused_elementwise"

    multi_output = False


def make_fused(program, where="<graph>"):
    """The :class:`FusedOp` for a saved program (each name must be an op with a fusion
    rule that accepts the saved parameters)."""
    from ._serialize import lookup

    ops = []
    for name, _refs, params in program:
        op = lookup(name)
        if op is None or op.fuse is None or not op.fuse.accepts(params):
            raise RuntimeError(f"ember.jit.load: unknown operator '{name}' in a fused group in "
                               f"{where}; refusing to load")
        ops.append(op)
    return FusedOp([[name, list(refs), dict(params)] for name, refs, params in program], ops)


def _fusible(n):
    """Whether node ``n`` may be a step of a fused chain: an op whose fusion rule takes its
    operands and parameters, on float32/float64 values of one dtype."""
    rule = n.op.fuse if n.kind == OP else None
    if rule is None or len(n.inputs) != rule.arity or not rule.accepts(n.params):
        return False
    out = n.outputs[0]
    return out.dtype in _FLOATS and all(v.dtype == out.dtype for v in n.inputs)


def fuse_elementwise(graph, min_length=2):
    """Replace chains of element-wise float ops (each feeding only the next, same shape and
    dtype) by one ``fused`` node. Returns the number of fused nodes made."""
    uses = graph.use_counts()
    consumer = {}
    for n in graph.nodes:
        for v in n.inputs:
            consumer.setdefault(v, n)
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    copies = [i for i, n in enumerate(graph.nodes) if n.kind == COPY]
    grouped, replace = set(), {}
    for n in graph.nodes:
        if id(n) in grouped or not _fusible(n):
            continue
        chain = [n]
        while True:
            out = chain[-1].outputs[0]
            nxt = consumer.get(out)
            if (uses.get(out) != 1 or nxt is None or id(nxt) in grouped or not _fusible(nxt)
                    or nxt.outputs[0].shape != n.outputs[0].shape
                    or nxt.outputs[0].dtype != n.outputs[0].dtype
                    or sum(v is out for v in nxt.inputs) != 1):
                break
            chain.append(nxt)
        if len(chain) < min_length:
            continue
        first, last = position[id(chain[0])], position[id(chain[-1])]
        if any(first < c < last for c in copies):
            continue
        inputs, program, inner = [], [], set()
        for m in chain:
            refs = []
            for v in m.inputs:
                if v in inner:
                    refs.append(-1)
                else:
                    if v not in inputs:
                        inputs.append(v)
                    refs.append(inputs.index(v))
            program.append([m.op.name, refs, dict(m.params)])
            inner.add(m.outputs[0])
        fused = Node(FUSED, FusedOp(program, [m.op for m in chain]), inputs,
                     {"program": program}, [chain[-1].outputs[0]])
        for m in chain:
            grouped.add(id(m))
        replace[id(chain[-1])] = fused
    graph.nodes = [replace.get(id(n), n) for n in graph.nodes
                   if id(n) not in grouped or id(n) in replace]
    return len(replace)


def optimize_for_inference(mod, other_methods=None):
    """Freeze ``mod`` (unless frozen) and fuse its element-wise chains into single kernels
    that run in one buffer: fewer temporaries and less dispatch (torch.jit's
    ``optimize_for_inference``). The result is for inference: with inputs that require grad
    the fused groups fall back to their primitives.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh()).eval()
        >>> fast = ember.jit.optimize_for_inference(ember.jit.trace(net, ember.randn(2, 3)))
    """
    from ._module import ScriptFunction

    if isinstance(mod, ScriptFunction):
        graph = clone_graph(mod.graph)
        eliminate_common_subexpressions(graph)
        fold_constants(graph)
        eliminate_common_subexpressions(graph)
        fuse_elementwise(graph)
        return ScriptFunction(graph, mod.name)
    _check_module(mod, "optimize_for_inference")
    frozen = mod if getattr(mod, "_frozen", False) else freeze(mod.eval())
    if frozen is mod:
        frozen = freeze(mod)
    fuse_elementwise(frozen.graph)
    frozen._graph_changed()
    return frozen

