"""Activation checkpointing as a module wrapper, as
``torch.distributed.algorithms._checkpoint.checkpoint_wrapper``.

:func:`checkpoint_wrapper` wraps a module so that its forward runs under
:func:`ember.utils.checkpoint.checkpoint` (activations recomputed in backward);
:func:`apply_activation_checkpointing` wraps, in place, the submodules that ``check_fn``
selects. The wrapper is invisible in names: ``state_dict()`` and ``named_parameters()`` drop
its ``_checkpoint_wrapped_module.`` prefix, and ``load_state_dict`` adds it back.

Example::

    >>> apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block))
"""

from __future__ import annotations

import enum
import functools

from ....nn.modules.module import Module

__all__ = ["CheckpointImpl", "ActivationWrapper", "CheckpointWrapper", "OffloadWrapper",
           "checkpoint_wrapper", "offload_wrapper", "apply_activation_checkpointing"]

_CHECKPOINT_WRAPPED_MODULE = "_checkpoint_wrapped_module"
_CHECKPOINT_PREFIX = _CHECKPOINT_WRAPPED_MODULE + "."


class CheckpointImpl(enum.Enum):
    """Which checkpoint implementation the wrapper uses."""

    REENTRANT = enum.auto()
    NO_REENTRANT = enum.auto()


def _rename_prefix(state_dict, old, new):
    for key in [k for k in state_dict if k.startswith(old)]:
        state_dict[new + key[len(old):]] = state_dict.pop(key)


class ActivationWrapper(Module):
    """Base of the wrappers: holds the module, forwards attribute lookups and indexing to it,
    and hides its own name in parameter names and state dicts."""

    def __init__(self, mod):
        super().__init__()
        self._checkpoint_wrapped_module = mod
        self.register_state_dict_post_hook(self._post_state_dict_hook)
        self.register_load_state_dict_pre_hook(self._pre_load_state_dict_hook)

    def forward(self, *args, **kwargs):
        raise ValueError("Subclasses should implement forward().")

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            wrapped = self.__dict__.get("_modules", {}).get(_CHECKPOINT_WRAPPED_MODULE)
            if wrapped is None:
                raise
            return getattr(wrapped, name)

    def __getitem__(self, key):
        return self._checkpoint_wrapped_module.__getitem__(key)

    def named_parameters(self, *args, **kwargs):
        """The wrapped module's parameters under their unwrapped names."""
        for name, param in super().named_parameters(*args, **kwargs):
            yield name.replace(_CHECKPOINT_PREFIX, ""), param

    @staticmethod
    def _post_state_dict_hook(module, state_dict, prefix, local_metadata):
        _rename_prefix(state_dict, f"{prefix}{_CHECKPOINT_PREFIX}", prefix)
        return state_dict

    @staticmethod
    def _pre_load_state_dict_hook(module, state_dict, prefix, *args):
        _rename_prefix(state_dict, prefix, prefix + _CHECKPOINT_PREFIX)


class CheckpointWrapper(ActivationWrapper):
    """Runs the wrapped module's forward under activation checkpointing.

    Example::

        >>> layer = CheckpointWrapper(nn.Linear(4, 4))
    """

    def __init__(self, mod, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None,
                 **checkpoint_fn_kwargs):
        super().__init__(mod)
        self.checkpoint_impl = checkpoint_impl
        if checkpoint_fn is None:
            from ....utils.checkpoint import checkpoint

            self.checkpoint_fn = functools.partial(
                checkpoint, use_reentrant=checkpoint_impl == CheckpointImpl.REENTRANT,
                **checkpoint_fn_kwargs)
        else:
            self.checkpoint_fn = functools.partial(checkpoint_fn, **checkpoint_fn_kwargs)

    def forward(self, *args, **kwargs):
        if self.checkpoint_impl == CheckpointImpl.REENTRANT and kwargs:
            # the reentrant implementation takes positional inputs only
            keys = list(kwargs)

            def call(*flat):
                n = len(flat) - len(keys)
                return self._checkpoint_wrapped_module(*flat[:n], **dict(zip(keys, flat[n:])))

            return self.checkpoint_fn(call, *args, *kwargs.values())
        return self.checkpoint_fn(self._checkpoint_wrapped_module, *args, **kwargs)


class OffloadWrapper(ActivationWrapper):
    """Activation offloading to the CPU: ember's CPU tensors are there already, so the
    wrapped module runs as is.

    Example::

        >>> layer = offload_wrapper(nn.Linear(4, 4))
    """

    def forward(self, *args, **kwargs):
        return self._checkpoint_wrapped_module(*args, **kwargs)


def offload_wrapper(module):
    """``module`` wrapped in an :class:`OffloadWrapper`.

    Example::

        >>> layer = offload_wrapper(nn.Linear(4, 4))
    """
    return OffloadWrapper(module)


def checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None,
                       **checkpoint_fn_kwargs):
    """``module`` wrapped so that its forward's activations are recomputed in backward.

    Example::

        >>> layer = checkpoint_wrapper(block)
    """
    return CheckpointWrapper(module, checkpoint_impl, checkpoint_fn, **checkpoint_fn_kwargs)


def apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,
                                   check_fn=lambda _: True, auto_wrap_policy=None):
    """Wrap, in place and bottom up, every submodule of ``model`` for which ``check_fn``
    (or ``auto_wrap_policy(module, recurse=False, nonwrapped_numel=...)``) is true.

    Example::

        >>> apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block))
    """
    def selected(module):
        if auto_wrap_policy is not None:
            numel = sum(p.numel() for p in module.parameters())
            return auto_wrap_policy(module=module, recurse=False, nonwrapped_numel=numel)
        return check_fn(module)

    def visit(module):
        for name, child in list(module._modules.items()):
            if child is None or isinstance(child, ActivationWrapper):
                continue
            visit(child)
            if selected(child):
                module._modules[name] = checkpoint_wrapper_fn(child)

    visit(model)
    return model
