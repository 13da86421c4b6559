"""``ember.jit.save`` / ``ember.jit.load``: a zip holding the graph as JSON and the tensors.

Layout of the archive:

* ``graph.json``: ``{"format": "ember.jit", "version": 1, "kind": "module"|"function", ...}``
  with the values, the nodes (operator names from ember's registry, keyword parameters in a
  tagged JSON form, input/output value ids), the output tree, the module's attributes
  (parameter or buffer, requires_grad, persistence) and training flags;
* ``tensors.pt``: the parameters, buffers and constants, written by ``ember.save``.

Loading builds the graph back by looking each operator name up in ember's registry (the
``Op`` objects of the loaded ``ember`` modules) and refuses unknown names; nothing from the file
is executed, and the model's Python class is never needed.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import zipfile
from pathlib import Path

from .. import serialization
from ..ops._registry import registry
from ._ir import CALL, FUSED, IF, LOOP, OP, WHILE, Graph, Node, decode_param, encode_param

__all__ = ["save", "load"]

FORMAT, VERSION = "ember.jit", 1


# ---------------------------------------------------------------- the operator registry


def lookup(name, index=0):
    """The registered :class:`~ember.ops._registry.Op` called ``name`` (``index`` picks among
    namesakes, in the order ember defines them)."""
    ops = registry.get(name)
    if not ops:
        return None
    return ops[index] if isinstance(index, int) and 0 <= index < len(ops) else None


# ---------------------------------------------------------------- graph <-> data


def graph_to_data(graph):
    """The JSON-able form of ``graph`` (raises for an op or parameter it cannot name)."""
    values = {}

    def ref(v):
        if v not in values:
            values[v] = {"id": v.id, "name": v.name, "shape": list(v.shape or ()),
                         "dtype": v.dtype}
        return v.id
    inputs = [ref(v) for v in graph.inputs]
    nodes = []
    for n in graph.nodes:
        entry = {"kind": n.kind, "inputs": [ref(v) for v in n.inputs]}
        if n.kind == OP:
            index = next((i for i, o in enumerate(registry.get(n.op.name, ())) if o is n.op),
                         None)
            if index is None:
                raise RuntimeError(f"ember.jit.save: operator '{n.op.name}' is not in ember's "
                                   "operator registry (defined at run time?) and cannot be saved")
            entry["op"] = n.op.name
            if index:
                entry["index"] = index
        if n.kind in (IF, LOOP, WHILE):
            entry["blocks"] = {k: graph_to_data(v) for k, v in n.params.items()
                               if isinstance(v, Graph)}
        try:
            entry["params"] = {k: encode_param(v) for k, v in n.params.items()
                               if not isinstance(v, Graph)}
        except TypeError as error:
            raise TypeError(f"ember.jit.save: node {n.target}: {error}") from None
        entry["outputs"] = [ref(v) for v in n.outputs]
        nodes.append(entry)
    return {"values": list(values.values()), "inputs": inputs, "nodes": nodes,
            "output": _tree_to_data(graph.output, ref)}


def _tree_to_data(tree, ref):
    if tree is None:
        return None
    if not isinstance(tree, tuple):
        return {"value": ref(tree)}
    kind, items = tree
    if kind == "dict":
        return {"dict": [[encode_param(k), _tree_to_data(t, ref)] for k, t in items]}
    return {kind: [_tree_to_data(t, ref) for t in items]}


def graph_from_data(data, constants, where):
    """Rebuild a :class:`Graph` from :func:`graph_to_data`'s form, ops by registry name."""
    from ._passes import make_fused

    graph = Graph()
    values = {}
    for entry in data["values"]:
        v = graph.new_value(tuple(entry["shape"]), entry["dtype"], entry["name"])
        v.id = entry["id"]
        values[entry["id"]] = v
    graph._next = max(values, default=-1) + 1
    graph.inputs = [values[i] for i in data["inputs"]]
    for entry in data["nodes"]:
        kind = entry["kind"]
        params = {k: decode_param(v) for k, v in entry.get("params", {}).items()}
        op = None
        if kind == OP:
            op = lookup(entry["op"], entry.get("index", 0))
            if op is None:
                raise RuntimeError(f"ember.jit.load: unknown operator '{entry['op']}' in "
                                   f"{where}: it is not in ember's operator registry (a file "
                                   "from a newer ember, or a tampered one); refusing to load")
        elif kind == FUSED:
            op = make_fused(params["program"], where)
        elif kind == CALL:
            from ._script import resolve

            op = resolve(params["fn"], where)
        elif kind in (IF, LOOP, WHILE):
            for name, block in entry.get("blocks", {}).items():
                params[name] = graph_from_data(block, {}, where)
        elif kind not in ("get_attr", "constant", "copy_"):
            raise RuntimeError(f"ember.jit.load: unknown node kind '{kind}' in {where}")
        graph.nodes.append(Node(kind, op, [values[i] for i in entry["inputs"]], params,
                                [values[i] for i in entry["outputs"]]))
    graph.output = _tree_from_data(data["output"], values)
    graph.constants = constants
    return graph


def _tree_from_data(data, values):
    if data is None:
        return None
    if "value" in data:
        return values[data["value"]]
    if "dict" in data:
        return ("dict", [(decode_param(k), _tree_from_data(t, values)) for k, t in data["dict"]])
    kind = "tuple" if "tuple" in data else "list"
    return (kind, [_tree_from_data(t, values) for t in data[kind]])


# ---------------------------------------------------------------- files


def save(m, f, _extra_files=None):
    """Save a traced :class:`ScriptModule` or :class:`ScriptFunction` to ``f`` (a path or a
    binary file object).

    The archive holds the graph as JSON and the tensors in ember's (torch's) tensor format;
    saving to a path is atomic (a temporary file beside it, fsynced and renamed), as
    ``ember.save``.

    Example::

        >>> traced = ember.jit.trace(ember.nn.Linear(3, 2), ember.randn(1, 3))
        >>> ember.jit.save(traced, "linear.pt")  # doctest: +SKIP
    """
    from ._module import ScriptFunction, ScriptModule

    if isinstance(m, ScriptModule):
        attrs = m._attributes()
        meta = {"kind": "module", "name": m.original_name,
                "attributes": [{"name": k, "kind": kind, "persistent": persistent,
                                "requires_grad": bool(t.requires_grad)}
                               for k, (kind, t, persistent) in attrs.items()],
                "training": m._training_flags()}
        tensors = {k: t.detach() for k, (_, t, _) in attrs.items()}
        meta.update(_scripted_meta(m))
    elif isinstance(m, ScriptFunction):
        meta = {"kind": "function", "name": m.name}
        tensors = {}
    else:
        raise TypeError(f"ember.jit.save expects a ScriptModule or ScriptFunction (from "
                        f"ember.jit.trace), not {type(m).__name__}")
    graph = m.graph
    constants = dict(graph.constants)
    for method in getattr(m, "_methods", {}).values():
        constants.update(method.constants)
    doc = {"format": FORMAT, "version": VERSION, **meta, "graph": graph_to_data(graph)}
    buffer = io.BytesIO()
    serialization.save({"attributes": tensors,
                        "constants": {k: t.detach() for k, t in constants.items()}},
                       buffer)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        z.writestr("graph.json", json.dumps(doc, indent=1, allow_nan=False))
        z.writestr("tensors.pt", buffer.getvalue())
        for name, content in (_extra_files or {}).items():
            z.writestr(f"extra/{name}", content)
    _write_atomic(archive.getvalue(), f)


def _scripted_meta(m):
    """The methods and signatures of a module from ``ember.jit.script`` (nothing for a traced
    one); refuses one that calls ``@ember.jit.ignore`` methods, as torch does."""
    from ._scripted import ScriptedModule, python_calls

    if not isinstance(m, ScriptedModule):
        return {}
    for graph in [m.graph, *m._methods.values()]:
        for name in python_calls(graph):
            raise RuntimeError(f"Could not export Python function call '{name}'. Remove calls "
                               "to Python functions before export (the method is marked "
                               "@ember.jit.ignore)")
    from ._script_library import describe, encode_spec

    return {"script": {
        "library": {prefix: encode_spec(describe(layer), prefix or "the module")
                    for prefix, layer in m._library_layers().items()},
        "methods": {k: graph_to_data(g) for k, g in m._methods.items()},
        "signatures": {k: [[n, t, encode_param(d), has] for n, t, d, has in sig]
                       for k, sig in m._signatures.items()},
        "constants": {prefix: {k: encode_param(v) for k, v in values.items()}
                      for prefix, values in m._constants.items()}}}


def _write_atomic(data, f):
    if not isinstance(f, (str, os.PathLike)):
        f.write(data)
        return
    path = Path(f)
    directory = path.parent if str(path.parent) else Path(".")
    tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    serialization._fsync_directory(directory)


def load(f, map_location=None, _extra_files=None):
    """Load what :func:`save` wrote; ``map_location`` moves the tensors (as ``ember.load``).

    The model's Python class is not needed: the graph is interpreted from operator names in
    ember's registry (an unknown name is refused with an error naming it and the file).

    Example::

        >>> traced = ember.jit.load("linear.pt")  # doctest: +SKIP
    """
    from ..nn.parameter import Parameter
    from ._module import ScriptFunction, ScriptModule

    where = str(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    if isinstance(f, (str, os.PathLike)) and not os.path.exists(f):
        raise ValueError(f"The provided filename {f} does not exist")
    try:
        z = zipfile.ZipFile(f)
    except zipfile.BadZipFile as error:
        raise RuntimeError(f"ember.jit.load: {where} is not an ember.jit archive "
                           f"({error})") from None
    with z:
        names = set(z.namelist())
        if not {"graph.json", "tensors.pt"} <= names:
            raise RuntimeError(f"ember.jit.load: {where} is not an ember.jit archive (no "
                               "graph.json/tensors.pt; a file from ember.save loads with "
                               "ember.load)")
        doc = json.loads(z.read("graph.json"))
        tensors = serialization.load(io.BytesIO(z.read("tensors.pt")),
                                     map_location=map_location, weights_only=True)
        if _extra_files is not None:
            for name in _extra_files:
                if f"extra/{name}" in names:
                    _extra_files[name] = z.read(f"extra/{name}")
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise RuntimeError(f"ember.jit.load: {where}: unsupported format "
                           f"{doc.get('format')!r} version {doc.get('version')!r}")
    graph = graph_from_data(doc["graph"], dict(tensors["constants"]), where)
    if doc["kind"] == "function":
        return ScriptFunction(graph, doc["name"])
    attrs = {}
    for entry in doc["attributes"]:
        t = tensors["attributes"][entry["name"]]
        if entry["kind"] == "parameter":
            t = Parameter(t, requires_grad=entry["requires_grad"])
        attrs[entry["name"]] = (entry["kind"], t, entry["persistent"])
    if "script" in doc:
        return _load_scripted(doc, graph, attrs, where)
    return ScriptModule(graph, attrs, doc.get("training"), doc["name"])


def _load_scripted(doc, graph, attrs, where):
    from ._script_library import decode_spec
    from ._scripted import ScriptedModule

    script = doc["script"]
    methods = {k: graph_from_data(g, graph.constants, where)
               for k, g in script["methods"].items()}
    signatures = {k: [(n, t, decode_param(d), has) for n, t, d, has in sig]
                  for k, sig in script["signatures"].items()}
    constants = {prefix: {k: decode_param(v) for k, v in values.items()}
                 for prefix, values in script.get("constants", {}).items()}
    library = {prefix: decode_spec(spec, where)
               for prefix, spec in script.get("library", {}).items()}
    return ScriptedModule(graph, attrs, doc.get("training"), doc["name"], signatures, methods,
                          constants, library)
