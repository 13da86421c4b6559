"""``ember.fx.passes.shape_prop``: record each node's tensor shape, dtype and strides by
running the graph on example inputs."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp stores in ``node.meta["tensor_meta"]`` (torch.fx's fields).

    ``memory_format`` is the first of ``contiguous_format``, ``channels_last`` and
    ``channels_last_3d`` in which the tensor is contiguous, else ``None``.
    """

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _memory_format(tensor):
    import ember
    for candidate in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
        try:
            if tensor.is_contiguous(memory_format=candidate):
                return candidate
        except RuntimeError:  # channels_last asked of a tensor of the wrong rank
            continue
    return None


def _extract_tensor_metadata(tensor):
    return TensorMetadata(tensor.shape, tensor.dtype, tensor.requires_grad, tensor.stride(),
                          _memory_format(tensor), False, {})


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
