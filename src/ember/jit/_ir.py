"""The graph IR of ``ember.jit``: values, nodes and graphs, their text forms and their data form.

A :class:`Graph` is a list of :class:`Node` in execution order over SSA :class:`Value` s:

* ``op`` nodes call one primitive of ember's operator registry (``node.op`` is the
  :class:`~ember.ops._registry.Op`; its name is what a saved file stores) on their input values,
  with the keyword ``params`` the primitive got when traced;
* ``get_attr`` nodes read a parameter or buffer of the module by its dotted name (torch's
  ``prim::GetAttr``), so that the graph stays tied to the module's state;
* ``constant`` nodes read a tensor the trace found that depends on no input
  (``graph.constants``);
* ``copy_`` nodes write their second input into their first in place (``x.add_(y)``,
  ``out=``); their output is the first input, changed;
* ``fused`` nodes (made by :func:`ember.jit.optimize_for_inference`) evaluate a chain of
  element-wise primitives in one buffer (see ``_passes.py``).

``graph.output`` is a tree of values: a :class:`Value`, or ``("tuple"|"list", [trees])``, or
``("dict", [(key, tree), ...])``.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import _dtype as dt
from .._device import device as _device_cls

__all__ = ["Value", "Node", "Graph"]

OP, GET_ATTR, CONSTANT, COPY, FUSED = "op", "get_attr", "constant", "copy_", "fused"
CALL, IF, LOOP = "call", "if", "loop"  # made by ember.jit.script (``_script.py``)
WHILE = "while"  # made by scripting a module (``_script_module.py``)
# nodes a pass must keep even when nothing reads their output
SIDE_EFFECTS = frozenset({COPY, WHILE})


class Value:
    """One SSA value: a tensor flowing between nodes, with the shape and dtype it had when
    traced (for printing and for the passes' checks)."""

    __slots__ = ("id", "shape", "dtype", "name")

    def __init__(self, id, shape=None, dtype=None, name=None):
        self.id = id
        self.shape = shape
        self.dtype = dtype  # ember dtype name ("float32", ...)
        self.name = name

    def debug_name(self):
        return self.name or str(self.id)

    def __repr__(self):
        return f"%{self.debug_name()}"


class Node:
    """One step of a graph (see the module docstring for the kinds)."""

    __slots__ = ("kind", "op", "inputs", "params", "outputs")

    def __init__(self, kind, op, inputs, params, outputs):
        self.kind = kind
        self.op = op            # the Op for ``op`` nodes; the fused program for ``fused``
        self.inputs = inputs
        self.params = params
        self.outputs = outputs

    @property
    def target(self):
        """The name a node prints and saves with (``add``, ``prim::GetAttr``...)."""
        if self.kind == OP:
            return self.op.name
        if self.kind == CALL:
            return self.params["fn"]
        return {IF: "prim::If", LOOP: "prim::Loop", WHILE: "prim::Loop", GET_ATTR: "prim::GetAttr",
                CONSTANT: "prim::Constant", COPY: "copy_",
                FUSED: "prim::FusedElementwise"}[self.kind]

    def __repr__(self):
        return _node_text(self).strip()


class Graph:
    """A traced program: inputs, nodes in order, an output tree, and tensor constants."""

    def __init__(self):
        self.inputs = []
        self.nodes = []
        self.output = None
        self.constants = {}
        self._next = 0

    def __deepcopy__(self, memo):
        # a copy with its own nodes and constants; the operators are shared (an Op is a
        # registry entry, which must stay the one object that a saved name refers to)
        import copy

        from ._passes import clone_graph

        new = clone_graph(self)
        new.constants = {k: copy.deepcopy(v, memo) for k, v in self.constants.items()}
        return new

    def new_value(self, shape=None, dtype=None, name=None):
        value = Value(self._next, shape, dtype, name)
        self._next += 1
        return value

    def output_values(self):
        """The values the output tree names, in order."""
        found = []
        _tree_values(self.output, found)
        return found

    def use_counts(self):
        """How many times each value is read: as a node's input, and by the output."""
        uses = {}
        for n in self.nodes:
            for v in n.inputs:
                uses[v] = uses.get(v, 0) + 1
        for v in self.output_values():
            uses[v] = uses.get(v, 0) + 1
        return uses

    def op_nodes(self, name=None):
        """Nodes that call a primitive (all of them, or those named ``name``)."""
        return [n for n in self.nodes
                if n.kind == OP and (name is None or n.op.name == name)]

    def __str__(self):
        def header(v):
            return f"%{v.debug_name()} : {_type_text(v)}"
        pad = " " * len("graph(")
        lines = ["graph(" + (",\n" + pad).join(header(v) for v in self.inputs) + "):"]
        lines += [_node_text(n) for n in self.nodes]
        lines.append(f"  return ({_tree_text(self.output)})")
        return "\n".join(lines) + "\n"

    __repr__ = __str__

    def python_code(self, name="forward", method=True):
        """Readable Python-like source of the graph (``ScriptModule.code``)."""
        args = ["self"] if method else []
        args += [_ref(v) for v in self.inputs]
        lines = [f"def {name}({', '.join(args)}):"]
        lines += _code_lines(self, "    ")
        lines.append(f"    return {_tree_code(self.output, _ref)}")
        return "\n".join(lines) + "\n"


def _ref(v):
    return f"v{v.debug_name()}".replace(".", "_")


def _code_lines(graph, pad):
    lines = []
    for n in graph.nodes:
        outs = ", ".join(_ref(v) for v in n.outputs)
        if n.kind == GET_ATTR:  # self.seq.0.weight reads as self.seq[0].weight
            dotted = re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", n.params["name"])
            lines.append(f"{pad}{outs} = self.{dotted}")
        elif n.kind == CONSTANT:
            lines.append(f"{pad}{outs} = CONSTANTS[{n.params['name']!r}]")
        elif n.kind == COPY:
            lines.append(f"{pad}{outs} = {_ref(n.inputs[0])}.copy_({_ref(n.inputs[1])})")
        elif n.kind == CALL:
            parts = [_ref(n.inputs[t["v"]]) if "v" in t else repr(t["c"])
                     for t in n.params["args"]]
            parts += [f"{k}=" + (_ref(n.inputs[t["v"]]) if "v" in t else repr(t["c"]))
                      for k, t in n.params["kwargs"].items()]
            fn = n.params["fn"]
            if fn.startswith("method:"):
                lines.append(f"{pad}{outs} = {parts[0]}.{fn[7:]}({', '.join(parts[1:])})")
            elif fn.startswith('prim::CallMethod[name="'):  # a layer's method
                method = fn[len('prim::CallMethod[name="'):-2]
                lines.append(f"{pad}{outs} = ({parts[0]}).{method}({', '.join(parts[1:])})")
            elif fn.startswith("attr:"):
                lines.append(f"{pad}{outs} = {parts[0]}.{fn[5:]}")
            else:
                lines.append(f"{pad}{outs} = {fn}({', '.join(parts)})")
        elif n.kind == WHILE:
            lines += _while_lines(n, pad)
        elif n.kind == LOOP:
            lines += _for_lines(n, pad)
        elif n.kind == IF:
            for head, block in [("if " + _ref(n.inputs[0]) + ":", n.params["then"]),
                                ("else:", n.params["else"])]:
                lines.append(pad + head)
                lines += _bind_lines(block.inputs, n.inputs[1:], pad + "    ")
                lines += _code_lines(block, pad + "    ")
                results = ", ".join(_ref(v) for v in block.output_values())
                if outs:
                    lines.append(f"{pad}    {outs} = {results}")
                elif not block.nodes:
                    lines.append(f"{pad}    pass")
        else:
            params = "".join(f", {k}={v!r}" for k, v in n.params.items() if n.kind == OP)
            call = n.op.name if n.kind == OP else "fused_elementwise"
            if n.kind == FUSED:
                params = f", program={[s[0] for s in n.params['program']]!r}"
            lines.append(f"{pad}{outs} = ops.{call}("
                         f"{', '.join(_ref(v) for v in n.inputs)}{params})")
    return lines


def _bind_lines(targets, sources, pad):
    """``target = source`` for the block inputs that a name does not already carry."""
    return [f"{pad}{_ref(t)} = {_ref(o)}" for t, o in zip(targets, sources)
            if _ref(t) != _ref(o)]


def _for_lines(n, pad):
    """A ``range`` loop as Python: carried names are set before the loop and by each pass."""
    body = n.params["body"]
    start, stop, step = (_ref(v) for v in n.inputs[:3])
    lines = _bind_lines(body.inputs[1:], n.inputs[3:], pad)
    lines.append(f"{pad}for {_ref(body.inputs[0])} in range({start}, {stop}, {step}):")
    lines += _code_lines(body, pad + "    ") or [f"{pad}    pass"]
    carried = [n.params["names"].index(c) for c in n.params["carried"]]
    lines += _bind_lines([body.inputs[1 + i] for i in carried], body.output_values(),
                         pad + "    ")
    lines += _bind_lines(n.outputs, [body.inputs[1 + i] for i in carried], pad)
    return lines


def _while_lines(n, pad):
    """``while`` as Python: the carried names are set before the loop and by each pass."""
    cond, body = n.params["cond"], n.params["body"]
    lines = _bind_lines(cond.inputs, n.inputs, pad)
    lines += _code_lines(cond, pad)
    lines.append(f"{pad}while {_ref(cond.output)}:")
    lines += _bind_lines(body.inputs, cond.inputs, pad + "    ")
    lines += _code_lines(body, pad + "    ")
    carried = [n.params["names"].index(c) for c in n.params["carried"]]
    results = body.output_values()
    lines += _bind_lines([cond.inputs[i] for i in carried], results, pad + "    ")
    lines += _code_lines(cond, pad + "    ")
    lines += _bind_lines(n.outputs, [cond.inputs[i] for i in carried], pad)
    return lines


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
               "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
               "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
               "complex128": "ComplexDouble"}


def _type_text(v):
    if v.dtype is None:
        return "Tensor"
    if v.dtype == "int":  # a traced size (``_sizes.py``) or a tuple of them
        return "int"
    if v.dtype == "tuple":  # tensors grouped for, or returned by, one call (``ember.lstm``)
        return "Tensor[]"
    if v.dtype in ("float", "bool", "str") or v.dtype.startswith(("Optional[", "List[",
                                                                   "Tuple[")):
        return v.dtype  # an annotated argument of a scripted method
    shape = ", ".join(str(s) for s in v.shape)
    return f"{_TYPE_NAMES.get(v.dtype, v.dtype)}({shape})"


def _node_text(n, indent="  "):
    outs = ", ".join(f"%{v.debug_name()} : {_type_text(v)}" for v in n.outputs)
    args = ", ".join(f"%{v.debug_name()}" for v in n.inputs)
    if n.kind in (IF, LOOP, WHILE):
        blocks = ([n.params["then"], n.params["else"]] if n.kind == IF else
                  [n.params["cond"], n.params["body"]] if n.kind == WHILE else [n.params["body"]])
        lines = [f"{indent}{outs} = {n.target}({args})"]
        for i, block in enumerate(blocks):
            names = ", ".join(f"%{v.debug_name()}" for v in block.inputs)
            lines.append(f"{indent}  block{i}({names}):")
            lines += [_node_text(m, indent + "    ") for m in block.nodes]
            lines.append(f"{indent}    -> ({_tree_text(block.output)})")
        return "\n".join(lines)
    if n.kind == CALL:
        parts = [f"%{n.inputs[t['v']].debug_name()}" if "v" in t else repr(t["c"])
                 for t in n.params["args"]]
        parts += [f"{k}=" + (f"%{n.inputs[t['v']].debug_name()}" if "v" in t else repr(t["c"]))
                  for k, t in n.params["kwargs"].items()]
        return f"{indent}{outs} = {n.target}({', '.join(parts)})"
    if n.kind == FUSED:
        attrs = "[" + ", ".join(step[0] for step in n.params["program"]) + "]"
    elif n.params:
        attrs = "[" + ", ".join(f"{k}={_param_text(v)}" for k, v in n.params.items()) + "]"
    else:
        attrs = ""
    prefix = "" if n.kind != OP else "ember::"
    return f"{indent}{outs} = {prefix}{n.target}{attrs}({args})"


def _param_text(v):
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def _tree_values(tree, found):
    if isinstance(tree, Value):
        found.append(tree)
    elif tree is not None:
        kind, items = tree
        for item in items:
            _tree_values(item[1] if kind == "dict" else item, found)


def _tree_text(tree):
    found = []
    _tree_values(tree, found)
    return ", ".join(f"%{v.debug_name()}" for v in found)


def _tree_code(tree, ref):
    if isinstance(tree, Value):
        return ref(tree)
    kind, items = tree
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_tree_code(t, ref)}" for k, t in items) + "}"
    inner = ", ".join(_tree_code(t, ref) for t in items)
    if kind == "tuple":
        return f"({inner}{',' if len(items) == 1 else ''})"
    return f"[{inner}]"


def map_tree(tree, fn):
    """The output tree with each value replaced by ``fn(value)`` (tuples, lists, dicts)."""
    if isinstance(tree, Value):
        return fn(tree)
    kind, items = tree
    if kind == "dict":
        return {k: map_tree(t, fn) for k, t in items}
    seq = [map_tree(t, fn) for t in items]
    return tuple(seq) if kind == "tuple" else seq


def rename_tree(tree, mapping):
    """The output tree with values replaced through ``mapping`` (a dict value -> value)."""
    if isinstance(tree, Value):
        return mapping.get(tree, tree)
    kind, items = tree
    if kind == "dict":
        return (kind, [(k, rename_tree(t, mapping)) for k, t in items])
    return (kind, [rename_tree(t, mapping) for t in items])


# ---------------------------------------------------------------- data form (JSON)


def encode_param(v):
    """A JSON-able form of an op's keyword parameter (refuses what it does not know)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"$": "float", "v": repr(v)}
    if isinstance(v, complex):
        return {"$": "complex", "v": [encode_param(v.real), encode_param(v.imag)]}
    if isinstance(v, tuple):
        return {"$": "tuple", "v": [encode_param(x) for x in v]}
    if isinstance(v, list):
        return [encode_param(x) for x in v]
    if isinstance(v, dict):
        return {"$": "dict", "k": [encode_param(k) for k in v],
                "v": [encode_param(x) for x in v.values()]}
    if isinstance(v, slice):
        return {"$": "slice", "v": [encode_param(v.start), encode_param(v.stop),
                                    encode_param(v.step)]}
    if v is Ellipsis:
        return {"$": "ellipsis"}
    if isinstance(v, dt.dtype):
        return {"$": "dtype", "v": v.name}
    if isinstance(v, np.dtype):
        return {"$": "npdtype", "v": v.str if v.names is None else str(v)}
    if isinstance(v, np.generic):
        return {"$": "npscalar", "d": v.dtype.str, "v": encode_param(v.item())}
    if isinstance(v, _device_cls):
        return {"$": "device", "v": str(v)}
    raise TypeError(f"ember.jit cannot save an operator parameter of type {type(v).__name__} "
                    f"({v!r})")


def decode_param(v):
    """The inverse of :func:`encode_param`."""
    if isinstance(v, list):
        return [decode_param(x) for x in v]
    if not isinstance(v, dict):
        return v
    tag = v.get("$")
    if tag == "float":
        return float(v["v"])
    if tag == "complex":
        return complex(decode_param(v["v"][0]), decode_param(v["v"][1]))
    if tag == "tuple":
        return tuple(decode_param(x) for x in v["v"])
    if tag == "dict":
        return {decode_param(k): decode_param(x) for k, x in zip(v["k"], v["v"])}
    if tag == "slice":
        return slice(*(decode_param(x) for x in v["v"]))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "dtype":
        return getattr(dt, v["v"])
    if tag == "npdtype":
        return np.dtype(v["v"]) if v["v"] != "bfloat16" else dt.bfloat16.np
    if tag == "npscalar":
        return np.dtype(v["d"]).type(decode_param(v["v"]))
    if tag == "device":
        return _device_cls(v["v"])
    raise ValueError(f"unknown parameter tag {tag!r}")
