"""``ember.fx.passes.shape_prop``: record each node's tensor shape, dtype and strides by
running the graph on example inputs."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp stores in ``node.meta["tensor_meta"]`` (torch.fx's fields).

    ember has no memory-format objects: ``memory_format`` is ``None``.
    """

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(tensor):
    return TensorMetadata(tensor.shape, tensor.dtype, tensor.requires_grad, tensor.stride(),
                          None, False, {})


class ShapeProp(Interpreter):
    """Run the module and store :class:`TensorMetadata` for every tensor-valued node.

    >>> import ember, ember.fx
    >>> from ember.fx.passes.shape_prop import ShapeProp
    >>> gm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.Linear(3, 5)))
    >>> _ = ShapeProp(gm).propagate(ember.ones(2, 3))
    >>> [tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if n.op == "call_module"]
    [(2, 5)]
    """

    def run_node(self, n):
        import ember
        result = super().run_node(n)
        found_tensor = []

        def describe(value):
            if isinstance(value, ember.Tensor):
                found_tensor.append(True)
                return _extract_tensor_metadata(value)
            return value

        meta = map_aggregate(result, describe)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the graph on ``args``, filling each node's ``meta``; returns the result."""
        return super().run(*args)
