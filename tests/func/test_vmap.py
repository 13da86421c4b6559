"""ember.vmap / ember.func.vmap against torch.func.vmap on the same inputs: in_dims/out_dims
(ints, negative, None, nested tuples/lists/dicts), non-tensor and keyword arguments, nested
vmap, vmap with grad/jacrev (per-sample gradients of an nn.Linear model through
functional_call, as torch's tutorial), grad through vmap, chunk_size, empty batches, torch's
errors (type and message) and the three randomness modes. Each test runs on both of vmap's
paths (batched replay and per-element loop): see the ``vmap_path`` fixture."""

import collections

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same
from ember.func import _vmap

LIBS = ((ember, ember.func, ember.nn), (torch, torch.func, torch.nn))


@pytest.fixture(autouse=True, params=["batched", "loop"])
def vmap_path(request, monkeypatch):
    """Every test runs twice: with vmap's batched path allowed (taken where it applies) and
    with the per-element loop forced; both must give torch's results."""
    monkeypatch.setattr(_vmap.last_call, "enabled", request.param == "batched")
    return request.param


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _run_both(build, *arrays):
    """``build(lib, func)(*tensors)`` for ember and for torch on the same float64 data."""
    results = []
    for lib, func, _ in LIBS:
        tensors = [lib.tensor(a) for a in arrays]
        results.append(build(lib, func)(*tensors))
    return results


def _flat(tree):
    if isinstance(tree, dict):
        return [x for k in sorted(tree) for x in _flat(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [x for item in tree for x in _flat(item)]
    return [tree]


def _assert_both(build, *arrays, **tol):
    e, t = _run_both(build, *arrays)
    assert type(e) is type(t) or isinstance(t, torch.Tensor)
    assert_same(_flat(e), _flat(t), **tol)
    return e, t


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("in_dims,out_dims,shape_a,shape_b", [
    (0, 0, (4, 3, 5), (4, 2)),
    (1, 0, (3, 4, 5), (2, 4)),
    (-1, 1, (3, 5, 4), (2, 4)),
    ((1, None), -1, (3, 4, 5), (2, 2)),
    ((0, 2), 2, (4, 3, 5), (2, 3, 4)),
    ((None, -3), 0, (3, 5), (4, 2, 2)),
])
def test_in_dims_out_dims_vs_torch(in_dims, out_dims, shape_a, shape_b):
    def build(lib, func):
        return func.vmap(lambda x, y: (x * 2 + y.sum()).sin(), in_dims=in_dims,
                         out_dims=out_dims)
    _assert_both(build, *_data(shape_a, shape_b))


def test_matrix_ops_nested_structures_and_kwargs():
    x, w, bias = _data((6, 3), (4, 3), (4,))

    def nested_args(lib, func):
        def f(pair, params, scale=1.0):
            u, v = pair
            return {"lin": (u @ params["w"].T + params["b"]) * scale, "dot": u.dot(v)}
        return lambda x, w, b: func.vmap(f, in_dims=((0, 0), {"w": None, "b": None}))(
            (x, x.flip(0)), {"w": w, "b": b}, scale=3.0)
    e, t = _run_both(nested_args, x, w, bias)
    assert sorted(e) == sorted(t)
    for k in t:
        assert_same(e[k], t[k])

    def lists_and_numbers(lib, func):
        return lambda x, w, b: func.vmap(lambda xs, n, none: [xs[0] * n, xs[1] - n],
                                         in_dims=([0, None], None, None))([x, w], 2.5, None)
    _assert_both(lists_and_numbers, x, w, bias)

    def dict_out_dims(lib, func):
        return lambda x, w, b: func.vmap(lambda u: {"a": u.outer(u), "b": u.sum()},
                                         out_dims={"a": 1, "b": 0})(x)
    _assert_both(dict_out_dims, x, w, bias)

    def namedtuple_out(lib, func):
        pair = collections.namedtuple("Pair", "first second")
        return lambda x, w, b: func.vmap(lambda u: pair(u.max(), u.argmax()))(x)
    e, t = _run_both(namedtuple_out, x, w, bias)
    assert type(e).__name__ == "Pair" and e._fields == t._fields
    assert_same(tuple(e), tuple(t))


def test_unbatched_outputs_with_out_dims_none():
    (x,) = _data((5, 3))

    def build(lib, func):
        const = lib.ones(2, dtype=lib.float64)
        return lambda x: func.vmap(lambda u: (u.cos(), const, "tag"), out_dims=(0, None, None))(x)
    e, t = _run_both(build, x)
    assert_same(list(e[:2]), list(t[:2]))
    assert e[2] == t[2] == "tag"
    # an output that does not depend on the batch, with an int out_dim, is repeated as torch
    _assert_both(lambda lib, func: func.vmap(lambda u: lib.arange(3.0, dtype=lib.float64),
                                             out_dims=0), x)


def test_nested_vmap_vs_torch():
    a, b = _data((4, 3), (5, 3))

    def pairwise(lib, func):
        dist = lambda u, v: ((u - v) ** 2).sum().sqrt()           # noqa: E731
        return func.vmap(func.vmap(dist, in_dims=(None, 0)), in_dims=(0, None))
    e, _ = _assert_both(pairwise, a, b)
    assert tuple(e.shape) == (4, 5)

    def inner_out_dim(lib, func):
        return func.vmap(func.vmap(lambda u, v: u * v, in_dims=(0, None), out_dims=1),
                         in_dims=(None, 0), out_dims=-1)
    e, _ = _assert_both(inner_out_dim, a, b)
    assert tuple(e.shape) == (3, 4, 5)


def test_top_level_vmap_is_the_func_one():
    assert ember.vmap is ember.func.vmap
    x = ember.arange(6.0).reshape(2, 3)
    assert_same(ember.vmap(ember.sum)(x), torch.vmap(torch.sum)(torch.arange(6.0).reshape(2, 3)))


def test_empty_batch_and_chunk_size():
    shapes = []
    for lib, func, _ in LIBS:
        out = func.vmap(lambda u: (u.sum(), u.outer(u)), out_dims=(0, 1))(lib.zeros(0, 3))
        shapes.append([tuple(o.shape) for o in out])
    assert shapes[0] == shapes[1]
    (x,) = _data((7, 4))
    for chunk in (1, 3, 7, 10):
        _assert_both(lambda lib, func: func.vmap(lambda u: u.softmax(0), chunk_size=chunk), x)


# ---------------------------------------------------------------- transforms inside/outside


def _linear_pair():
    ember.manual_seed(0)
    e_model = ember.nn.Linear(3, 2).double()
    t_model = torch.nn.Linear(3, 2).double()
    t_model.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                             for k, v in e_model.state_dict().items()})
    return e_model, t_model


@pytest.mark.parametrize("loss", ["mse", "cross_entropy"])
def test_per_sample_gradients_of_linear_model_vs_torch(loss):
    """torch.func's tutorial: vmap(grad(loss through functional_call)) over the batch."""
    e_model, t_model = _linear_pair()
    x, y = _data((8, 3), (8, 2), seed=1)
    labels = np.random.default_rng(2).integers(0, 2, size=8)
    grads = []
    for (lib, func, nn), model in zip(LIBS, (e_model, t_model)):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def sample_loss(params, sample, target, model=model, nn=nn, func=func):
            prediction = func.functional_call(model, params, (sample.unsqueeze(0),))
            if loss == "mse":
                return nn.functional.mse_loss(prediction, target.unsqueeze(0))
            return nn.functional.cross_entropy(prediction, target.unsqueeze(0))

        target = lib.tensor(y) if loss == "mse" else lib.tensor(labels)
        per_sample = func.vmap(func.grad(sample_loss), in_dims=(None, 0, 0))(
            params, lib.tensor(x), target)
        grads.append(per_sample)
    e, t = grads
    assert sorted(e) == sorted(t) == ["bias", "weight"]
    for k in t:
        assert_same(e[k], t[k])
        assert tuple(e[k].shape) == (8,) + tuple(t_model.get_parameter(k).shape)
    # the mean of per-sample gradients is the batch gradient of the mean loss
    e_model.zero_grad()
    out = e_model(ember.tensor(x))
    batch = (ember.nn.functional.mse_loss(out, ember.tensor(y)) if loss == "mse" else
             ember.nn.functional.cross_entropy(out, ember.tensor(labels)))
    batch.backward()
    for k, p in e_model.named_parameters():
        assert_same(e[k].mean(0), torch.from_numpy(p.grad.numpy().copy()))


def test_grad_of_vmap_and_vmap_of_jacrev_vs_torch():
    x, w = _data((5, 3), (3, 3))
    _assert_both(lambda lib, func: func.grad(
        lambda w, x: func.vmap(lambda row: (w @ row).tanh().sum())(x).sum()), w, x)
    _assert_both(lambda lib, func: func.vmap(func.jacrev(lambda u: u.sin() * u.sum())), x)
    _assert_both(lambda lib, func: func.vmap(func.jacfwd(lambda u: u.sin() * u.sum())), x)


def test_vmap_keeps_autograd_graph():
    (x,) = _data((4, 3))
    grads = []
    for lib, func, _ in LIBS:
        t = lib.tensor(x, requires_grad=True)
        func.vmap(lambda u: (u ** 3).sum())(t).sum().backward()
        grads.append(t.grad)
    assert_same(*grads)


# ---------------------------------------------------------------- errors


def _both_raise(call):
    """Run ``call(lib, func)`` for ember and torch; both raise the same type; messages."""
    messages = []
    for lib, func, _ in LIBS:
        with pytest.raises(Exception) as info:
            call(lib, func)
        messages.append((info.type, str(info.value)))
    assert messages[0][0] is messages[1][0], messages
    return messages[0][1], messages[1][1]


ERRORS = {
    "batch sizes": lambda lib, func: func.vmap(lambda a, b: a + b)(lib.ones(4, 3),
                                                                   lib.ones(5, 3)),
    "no mapped tensor": lambda lib, func: func.vmap(lambda a: a, in_dims=(None,))(lib.ones(2)),
    "no inputs": lambda lib, func: func.vmap(lambda: 1)(),
    "in_dims list": lambda lib, func: func.vmap(lambda a: a, in_dims=[0])(lib.ones(2)),
    "in_dims None": lambda lib, func: func.vmap(lambda a: a, in_dims=None)(lib.ones(2)),
    "in_dim float": lambda lib, func: func.vmap(lambda a: a, in_dims=(1.5,))(lib.ones(2)),
    "in_dim range": lambda lib, func: func.vmap(lambda a: a, in_dims=(2,))(lib.ones(2, 2)),
    "in_dim negative range": lambda lib, func: func.vmap(lambda a: a, in_dims=-3)(
        lib.ones(2, 2)),
    "mapped number": lambda lib, func: func.vmap(lambda a, n: a * n)(lib.ones(2), 3),
    "mapped None": lambda lib, func: func.vmap(lambda a, n: a)(lib.ones(2), None),
    "returns number": lambda lib, func: func.vmap(lambda a: 3)(lib.ones(2)),
    "batched with out_dim None": lambda lib, func: func.vmap(lambda a: a * 2, out_dims=None)(
        lib.ones(2, 3).cumsum(0)),
    "out_dims float": lambda lib, func: func.vmap(lambda a: a, out_dims=1.0)(lib.ones(2)),
    "out_dim range": lambda lib, func: func.vmap(lambda a: a * 2, out_dims=5)(lib.ones(4, 3)),
    "randomness name": lambda lib, func: func.vmap(lambda a: a, randomness="foo"),
    "chunk_size 0": lambda lib, func: func.vmap(lambda a: a, chunk_size=0),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    ember_message, torch_message = _both_raise(ERRORS[case])
    if case == "out_dim range":
        assert "Dimension out of range" in ember_message
    else:
        assert ember_message == torch_message


@pytest.mark.parametrize("call", [
    lambda lib, func: func.vmap(lambda a, b: a, in_dims=(0,))(lib.ones(2), lib.ones(2)),
    lambda lib, func: func.vmap(lambda d: d["a"], in_dims=({"a": 0, "c": None},))(
        {"a": lib.ones(2), "b": lib.ones(2)}),
    lambda lib, func: func.vmap(lambda xs: xs[0], in_dims=((0, 0),))([lib.ones(2)] * 2),
    lambda lib, func: func.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(lib.ones(2)),
    lambda lib, func: func.vmap(lambda a: a, out_dims=(0, 0))(lib.ones(2)),
], ids=["too few in_dims", "dict keys", "tuple for list", "too many out_dims",
        "two out_dims for a tensor"])
def test_structure_errors_match_torch(call):
    ember_message, torch_message = _both_raise(call)
    head = torch_message.split(" has structure")[0]
    assert ember_message.startswith(head)
    assert "structure" in ember_message


# ---------------------------------------------------------------- randomness


@pytest.mark.parametrize("random_op", [
    lambda lib, a: a + lib.rand(3, dtype=lib.float64),
    lambda lib, a: lib.rand_like(a),
    lambda lib, a: lib.nn.functional.dropout(a, 0.5),
    lambda lib, a: a[:1] + lib.randperm(3)[:1],
    lambda lib, a: a.clone().normal_(),
], ids=["rand", "rand_like", "dropout", "randperm", "normal_"])
def test_randomness_error_mode_refuses_random_ops(random_op):
    ember_message, torch_message = _both_raise(
        lambda lib, func: func.vmap(lambda a: random_op(lib, a))(lib.ones(4, 3,
                                                                          dtype=lib.float64)))
    assert ember_message == torch_message
    # and the error left nothing behind: random ops outside vmap work
    ember.rand(2)


def _draws(randomness, body, batch=4):
    out = []
    for lib, func, _ in LIBS:
        lib.manual_seed(7)
        result = func.vmap(lambda a: body(lib, a), randomness=randomness)(
            lib.ones(batch, 3, dtype=lib.float64))
        out.append((result, lib.rand(2, dtype=lib.float64)))    # and the generator after
    return out


@pytest.mark.parametrize("randomness", ["same", "different"])
@pytest.mark.parametrize("body", [
    lambda lib, a: a * lib.rand(3, dtype=lib.float64),
    lambda lib, a: lib.nn.functional.dropout(a, 0.5),
    lambda lib, a: a + lib.randint(0, 10, (3,)),
], ids=["rand", "dropout", "randint"])
def test_same_and_different_randomness_draw_torch_numbers(randomness, body):
    (e, e_next), (t, t_next) = _draws(randomness, body)
    assert_same(e, t)
    assert_same(e_next, t_next)
    rows_equal = all(bool((e[0] == e[i]).all()) for i in range(1, 4))
    assert rows_equal == (randomness == "same")


def test_nested_randomness_modes():
    results = []
    for lib, func, _ in LIBS:
        lib.manual_seed(3)
        inner = func.vmap(lambda a: a * lib.rand(2, dtype=lib.float64), randomness="different")
        results.append(func.vmap(inner, randomness="same")(lib.ones(3, 4, 2, dtype=lib.float64)))
        with pytest.raises(RuntimeError, match="randomness error mode"):
            func.vmap(func.vmap(lambda a: lib.rand_like(a), randomness="same"))(lib.ones(2, 2))
    assert_same(*results)
    assert bool((results[0][0] == results[0][2]).all())


def test_explicit_generator_under_same_randomness():
    draws = []
    for lib, func, _ in LIBS:
        gen = lib.Generator().manual_seed(11)
        draws.append(func.vmap(lambda a: a * lib.rand(3, generator=gen, dtype=lib.float64),
                               randomness="same")(lib.ones(3, 3, dtype=lib.float64)))
    assert_same(*draws)
