"""The pytree helpers ember.func needs, on top of ``ember.utils._pytree`` (torch's pytrees).

``flatten``/``unflatten`` are torch's ``tree_flatten``/``tree_unflatten``;
``broadcast_prefix`` spreads a prefix tree such as vmap's ``in_dims`` over a full tree.

Example::

    >>> leaves, spec = flatten({"a": 1, "b": (2, 3)})
    >>> leaves
    [1, 2, 3]
    >>> unflatten([4, 5, 6], spec)
    {'a': 4, 'b': (5, 6)}
    >>> broadcast_prefix({"a": 0, "b": None}, spec)
    [0, None, None]
"""

from __future__ import annotations

from collections import defaultdict

from ..utils._pytree import tree_flatten as flatten
from ..utils._pytree import tree_is_leaf
from ..utils._pytree import tree_unflatten as unflatten

__all__ = ["flatten", "unflatten", "broadcast_prefix", "is_node"]


def is_node(tree):
    """True for the containers a pytree looks into (tuple, list, dict, named tuple, ...)."""
    return not tree_is_leaf(tree)


def broadcast_prefix(prefix, spec):
    """One entry of ``prefix`` per leaf of ``spec``: a leaf of ``prefix`` (an int, None, ...)
    stands for the whole subtree at its place. None where ``prefix`` does not fit ``spec``.

    Example::

        >>> broadcast_prefix((0, None), flatten((1, [2, 3]))[1])
        [0, None, None]
    """
    out = []
    return out if _broadcast_into(prefix, spec, out) else None


def _broadcast_into(prefix, spec, out):
    if not is_node(prefix):
        out.extend([prefix] * spec.num_leaves)
        return True
    if spec.is_leaf():
        return False
    # one level of ``prefix``: its children as leaves
    children, prefix_spec = flatten(prefix, is_leaf=lambda node: node is not prefix)
    if prefix_spec.type != spec.type or _keys(prefix_spec) != _keys(spec) \
            or len(children) != spec.num_children:
        return False
    if isinstance(prefix, dict):  # match dict entries by key, not by order
        children = [prefix[k] for k in _ordered_keys(spec)]
    return all(_broadcast_into(p, s, out) for p, s in zip(children, spec.children_specs))


def _ordered_keys(spec):
    return spec.context[1] if spec.type is defaultdict else spec.context


def _keys(spec):
    context = spec.context
    if spec.type is defaultdict:
        context = context[1]
    return set(context) if isinstance(context, list) else context
