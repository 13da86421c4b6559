"""``torch.utils._pytree``: nested containers flattened to leaves and rebuilt.

A pytree is a leaf or a registered container of pytrees. Tuples, lists, dicts, named tuples,
``OrderedDict``, ``defaultdict`` and ``deque`` are registered; ``register_pytree_node`` adds a
type. ``tree_flatten`` returns the leaves in order and a :class:`TreeSpec` describing the
containers; ``tree_unflatten`` rebuilds; ``tree_map`` applies a function to every leaf. Key
paths (``tree_flatten_with_path``) name where each leaf sits. Libraries written for torch use
this module directly (optimizers, checkpoint code, model wrappers).

Example::

    >>> from ember.utils import _pytree as pytree
    >>> leaves, spec = pytree.tree_flatten({"a": 1, "b": (2, 3)})
    >>> leaves
    [1, 2, 3]
    >>> pytree.tree_unflatten([4, 5, 6], spec)
    {'a': 4, 'b': (5, 6)}
    >>> pytree.tree_map(lambda x: x * 10, [1, (2,)])
    [10, (20,)]
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict, defaultdict, deque, namedtuple
from typing import Any, NamedTuple

__all__ = ["PyTree", "Context", "TreeSpec", "LeafSpec", "SequenceKey", "MappingKey",
           "GetAttrKey", "register_pytree_node", "tree_is_leaf", "tree_flatten",
           "tree_flatten_with_path", "tree_unflatten", "tree_iter", "tree_leaves",
           "tree_leaves_with_path", "tree_structure", "tree_map", "tree_map_with_path",
           "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "keystr", "key_get", "treespec_dumps",
           "treespec_loads", "treespec_pprint", "is_namedtuple", "is_namedtuple_class",
           "is_namedtuple_instance", "is_structseq", "is_structseq_class",
           "is_structseq_instance"]

PyTree = Any
Context = Any


class NodeDef(NamedTuple):
    """How one container type flattens: ``flatten(node) -> (children, context)`` and
    ``unflatten(children, context) -> node``; ``flatten_with_keys`` adds each child's key."""

    type: type
    flatten_fn: Any
    unflatten_fn: Any
    flatten_with_keys_fn: Any = None
    serialized_type_name: str | None = None


SUPPORTED_NODES: dict[type, NodeDef] = {}


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The position of a child in a sequence (``[0]`` in a key path)."""

    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """The key of a child in a mapping (``['a']`` in a key path)."""

    key: Any

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The attribute that holds a child (``.x`` in a key path)."""

    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """Make ``cls`` a container: ``flatten_fn(node) -> (children, context)``,
    ``unflatten_fn(children, context) -> node``.

    Example::

        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> register_pytree_node(Pair, lambda p: ([p.a, p.b], None),
        ...                      lambda children, _: Pair(*children))
        >>> tree_leaves(Pair(1, [2]))
        [1, 2]
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    name = serialized_type_name or f"{cls.__module__}.{cls.__qualname__}"
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn, name)


def is_namedtuple_class(cls):
    """Whether ``cls`` is a named tuple class (a tuple subclass with ``_fields``)."""
    return isinstance(cls, type) and issubclass(cls, tuple) and isinstance(
        getattr(cls, "_fields", None), tuple)


def is_namedtuple_instance(obj):
    """Whether ``obj`` is a named tuple."""
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj):
    """Whether ``obj`` is a named tuple or a named tuple class."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_class(cls):
    """Whether ``cls`` is a C struct sequence (``os.stat_result``); never ember's types."""
    return (isinstance(cls, type) and issubclass(cls, tuple) and not is_namedtuple_class(cls)
            and isinstance(getattr(cls, "n_fields", None), int))


def is_structseq_instance(obj):
    """Whether ``obj`` is a C struct sequence."""
    return is_structseq_class(type(obj))


def is_structseq(obj):
    """Whether ``obj`` is a struct sequence or its class."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def _node_type(tree):
    kind = type(tree)
    if kind in SUPPORTED_NODES:
        return kind
    if is_namedtuple_class(kind):
        return namedtuple
    return None


def tree_is_leaf(tree, is_leaf=None):
    """Whether ``tree`` is a leaf (not a registered container, or chosen by ``is_leaf``)."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) is None


class TreeSpec:
    """The containers of a pytree: a node's type, its context (dict keys, named tuple class,
    ...) and one spec per child.

    Example::

        >>> tree_structure((1, [2]))
        TreeSpec(tuple, None, [*,
          TreeSpec(list, None, [*])])
    """

    def __init__(self, type, context, children_specs):  # noqa: A002 - torch's name
        self.type = type
        self.context = context
        self._children = list(children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self._children)
        self.num_leaves = sum(c.num_leaves for c in self._children)
        self.num_children = len(self._children)

    @property
    def children_specs(self):
        return self._children

    def children(self):
        return list(self._children)

    def child(self, index):
        return self._children[index]

    def is_leaf(self):
        return False

    def __eq__(self, other):
        return (type(other) is type(self) and self.type == other.type
                and self.context == other.context and self._children == other._children)

    def __hash__(self):
        return hash((self.type, repr(self.context), tuple(self._children)))

    def __repr__(self, indent=0):
        name = "namedtuple" if self.type is namedtuple else self.type.__name__
        text = f"TreeSpec({name}, {self.context}, ["
        if self._children:
            indent += 2
            parts = [self._children[0].__repr__(indent)]
            parts += ["\n" + " " * indent + c.__repr__(indent) for c in self._children[1:]]
            text += ",".join(parts)
        return text + "])"

    def unflatten(self, leaves):
        """Rebuild the pytree this spec describes from its leaves."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec "
                f"refers to a pytree that holds {self.num_leaves} items ({self}).")
        return self._build(iter(leaves))

    def _build(self, leaves):
        children = [c._build(leaves) for c in self._children]
        if self.type is namedtuple:
            return self.context(*children)
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self.context)

    def flatten_up_to(self, tree):
        """The subtrees of ``tree`` at this spec's leaves (``tree`` has at least its shape)."""
        subtrees = []
        self._flatten_up_to(tree, subtrees)
        return subtrees

    def _flatten_up_to(self, tree, out):
        kind = _node_type(tree)
        if kind != self.type or (kind is namedtuple and type(tree) is not self.context):
            expected = self.context if self.type is namedtuple else self.type
            raise ValueError(f"Node type mismatch; expected {expected}, but got {type(tree)}.")
        children, context = _flatten_node(tree, kind)
        if kind is not namedtuple and context != self.context:
            raise ValueError(f"Node context mismatch for custom node type {self.type}.")
        if len(children) != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, "
                             f"but got {len(children)}.")
        for child, spec in zip(children, self._children):
            spec._flatten_up_to(child, out)


class LeafSpec(TreeSpec):
    """The spec of a leaf, printed ``*``."""

    def __init__(self):
        self.type, self.context, self._children = None, None, []
        self.num_nodes, self.num_leaves, self.num_children = 1, 1, 0

    def is_leaf(self):
        return True

    def __repr__(self, indent=0):
        return "*"

    def _build(self, leaves):
        return next(leaves)

    def _flatten_up_to(self, tree, out):
        out.append(tree)


_LEAF = LeafSpec()


def _flatten_node(tree, kind):
    if kind is namedtuple:
        return list(tree), type(tree)
    children, context = SUPPORTED_NODES[kind].flatten_fn(tree)
    return list(children), context


def tree_flatten(tree, is_leaf=None):
    """``(leaves, treespec)`` of ``tree``.

    Example::

        >>> tree_flatten([1, (2, None)])[0]
        [1, 2, None]
    """
    leaves = []
    return leaves, _flatten(tree, is_leaf, leaves)


def _flatten(tree, is_leaf, leaves):
    kind = None if (is_leaf is not None and is_leaf(tree)) else _node_type(tree)
    if kind is None:
        leaves.append(tree)
        return _LEAF
    children, context = _flatten_node(tree, kind)
    return TreeSpec(kind, context, [_flatten(c, is_leaf, leaves) for c in children])


def tree_unflatten(leaves, treespec):
    """Rebuild a pytree from ``leaves`` and the ``treespec`` that ``tree_flatten`` gave.

    Example::

        >>> tree_unflatten([1, 2], tree_structure((0, [0])))
        (1, [2])
    """
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be "
                        f"instance of TreeSpec but got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    """Iterate over the leaves of ``tree``."""
    yield from tree_flatten(tree, is_leaf)[0]


def tree_leaves(tree, is_leaf=None):
    """The leaves of ``tree``, in order.

    Example::

        >>> tree_leaves({"b": [1, 2], "a": 3})
        [1, 2, 3]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The :class:`TreeSpec` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """A pytree like ``tree`` with ``func`` applied to each leaf (and to the leaves of
    ``rests`` at the same places).

    Example::

        >>> tree_map(lambda a, b: a + b, (1, [2]), (10, [20]))
        (11, [22])
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(rest) for rest in rests]
    return spec.unflatten(map(func, leaves, *others))


def tree_map_(func, tree, *rests, is_leaf=None):
    """Call ``func`` on every leaf for its side effects; returns ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(rest) for rest in rests]
    for args in zip(leaves, *others):
        func(*args)
    return tree


def _only(types, func):
    if isinstance(types, type):
        types = (types,)
    types = tuple(types)

    def apply(leaf):
        return func(leaf) if isinstance(leaf, types) else leaf
    return apply


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """:func:`tree_map` on the leaves of the given type(s); other leaves stay.

    Example::

        >>> tree_map_only(int, lambda x: -x, (1, 2.0, [3]))
        (-1, 2.0, [-3])
    """
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types, func, tree, is_leaf=None):
    """:func:`tree_map_` on the leaves of the given type(s)."""
    return tree_map_(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_iter(tree, is_leaf)))


def _typed(types):
    return (types,) if isinstance(types, type) else tuple(types)


def tree_all_only(type_or_types, pred, tree, is_leaf=None):
    """Whether ``pred`` holds for every leaf of the given type(s)."""
    types = _typed(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, types))


def tree_any_only(type_or_types, pred, tree, is_leaf=None):
    """Whether ``pred`` holds for some leaf of the given type(s)."""
    types = _typed(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, types))


# ---------------------------------------------------------------- key paths


def _keyed_children(tree, kind):
    if kind is namedtuple:
        return [(GetAttrKey(f), getattr(tree, f)) for f in type(tree)._fields]
    node = SUPPORTED_NODES[kind]
    if node.flatten_with_keys_fn is not None:
        pairs, _ = node.flatten_with_keys_fn(tree)
        return list(pairs)
    children, context = node.flatten_fn(tree)
    if isinstance(tree, dict):
        return [(MappingKey(k), tree[k]) for k in _dict_keys(tree, kind, context)]
    return [(SequenceKey(i), c) for i, c in enumerate(children)]


def _dict_keys(tree, kind, context):
    return context[1] if kind is defaultdict else context


def tree_flatten_with_path(tree, is_leaf=None):
    """``([(key_path, leaf), ...], treespec)``: each leaf with the keys that reach it.

    Example::

        >>> [keystr(path) for path, _ in tree_flatten_with_path({"a": [1, 2]})[0]]
        ["['a'][0]", "['a'][1]"]
    """
    pairs = []
    _flatten_with_path(tree, is_leaf, (), pairs)
    return pairs, tree_structure(tree, is_leaf)


def _flatten_with_path(tree, is_leaf, path, pairs):
    kind = None if (is_leaf is not None and is_leaf(tree)) else _node_type(tree)
    if kind is None:
        pairs.append((path, tree))
        return
    for key, child in _keyed_children(tree, kind):
        _flatten_with_path(child, is_leaf, (*path, key), pairs)


def tree_leaves_with_path(tree, is_leaf=None):
    """``[(key_path, leaf), ...]`` of ``tree``."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """:func:`tree_map` whose ``func`` also receives each leaf's key path first."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec.flatten_up_to(rest) for rest in rests]
    return spec.unflatten(func(path, leaf, *more)
                          for (path, leaf), *more in zip(pairs, *others))


def keystr(kp):
    """A key path as Python source (``['a'][0].x``)."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    """The part of ``obj`` that key path ``kp`` names."""
    for key in kp:
        obj = key.get(obj)
    return obj


# ---------------------------------------------------------------- serialization

_PROTOCOL = 1


def treespec_dumps(treespec, protocol=None):
    """A TreeSpec as JSON text (torch's protocol 1), for the built-in and registered types.

    Example::

        >>> treespec_loads(treespec_dumps(tree_structure([1, {"k": 2}]))) \\
        ...     == tree_structure([1, {"k": 2}])
        True
    """
    if protocol not in (None, _PROTOCOL):
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [{_PROTOCOL}]")
    return json.dumps([_PROTOCOL, _to_json(treespec)])


def _to_json(spec):
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    if spec.type is namedtuple:
        raise NotImplementedError("treespec_dumps: named tuples are serialised by their "
                                  "registered name; register the class with "
                                  "register_pytree_node(serialized_type_name=...) first")
    name = SUPPORTED_NODES[spec.type].serialized_type_name
    return {"type": name, "context": json.dumps(spec.context),
            "children_spec": [_to_json(c) for c in spec.children_specs]}


def treespec_loads(serialized):
    """The TreeSpec that :func:`treespec_dumps` wrote."""
    protocol, data = json.loads(serialized)
    if protocol != _PROTOCOL:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [{_PROTOCOL}]")
    return _from_json(data)


def _from_json(data):
    if data["type"] is None:
        return _LEAF
    by_name = {node.serialized_type_name: kind for kind, node in SUPPORTED_NODES.items()}
    if data["type"] not in by_name:
        raise NotImplementedError(f"No registered serialization name for {data['type']}")
    context = json.loads(data["context"])
    kind = by_name[data["type"]]
    if kind is deque and context is not None:
        context = int(context)
    return TreeSpec(kind, context, [_from_json(c) for c in data["children_spec"]])


def treespec_pprint(treespec):
    """A short picture of the pytree a spec describes, leaves as ``*``.

    Example::

        >>> treespec_pprint(tree_structure({"a": (1, 2)}))
        "{'a': (*, *)}"
    """
    return repr(treespec.unflatten([_Star()] * treespec.num_leaves))


class _Star:
    def __repr__(self):
        return "*"


# ---------------------------------------------------------------- the built-in containers


def _register_builtins():
    def sequence(kind):
        return lambda children, context: kind(children)

    register_pytree_node(tuple, lambda t: (list(t), None), sequence(tuple),
                         serialized_type_name="builtins.tuple")
    register_pytree_node(list, lambda x: (list(x), None), sequence(list),
                         serialized_type_name="builtins.list")
    register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())),
                         lambda children, keys: dict(zip(keys, children)),
                         serialized_type_name="builtins.dict")
    register_pytree_node(OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                         lambda children, keys: OrderedDict(zip(keys, children)),
                         serialized_type_name="collections.OrderedDict")
    register_pytree_node(
        defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
        lambda children, context: defaultdict(context[0], zip(context[1], children)),
        serialized_type_name="collections.defaultdict")
    register_pytree_node(deque, lambda d: (list(d), d.maxlen),
                         lambda children, maxlen: deque(children, maxlen=maxlen),
                         serialized_type_name="collections.deque")


_register_builtins()
