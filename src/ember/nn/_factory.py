"""``factory_kwargs``: torch.nn's helper that checks a layer's ``device``/``dtype`` arguments."""

from __future__ import annotations

_SIMPLE_KEYS = frozenset({"device", "dtype", "memory_format"})


def factory_kwargs(kwargs):
    """The ``device``/``dtype``/``memory_format`` entries of ``kwargs`` as one dict.

    A nested ``factory_kwargs`` dict supplies values whose names clash with the caller's own
    arguments; anything else is a ``TypeError``, as in torch.

    Example::

        >>> factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": ember.float64}})
        {'dtype': ember.float64, 'device': 'cpu'}
    """
    if kwargs is None:
        return {}
    expected = _SIMPLE_KEYS | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    result = dict(kwargs.get("factory_kwargs", {}))
    for key in sorted(_SIMPLE_KEYS):
        if key in kwargs:
            if key in result:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            result[key] = kwargs[key]
    return result
