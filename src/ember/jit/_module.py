"""Running graphs: :class:`ScriptModule` and :class:`ScriptFunction` interpret a :class:`Graph`
by calling the same ember operators the trace recorded (so autograd, double backward and every
device work as in eager code).
"""

from __future__ import annotations

from ..nn.modules.module import Module
from ..ops._registry import assign_inplace
from ._ir import CALL, CONSTANT, COPY, FUSED, GET_ATTR, IF, LOOP, OP, WHILE, map_tree

__all__ = ["ScriptModule", "ScriptFunction", "RecursiveScriptModule"]


class _Plan:
    """A graph compiled for the interpreter: values as slots in a list, nodes as tuples."""

    __slots__ = ("steps", "size", "n_inputs", "output", "nodes", "input_shapes")

    def __deepcopy__(self, memo):
        return None  # a copied module compiles its own plan from its copied graph

    def __init__(self, graph):
        slots = {}

        def slot(v):
            return slots.setdefault(v, len(slots))
        for v in graph.inputs:
            slot(v)
        self.n_inputs = len(graph.inputs)
        steps = []
        for n in graph.nodes:
            ins = tuple(slot(v) for v in n.inputs)
            outs = tuple(slot(v) for v in n.outputs)
            single = n.kind != OP or not n.op.multi_output
            if n.kind == OP:
                steps.append((0 if single else 1, n.op, ins, n.params, outs))
            elif n.kind == FUSED:
                steps.append((0, n.op, ins, {}, outs))
            elif n.kind == GET_ATTR:
                steps.append((2, n.params["name"], ins, None, outs))
            elif n.kind == CONSTANT:
                steps.append((3, n.params["name"], ins, None, outs))
            elif n.kind == COPY:
                steps.append((4, None, ins, None, outs))
            elif n.kind == CALL:
                steps.append((5, n.op, ins, (n.params["args"], n.params["kwargs"]), outs))
            elif n.kind == IF:
                steps.append((6, (_Plan(n.params["then"]), _Plan(n.params["else"])), ins,
                              None, outs))
            elif n.kind == LOOP:
                body = n.params["body"]
                carried = [n.params["names"].index(c) for c in n.params["carried"]]
                steps.append((7, _Plan(body), ins, carried, outs))
            elif n.kind == WHILE:
                carried = [n.params["names"].index(c) for c in n.params["carried"]]
                steps.append((8, (_Plan(n.params["cond"]), _Plan(n.params["body"])), ins,
                              carried, outs))
            else:  # pragma: no cover - every kind is listed above
                raise RuntimeError(f"unknown node kind {n.kind}")
        self.steps = steps
        self.nodes = list(graph.nodes)
        self.input_shapes = [v.shape for v in graph.inputs]
        self.size = len(slots)
        self.output = map_tree(graph.output, slot) if graph.output is not None else None


def run_graph(plan, args, attr, constants):
    """Interpret ``plan`` on tensors ``args``; ``attr(name)`` reads a parameter or buffer."""
    if len(args) != plan.n_inputs:
        raise TypeError(f"forward() expected {plan.n_inputs} argument(s) but received "
                        f"{len(args)} argument(s)")
    env = [None] * plan.size
    env[:plan.n_inputs] = args
    step = 0
    try:
        for kind, op, ins, params, outs in plan.steps:
            if kind == 0:
                env[outs[0]] = op(*[env[i] for i in ins], **params)
            elif kind == 1:
                for o, r in zip(outs, op(*[env[i] for i in ins], **params)):
                    env[o] = r
            elif kind == 2:
                env[outs[0]] = attr(op)
            elif kind == 3:
                env[outs[0]] = constants[op]
            elif kind == 4:
                env[outs[0]] = assign_inplace(env[ins[0]], env[ins[1]], check_dtype=False)
            elif kind == 5:
                args_t, kwargs_t = params
                env[outs[0]] = op(*[env[ins[t["v"]]] if "v" in t else t["c"] for t in args_t],
                                  **{k: env[ins[t["v"]]] if "v" in t else t["c"]
                                     for k, t in kwargs_t.items()})
            elif kind == 6:
                branch = op[0] if env[ins[0]] else op[1]
                results = run_graph(branch, [env[i] for i in ins[1:]], attr, constants)
                for o, r in zip(outs, results):
                    env[o] = r
            elif kind == 8:
                _run_while(op, [env[i] for i in ins], params, outs, env, attr, constants)
            else:
                values = [env[i] for i in ins[3:]]
                for i in range(int(env[ins[0]]), int(env[ins[1]]), int(env[ins[2]])):
                    results = run_graph(op, [i] + values, attr, constants)
                    for position, r in zip(params, results):
                        values[position] = r
                for o, position in zip(outs, params):
                    env[o] = values[position]
            step += 1
    except (ValueError, RuntimeError) as error:
        shapes = [tuple(a.shape) if hasattr(a, "shape") else a for a in args]
        if shapes == plan.input_shapes or all(s is None for s in plan.input_shapes):
            raise  # the shapes of the trace (a scripted graph has none)
        raise RuntimeError(
            f"The traced graph failed at node '{plan.nodes[step].target}' "
            f"({str(plan.nodes[step]).strip()}): {error}. It was traced with input shapes "
            f"{plan.input_shapes} and called with {shapes}; sizes written as numbers, "
            "computed inside ember's own code (a module's internal sizes) or from len() and "
            "Python branches are constants of the trace (sizes read with x.size(i)/x.shape "
            "follow the input): trace again with inputs of these shapes.") from error
    return _build(plan.output, env)


def _run_while(plans, values, carried, outs, env, attr, constants):
    """A scripted ``while``: the condition block, then the body, over the carried values."""
    cond, body = plans
    while run_graph(cond, values, attr, constants):
        for position, r in zip(carried, run_graph(body, values, attr, constants)):
            values[position] = r
    for o, position in zip(outs, carried):
        env[o] = values[position]


def _build(tree, env):
    if isinstance(tree, int):
        return env[tree]
    if isinstance(tree, tuple):
        return tuple(_build(t, env) for t in tree)
    if isinstance(tree, list):
        return [_build(t, env) for t in tree]
    return {k: _build(t, env) for k, t in tree.items()}


class _GraphHolder:
    """What ScriptModule and ScriptFunction share: the graph, its plan, its text forms."""

    def _set_graph(self, graph):
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "_plan", None)

    @property
    def graph(self):
        """The IR, printable as torch prints a TorchScript graph."""
        return self._graph

    @property
    def inlined_graph(self):
        return self._graph

    def _get_plan(self):
        plan = self._plan
        if plan is None:
            plan = _Plan(self._graph)
            object.__setattr__(self, "_plan", plan)
        return plan

    def _graph_changed(self):
        object.__setattr__(self, "_plan", None)


class ScriptModule(_GraphHolder, Module):
    """A traced module: its parameters and buffers (the original module's, shared), and a graph
    that ``forward`` interprets.

    Example::

        >>> net = ember.nn.Linear(3, 2)
        >>> traced = ember.jit.trace(net, ember.randn(4, 3))
        >>> traced(ember.randn(4, 3)).shape
        ember.Size([4, 2])
    """

    def __init__(self, graph, attributes, training=None, name="Module"):
        Module.__init__(self)
        self._set_graph(graph)
        object.__setattr__(self, "original_name", name)
        training = training or {}
        for dotted, (kind, tensor, persistent) in attributes.items():
            owner = self
            *path, leaf = dotted.split(".")
            prefix = ""
            for part in path:
                prefix = f"{prefix}.{part}" if prefix else part
                child = owner._modules.get(part)
                if child is None:
                    child = Module()
                    child.training = training.get(prefix, True)
                    owner.add_module(part, child)
                owner = child
            if kind == "parameter":
                owner.register_parameter(leaf, tensor)
            else:
                owner.register_buffer(leaf, tensor, persistent=persistent)
        object.__setattr__(self, "training", training.get("", True))

    def _attr(self, dotted):
        owner = self
        *path, leaf = dotted.split(".")
        for part in path:
            owner = owner._modules[part]
        found = owner._parameters.get(leaf)
        return found if found is not None else owner._buffers[leaf]

    def forward(self, *args):
        """Run the graph on ``args``."""
        return run_graph(self._get_plan(), args, self._attr, self._graph.constants)

    @property
    def code(self):
        """Readable Python-like source of the graph."""
        return self._graph.python_code("forward", method=True)

    def save(self, f):
        """Save to ``f`` (see :func:`ember.jit.save`)."""
        from ._serialize import save

        save(self, f)

    def _apply(self, fn, recurse=True):
        Module._apply(self, fn, recurse)
        from ..autograd import grad_mode

        with grad_mode.no_grad():
            constants = self._graph.constants
            constants.update({k: fn(v) for k, v in constants.items()})
        return self

    def _attributes(self):
        """``{dotted name: (kind, tensor, persistent)}`` of every parameter and buffer."""
        found = {}
        for prefix, module in self.named_modules():
            for name, p in module._parameters.items():
                if p is not None:
                    found[f"{prefix}.{name}" if prefix else name] = ("parameter", p, True)
            for name, b in module._buffers.items():
                if b is not None:
                    persistent = name not in module._non_persistent_buffers_set
                    found[f"{prefix}.{name}" if prefix else name] = ("buffer", b, persistent)
        return found

    def _training_flags(self):
        return {prefix: module.training for prefix, module in self.named_modules()}

    def extra_repr(self):
        return f"original_name={self.original_name}"


RecursiveScriptModule = ScriptModule


class ScriptFunction(_GraphHolder):
    """A traced function: calling it interprets its graph.

    Example::

        >>> f = ember.jit.trace(lambda x: x.sin() * 2, ember.randn(3))
        >>> f(ember.zeros(3))
        tensor([0., 0., 0.])
    """

    def __init__(self, graph, name="fn"):
        self._set_graph(graph)
        self.name = self.__name__ = self.qualified_name = name

    def __call__(self, *args):
        return run_graph(self._get_plan(), args, self._no_attr, self._graph.constants)

    @staticmethod
    def _no_attr(name):
        raise RuntimeError(f"a traced function has no attribute {name}")

    @property
    def code(self):
        """Readable Python-like source of the graph."""
        return self._graph.python_code(self.name, method=False)

    def save(self, f):
        """Save to ``f`` (see :func:`ember.jit.save`)."""
        from ._serialize import save

        save(self, f)

    def __repr__(self):
        return f"<ember.jit.ScriptFunction {self.name}>"
