"""State dicts of (sharded) models and optimisers under plain names, as torch's ``state_dict``
helpers of ``torch.distributed.checkpoint.state_dict``.

Keys are the parameters' names without wrapper prefixes (DDP's ``module.``, FSDP1's
``_fsdp_wrapped_module.``, ``_checkpoint_wrapped_module.``); optimiser states are keyed by
those names too. With ``full_state_dict=True`` sharded tensors come back whole (gathered on
every rank; with ``cpu_offload=True`` only rank 0 keeps them); otherwise they stay DTensors,
the optimiser's states taking their parameter's layout. The ``set_*`` functions accept either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

# the value types of state dicts, for annotations (torch's aliases; DTensor is a Tensor here)
FQNS_T = set[str]
PrimitiveType = Tensor | int | float | str
ValueType = PrimitiveType | list[PrimitiveType] | tuple[PrimitiveType] | dict[str, "ValueType"]
DictValueType = dict[str, ValueType]
ListDictValueType = list[DictValueType]
OptimizerStateType = dict[str, DictValueType | ListDictValueType]

__all__ = ["FQNS_T", "PrimitiveType", "ValueType", "DictValueType", "ListDictValueType",
           "OptimizerStateType", "StateDictOptions", "get_model_state_dict",
           "get_optimizer_state_dict", "get_state_dict", "set_model_state_dict",
           "set_optimizer_state_dict", "set_state_dict"]

_WRAPPER_PREFIXES = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.")


def _dist():
    from ... import distributed

    return distributed


@dataclass
class StateDictOptions:
    """How the state dict helpers gather and load (see the module docstring).

    Example::

        >>> get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    """

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


# ---------------------------------------------------------------- names


def _clean(model, key):
    from ...nn.parallel import DistributedDataParallel

    if isinstance(model, DistributedDataParallel) and key.startswith("module."):
        key = key[len("module."):]
    for prefix in _WRAPPER_PREFIXES:
        key = key.replace(prefix, "")
    return key


def _param_names(model):
    """``{id(param): clean name}`` (the first name of a tied parameter)."""
    names = {}
    for name, param in model.named_parameters():
        names.setdefault(id(param), _clean(model, name))
    return names


def _module_state_dict(model):
    """``model.state_dict()`` as ``nn.Module`` makes it (FSDP1 overrides it with these
    helpers)."""
    from ...nn.modules.module import Module

    return Module.state_dict(model)


def _module_load(model, state_dict, strict, assign):
    from ...nn.modules.module import Module

    return Module.load_state_dict(model, state_dict, strict=strict, assign=assign)


def _optimizers(optimizers):
    from ...optim.optimizer import Optimizer

    return [optimizers] if isinstance(optimizers, Optimizer) else list(optimizers)


def _rank():
    return _dist().get_rank() if _dist().is_initialized() else 0


# ---------------------------------------------------------------- layouts


def _full(value):
    from ..tensor._api import DTensor

    return value.full_tensor() if isinstance(value, DTensor) else value


def _to_local_layout(value, like):
    """``value`` (whole, or a DTensor) as a plain tensor shaped as ``like``'s local piece."""
    from ..tensor._api import DTensor, _from_replicate

    if not isinstance(like, DTensor) or not isinstance(value, Tensor):
        return value
    if isinstance(value, DTensor):
        return Tensor._make(value._data, value._device)
    mesh, placements, global_shape = like._spec
    if tuple(value.shape) != tuple(global_shape):  # a scalar state such as Adam's step
        return value
    local = _from_replicate(np.ascontiguousarray(value.detach()._data), mesh, placements)
    return Tensor._make(local, value._device)


def _finish(state, options):
    if options.full_state_dict and options.cpu_offload and _rank() != 0:
        return {}
    return state


# ---------------------------------------------------------------- get


def get_model_state_dict(model, *, submodules=None, options=None):
    """``model``'s state dict under clean names (sharded as DTensors, or whole).

    Example::

        >>> sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    """
    options = options or StateDictOptions()
    frozen = {_clean(model, k) for k, p in model.named_parameters() if not p.requires_grad}
    state = {}
    for key, value in _module_state_dict(model).items():
        key = _clean(model, key)
        if options.ignore_frozen_params and key in frozen:
            continue
        state[key] = _full(value) if options.full_state_dict else value
    return _finish(state, options)


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None):
    """The optimisers' state keyed by parameter names: ``{"state": {name: {...}},
    "param_groups": [{..., "params": [names]}]}``.

    Example::

        >>> osd = get_optimizer_state_dict(model, opt)
    """
    options = options or StateDictOptions()
    names = _param_names(model)
    state, groups = {}, []
    for opt in _optimizers(optimizers):
        params = [p for group in opt.param_groups for p in group["params"]]
        saved = opt.state_dict()
        for index, entry in saved["state"].items():
            param = params[index]
            values = dict(entry)  # a sharded parameter's states are DTensors already
            if options.full_state_dict:
                values = {k: _full(v) for k, v in values.items()}
            state[names[id(param)]] = values
        for group in saved["param_groups"]:
            groups.append({**group, "params": [names[id(params[i])] for i in group["params"]]})
    return _finish({"state": state, "param_groups": groups}, options)


def get_state_dict(model, optimizers, *, submodules=None, options=None):
    """``(get_model_state_dict(...), get_optimizer_state_dict(...))``.

    Example::

        >>> model_sd, optim_sd = get_state_dict(model, opt)
    """
    return (get_model_state_dict(model, options=options),
            get_optimizer_state_dict(model, optimizers, options=options))


# ---------------------------------------------------------------- set


def _from_rank0(state, options):
    if options.broadcast_from_rank0 and _dist().is_initialized():
        box = [state if _rank() == 0 else None]
        _dist().broadcast_object_list(box, src=0)
        return box[0]
    return state


def set_model_state_dict(model, model_state_dict, *, options=None):
    """Load ``model_state_dict`` (clean names; whole tensors or DTensors) into ``model``,
    sharding whole tensors for sharded parameters; returns the missing/unexpected keys.

    Example::

        >>> set_model_state_dict(model, full_sd, options=StateDictOptions(full_state_dict=True))
    """
    options = options or StateDictOptions()
    model_state_dict = _from_rank0(model_state_dict, options)
    current = _module_state_dict(model)
    given, meta = {}, False
    for key, like in current.items():
        clean = _clean(model, key)
        if clean in model_state_dict:
            value = _to_local_layout(model_state_dict[clean], like)
            meta = meta or like.device.type == "meta"
            given[key] = _rewrap(value, like) if meta else value
    unexpected = set(model_state_dict) - {_clean(model, k) for k in current}
    for key in unexpected:
        given[key] = model_state_dict[key]
    with no_grad():
        return _module_load(model, given, strict=options.strict, assign=meta)


def _rewrap(value, like):
    """For ``assign=True`` over a meta parameter: a parameter of ``like``'s layout."""
    from ..tensor._api import DTensor, _wrap, as_parameter

    if isinstance(like, DTensor):
        return as_parameter(_wrap(value, *like._spec), like)
    return value


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *, options=None):
    """Load a state from :func:`get_optimizer_state_dict` (whole tensors or DTensors) into
    the optimisers.

    Example::

        >>> set_optimizer_state_dict(model, opt, osd)
    """
    options = options or StateDictOptions()
    optim_state_dict = _from_rank0(optim_state_dict, options)
    for opt in _optimizers(optimizers):
        opt.load_state_dict(_optimizer_state_to_load(model, opt, optim_state_dict))


def _optimizer_state_to_load(model, opt, optim_state_dict):
    """A name-keyed optimiser state dict in ``opt``'s own form: parameter ids for names and
    each sharded parameter's local piece for whole tensors."""
    names = _param_names(model)
    params = [p for group in opt.param_groups for p in group["params"]]
    index_of = {names[id(p)]: i for i, p in enumerate(params)}
    state = {}
    for name, values in optim_state_dict["state"].items():
        if name in index_of:
            param = params[index_of[name]]
            state[index_of[name]] = {k: _to_local_layout(v, param) for k, v in values.items()}
    groups = []
    for group in opt.param_groups:
        mine = {names[id(p)] for p in group["params"]}
        match = next((g for g in optim_state_dict["param_groups"] if set(g["params"]) == mine),
                     None)
        if match is None:
            raise ValueError("the optimizer state dict's param_groups do not match the "
                             "optimizer's parameters")
        groups.append({**match, "params": [index_of[names[id(p)]] for p in group["params"]]})
    return {"state": state, "param_groups": groups}


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict, options=None):
    """:func:`set_model_state_dict` then :func:`set_optimizer_state_dict`.

    Example::

        >>> set_state_dict(model, opt, model_state_dict=msd, optim_state_dict=osd)
    """
    result = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return result


def _init_optim_state(optim):
    """Create the optimiser's state with one zero-gradient, zero-learning-rate step (what
    torch's helper of this name does), unless it already has state or gradients."""
    from ...ops.creation import zeros_like

    if optim.state:
        return
    params = [p for group in optim.param_groups for p in group["params"]]
    if any(p.grad is not None for p in params):
        return
    for p in params:
        if p.requires_grad:
            p.grad = zeros_like(p)
    lrs = []
    for group in optim.param_groups:
        if "lr" in group:
            lrs.append(group["lr"])
            group["lr"] = 0.0
    optim.step()
    for group in optim.param_groups:
        if "lr" in group:
            group["lr"] = lrs.pop(0)
    optim.zero_grad(set_to_none=True)
