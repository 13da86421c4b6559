"""``ember.distributed.tensor.parallel``: tensor parallelism for ``nn.Linear`` (and a
column-wise ``nn.Embedding``), as ``torch.distributed.tensor.parallel``.

:class:`ColwiseParallel` splits a layer's output features over the ranks (weight ``Shard(0)``,
bias ``Shard(0)``): a replicated input gives each rank its slice of the output (the input's
gradient is summed over the ranks in backward). :class:`RowwiseParallel` splits the input
features (weight ``Shard(1)``, bias ``Replicate()``): each rank's slice of the input gives a
partial output that is summed over the ranks, then the bias is added once. A column-wise layer
followed by a row-wise one (an MLP) needs one all-reduce forward and one backward, and gives
the unsharded model's numbers.

Example::

    >>> mesh = init_device_mesh("cpu", (2,))
    >>> parallelize_module(mlp, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
"""

from __future__ import annotations

import fnmatch
import types

from ...._tensor import Tensor
from ....autograd.function import Function
from .._api import DTensor, _Redistribute, as_parameter, distribute_tensor
from ..placement_types import Replicate, Shard

__all__ = ["parallelize_module", "ParallelStyle", "ColwiseParallel", "RowwiseParallel",
           "SequenceParallel", "PrepareModuleInput", "PrepareModuleOutput",
           "PrepareModuleInputOutput", "loss_parallel"]


def all_reduce_tensor(x, group):
    """A new tensor: ``x`` summed over the ranks of ``group`` (outside autograd)."""
    from ... import ReduceOp
    from .._collectives import all_reduce_array

    return Tensor._make(all_reduce_array(x.detach()._data, group, ReduceOp.SUM), x._device)


class _CopyToParallel(Function):
    """Identity forward; backward sums the gradient over the group (each rank's slice of the
    computation contributed one term of it)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return all_reduce_tensor(grad, ctx.group), None


class _ReduceFromParallel(Function):
    """Sum over the group forward; backward passes the (replicated) gradient through."""

    @staticmethod
    def forward(ctx, x, group):
        return all_reduce_tensor(x, group)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ParallelStyle:
    """Base class of the ways to parallelise one module."""

    def _apply(self, module, mesh):
        raise NotImplementedError


def _local_input(x, layout, desired, mesh):
    """The module's input as a plain tensor in the ``desired`` layout (from ``layout``)."""
    if isinstance(x, DTensor):
        layout, x = x.placements[0], x.to_local()
    if not isinstance(x, Tensor) or layout == desired:
        return x
    shape = list(x.shape)
    if isinstance(layout, Shard):
        shape[layout.dim] = shape[layout.dim] * mesh.size()  # equal shards assumed
    src, dst = (_normalized(layout, x.dim()),), (_normalized(desired, x.dim()),)
    return _Redistribute.apply(x, mesh, src, dst, tuple(shape))


def _normalized(placement, ndim):
    if isinstance(placement, Shard) and placement.dim < 0:
        return Shard(placement.dim + ndim)
    return placement


def _output(y, layout, wanted, use_local_output, mesh, full_last):
    """The module's (local) output ``y``, in ``layout``, turned into ``wanted``."""
    ndim = y.dim()
    layout, wanted = _normalized(layout, ndim), _normalized(wanted, ndim)
    shape = list(y.shape)
    if isinstance(layout, Shard):
        shape[layout.dim] = full_last
    if wanted != layout:
        y = _Redistribute.apply(y, mesh, (layout,), (wanted,), tuple(shape))
    if use_local_output:
        return y
    return DTensor.from_local(y, mesh, (wanted,), shape=tuple(shape))


def _shard_params(module, mesh, placements, src_data_rank):
    for name, placement in placements.items():
        param = module._parameters.get(name)
        if param is not None:
            module._parameters[name] = as_parameter(
                distribute_tensor(param.detach(), mesh, [placement],
                                  src_data_rank=src_data_rank), param)


class ColwiseParallel(ParallelStyle):
    """Split ``nn.Linear``'s output features (``nn.Embedding``'s embedding dim) over the mesh.

    Example::

        >>> parallelize_module(model.up_proj, mesh, ColwiseParallel())
    """

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = input_layouts or Replicate()
        self.output_layouts = output_layouts or Shard(-1)
        self.use_local_output = use_local_output

    def _apply(self, module, mesh, src_data_rank=0):
        from ....nn.modules.linear import Linear
        from ....nn.modules.sparse import Embedding

        group = mesh.get_group(0)
        if isinstance(module, Linear):
            _shard_params(module, mesh, {"weight": Shard(0), "bias": Shard(0)}, src_data_rank)
            full = module.weight.global_shape()[0]
        elif isinstance(module, Embedding):
            _shard_params(module, mesh, {"weight": Shard(1)}, src_data_rank)
            full = module.weight.global_shape()[1]
        else:
            raise NotImplementedError(f"ColwiseParallel currently only support nn.Linear and "
                                      f"nn.Embedding, got {type(module).__name__}")
        style = self

        def pre_hook(mod, args):
            x = _local_input(args[0], style.input_layouts, Replicate(), mesh)
            if x.is_floating_point() and x.requires_grad:
                x = _CopyToParallel.apply(x, group)
            return (x,) + tuple(args[1:])

        def post_hook(mod, args, y):
            return _output(y, Shard(-1), style.output_layouts, style.use_local_output, mesh,
                           full)

        module.register_forward_pre_hook(pre_hook)
        module.register_forward_hook(post_hook)
        return module


class RowwiseParallel(ParallelStyle):
    """Split ``nn.Linear``'s input features over the mesh; the partial outputs are summed.

    Example::

        >>> parallelize_module(model.down_proj, mesh, RowwiseParallel())
    """

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = input_layouts or Shard(-1)
        self.output_layouts = output_layouts or Replicate()
        self.use_local_output = use_local_output

    def _apply(self, module, mesh, src_data_rank=0):
        from ....nn import functional as F
        from ....nn.modules.linear import Linear

        if not isinstance(module, Linear):
            raise NotImplementedError(f"RowwiseParallel currently only support nn.Linear, got "
                                      f"{type(module).__name__}")
        _shard_params(module, mesh, {"weight": Shard(1), "bias": Replicate()}, src_data_rank)
        group = mesh.get_group(0)
        style = self

        def forward(mod, x):
            x = _local_input(x, style.input_layouts, Shard(-1), mesh)
            y = _ReduceFromParallel.apply(F.linear(x, mod.weight), group)
            if mod.bias is not None:
                y = y + mod.bias
            return _output(y, Replicate(), style.output_layouts, style.use_local_output, mesh,
                           y.shape[-1])

        module.forward = types.MethodType(forward, module)
        return module


class SequenceParallel(ParallelStyle):
    """Sequence parallelism (not supported in ember)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("SequenceParallel is not supported in ember; use "
                                  "ColwiseParallel/RowwiseParallel, or FSDP")


class PrepareModuleInput(ParallelStyle):
    """Input layout conversion (not supported in ember)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("PrepareModuleInput is not supported in ember; convert "
                                  "inputs with DTensor.from_local/redistribute")


class PrepareModuleOutput(ParallelStyle):
    """Output layout conversion (not supported in ember)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("PrepareModuleOutput is not supported in ember; convert "
                                  "outputs with DTensor.redistribute/to_local")


class PrepareModuleInputOutput(ParallelStyle):
    """Input and output layout conversion (not supported in ember)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("PrepareModuleInputOutput is not supported in ember; convert "
                                  "with DTensor.from_local/redistribute/to_local")


def loss_parallel():
    """Loss over a class-sharded output (not supported in ember)."""
    raise NotImplementedError("loss_parallel is not supported in ember; gather the logits "
                              "(ColwiseParallel(output_layouts=Replicate())) before the loss")


def parallelize_module(module, device_mesh=None, parallelize_plan=None, *, src_data_rank=0):
    """Apply ``parallelize_plan`` to ``module``: a :class:`ParallelStyle`, or a dict from
    submodule names (``fnmatch`` wildcards allowed per dotted part) to styles. Every rank
    takes rank ``src_data_rank``'s weights. Returns ``module``.

    Example::

        >>> parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    """
    from ... import get_world_size
    from ...device_mesh import init_device_mesh

    mesh = device_mesh if device_mesh is not None else init_device_mesh(
        "cpu", (get_world_size(),))
    if mesh.ndim != 1:
        raise NotImplementedError("parallelize_module with a multi-dimensional mesh is not "
                                  "supported in ember; pass the 1-D tensor-parallel sub-mesh")
    if parallelize_plan is None:
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        return parallelize_plan._apply(module, mesh, src_data_rank)
    for pattern, style in parallelize_plan.items():
        matched = [m for name, m in module.named_modules() if name and _matches(name, pattern)]
        if not matched:
            raise ValueError(f"parallelize_plan key {pattern!r} matches no submodule")
        for submodule in matched:
            style._apply(submodule, mesh, src_data_rank)
    return module


def _matches(name, pattern):
    parts, wanted = name.split("."), pattern.split(".")
    return len(parts) == len(wanted) and all(fnmatch.fnmatch(a, b)
                                             for a, b in zip(parts, wanted))
