"""Auto-wrap policies of FSDP1 (``torch.distributed.fsdp.wrap``): which submodules become
their own ``FullyShardedDataParallel`` unit.

A policy is called ``policy(module, recurse, nonwrapped_numel)``: with ``recurse=True`` it
says whether to look inside ``module``'s children, with ``recurse=False`` whether to wrap
``module`` itself (``nonwrapped_numel``: its parameters not already in a wrapped child).

Example::

    >>> policy = ModuleWrapPolicy({TransformerBlock})
    >>> model = FSDP(model, auto_wrap_policy=policy)
"""

from __future__ import annotations

import contextlib

__all__ = ["always_wrap_policy", "lambda_auto_wrap_policy", "transformer_auto_wrap_policy",
           "size_based_auto_wrap_policy", "enable_wrap", "wrap", "CustomPolicy",
           "ModuleWrapPolicy"]


def always_wrap_policy(module, recurse, *args, **kwargs):
    """Wrap every submodule.

    Example::

        >>> FSDP(model, auto_wrap_policy=always_wrap_policy)
    """
    return True


def _module_wrap_policy(module, recurse, nonwrapped_numel, module_classes):
    if recurse:
        return True
    return isinstance(module, tuple(module_classes))


def lambda_auto_wrap_policy(module, recurse, nonwrapped_numel, lambda_fn):
    """Wrap the submodules for which ``lambda_fn(module)`` is true.

    Example::

        >>> policy = functools.partial(lambda_auto_wrap_policy,
        ...                            lambda_fn=lambda m: isinstance(m, nn.Linear))
    """
    if recurse:
        return True
    return lambda_fn(module)


def transformer_auto_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls):
    """Wrap the submodules that are instances of ``transformer_layer_cls`` (a set of classes).

    Example::

        >>> policy = functools.partial(transformer_auto_wrap_policy,
        ...                            transformer_layer_cls={Block})
    """
    return _module_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls)


def size_based_auto_wrap_policy(module, recurse, nonwrapped_numel, min_num_params=int(1e8),
                                force_leaf_modules=None, exclude_wrap_modules=None):
    """Wrap a submodule once its not-yet-wrapped parameters reach ``min_num_params``.

    Example::

        >>> policy = functools.partial(size_based_auto_wrap_policy, min_num_params=1000)
    """
    from ...nn.modules.activation import MultiheadAttention
    from ...nn.modules.container import ModuleDict, ModuleList

    force_leaf = (MultiheadAttention,) if force_leaf_modules is None else tuple(
        force_leaf_modules)
    exclude = (ModuleList, ModuleDict) if exclude_wrap_modules is None else tuple(
        exclude_wrap_modules)
    is_large = nonwrapped_numel >= min_num_params
    if recurse:
        return is_large and not isinstance(module, force_leaf)
    return is_large and not isinstance(module, exclude)


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = None
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = None


class ModuleWrapPolicy:
    """Wrap the submodules that are instances of ``module_classes``.

    Example::

        >>> FSDP(model, auto_wrap_policy=ModuleWrapPolicy({nn.TransformerEncoderLayer}))
    """

    def __init__(self, module_classes):
        self._module_classes = set(module_classes)

    def __call__(self, module, recurse, *args, **kwargs):
        return _module_wrap_policy(module, recurse, -1, self._module_classes)

    def __repr__(self):
        return f"ModuleWrapPolicy({self._module_classes})"


class CustomPolicy:
    """Wrap the submodules for which ``lambda_fn(module)`` is true (a dict result gives that
    submodule's own FSDP keyword arguments).

    Example::

        >>> FSDP(model, auto_wrap_policy=CustomPolicy(lambda m: isinstance(m, Block)))
    """

    def __init__(self, lambda_fn):
        self._lambda_fn = lambda_fn

    def __call__(self, module, recurse, *args, **kwargs):
        if recurse:
            return True
        return self._lambda_fn(module)


_WRAP_CONTEXT = []


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls, **wrapper_kwargs):
    """Inside the block, :func:`wrap` wraps with ``wrapper_cls(module, **wrapper_kwargs)``.

    Example::

        >>> with enable_wrap(wrapper_cls=FSDP):
        ...     layer = wrap(nn.Linear(4, 4))
    """
    _WRAP_CONTEXT.append((wrapper_cls, wrapper_kwargs))
    try:
        yield
    finally:
        _WRAP_CONTEXT.pop()


def wrap(module, **wrap_overrides):
    """``module`` wrapped by the class of the enclosing :func:`enable_wrap` (unchanged outside
    one).

    Example::

        >>> with enable_wrap(wrapper_cls=FSDP):
        ...     layer = wrap(nn.Linear(4, 4))
    """
    if not _WRAP_CONTEXT:
        return module
    wrapper_cls, kwargs = _WRAP_CONTEXT[-1]
    return wrapper_cls(module, **{**kwargs, **wrap_overrides})

