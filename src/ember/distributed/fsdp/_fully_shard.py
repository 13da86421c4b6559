"""FSDP2's ``fully_shard``: parameters sharded along dim 0 over a 1-D mesh, gathered for use.

``fully_shard(module)`` replaces each parameter it manages (those of ``module`` and of its
submodules that are not themselves ``fully_shard``-ed) by this rank's dim-0 shard, a
``DTensor`` parameter with placement ``Shard(0)``; the optimiser sees and updates only shards.
A forward pre-hook *unshards*: it all-gathers every shard into a fresh full leaf parameter
(cast to ``mp_policy.param_dtype``) and puts that leaf in the module. When backward has
accumulated the leaf's gradient, a hook reduce-scatters it (in ``reduce_dtype``, averaged over
the ranks) into the shard's ``.grad``. After forward the shards go back in the module when
``reshard_after_forward`` is true; otherwise after backward.

ember's autograd graph keeps the gathered leaves alive until backward ends, so resharding after
forward changes what ``module.parameters()`` shows, not the peak memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._tensor import Tensor
from ...nn.parameter import Parameter
from ..tensor._api import DTensor, _wrap, as_parameter
from ..tensor._collectives import gather_array, reduce_scatter_array, shard_array
from ..tensor.placement_types import Shard

__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "CPUOffloadPolicy", "UnshardHandle", "register_fsdp_forward_method"]


def _dist():
    from ... import distributed

    return distributed


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """Dtypes for FSDP2: ``param_dtype`` for the gathered parameters (forward/backward
    compute), ``reduce_dtype`` for the gradient reduce-scatter (default: ``param_dtype``),
    ``output_dtype`` for the module's floating outputs; ``cast_forward_inputs`` casts floating
    inputs to ``param_dtype``.

    Example::

        >>> MixedPrecisionPolicy(param_dtype=ember.bfloat16, reduce_dtype=ember.float32)
    """

    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """No offloading (the default of ``fully_shard``).

    Example::

        >>> fully_shard(model, offload_policy=OffloadPolicy())
    """


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Keep shards on the CPU (ember's CPU ranks already do).

    Example::

        >>> fully_shard(model, offload_policy=CPUOffloadPolicy())
    """

    pin_memory: bool = True


_NO_OFFLOAD = OffloadPolicy()


class UnshardHandle:
    """What ``unshard(async_op=True)`` returns; ``wait()`` is immediate (gathers are eager).

    Example::

        >>> model.unshard(async_op=True).wait()
    """

    def wait(self):
        return None


# ---------------------------------------------------------------- one managed parameter


class _FSDPParam:
    """A sharded parameter, where it lives in the module tree, and its gathered form."""

    def __init__(self, param, slots, mesh, dim):
        self.slots = slots  # [(module, name)]: a tied parameter lives in several
        self.mesh = mesh
        self.group = mesh.get_group(0)
        self.dim = dim
        self.global_shape = tuple(param.shape)
        self.requires_grad = param.requires_grad
        if param._device.type == "meta":
            from ...ops.creation import empty

            shape = list(self.global_shape)
            shape[dim] = _shard_length(shape[dim], mesh)
            sharded = empty(*shape, dtype=param.dtype, device="meta")
        else:
            local = shard_array(param.detach()._data, dim, mesh.size(), mesh.get_local_rank())
            sharded = Tensor._make(local, param._device)
        self.sharded = as_parameter(_wrap(sharded, mesh, (Shard(dim),), self.global_shape), param)
        self.unsharded = None
        self.pending_grad = None  # unsharded gradient kept while gradient sync is off
        self.place(self.sharded)

    def place(self, tensor):
        for module, name in self.slots:
            module._parameters[name] = tensor

    def refresh_spec(self):
        """The shard may have been replaced (``to_empty``, ``load_state_dict``): re-read it."""
        module, name = self.slots[0]
        current = module._parameters[name]
        if current is not self.sharded and current is not self.unsharded:
            if not isinstance(current, DTensor):
                current = as_parameter(_wrap(current.detach(), self.mesh, (Shard(self.dim),),
                                             self.global_shape), current)
            self.sharded = current
            self.place(current)

    def gather(self, dtype):
        """A fresh full leaf parameter gathered from every rank's shard."""
        local = self.sharded.detach()
        if dtype is not None and local.dtype is not dtype:
            local = local.to(dtype)
        full = gather_array(local._data, self.dim, self.global_shape[self.dim], self.group)
        leaf = Parameter(Tensor._make(full, local._device), requires_grad=self.requires_grad)
        self.unsharded = leaf
        return leaf


def _shard_length(size, mesh):
    from ..tensor._collectives import chunk_bounds

    start, end = chunk_bounds(size, mesh.size(), mesh.get_local_rank())
    return end - start


# ---------------------------------------------------------------- the state of one module


class _FSDPState:
    def __init__(self, module, params, mesh, reshard_after_forward, mp_policy):
        self.module = module
        self.params = params
        self.mesh = mesh
        self.reshard_after_forward = reshard_after_forward
        self.mp_policy = mp_policy
        self.gradient_sync = True
        self.is_unsharded = False
        self.waiting = 0  # gathered leaves whose gradient has not arrived yet

    def unshard(self):
        for p in self.params:
            p.refresh_spec()
        leaves = [p.gather(self.mp_policy.param_dtype) for p in self.params]
        self.waiting = 0
        for p, leaf in zip(self.params, leaves):
            p.place(leaf)
            if leaf.requires_grad:
                self.waiting += 1
                leaf.register_post_accumulate_grad_hook(self._grad_hook(p))
        self.is_unsharded = True

    def write_back(self):
        """Copy the gathered parameters' values (changed in place) back into the shards."""
        for p in self.params:
            if p.unsharded is not None:
                local = shard_array(p.unsharded.detach()._data, p.dim, p.mesh.size(),
                                    p.mesh.get_local_rank())
                p.sharded._data[...] = local.astype(p.sharded._data.dtype, copy=False)
                p.sharded._bump_version()

    def reshard(self):
        for p in self.params:
            p.place(p.sharded)
        self.is_unsharded = False

    def _grad_hook(self, fsdp_param):
        def hook(leaf):
            self.reduce_grad(fsdp_param, leaf)
            self.waiting -= 1
            if self.waiting == 0 and self.is_unsharded:
                self.reshard()
        return hook

    def reduce_grad(self, p, leaf):
        """Add the leaf's gradient to the shard's: averaged over the ranks and reduce-scattered
        when gradient sync is on, else kept whole for a later synchronised backward."""
        grad = leaf.grad.detach()
        leaf.grad = None
        if p.unsharded is leaf:
            p.unsharded = None
        if p.pending_grad is not None:
            grad = grad.to(p.pending_grad.dtype) + p.pending_grad
            p.pending_grad = None
        if not self.gradient_sync:
            p.pending_grad = grad
            return
        reduce_dtype = self.mp_policy.reduce_dtype or self.mp_policy.param_dtype
        if reduce_dtype is not None and grad.dtype is not reduce_dtype:
            grad = grad.to(reduce_dtype)
        local = reduce_scatter_array(grad._data, p.dim, p.group, _dist().ReduceOp.AVG)
        shard_grad = Tensor._make(local, grad._device).to(p.sharded.dtype)
        if p.sharded.grad is not None:
            shard_grad = p.sharded.grad.detach() + shard_grad
        p.sharded.grad = _wrap(shard_grad, p.mesh, (Shard(p.dim),), p.global_shape)

    # hooks on the module

    def pre_forward(self, module, args, kwargs):
        self.unshard()
        dtype = self.mp_policy.param_dtype
        if dtype is not None and self.mp_policy.cast_forward_inputs:
            args, kwargs = _cast_floats((args, kwargs), dtype)
        return args, kwargs

    def post_forward(self, module, args, output):
        if self.mp_policy.output_dtype is not None:
            output = _cast_floats(output, self.mp_policy.output_dtype)
        if self.reshard_after_forward:
            self.reshard()
            self._before_backward(output)
        return output

    def _before_backward(self, output):
        """Once the gradient reaches the module's outputs, put this forward's gathered
        parameters back in the module for its backward (a recomputation there, as activation
        checkpointing does, needs them; torch unshards at the same point)."""
        leaves = [p.unsharded for p in self.params]
        pending = [True]

        def hook(grad):
            if pending[0] and all(leaf is not None for leaf in leaves):
                pending[0] = False
                for p, leaf in zip(self.params, leaves):
                    p.place(leaf)
                self.is_unsharded = True
            return grad

        for t in _tensors_in(output):
            if t.requires_grad:
                t.register_hook(hook)


def _tensors_in(obj):
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors_in(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors_in(o)]
    return []


def _cast_floats(obj, dtype):
    if isinstance(obj, Tensor):
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, tuple):
        return tuple(_cast_floats(o, dtype) for o in obj)
    if isinstance(obj, list):
        return [_cast_floats(o, dtype) for o in obj]
    if isinstance(obj, dict):
        return {k: _cast_floats(v, dtype) for k, v in obj.items()}
    return obj


# ---------------------------------------------------------------- the mixin and the entry point


class FSDPModule:
    """Mixin that ``fully_shard`` adds to a module's class (``FSDPLinear`` for ``Linear``).

    Example::

        >>> fully_shard(model)
        >>> isinstance(model, FSDPModule)
        True
        >>> model.unshard(); model.reshard()
    """

    def unshard(self, async_op=False):
        """Gather the full parameters into the module (until ``reshard()``)."""
        self._fsdp_state.unshard()
        return UnshardHandle() if async_op else None

    def reshard(self):
        """Put the shards back in the module."""
        self._fsdp_state.reshard()

    def set_requires_gradient_sync(self, requires_gradient_sync, *, recurse=True):
        """With False, backward keeps unsharded gradients locally (no communication); the next
        backward with True reduce-scatters their sum."""
        for state in self._fsdp_states(recurse):
            state.gradient_sync = requires_gradient_sync

    def set_reshard_after_forward(self, reshard_after_forward, recurse=True):
        """Whether the shards go back in the module right after forward."""
        for state in self._fsdp_states(recurse):
            state.reshard_after_forward = reshard_after_forward

    def set_requires_all_reduce(self, requires_all_reduce, *, recurse=True):
        """HSDP's replica all-reduce switch (no effect on a 1-D mesh)."""

    def set_is_last_backward(self, is_last_backward):
        """Hint for the last backward of a step (no effect in ember)."""

    def set_modules_to_forward_prefetch(self, modules):
        """Prefetching order hint (gathers are eager in ember: no effect)."""

    def set_modules_to_backward_prefetch(self, modules):
        """Prefetching order hint (gathers are eager in ember: no effect)."""

    def set_reduce_scatter_divide_factor(self, factor):
        raise NotImplementedError("FSDPModule.set_reduce_scatter_divide_factor is not "
                                  "supported in ember; scale the loss instead")

    def _fsdp_states(self, recurse):
        modules = self.modules() if recurse else [self]
        return [m._fsdp_state for m in modules if isinstance(m, FSDPModule)]


_CLASSES = {}


def _fsdp_class(cls):
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    return _CLASSES[cls]


def _managed_slots(module, ignored):
    """``{id(param): (param, [(submodule, name)])}`` for the parameters ``module`` manages:
    not inside an already ``fully_shard``-ed submodule, not ignored, not already a DTensor."""
    found = {}

    def visit(mod):
        for name, param in mod._parameters.items():
            if param is None or id(param) in ignored or isinstance(param, DTensor):
                continue
            found.setdefault(id(param), (param, []))[1].append((mod, name))
        for child in mod._modules.values():
            if child is not None and "_fsdp_state" not in child.__dict__:
                visit(child)

    visit(module)
    return found


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=MixedPrecisionPolicy(), offload_policy=_NO_OFFLOAD,
                ignored_params=None):
    """Shard ``module``'s parameters along dim 0 over ``mesh`` (default: all ranks) and
    gather them around its forward and backward; returns ``module`` (now an ``FSDPModule``).

    Apply it to submodules (layers) first, then to the root. Gradients reaching the shards
    are averaged over the ranks, so N ranks training on their shares of a batch take the step
    one process takes on the whole batch.

    Example::

        >>> for layer in model.layers:
        ...     fully_shard(layer)
        >>> fully_shard(model)
        >>> model(x).sum().backward()      # shards' .grad hold the averaged gradient
    """
    from ..device_mesh import init_device_mesh

    if isinstance(module, (list, tuple)):
        raise NotImplementedError("fully_shard over a list of modules is not supported in "
                                  "ember; call fully_shard on each module")
    if mesh is None:
        mesh = init_device_mesh("cpu", (_dist().get_world_size(),))
    if mesh.ndim != 1:
        raise NotImplementedError("fully_shard with a 2-D mesh (HSDP) is not supported in "
                                  "ember; use a 1-D mesh")
    shard_module(module, module, mesh,
                 True if reshard_after_forward is None else bool(reshard_after_forward),
                 mp_policy, ignored_params, shard_placement_fn)
    module.__class__ = _fsdp_class(type(module))
    return module


def shard_module(module, hook_module, mesh, reshard_after_forward, mp_policy,
                 ignored_params=None, shard_placement_fn=None):
    """Shard the parameters ``module`` manages and gather them around ``hook_module``'s
    forward (the module itself for FSDP2; the wrapper for FSDP1); returns the state.

    Example::

        >>> state = shard_module(net, net, mesh, True, MixedPrecisionPolicy())
    """
    ignored = {id(p) for p in (ignored_params or ())}
    params = []
    for param, slots in _managed_slots(module, ignored).values():
        placement = shard_placement_fn(param) if shard_placement_fn is not None else None
        dim = 0 if placement is None else placement.dim % max(param.dim(), 1)
        params.append(_FSDPParam(param, slots, mesh, dim))
    state = _FSDPState(module, params, mesh, reshard_after_forward, mp_policy)
    hook_module._fsdp_state = state
    hook_module.register_forward_pre_hook(state.pre_forward, with_kwargs=True)
    hook_module.register_forward_hook(state.post_forward)
    return state


def register_fsdp_forward_method(module, method_name):
    """Make ``module.<method_name>`` unshard and reshard around its call, like ``forward``.

    Example::

        >>> register_fsdp_forward_method(model, "generate")
    """
    if not isinstance(module, FSDPModule):
        return
    state = module._fsdp_state
    method = getattr(module, method_name)

    def wrapped(*args, **kwargs):
        args, kwargs = state.pre_forward(module, args, kwargs)
        return state.post_forward(module, args, method(*args, **kwargs))

    setattr(module, method_name, wrapped)
