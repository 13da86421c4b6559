"""torch.func's helpers for models and programs: ensembles (``stack_module_state``), batch
norm without running statistics, and the identities of eager mode (``functionalize``,
``debug_unwrap``).
"""

from __future__ import annotations

import functools

__all__ = ["stack_module_state", "replace_all_batch_norm_modules_", "functionalize",
           "debug_unwrap"]


def stack_module_state(models):
    """The parameters and buffers of same-shaped ``models`` stacked along a new first dim,
    as two dicts keyed by state-dict names; the stacked parameters are new leaves that
    require grad (an optimiser can train the ensemble through ``vmap``).

    Example::

        >>> models = [ember.nn.Linear(3, 2) for _ in range(4)]
        >>> params, buffers = ember.func.stack_module_state(models)
        >>> params["weight"].shape
        ember.Size([4, 2, 3])
    """
    from ..ops.shape import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({model.training for model in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    named = [dict(model.named_parameters()) for model in models]
    params = {name: stack([m[name].detach() for m in named]).requires_grad_(tensor.requires_grad)
              for name, tensor in named[0].items()}
    named_buffers = [dict(model.named_buffers()) for model in models]
    buffers = {name: stack([m[name] for m in named_buffers]) for name in named_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every batch-norm layer in ``root`` use batch statistics only (running statistics
    set to None, ``track_running_stats`` False), in place, so it works under ``vmap``.

    Example::

        >>> net = ember.func.replace_all_batch_norm_modules_(ember.nn.BatchNorm1d(3))
        >>> net.running_mean is None
        True
    """
    from ..nn.modules.normalization import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def functionalize(func, *, remove="mutations"):
    """``func`` with its mutations removed (torch.func.functionalize). Called eagerly the
    result is the same as ``func``'s, which is what ember runs; ``remove`` is checked as torch.

    Example::

        >>> ember.func.functionalize(lambda x: x.add_(1))(ember.zeros(2))
        tensor([1., 1.])
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n     remove='mutations': "
                           "all inplace and out= operators will be removed from the program, "
                           "and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all "
                           "aliasing operators {view} will be replaced with their "
                           "non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        return func(*args, **kwargs)

    return functionalized


def debug_unwrap(tensor, *, recurse=True):
    """The plain tensor inside a torch.func transform's wrapper; ember's transforms pass plain
    tensors, so this returns ``tensor`` itself.

    Example::

        >>> x = ember.ones(2)
        >>> ember.func.debug_unwrap(x) is x
        True
    """
    return tensor
