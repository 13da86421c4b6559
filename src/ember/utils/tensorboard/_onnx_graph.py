"""An ONNX model file as a TensorFlow ``GraphDef`` for TensorBoard's graph dashboard."""

from __future__ import annotations

import itertools

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ._graph import _PRODUCER_VERSION


def load_onnx_graph(path):
    """The ``GraphDef`` of the ONNX model in the file ``path`` (needs the ``onnx`` package).

    Example::

        >>> ember.onnx.export(model, ember.randn(1, 4), "model.onnx")
        >>> graph_def = load_onnx_graph("model.onnx")
    """
    import onnx

    return onnx_graph_def(onnx.load(path).graph)


def onnx_graph_def(graph):
    """``graph`` (an ``onnx.GraphProto``) as a ``GraphDef``: its inputs and outputs become
    ``Variable`` nodes with their element type and shape, each operator a node named after
    its first output, with its attributes as text.

    Example::

        >>> onnx_graph_def(onnx.load("model.onnx").graph).node[0].op
        'Variable'
    """
    nodes = [_variable_node(value) for value in itertools.chain(graph.input, graph.output)]
    nodes += [_operator_node(node) for node in graph.node]
    return GraphDef(node=nodes, versions=VersionDef(producer=_PRODUCER_VERSION))


def _variable_node(value):
    tensor_type = value.type.tensor_type
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d.dim_value)
                                  for d in tensor_type.shape.dim])
    return NodeDef(name=value.name, op="Variable", input=[],
                   attr={"dtype": AttrValue(type=tensor_type.elem_type),
                         "shape": AttrValue(shape=shape)})


def _operator_node(node):
    # each attribute as its set fields joined by " = " (name = value = type), as torch shows it
    described = ", ".join(" = ".join(str(field[1]) for field in attribute.ListFields())
                          for attribute in node.attribute)
    return NodeDef(name=node.output[0], op=node.op_type, input=node.input,
                   attr={"parameters": AttrValue(s=described.encode("utf_8"))})
