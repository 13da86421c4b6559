"""``ember.nn.parallel.scatter_gather``: split nested inputs across devices and join outputs.

Tensors are split along ``dim`` (:func:`~ember.nn.parallel.comm.scatter`); tuples, lists,
dicts and named tuples are walked; other objects are repeated for every device.

Example::

    >>> from ember.nn.parallel.scatter_gather import scatter, gather
    >>> parts = scatter((ember.arange(4), "tag"), ["cpu", "cpu"])
    >>> [p[1] for p in parts], gather([p[0] for p in parts], -1)
    (['tag', 'tag'], tensor([0, 1, 2, 3]))
"""

from __future__ import annotations

from ..._tensor import Tensor
from . import comm

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim=0):
    """One copy of ``inputs`` per target, with every tensor split along ``dim``.

    Example::

        >>> len(scatter([ember.ones(2, 3)], ["cpu", "cpu"]))
        2
    """

    def split(obj):
        if isinstance(obj, Tensor):
            return comm.scatter(obj, target_gpus, None, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(split, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(split, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(split, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(split, obj.items()))]
        return [obj for _ in target_gpus]

    return split(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """Scatter positional and keyword inputs, padding the shorter with empty tuples/dicts.

    Example::

        >>> args, kws = scatter_kwargs((ember.ones(2),), {"k": 1}, ["cpu", "cpu"])
        >>> len(args), kws
        (2, ({'k': 1}, {'k': 1}))
    """
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """Join per-device outputs (same structure each) on ``target_device`` along ``dim``.

    Example::

        >>> gather([{"y": ember.ones(1)}, {"y": ember.zeros(1)}], -1)
        {'y': tensor([1., 0.])}
    """

    def join(outs):
        first = outs[0]
        if isinstance(first, Tensor):
            return comm.gather(outs, dim, target_device)
        if first is None:
            return None
        if isinstance(first, dict):
            if not all(len(first) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(first)((k, join([d[k] for d in outs])) for k in first)
        if _is_namedtuple(first):
            return type(first)._make(map(join, zip(*outs)))
        return type(first)(map(join, zip(*outs)))

    return join(outputs)
