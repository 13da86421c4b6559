"""A captured graph as generated straight-line Python: one call per node, with each node's
primitive, parameters and constants bound once, instead of ``jit``'s interpreter loop.

``jit``'s ``run_graph`` walks a list of steps on every call, testing each step's kind and
gathering its inputs from a slot list. A compiled function replays the same graph on every
call, so the walk is written out once as source (``v3 = OP2(v1, v2, **P2)``) and compiled
with ``exec``: each call then costs the primitives' own calls, as in eager code without the
public wrappers. The primitives are called exactly as the interpreter calls them (autograd
records them as it would), and parameters and buffers are read by name at every call (so
optimiser updates and replaced buffers are seen). Graphs with control-flow nodes (only
``jit.script`` makes them) keep the interpreter.

Example::

    >>> from ember._inductor.capture import capture
    >>> found = capture(lambda x: (x + 1).relu(), [ember.ones(2)])
    >>> generate(found.graph, found.captured)([ember.tensor([-3.0, 1.0])])
    (tensor([0., 2.]),)
"""

from __future__ import annotations

from ..jit._ir import CALL, CONSTANT, COPY, FUSED, GET_ATTR, OP, Value
from ..ops._registry import assign_inplace
from .codegen import SourceWriter

__all__ = ["generate", "can_generate"]

_FLAT = (OP, FUSED, GET_ATTR, CONSTANT, COPY, CALL)


def can_generate(graph):
    """Whether every node of ``graph`` is of a kind the generated code runs (no ``if``,
    ``loop`` or ``while`` blocks).

    Example::

        >>> from ember.jit._ir import Graph
        >>> can_generate(Graph())
        True
    """
    return all(n.kind in _FLAT for n in graph.nodes)


def generate(graph, attrs):
    """A callable running ``graph`` on a list of tensors (as ``backends.interpret``);
    ``attrs`` maps ``get_attr`` names to live tensors, read at each call.

    Example::

        >>> from ember._inductor.capture import capture
        >>> found = capture(lambda x: x * 2, [ember.ones(1)])
        >>> generate(found.graph, found.captured)([ember.ones(1)])
        (tensor([2.]),)
    """
    return _Writer(graph, attrs).function()


class _Writer(SourceWriter):
    """Writes the source of one graph's replay and the names it binds."""

    def __init__(self, graph, attrs):
        super().__init__({"read": attrs.__getitem__, "assign_inplace": assign_inplace})
        self.graph = graph

    def function(self):
        graph = self.graph
        inputs = [self.variable(v) for v in graph.inputs]
        count = len(inputs)
        self.lines.append(f"    if len(tensors) != {count}:")
        self.lines.append(f"        raise TypeError(f'forward() expected {count} argument(s) but "
                          "received {len(tensors)} argument(s)')")
        if inputs:
            self.lines.append(f"    {', '.join(inputs)}, = tensors")
        for k, node in enumerate(graph.nodes):
            self.node(k, node)
        self.lines.append(f"    return {self.tree(graph.output)}")
        source = "def replay(tensors):\n" + "\n".join(self.lines)
        return self.compiled(source, "replay", "<ember compiled graph>")

    def node(self, k, node):
        outputs = [self.variable(v) for v in node.outputs]
        args = [self.variable(v) for v in node.inputs]
        if node.kind == GET_ATTR:
            self.lines.append(f"    {outputs[0]} = read({node.params['name']!r})")
        elif node.kind == CONSTANT:
            constant = self.bind("K", self.graph.constants[node.params["name"]])
            self.lines.append(f"    {outputs[0]} = {constant}")
        elif node.kind == COPY:
            self.lines.append(f"    {outputs[0]} = assign_inplace({args[0]}, {args[1]}, "
                              "check_dtype=False)")
        elif node.kind == CALL:
            self.lines.append(f"    {outputs[0]} = {self.call(node, args)}")
        else:  # OP and FUSED
            op = self.bind("OP", node.op)
            params = node.params if node.kind == OP else {}
            keywords = f", **{self.bind('P', params)}" if params else ""
            call = f"{op}({', '.join(args)}{keywords})"
            if node.kind == OP and node.op.multi_output:
                self.lines.append(f"    r = {call}")
                for i, name in enumerate(outputs):
                    self.lines.append(f"    {name} = r[{i}]")
            else:
                self.lines.append(f"    {outputs[0]} = {call}")

    def call(self, node, args):
        """A ``call`` node: the function with its template's values and constants."""
        def operand(template):
            return args[template["v"]] if "v" in template else self.bind("C", template["c"])
        operands = [operand(t) for t in node.params["args"]]
        keywords = [f"{self.bind('N', k)}: {operand(t)}" for k, t in node.params["kwargs"].items()]
        if keywords:
            operands.append("**{" + ", ".join(keywords) + "}")
        return f"{self.bind('F', node.op)}({', '.join(operands)})"

    def tree(self, tree):
        """The output tree as an expression (tuples, lists and dicts of values)."""
        if tree is None:
            return "None"
        if isinstance(tree, Value):
            return self.variable(tree)
        kind, items = tree
        if kind == "dict":
            return "{" + ", ".join(f"{self.bind('N', k)}: {self.tree(t)}"
                                   for k, t in items) + "}"
        inner = ", ".join(self.tree(t) for t in items)
        return f"({inner},)" if kind == "tuple" and items else \
            ("()" if kind == "tuple" else f"[{inner}]")
