"""ember.utils._pytree against torch.utils._pytree on the same trees."""

import collections
import json

import pytest
import torch
import torch.utils._pytree as torch_pytree

from ember.utils import _pytree as pytree

Point = collections.namedtuple("Point", ["x", "y"])
TREES = [
    1, None, [1, (2, 3)], {"b": [1, 2], "a": 3}, (), [], {},
    collections.OrderedDict(z=1, a=[2]), collections.defaultdict(list, {"k": (1, 2)}),
    collections.deque([1, [2]], maxlen=4), Point(1, [2, 3]), [Point(1, 2), {"p": Point(3, 4)}],
    {"nested": {"deep": [[1], [2, (3, {"x": 4})]]}},
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_flatten_and_spec_match_torch(tree):
    ours, spec = pytree.tree_flatten(tree)
    theirs, torch_spec = torch_pytree.tree_flatten(tree)
    assert ours == theirs
    assert repr(spec) == repr(torch_spec)
    assert (spec.num_leaves, spec.num_nodes) == (torch_spec.num_leaves, torch_spec.num_nodes)
    rebuilt = pytree.tree_unflatten([f"leaf{i}" for i in range(len(ours))], spec)
    assert rebuilt == torch_pytree.tree_unflatten([f"leaf{i}" for i in range(len(ours))],
                                                  torch_spec)
    if not spec.is_leaf():
        assert type(rebuilt) is type(tree)


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_key_paths_match_torch(tree):
    ours = [(pytree.keystr(p), v) for p, v in pytree.tree_flatten_with_path(tree)[0]]
    theirs = [(torch_pytree.keystr(p), v) for p, v in torch_pytree.tree_flatten_with_path(tree)[0]]
    assert ours == theirs
    for path, leaf in pytree.tree_leaves_with_path(tree):
        assert pytree.key_get(tree, path) is leaf


def test_maps_and_predicates_match_torch():
    tree = (1, [2.0, 3], {"a": 4})
    double = lambda x: x * 2  # noqa: E731
    assert pytree.tree_map(double, tree) == torch_pytree.tree_map(double, tree)
    assert pytree.tree_map(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])
    negate = lambda x: -x  # noqa: E731
    assert pytree.tree_map_only(int, negate, tree) == torch_pytree.tree_map_only(int, negate,
                                                                                 tree)
    positive = lambda x: x > 0  # noqa: E731
    assert pytree.tree_all(positive, tree) == torch_pytree.tree_all(positive, tree)
    big = lambda x: x > 3.5  # noqa: E731
    assert (pytree.tree_any_only(float, big, tree)
            == torch_pytree.tree_any_only(float, big, tree))
    seen = []
    assert pytree.tree_map_(seen.append, tree) is tree and seen == [1, 2.0, 3, 4]
    with_paths = pytree.tree_map_with_path(lambda p, x: pytree.keystr(p), {"a": [1]})
    assert with_paths == torch_pytree.tree_map_with_path(lambda p, x: torch_pytree.keystr(p),
                                                         {"a": [1]})


def test_is_leaf_stops_descent():
    tree = [(1, 2), (3, 4)]
    is_pair = lambda x: isinstance(x, tuple)  # noqa: E731
    assert pytree.tree_leaves(tree, is_leaf=is_pair) == torch_pytree.tree_leaves(
        tree, is_leaf=is_pair)


@pytest.mark.parametrize("call", [
    lambda m: m.tree_map(lambda a, b: a + b, (1, [2]), (10, (20,))),
    lambda m: m.tree_unflatten([1, 2, 3], m.tree_structure((1, 2))),
    lambda m: m.tree_map(lambda a, b: a, [1, 2], [1]),
])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as theirs:
        call(torch_pytree)
    with pytest.raises(type(theirs.value)) as ours:
        call(pytree)
    assert str(ours.value).split("(")[0] == str(theirs.value).split("(")[0]


def test_registered_node_and_serialization():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], "pair"),
                                lambda children, context: Pair(*children),
                                serialized_type_name="tests.Pair")
    leaves, spec = pytree.tree_flatten([Pair(1, (2, 3))])
    assert leaves == [1, 2, 3]
    assert repr(spec).startswith("TreeSpec(list, None, [TreeSpec(Pair, pair")
    rebuilt = spec.unflatten([4, 5, 6])[0]
    assert (rebuilt.a, rebuilt.b) == (4, (5, 6))
    with pytest.raises(ValueError, match="already registered"):
        pytree.register_pytree_node(Pair, lambda p: ([], None), lambda c, x: Pair(1, 2))
    plain = {"a": (1, [2]), "b": collections.OrderedDict(c=3)}
    text = pytree.treespec_dumps(pytree.tree_structure(plain))
    assert json.loads(text) == json.loads(torch_pytree.treespec_dumps(
        torch_pytree.tree_structure(plain)))
    assert pytree.treespec_loads(text) == pytree.tree_structure(plain)
    assert pytree.treespec_pprint(pytree.tree_structure(plain)) == \
        torch_pytree.treespec_pprint(torch_pytree.tree_structure(plain))


def test_namedtuple_predicates_match_torch():
    for obj in (Point(1, 2), Point, (1, 2), tuple, torch.return_types.max):
        for name in ("is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance"):
            assert getattr(pytree, name)(obj) == getattr(torch_pytree, name)(obj), (obj, name)


def test_model_zoo_load_url_is_hubs(tmp_path):
    import ember
    from ember.utils import model_zoo

    assert model_zoo.load_url is ember.hub.load_state_dict_from_url
    path = tmp_path / "weights.pt"
    ember.save({"w": ember.ones(2)}, path)
    state = model_zoo.load_url(path.as_uri(), model_dir=str(tmp_path / "cache"))
    assert state["w"].tolist() == [1.0, 1.0]
