"""DTensor: a tensor spread over a :class:`DeviceMesh` as a local piece plus a layout.

ember's DTensor is the minimal form of torch's: it is an ``ember.Tensor`` whose data *is* the
local piece (so ``shape``, ``numel()`` and every operation act on the local piece and return
plain tensors, as operations on ``nn.Parameter`` do), with the mesh, the placements and the
global shape alongside. The layout changes only through the explicit calls below
(``redistribute``, ``full_tensor``, ``to_local``, ``from_local``), which are differentiable.
There is no sharding propagation through operators: code that relies on it (``dt_a @ dt_b``
giving a DTensor) must use the local pieces, as FSDP and tensor parallelism do here.
"""

from __future__ import annotations

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function
from ...overrides import DisableTorchFunctionSubclass
from ..device_mesh import init_device_mesh
from ._collectives import (
    all_reduce_array,
    chunk_bounds,
    gather_array,
    reduce_scatter_array,
    shard_array,
)
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "distribute_tensor", "distribute_module"]

# operations whose result has its first argument's layout
_SAME_LAYOUT = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
                          "randn_like", "clone"})

_OPS = {"sum": "SUM", "avg": "AVG", "max": "MAX", "min": "MIN", "product": "PRODUCT"}


def _dist():
    from ... import distributed

    return distributed


def _reduce_op(placement):
    return getattr(_dist().ReduceOp, _OPS[placement.reduce_op])


def _normalize(placements, mesh, ndim):
    """Placements as a tuple with non-negative shard dims, one per mesh dimension."""
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! Found "
                         f"placements length: {len(placements)}, and device_mesh.ndim: "
                         f"{mesh.ndim}.")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"placements must be Placement objects, got {type(p).__name__}")
        if isinstance(p, Shard) and p.dim < 0:
            p = Shard(p.dim + ndim)
        out.append(p)
    return tuple(out)


# ---------------------------------------------------------------- layout changes on arrays


def _to_replicate(array, mesh, placements, global_shape):
    """The full array from this rank's piece (collectives along the mesh dims, last first)."""
    for mesh_dim in reversed(range(mesh.ndim)):
        p = placements[mesh_dim]
        group = mesh.get_group(mesh_dim)
        if isinstance(p, Shard):
            array = gather_array(array, p.dim, _size_after_gather(global_shape, placements,
                                                                  mesh, mesh_dim, p.dim), group)
        elif isinstance(p, Partial):
            array = all_reduce_array(array, group, _reduce_op(p))
    return array


def _size_after_gather(global_shape, placements, mesh, mesh_dim, dim):
    """The size of ``dim`` once mesh dims ``mesh_dim..`` are gathered (earlier ones shard it)."""
    size = global_shape[dim]
    for d in range(mesh_dim):
        if placements[d] == Shard(dim):
            start, end = chunk_bounds(size, mesh.size(d), mesh.get_local_rank(d))
            size = end - start
    return size


def _from_replicate(array, mesh, placements):
    """This rank's piece of the full ``array`` under ``placements`` (no communication)."""
    for mesh_dim, p in enumerate(placements):
        if isinstance(p, Shard):
            array = shard_array(array, p.dim, mesh.size(mesh_dim), mesh.get_local_rank(mesh_dim))
        elif isinstance(p, Partial):
            if mesh.get_local_rank(mesh_dim) != 0 and p.reduce_op == "sum":
                array = np.zeros_like(array)
    return np.ascontiguousarray(array)


def _redistribute_array(array, mesh, src, dst, global_shape):
    if src == dst:
        return array
    if (mesh.ndim == 1 and isinstance(src[0], Partial) and isinstance(dst[0], Shard)):
        return reduce_scatter_array(array, dst[0].dim, mesh.get_group(0), _reduce_op(src[0]))
    full = _to_replicate(array, mesh, src, global_shape)
    return _from_replicate(full, mesh, dst)


class _Redistribute(Function):
    """Differentiable change of layout; backward changes the gradient back (a Partial source
    takes its gradient as Replicate, as torch does)."""

    @staticmethod
    def forward(ctx, local, mesh, src, dst, global_shape):
        ctx.layout = (mesh, src, dst, global_shape)
        return Tensor._make(_redistribute_array(local._data, mesh, src, dst, global_shape),
                            local._device)

    @staticmethod
    def backward(ctx, grad):
        mesh, src, dst, global_shape = ctx.layout
        back = tuple(Replicate() if isinstance(p, Partial) else p for p in src)
        array = _redistribute_array(np.ascontiguousarray(grad._data), mesh, dst, back,
                                    global_shape)
        return Tensor._make(array, grad._device), None, None, None, None


# ---------------------------------------------------------------- DTensor


def _wrap(local, mesh, placements, global_shape, requires_grad=False):
    """A DTensor sharing ``local``'s memory (a leaf)."""
    from ...nn.parameter import _share

    dt = _share(DTensor, local.detach())
    dt._spec = (mesh, placements, tuple(global_shape))
    if requires_grad:
        dt.requires_grad_(True)
    return dt


class DTensor(Tensor):
    """A tensor distributed over ``device_mesh`` with one placement per mesh dimension; the
    object holds (and computes on) this rank's local piece.

    Example::

        >>> mesh = init_device_mesh("cpu", (2,))
        >>> dt = distribute_tensor(ember.arange(6.), mesh, [Shard(0)])
        >>> dt.to_local()             # rank 0: tensor([0., 1., 2.])
        >>> dt.full_tensor()          # every rank: tensor([0., 1., 2., 3., 4., 5.])
    """

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Operations run on the local pieces and return plain tensors, except the ones that
        make a tensor of the same layout (``zeros_like``, ``clone``, ...): those keep the
        DTensor's layout, so that an optimiser's state of a sharded parameter is sharded."""
        with DisableTorchFunctionSubclass():
            result = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", None) in _SAME_LAYOUT and args:
            like = args[0]
            if (isinstance(like, DTensor) and isinstance(result, Tensor)
                    and not isinstance(result, DTensor) and result.shape == like.shape):
                if result.requires_grad and result.grad_fn is not None:
                    return _alias(result, *like._spec)
                return _wrap(result, *like._spec, requires_grad=result.requires_grad)
        return result

    @property
    def device_mesh(self):
        """The mesh the tensor is spread over."""
        return self._spec[0]

    @property
    def placements(self):
        """The placement along each mesh dimension."""
        return self._spec[1]

    def global_shape(self):
        """The shape of the whole (logical) tensor; ``shape`` is the local piece's."""
        from ..._tensor import Size

        return Size(self._spec[2])

    def to_local(self, *, grad_placements=None):
        """This rank's piece as a plain tensor (shares memory; differentiable).

        Example::

            >>> dt.to_local().shape
        """
        return Tensor.view_as(self, self)

    def detach(self):
        """A DTensor of the same layout sharing this one's memory, outside autograd (what
        ``state_dict()`` holds for a sharded parameter)."""
        return _wrap(Tensor.detach(self), *self._spec)

    @property
    def data(self):
        """Like :meth:`detach`, without version tracking (as ``Tensor.data``)."""
        return _wrap(Tensor._make(self._data, self._device), *self._spec)

    @data.setter
    def data(self, value):
        Tensor.data.__set__(self, value)

    def get_local_tensor(self):
        """This rank's piece (outside autograd)."""
        return Tensor._make(self._data, self._device)

    def redistribute(self, device_mesh=None, placements=None, *, async_op=False,
                     forward_dtype=None, backward_dtype=None):
        """The same tensor under new ``placements`` (collectives as needed; differentiable).

        Example::

            >>> dt.redistribute(placements=[Replicate()]).to_local()   # the full tensor
        """
        mesh = self.device_mesh if device_mesh is None else device_mesh
        if mesh != self.device_mesh:
            raise NotImplementedError("DTensor.redistribute to a different device mesh is not "
                                      "supported in ember; redistribute on the same mesh")
        dst = self.placements if placements is None else _normalize(placements, mesh, self.dim())
        local = _Redistribute.apply(self.to_local(), mesh, self.placements, dst, self._spec[2])
        return DTensor.from_local(local, mesh, dst, run_check=False,
                                  shape=self._spec[2]) if local.requires_grad else _wrap(
            local, mesh, dst, self._spec[2])

    def full_tensor(self, *, grad_placements=None):
        """The whole tensor on every rank (a plain tensor; differentiable).

        Example::

            >>> dt.full_tensor().shape == dt.global_shape()
            True
        """
        mesh = self.device_mesh
        replicate = (Replicate(),) * mesh.ndim
        return _Redistribute.apply(self.to_local(), mesh, self.placements, replicate,
                                   self._spec[2])

    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check=False,
                   shape=None, stride=None, grad_placements=None):
        """A DTensor whose piece on this rank is ``local_tensor`` (the global shape is inferred
        assuming equal shards unless ``shape`` is given). A ``local_tensor`` that requires grad
        gives a DTensor that is its differentiable alias.

        Example::

            >>> dt = DTensor.from_local(ember.ones(2, 3), mesh, [Shard(0)])   # global (4, 3)
        """
        mesh = device_mesh if device_mesh is not None else _default_mesh()
        placements = (Replicate(),) * mesh.ndim if placements is None else _normalize(
            placements, mesh, local_tensor.dim())
        if shape is None:
            global_shape = list(local_tensor.shape)
            for mesh_dim, p in enumerate(placements):
                if isinstance(p, Shard):
                    global_shape[p.dim] *= mesh.size(mesh_dim)
            shape = tuple(global_shape)
        if local_tensor.requires_grad and local_tensor.grad_fn is not None:
            return _alias(local_tensor, mesh, placements, tuple(shape))
        return _wrap(local_tensor, mesh, placements, shape,
                     requires_grad=local_tensor.requires_grad)

    def __repr__(self):
        local = Tensor._make(self._data, self._device)
        return (f"DTensor(local_tensor={local!r}, device_mesh={self.device_mesh!r}, "
                f"placements={self.placements!r})")

    def __reduce_ex__(self, protocol):
        raise NotImplementedError("pickling a DTensor is not supported in ember; save "
                                  "dt.full_tensor() or use ember.distributed.checkpoint")


def _alias(local, mesh, placements, shape):
    """A DTensor view of a non-leaf ``local`` whose gradient flows back to ``local``."""
    dt = Tensor.view_as(local, local)
    dt.__class__ = DTensor
    dt._spec = (mesh, placements, shape)
    return dt


def _default_mesh():
    dist = _dist()
    return init_device_mesh("cpu", (dist.get_world_size(),))


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0):
    """Split (or copy) ``tensor`` over ``device_mesh`` under ``placements`` (default:
    replicated); with ``src_data_rank=0`` every rank takes mesh rank 0's values.

    Example::

        >>> dt = distribute_tensor(ember.randn(4, 3), mesh, [Shard(0)])
        >>> dt.to_local().shape          # torch.Size([2, 3]) on 2 ranks
    """
    mesh = device_mesh if device_mesh is not None else _default_mesh()
    placements = (Replicate(),) * mesh.ndim if placements is None else _normalize(
        placements, mesh, tensor.dim())
    for p in placements:
        if isinstance(p, Partial):
            raise RuntimeError(f"Trying to call distribute_tensor with {p} placement, which "
                               "is not supported")
    array = np.ascontiguousarray(tensor.detach()._data).copy()
    if src_data_rank is not None:
        for mesh_dim in range(mesh.ndim):
            _dist().broadcast(Tensor._make(array, tensor._device),
                              group=mesh.get_group(mesh_dim), group_src=src_data_rank)
    local = Tensor._make(_from_replicate(array, mesh, placements), tensor._device)
    return _wrap(local, mesh, placements, tuple(tensor.shape),
                 requires_grad=tensor.requires_grad)


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None,
                      output_fn=None):
    """Distribute ``module``'s parameters: ``partition_fn(name, submodule, mesh)`` for each
    submodule (default: every parameter replicated), plus optional input/output hooks
    ``input_fn(module, inputs, mesh)`` and ``output_fn(module, outputs, mesh)``.

    Example::

        >>> distribute_module(model, mesh)        # all parameters Replicate() DTensors
    """
    mesh = device_mesh if device_mesh is not None else _default_mesh()

    def replicate_all(name, submodule, mesh):
        for key, param in list(submodule._parameters.items()):
            if param is not None and not isinstance(param, DTensor):
                submodule._parameters[key] = as_parameter(
                    distribute_tensor(param, mesh, [Replicate()] * mesh.ndim), param)

    for name, submodule in module.named_modules():
        (partition_fn or replicate_all)(name, submodule, mesh)
        if partition_fn is not None:
            replicate_all(name, submodule, mesh)
    if input_fn is not None:
        module.register_forward_pre_hook(lambda mod, inputs: input_fn(mod, inputs, mesh))
    if output_fn is not None:
        module.register_forward_hook(lambda mod, inputs, outputs: output_fn(mod, outputs, mesh))
    return module


class _DTensorParameter(DTensor):
    """A DTensor registered as a module parameter (``isinstance(p, nn.Parameter)`` holds)."""


def as_parameter(dtensor, like=None, requires_grad=None):
    """``dtensor`` as a parameter: a DTensor that is also an ``nn.Parameter``.

    Example::

        >>> p = as_parameter(distribute_tensor(w, mesh, [Shard(0)]))
    """
    from ...nn.parameter import Parameter, _share

    cls = _parameter_class(Parameter)
    p = _share(cls, dtensor.detach())
    p._spec = dtensor._spec
    if requires_grad is None:
        requires_grad = dtensor.requires_grad if like is None else like.requires_grad
    if requires_grad:
        p.requires_grad_(True)
    return p


_PARAMETER_CLASS = []


def _parameter_class(parameter):
    if not _PARAMETER_CLASS:
        _PARAMETER_CLASS.append(type("DTensorParameter", (_DTensorParameter, parameter), {
            "__module__": __name__,
            "__repr__": DTensor.__repr__, "__reduce_ex__": DTensor.__reduce_ex__}))
    return _PARAMETER_CLASS[0]




def global_norms(tensors, norms, norm_type):
    """``norms`` (each tensor's local ``norm_type``-norm) with those of sharded DTensors made
    whole: the pieces' norms are combined over the mesh dims along which they are sharded, so
    ``clip_grad_norm_`` on sharded gradients clips by the norm of the whole gradients.

    Example::

        >>> global_norms([dt], [ember.linalg.vector_norm(dt)], 2.0)   # the full tensor's norm
    """
    out = []
    for t, norm in zip(tensors, norms):
        spec = getattr(t, "_spec", None)
        if spec is not None:
            mesh, placements, _ = spec
            for mesh_dim, p in enumerate(placements):
                if isinstance(p, Shard):
                    norm = _combine_norm(norm, norm_type, mesh.get_group(mesh_dim))
        out.append(norm)
    return out


def _combine_norm(norm, norm_type, group):
    dist = _dist()
    array = np.array(norm.detach()._data, dtype=np.float64).reshape(1)
    if norm_type == float("inf"):
        combined = all_reduce_array(array, group, dist.ReduceOp.MAX)[0]
    elif norm_type == float("-inf"):
        combined = all_reduce_array(array, group, dist.ReduceOp.MIN)[0]
    elif norm_type == 0:
        combined = all_reduce_array(array, group, dist.ReduceOp.SUM)[0]
    else:
        combined = all_reduce_array(array ** norm_type, group, dist.ReduceOp.SUM)[0] ** (
            1.0 / norm_type)
    return Tensor._make(np.asarray(combined, dtype=norm._data.dtype), norm._device)


def state_in_param_layout(param, state):
    """``state`` (an optimiser's per-parameter dict) with each tensor shaped as ``param``'s
    local piece given ``param``'s DTensor layout (scalars such as ``step`` stay plain).

    Example::

        >>> state_in_param_layout(p, {"step": t0, "exp_avg": m})["exp_avg"].placements
        (Shard(dim=0),)
    """
    out = {}
    for key, value in state.items():
        if (isinstance(value, Tensor) and not isinstance(value, DTensor) and value.dim() > 0
                and value.shape == param.shape):
            value = _wrap(value, *param._spec)
        out[key] = value
    return out
