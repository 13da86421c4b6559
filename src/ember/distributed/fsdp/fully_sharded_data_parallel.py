"""FSDP1's ``FullyShardedDataParallel``: a wrapper module whose parameters are sharded.

``FSDP(module, auto_wrap_policy=...)`` first wraps the submodules the policy selects (bottom
up, each its own unit), then shards the parameters left to ``module`` with the same machinery
as FSDP2's ``fully_shard`` (``_fully_shard.py``): shards of dim 0 as DTensor parameters,
gathered around the wrapper's forward, gradients reduce-scattered and averaged. The numerics
are torch's; the parameters differ in form: torch's FSDP1 shows flattened ``FlatParameter``
shards (``_flat_param``), ember shows each original parameter's dim-0 shard under its own name
(as torch's ``use_orig_params=True`` does, but not flattened).

``state_dict()`` follows the module's state dict type (``FULL_STATE_DICT`` by default: whole
tensors under clean names; ``SHARDED_STATE_DICT``: DTensor shards), set with
``FSDP.state_dict_type(model, ...)``.
"""

from __future__ import annotations

import contextlib

from ...autograd.grad_mode import no_grad
from ...nn.modules.module import Module
from ._fully_shard import MixedPrecisionPolicy, shard_module
from .api import (
    FullOptimStateDictConfig,
    FullStateDictConfig,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictSettings,
    StateDictType,
)

__all__ = ["FullyShardedDataParallel"]

_WRAPPED = "_fsdp_wrapped_module"


def _dist():
    from ... import distributed

    return distributed


def _auto_wrap(module, policy, wrap_child):
    """Wrap, bottom up, the descendants of ``module`` that ``policy`` selects (``module``
    itself is the caller's). Returns the number of parameters now inside wrapped units."""
    wrapped = 0
    for name, child in list(module._modules.items()):
        if child is None or isinstance(child, FullyShardedDataParallel):
            continue
        if policy(module=child, recurse=True, nonwrapped_numel=child_numel(child)):
            inner = _auto_wrap(child, policy, wrap_child)
            remainder = child_numel(child) - inner
            if policy(module=child, recurse=False, nonwrapped_numel=remainder):
                module._modules[name] = wrap_child(child)
                wrapped += child_numel(child)
            else:
                wrapped += inner
    return wrapped


def child_numel(module):
    """The parameters of ``module`` that no wrapped unit inside it holds yet."""
    total = 0
    for m in module.modules():
        if isinstance(m, FullyShardedDataParallel):
            continue
        total += sum(p.numel() for p in m._parameters.values() if p is not None)
    return total


def _materialize(module, param_init_fn):
    """Parameters built on ``meta`` made real on the CPU (torch's rule: ``param_init_fn``, or
    ``to_empty`` then each submodule's ``reset_parameters``)."""
    if not any(p.device.type == "meta" for p in module.parameters()):
        return
    if param_init_fn is not None:
        param_init_fn(module)
        return
    module.to_empty(device="cpu")
    with no_grad():
        for m in module.modules():
            if callable(getattr(m, "reset_parameters", None)):
                m.reset_parameters()


class FullyShardedDataParallel(Module):
    """FSDP1: ``module`` with its parameters sharded over the ranks of ``process_group``
    (see the module docstring).

    Example::

        >>> model = FSDP(net, auto_wrap_policy=ModuleWrapPolicy({Block}))
        >>> loss_fn(model(x_local), y_local).backward()   # shards' grads hold the average
        >>> with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        ...     full = model.state_dict()
    """

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=None, mixed_precision=None,
                 ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states=False, forward_prefetch=False, limit_all_gathers=True,
                 use_orig_params=False, ignored_states=None, device_mesh=None):
        super().__init__()
        if not _dist().is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure "
                             "to call init_process_group.")
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        if strategy not in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP):
            raise NotImplementedError(f"FullyShardedDataParallel with {strategy} is not "
                                      "supported in ember; use FULL_SHARD or SHARD_GRAD_OP, or "
                                      "DistributedDataParallel for NO_SHARD")
        mesh = device_mesh if device_mesh is not None else _mesh_of(process_group)
        options = dict(process_group=process_group, sharding_strategy=strategy,
                       mixed_precision=mixed_precision, ignored_modules=ignored_modules,
                       param_init_fn=param_init_fn, sync_module_states=sync_module_states,
                       use_orig_params=use_orig_params, ignored_states=ignored_states,
                       device_mesh=mesh)
        if auto_wrap_policy is not None:
            _auto_wrap(module, auto_wrap_policy,
                       lambda child: FullyShardedDataParallel(child, **options))
        _materialize(module, param_init_fn)
        ignored = list(ignored_states or ())
        for m in ignored_modules or ():
            ignored.extend(m.parameters())
        if sync_module_states:
            self._broadcast_from_rank0(module, mesh)
        if mixed_precision is not None and mixed_precision.buffer_dtype is not None:
            for m in module.modules():
                for key, buf in m._buffers.items():
                    if buf is not None and buf.is_floating_point():
                        m._buffers[key] = buf.to(mixed_precision.buffer_dtype)
        self._fsdp_wrapped_module = module
        self.sharding_strategy = strategy
        self.mixed_precision = mixed_precision
        self.use_orig_params = use_orig_params
        self._state_dict_settings = StateDictSettings(StateDictType.FULL_STATE_DICT,
                                                      FullStateDictConfig(),
                                                      FullOptimStateDictConfig())
        mp = MixedPrecisionPolicy() if mixed_precision is None else MixedPrecisionPolicy(
            param_dtype=mixed_precision.param_dtype, reduce_dtype=mixed_precision.reduce_dtype,
            cast_forward_inputs=mixed_precision.cast_forward_inputs
            or mixed_precision.cast_root_forward_inputs)
        shard_module(module, self, mesh, strategy == ShardingStrategy.FULL_SHARD, mp, ignored)

    @staticmethod
    def _broadcast_from_rank0(module, mesh):
        group = mesh.get_group(0)
        with no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                _dist().broadcast(t.detach(), group=group, group_src=0)

    @property
    def module(self):
        """The wrapped module."""
        return self._fsdp_wrapped_module

    def __getattr__(self, name):
        """Attributes the wrapper lacks come from the wrapped module, as in torch."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            wrapped = self.__dict__.get("_modules", {}).get(_WRAPPED)
            if wrapped is None:
                raise
            return getattr(wrapped, name)

    def __getitem__(self, key):
        """Indexing goes to the wrapped module (an ``nn.Sequential``, say)."""
        return self._fsdp_wrapped_module[key]

    def forward(self, *args, **kwargs):
        return self._fsdp_wrapped_module(*args, **kwargs)

    # ------------------------------------------------------------ units

    @staticmethod
    def fsdp_modules(module, root_only=False):
        """The FSDP1 units in ``module``'s tree (the outermost only with ``root_only``).

        Example::

            >>> len(FSDP.fsdp_modules(model))
        """
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if root_only:
            units = [u for u in units if not any(u is not o and u in list(o.modules())
                                                 for o in units)]
        return units

    def check_is_root(self):
        """Whether no other FSDP1 unit contains this one (ember: always the caller's view)."""
        return True

    @contextlib.contextmanager
    def no_sync(self):
        """Inside the block, backward keeps gradients locally (no communication); the next
        backward outside reduce-scatters their sum.

        Example::

            >>> with model.no_sync():
            ...     loss_fn(model(x1), y1).backward()
            >>> loss_fn(model(x2), y2).backward()
        """
        states = [u._fsdp_state for u in self.fsdp_modules(self)]
        previous = [s.gradient_sync for s in states]
        for s in states:
            s.gradient_sync = False
        try:
            yield
        finally:
            for s, value in zip(states, previous):
                s.gradient_sync = value

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clip the gradients by the norm of the whole (unsharded) gradients; returns it.

        Example::

            >>> total = model.clip_grad_norm_(1.0)
        """
        from ...nn.utils.clip_grad import clip_grad_norm_

        return clip_grad_norm_(self.parameters(), max_norm, norm_type)

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse=True, writeback=True, rank0_only=False,
                           offload_to_cpu=False, with_grads=False):
        """Inside the block every unit's parameters are whole; with ``writeback`` changes
        made to them go back to the shards on exit.

        Example::

            >>> with FSDP.summon_full_params(model):
            ...     print(model.module.fc.weight.shape)     # the full shape
        """
        units = FullyShardedDataParallel.fsdp_modules(module)
        if not recurse:
            units = units[:1]
        states = [u._fsdp_state for u in units]
        with no_grad():
            for s in states:
                s.unshard()
        try:
            yield
        finally:
            with no_grad():
                for s in states:
                    if writeback:
                        s.write_back()
                    s.reshard()

    # ------------------------------------------------------------ state dicts

    @staticmethod
    def set_state_dict_type(module, state_dict_type, state_dict_config=None,
                            optim_state_dict_config=None):
        """Set the state dict type of every unit in ``module``; returns the previous settings.

        Example::

            >>> FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT)
        """
        if state_dict_type == StateDictType.LOCAL_STATE_DICT:
            raise NotImplementedError("StateDictType.LOCAL_STATE_DICT is not supported in "
                                      "ember; use SHARDED_STATE_DICT (DTensor shards)")
        full = state_dict_type == StateDictType.FULL_STATE_DICT
        config = state_dict_config or (FullStateDictConfig() if full
                                       else ShardedStateDictConfig())
        optim_config = optim_state_dict_config or (FullOptimStateDictConfig() if full
                                                   else ShardedOptimStateDictConfig())
        previous = None
        for unit in FullyShardedDataParallel.fsdp_modules(module):
            previous = previous or unit._state_dict_settings
            unit._state_dict_settings = StateDictSettings(state_dict_type, config, optim_config)
        return previous

    @staticmethod
    def get_state_dict_type(module):
        """The state dict settings of ``module``'s units.

        Example::

            >>> FSDP.get_state_dict_type(model).state_dict_type
            <StateDictType.FULL_STATE_DICT: 1>
        """
        return FullyShardedDataParallel.fsdp_modules(module)[0]._state_dict_settings

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None,
                        optim_state_dict_config=None):
        """Within the block, ``state_dict()`` and the optimiser helpers use this type.

        Example::

            >>> cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
            >>> with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
            ...     sd = model.state_dict()
        """
        units = FullyShardedDataParallel.fsdp_modules(module)
        saved = [u._state_dict_settings for u in units]
        FullyShardedDataParallel.set_state_dict_type(module, state_dict_type, state_dict_config,
                                                     optim_state_dict_config)
        try:
            yield
        finally:
            for u, s in zip(units, saved):
                u._state_dict_settings = s

    def _options(self, optim=False):
        from ..checkpoint.state_dict import StateDictOptions

        settings = self._state_dict_settings
        config = settings.optim_state_dict_config if optim else settings.state_dict_config
        full = settings.state_dict_type == StateDictType.FULL_STATE_DICT
        return StateDictOptions(full_state_dict=full,
                                cpu_offload=full and getattr(config, "rank0_only", False))

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Whole tensors (``FULL_STATE_DICT``) or DTensor shards under clean names."""
        if args or destination is not None or prefix or keep_vars:
            return super().state_dict(*args, destination=destination, prefix=prefix,
                                      keep_vars=keep_vars)
        from ..checkpoint.state_dict import get_model_state_dict

        return get_model_state_dict(self, options=self._options())

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Load whole tensors or DTensor shards under clean names into the shards."""
        from ..checkpoint.state_dict import StateDictOptions, set_model_state_dict

        return set_model_state_dict(self, state_dict, options=StateDictOptions(strict=strict))

    @staticmethod
    def optim_state_dict(model, optim, optim_state_dict=None, group=None):
        """``optim``'s state keyed by parameter names, whole or sharded per the state dict
        type of ``model``.

        Example::

            >>> osd = FSDP.optim_state_dict(model, opt)
        """
        from ..checkpoint.state_dict import get_optimizer_state_dict

        root = FullyShardedDataParallel.fsdp_modules(model)[0]
        return get_optimizer_state_dict(model, optim, options=root._options(optim=True))

    @staticmethod
    def full_optim_state_dict(model, optim, optim_input=None, rank0_only=True, group=None):
        """``optim``'s whole state keyed by parameter names (on rank 0 only by default).

        Example::

            >>> osd = FSDP.full_optim_state_dict(model, opt)
        """
        from ..checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        return get_optimizer_state_dict(model, optim, options=StateDictOptions(
            full_state_dict=True, cpu_offload=rank0_only))

    @staticmethod
    def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer=False,
                                 load_directly=False, group=None):
        """An optimiser state dict (from :meth:`optim_state_dict`) made ready for
        ``optim.load_state_dict``: ids for names, this rank's shards for whole tensors.

        Example::

            >>> opt.load_state_dict(FSDP.optim_state_dict_to_load(model, opt, osd))
        """
        from ..checkpoint.state_dict import _optimizer_state_to_load

        loadable = _optimizer_state_to_load(model, optim, optim_state_dict)
        if load_directly:
            optim.load_state_dict(loadable)
        return loadable


def _mesh_of(process_group):
    from ..device_mesh import DeviceMesh, init_device_mesh

    if process_group is None:
        return init_device_mesh("cpu", (_dist().get_world_size(),))
    ranks = _dist().get_process_group_ranks(process_group)
    return DeviceMesh("cpu", ranks, _groups=[process_group])
