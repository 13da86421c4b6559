"""A model's graph for TensorBoard's graph dashboard: ``ember.jit.trace`` records the
primitives the model runs, and each becomes a ``NodeDef`` of a TensorFlow ``GraphDef``.

Nodes are named by module scope as torch names them (``Sequential/Linear[0]/weight``), so
TensorBoard draws each module as a box. The trace itself does not record which module's
``forward`` made a node; forward hooks note, for every module call during the trace, the range
of value ids the tracer handed out inside it, and a node belongs to the innermost such call.
"""

from __future__ import annotations

import contextlib

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ..._tensor import _trace_state
from ...jit import _ir
from ...profiler._recorder import aten_name

# the GraphDef producer version TensorBoard expects of graphs from PyTorch-like writers
_PRODUCER_VERSION = 22


def graph(model, args, verbose=False, use_strict_trace=True):
    """Trace ``model`` on ``args`` and return ``(GraphDef, RunMetadata)`` for
    :meth:`FileWriter.add_graph`. The model is traced in eval mode, then restored.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.ReLU())
        >>> graph_def, _ = graph(net, ember.randn(4, 3))
        >>> graph_def.node[0].name
        'input/input'
    """
    from ... import jit

    with _eval_mode(model), _ScopeRecorder(model) as scopes:
        traced = jit.trace(model, args, strict=use_strict_trace, check_trace=False)
    if verbose:
        print(traced.graph)
    nodes = _GraphDefBuilder(model, scopes).build(traced.graph)
    run_metadata = RunMetadata(step_stats=StepStats(
        dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=_PRODUCER_VERSION)), run_metadata


@contextlib.contextmanager
def _eval_mode(model):
    training = getattr(model, "training", None)
    if training is not None:
        model.train(False)
    try:
        yield
    finally:
        if training is not None:
            model.train(training)


def _module_scopes(model):
    """``{module: "Sequential/Linear[0]"}`` for ``model`` and every submodule."""
    root = type(model).__name__
    scopes = {}
    for dotted, module in model.named_modules():
        parts = [root] + [f"{type(sub).__name__}[{name}]"
                          for name, sub in _path(model, dotted)]
        scopes.setdefault(module, "/".join(parts))
    return scopes


def _path(model, dotted):
    """``(name, module)`` for each step from ``model`` down to the submodule ``dotted``."""
    steps, module = [], model
    for name in dotted.split(".") if dotted else []:
        module = getattr(module, name)
        steps.append((name, module))
    return steps


class _ScopeRecorder:
    """While tracing, records ``(first value id, end value id, scope)`` for each module call."""

    def __init__(self, model):
        self.model = model
        self.spans = []
        self._open = []
        self._handles = []

    def __enter__(self):
        named = _module_scopes(self.model) if hasattr(self.model, "named_modules") else {}
        for module, scope in named.items():
            self._handles.append(module.register_forward_pre_hook(self._enter_call))
            self._handles.append(module.register_forward_hook(
                lambda module, args, output, scope=scope: self._leave_call(scope)))
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()

    @staticmethod
    def _next_value_id():
        tracer = _trace_state.tracer
        return None if tracer is None else tracer.graph._next

    def _enter_call(self, module, args):
        self._open.append(self._next_value_id())

    def _leave_call(self, scope):
        start, end = self._open.pop(), self._next_value_id()
        if start is not None and end is not None:
            self.spans.append((start, end, scope))

    def scope_of(self, value_id, default):
        """The innermost module call that made value ``value_id``."""
        holding = [(end - start, scope) for start, end, scope in self.spans
                   if start <= value_id < end]
        return min(holding)[1] if holding else default


def _shapes_attr(values):
    shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=size) for size in v.shape])
              for v in values if v.shape is not None]
    return AttrValue(list=AttrValue.ListValue(shape=shapes))


def _params_text(params):
    return "{" + ", ".join(f" {key} : {value!r} " for key, value in params.items()) + "}"


class _GraphDefBuilder:
    """Names every traced value after the node that makes it, then emits the NodeDefs."""

    def __init__(self, model, scopes):
        self.model = model
        self.scopes = scopes
        self.root = type(model).__name__
        self.source = {}  # value id -> "node name" or "node name:k"
        self.used_names = set()

    def build(self, traced):
        nodes = [self._io_node(f"input/{v.debug_name()}", [], [v]) for v in traced.inputs]
        for v, node in zip(traced.inputs, nodes):
            self.source[v.id] = node.name
        for node in traced.nodes:
            nodes.append(self._node(node))
        for index, v in enumerate(traced.output_values()):
            nodes.append(self._io_node(f"output/output.{index + 1}", [self.source[v.id]], [v]))
        return nodes

    def _io_node(self, name, inputs, values):
        return NodeDef(name=name, op="IO Node", input=inputs,
                       attr={"attr": AttrValue(s=b""), "_output_shapes": _shapes_attr(values)})

    def _node(self, node):
        if node.kind == _ir.GET_ATTR:
            name, op = self._scoped_attribute(node.params["name"]), "prim::GetAttr"
            text = f"{{ name :  {node.params['name'].rsplit('.', 1)[-1]} }}"
        elif node.kind == _ir.OP:
            op, text = aten_name(node.op.name), _params_text(node.params)
            name = self._op_name(node, op.split("::")[-1])
        else:
            op, text = node.target, "{}"
            name = self._op_name(node, op.split("::")[-1])
        if name in self.used_names:  # a parameter read twice: one node per read
            name = f"{name}.{node.outputs[0].id}"
        self.used_names.add(name)
        for k, v in enumerate(node.outputs):
            self.source[v.id] = name if k == 0 else f"{name}:{k}"
        return NodeDef(name=name, op=op, input=[self.source[v.id] for v in node.inputs],
                       attr={"attr": AttrValue(s=text.encode("utf_8")),
                             "_output_shapes": _shapes_attr(node.outputs)})

    def _op_name(self, node, short):
        first = node.outputs[0].id
        return f"{self.scopes.scope_of(first, self.root)}/{short}.{first}"

    def _scoped_attribute(self, dotted):
        """``"0.weight"`` of a Sequential -> ``"Sequential/Linear[0]/weight"``."""
        *path, attribute = dotted.split(".")
        scope, module = [self.root], self.model
        for part in path:
            module = getattr(module, part)
            scope.append(f"{type(module).__name__}[{part}]")
        return "/".join(scope + [attribute])
