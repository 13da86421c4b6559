"""``ember.nn.modules.utils``: argument helpers shared by the conv and pooling layers.

``_single``/``_pair``/``_triple``/``_quadruple`` turn an int (or an iterable) into a tuple of
that length, as layers do with ``kernel_size=3``; :func:`consume_prefix_in_state_dict_if_present`
strips a ``DataParallel``/``DistributedDataParallel`` prefix from a state dict.

Example::

    >>> from ember.nn.modules.utils import _pair
    >>> _pair(3), _pair((1, 2))
    ((3, 3), (1, 2))
"""

from __future__ import annotations

import collections.abc
import itertools

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """Return a parser that repeats a scalar ``n`` times and passes iterables through as tuples."""

    def parse(value):
        if isinstance(value, collections.abc.Iterable):
            return tuple(value)
        return tuple(itertools.repeat(value, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(values, n):
    """Reverse ``values`` and repeat each item ``n`` times: a layer's padding in ``F.pad``'s order.

    Example::

        >>> _reverse_repeat_tuple((1, 2), 2)
        (2, 2, 1, 1)
    """
    return tuple(x for x in reversed(values) for _ in range(n))


def _list_with_default(out_size, defaults):
    """Fill the ``None`` entries of an adaptive pool's ``output_size`` from the input's sizes.

    Example::

        >>> _list_with_default([None, 4], [8, 16, 32])
        [16, 4]
    """
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    tail = defaults[-len(out_size):]
    return [size if size is not None else default for size, default in zip(out_size, tail)]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` from the keys of ``state_dict`` (and of its ``_metadata``) in place.

    A state dict saved from a ``DataParallel`` model has keys ``module.<name>``; stripping
    ``"module."`` lets a plain model load it.

    Example::

        >>> sd = {"module.weight": 1}
        >>> consume_prefix_in_state_dict_if_present(sd, "module.")
        >>> sd
        {'weight': 1}
    """
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata.keys()):
        # '' belongs to the wrapper itself; 'module' (no dot) is the wrapped model's own entry
        if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
            metadata[key[len(prefix):]] = metadata.pop(key)
