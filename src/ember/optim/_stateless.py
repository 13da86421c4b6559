"""``swap_in_optimizer_params_and_state``: run an optimiser on other parameters and state."""

from __future__ import annotations

import contextlib

__all__ = ["swap_in_optimizer_params_and_state"]


def _fail(message):
    raise RuntimeError(f"swap_in_optimizer_params_and_state requires {message}")


def _checked_state(state):
    if not isinstance(state, dict):
        _fail("swapin_optim_state['state'] to be a dict mapping packed parameter ids to "
              f"per-param state dicts, got {type(state).__name__}.")
    if not all(isinstance(k, int) for k in state):
        _fail("optimizer.state_dict()-style state keyed by packed parameter ids.")
    if not all(isinstance(v, dict) for v in state.values()):
        _fail("per-parameter optimizer state entries to be dictionaries.")
    return state


def _checked_groups(optimizer, groups):
    if not isinstance(groups, list):
        _fail("swapin_optim_state['param_groups'] to be a list of param-group dicts, got "
              f"{type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than "
                           "the live optimizer.")
    for idx, (live, swapin) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(swapin, dict):
            _fail("each optimizer param group to be a dictionary.")
        ids = swapin.get("params")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            _fail("optimizer.state_dict()-style param_groups[*]['params'] entries keyed by "
                  "packed parameter ids.")
        if len(ids) != len(live["params"]):
            raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                               "params than the live optimizer param group.")
        if set(swapin) != set(live):
            _fail("optimizer.state_dict()-style param group keys to exactly match the live "
                  f"optimizer group keys for group {idx}. ")
    return groups


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Inside the block, ``optimizer`` works on ``swapin_parameters`` and the state in
    ``swapin_optim_state`` (an ``optimizer.state_dict()``-shaped dict); both are restored after.

    The parameters are taken in ``optimizer.param_groups`` order; in-place updates of the state
    tensors reach ``swapin_optim_state``.

    Example::

        >>> with swap_in_optimizer_params_and_state(opt, dict(model.named_parameters()),
        ...                                         opt.state_dict()):
        ...     opt.step()
    """
    if not optimizer.state:
        _fail("initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        _fail("a DCP-style optimizer state_dict.")
    state = _checked_state(swapin_optim_state.get("state"))
    groups = _checked_groups(optimizer, swapin_optim_state.get("param_groups"))
    flat = list(swapin_parameters.values())
    if sum(len(g["params"]) for g in groups) > len(flat):
        _fail("the explicit parameter state to match optimizer.param_groups ordering.")
    known_ids = {i for g in groups for i in g["params"]}
    extra = [k for k in state if k not in known_ids]
    if extra:
        _fail("swapin_optim_state['state'] to be keyed only by packed parameter ids from "
              f"param_groups[*]['params']; got extra keys {extra!r}.")
    saved_state, saved_groups = optimizer.state, [dict(g) for g in optimizer.param_groups]
    try:
        new_state, offset = {}, 0
        for live, swapin in zip(optimizer.param_groups, groups):
            params = flat[offset:offset + len(swapin["params"])]
            offset += len(params)
            live.update({k: v for k, v in swapin.items() if k != "params"})
            live["params"] = params
            for param, pid in zip(params, swapin["params"]):
                new_state[param] = dict(state.get(pid, {}))
        optimizer.state = _state_dict_like(saved_state, new_state)
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, saved_groups):
            group.clear()
            group.update(snapshot)
        optimizer.state = saved_state


def _state_dict_like(template, entries):
    """``entries`` in the same mapping type as the optimiser's own state (a defaultdict)."""
    result = type(template)(*([template.default_factory]
                              if hasattr(template, "default_factory") else []))
    result.update(entries)
    return result
