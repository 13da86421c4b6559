"""``ember.compile``: torch.compile's signature, running the model eagerly (a stub until
ember has a compiler).

Example::

    >>> ember.compile(lambda x: x + 1)(ember.ones(1))
    tensor([2.])
"""

from __future__ import annotations

import functools

__all__ = ["compile"]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """torch.compile's signature, running ``model`` eagerly: ember compiles nothing yet.

    Returns ``model`` itself for an :class:`ember.nn.Module` (so its attributes and
    ``state_dict`` stay as they are) and a wrapper that calls the function for anything
    else; works as a decorator with or without arguments. ``mode`` and ``options`` are
    checked as torch checks them (not both).

    Example::

        >>> @ember.compile
        ... def f(x):
        ...     return x * 2
        >>> f(ember.ones(2))
        tensor([2., 2.])
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable)
        return decorate
    if not callable(model):
        raise RuntimeError("torch.compile: expected a callable, got "
                           f"{type(model).__name__}")
    from .nn import Module

    if isinstance(model, Module):
        return model

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return model(*args, **kwargs)
    compiled._torchdynamo_orig_callable = model
    return compiled
