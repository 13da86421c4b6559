"""Nested Python containers ("pytrees") as ``torch.utils._pytree`` sees them.

Tuples, lists, named tuples and dicts (``OrderedDict`` and ``defaultdict`` included) are
*nodes*; everything else (tensors, numbers, ``None``) is a *leaf*. ``flatten`` lists the leaves
in order with a :class:`TreeSpec` describing the containers, ``unflatten`` rebuilds them, and
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

from collections import OrderedDict, defaultdict

__all__ = ["TreeSpec", "LEAF", "flatten", "unflatten", "broadcast_prefix", "is_node"]


def _is_namedtuple(tree):
    return isinstance(tree, tuple) and hasattr(type(tree), "_fields")


def is_node(tree):
    """True for the containers a pytree looks into (tuple, list, namedtuple, dict)."""
    return isinstance(tree, (tuple, list, dict))


class TreeSpec:
    """The shape of a pytree: a container's type, its keys (dicts) and its children's specs.

    Example::

        >>> flatten((1, [2]))[1]
        TreeSpec(tuple, None, [*, TreeSpec(list, None, [*])])
    """

    __slots__ = ("type", "keys", "children", "num_leaves")

    def __init__(self, node_type, keys, children):
        self.type = node_type
        self.keys = keys
        self.children = children
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)

    def is_leaf(self):
        return self.type is None

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.keys == other.keys and self.children == other.children)

    def __hash__(self):
        return hash((self.type, self.keys, tuple(self.children)))

    def __repr__(self):
        if self.type is None:
            return "*"
        if issubclass(self.type, dict):
            name, context = self.type.__name__, list(self.keys)
        elif issubclass(self.type, tuple) and self.type is not tuple:
            name, context = "namedtuple", self.type.__name__
        else:
            name, context = self.type.__name__, None
        return f"TreeSpec({name}, {context}, [{', '.join(map(repr, self.children))}])"


LEAF = TreeSpec(None, None, [])


def flatten(tree):
    """``(leaves, spec)`` of ``tree``.

    Example::

        >>> flatten([1, (2, None)])[0]
        [1, 2, None]
    """
    leaves = []
    spec = _flatten_into(tree, leaves)
    return leaves, spec


def _flatten_into(tree, leaves):
    if isinstance(tree, dict):
        keys = tuple(tree)
        children = [_flatten_into(tree[k], leaves) for k in keys]
        return TreeSpec(type(tree), keys, children)
    if isinstance(tree, (tuple, list)):
        children = [_flatten_into(x, leaves) for x in tree]
        return TreeSpec(type(tree), None, children)
    leaves.append(tree)
    return LEAF


def unflatten(leaves, spec):
    """Rebuild a pytree of shape ``spec`` from its ``leaves`` (in flatten's order).

    Example::

        >>> unflatten([1, 2], flatten((0, [0]))[1])
        (1, [2])
    """
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"unflatten: expected {spec.num_leaves} leaves, got {len(leaves)}")
    return _build(iter(leaves), spec)


def _build(leaves, spec):
    if spec.type is None:
        return next(leaves)
    values = [_build(leaves, child) for child in spec.children]
    if issubclass(spec.type, dict):
        if spec.type is defaultdict:
            return defaultdict(None, zip(spec.keys, values))
        if spec.type is OrderedDict:
            return OrderedDict(zip(spec.keys, values))
        return spec.type(zip(spec.keys, values))
    if issubclass(spec.type, tuple) and spec.type is not tuple:
        return spec.type(*values)          # a named tuple takes its fields positionally
    return spec.type(values)


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
    if spec.type is None or type(prefix) is not spec.type:
        return False
    if isinstance(prefix, dict):
        if set(prefix) != set(spec.keys):
            return False
        children = [prefix[k] for k in spec.keys]
    else:
        children = list(prefix)
    if len(children) != len(spec.children):
        return False
    return all(_broadcast_into(p, s, out) for p, s in zip(children, spec.children))
