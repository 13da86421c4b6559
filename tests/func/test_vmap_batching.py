"""vmap's batched path (``ember/func/_batching.py``): which calls it takes, that its results
are torch's, and that everything it cannot batch falls back to the per-element loop with the
loop's results (``_vmap.last_call`` tells which path a call took and why)."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same
from ember.func import _vmap

LIBS = ((ember, ember.func), (torch, torch.func))


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _both(build, *arrays, expect_path="batched", **tol):
    """``build(lib)(*tensors)`` on ember (checking the path it took) and on torch."""
    results = []
    for lib, func in LIBS:
        results.append(build(lib, func)(*[lib.tensor(a) for a in arrays]))
        if lib is ember:
            assert _vmap.last_call.path == expect_path, _vmap.last_call.reason
    assert_same(results[0], results[1], **tol)
    return results


# ---------------------------------------------------------------- rules vs torch

CASES = {
    # pointwise, broadcasting between batched operands of different ranks and unbatched ones
    "pointwise": ((lambda lib, x, y: (x * y + x.exp() - y).tanh()), (0, None), (5, 3, 4), (4,)),
    "pointwise lower-rank batched": ((lambda lib, x, y: x / (y.abs() + 1) ** 2), (0, 0),
                                     (5, 3, 4), (5, 4)),
    "where clamp": ((lambda lib, x, y: lib.where(x > 0, x, y * 0.1).clamp(-0.5, 0.5)),
                    (0, 0), (5, 3), (5, 3)),
    "relu sigmoid gelu": ((lambda lib, x, y: lib.nn.functional.gelu(x).relu() + y.sigmoid()),
                          (1, None), (3, 5), (3,)),
    # reductions and dims
    "sum mean var": ((lambda lib, x, y: x.sum(0) + x.mean() * x.var(0).sum() + y.mean(0)),
                     (0, 0), (5, 3, 4), (5, 2, 4)),
    "amax max logsumexp norm": ((lambda lib, x, y: x.amax(-1, keepdim=True) + x.max()
                                 + x.logsumexp(0) + y.norm()), (0, None), (5, 3, 4), (2, 2)),
    "softmax log_softmax cumsum": ((lambda lib, x, y: x.softmax(-1) + x.log_softmax(0)
                                    + x.cumsum(1)), (2, None), (3, 4, 5), (1,)),
    "max dim argmax sort": ((lambda lib, x, y: x.max(1).values + x.argmax(1)
                             + x.sort(1).values[:, 0]), (0, None), (5, 3, 4), (1,)),
    # the matmul family
    "matmul batched @ weight": ((lambda lib, x, w: x @ w), (0, None), (5, 3, 4), (4, 2)),
    "weight @ batched": ((lambda lib, x, w: w.T @ x), (1, None), (4, 5, 3), (4, 2)),
    "batched @ batched, ranks differ": ((lambda lib, x, w: x @ w), (0, 0), (5, 3, 4),
                                        (5, 2, 4, 3)),
    "vectors: dot mv vecmat": ((lambda lib, x, w: x.dot(x) + (w @ x).sum() + (x @ w.T).sum()),
                               (0, None), (5, 4), (3, 4)),
    "linear addmm bmm": ((lambda lib, x, w: lib.nn.functional.linear(x, w, w[:, 0])
                          + lib.addmm(w[:, 0], x, w.T) + lib.bmm(x[None], w.T[None])[0]),
                         (0, None), (5, 2, 4), (3, 4)),
    # views, indexing, joining
    "views": ((lambda lib, x, y: x.reshape(4, 3).t().flatten().view(2, 6).permute(1, 0)
               .unsqueeze(1).squeeze(1).expand(2, 6, 2).sum(-1) + y.transpose(0, 1)),
              (0, None), (5, 3, 4), (6, 2)),
    "indexing": ((lambda lib, x, y: x[0] + x[:, 1:3].sum(1).narrow(0, 1, 1)
                  + x[..., None][1, :, 0] + x.select(0, 2)), (0, None), (5, 3, 4), (1,)),
    "cat stack unbind split": ((lambda lib, x, y: lib.cat([x, y], 0).sum(0)
                                + lib.stack([x[0], y[0]]).sum(0) + sum(x.unbind(0))
                                + x.split([1, 2], 0)[1].sum(0)), (0, None), (5, 3, 4), (2, 4)),
    "gather index_select": ((lambda lib, x, i: x.gather(1, i) + x.index_select(0, i[0])[:1]),
                            (0, None), (5, 3, 4), "index"),
    "losses": ((lambda lib, x, y: lib.nn.functional.mse_loss(x, y)
                + lib.nn.functional.cross_entropy(x, y.softmax(-1))), (0, 0), (5, 3, 4),
               (5, 3, 4)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_rules_vs_torch(case):
    fn, in_dims, shape_x, shape_y = CASES[case]
    arrays = _data(shape_x, shape_y if shape_y != "index" else (1,))
    if shape_y == "index":
        arrays[1] = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])

    def build(lib, func):
        return func.vmap(lambda x, y: fn(lib, x, y), in_dims=in_dims)
    _both(build, *arrays)


def _mlp_pair(widths=(6, 5, 3)):
    ember.manual_seed(0)
    layers = [ember.nn.Linear(widths[0], widths[1]), ember.nn.ReLU(),
              ember.nn.Linear(widths[1], widths[2])]
    e_model = ember.nn.Sequential(*layers).double()
    t_model = torch.nn.Sequential(torch.nn.Linear(widths[0], widths[1]), torch.nn.ReLU(),
                                  torch.nn.Linear(widths[1], widths[2])).double()
    t_model.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                             for k, v in e_model.state_dict().items()})
    return e_model, t_model


@pytest.mark.parametrize("loss", ["cross_entropy", "mse_loss"])
def test_per_sample_gradients_of_an_mlp_are_batched(loss):
    """torch.func's tutorial pattern on a two-layer MLP takes the batched path; its gradients
    are torch's, and the same as the forced loop's."""
    e_model, t_model = _mlp_pair()
    x, y = _data((9, 6), (9, 3), seed=3)
    labels = np.random.default_rng(4).integers(0, 3, size=9)
    grads = []
    for (lib, func), model in zip(LIBS, (e_model, t_model)):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def sample_loss(params, sample, target, model=model, lib=lib, func=func):
            out = func.functional_call(model, params, (sample.unsqueeze(0),))
            return getattr(lib.nn.functional, loss)(out, target.unsqueeze(0))

        target = lib.tensor(labels) if loss == "cross_entropy" else lib.tensor(y)
        compute = func.vmap(func.grad(sample_loss), in_dims=(None, 0, 0))
        grads.append(compute(params, lib.tensor(x), target))
        if lib is ember:
            assert _vmap.last_call.path == "batched", _vmap.last_call.reason
            _vmap.last_call.enabled = False
            try:
                looped = compute(params, lib.tensor(x), target)
            finally:
                _vmap.last_call.enabled = True
            assert _vmap.last_call.path == "loop"
    for k in grads[1]:
        assert_same(grads[0][k], grads[1][k])
        assert_same(looped[k], grads[1][k])


def test_nested_vmap_batches_the_outer_level():
    a, b = _data((4, 3), (5, 3))

    def build(lib, func):
        dist = lambda u, v: ((u - v) ** 2).sum().sqrt()    # noqa: E731
        return func.vmap(func.vmap(dist, in_dims=(None, 0)), in_dims=(0, None))
    _both(build, a, b)


def test_unbatched_and_input_outputs():
    """Outputs that do not depend on the batch are repeated; an input returned as is comes
    back as a copy (writing to it leaves the input alone), as the loop's stack gives."""
    (x,) = _data((4, 3))
    _both(lambda lib, func: func.vmap(lambda u, c: (u, c * 2), in_dims=(0, None)),
          x, np.ones(2))
    t = ember.tensor(x)
    out = ember.vmap(lambda u: u)(t)
    out.add_(1)
    assert_same(t, torch.tensor(x))


# ---------------------------------------------------------------- falling back


def test_python_values_that_agree_stay_batched():
    """bool()/item() on a batched value is a guard: batched while every element gives element
    0's value (here, an argument check), the loop otherwise. torch's vmap refuses both, so the
    reference is the closed form."""
    (x,) = _data((6, 3))
    t = ember.tensor(x)

    def checked(u):
        if bool((u.abs() >= 0).all()):
            return u * 2
        return u

    assert_same(ember.vmap(checked)(t), torch.tensor(x * 2))
    assert _vmap.last_call.path == "batched"
    scaled = ember.vmap(lambda u: u * u.sum().item())(t)
    assert _vmap.last_call.path == "loop"
    assert "differs" in _vmap.last_call.reason
    assert_same(scaled, torch.tensor(x * x.sum(1, keepdims=True)))


def test_cross_entropy_target_check_still_raises_for_a_later_element():
    """cross_entropy's target-range check passes for element 0; the guard sends the batch to
    the loop, which raises for the bad element as an unbatched call does."""
    logits = ember.tensor(_data((4, 1, 3))[0])
    target = ember.tensor([[0], [1], [7], [2]])
    with pytest.raises(IndexError) as batched_error:
        ember.vmap(ember.nn.functional.cross_entropy)(logits, target)
    with pytest.raises(IndexError) as eager_error:
        ember.nn.functional.cross_entropy(logits[2], target[2])
    assert str(batched_error.value) == str(eager_error.value)


@pytest.mark.parametrize("fn,reason", [
    (lambda lib, u: u.clone().mul_(2) + 1, "in-place"),
    (lambda lib, u: lib.histc(u, bins=3).sum().expand(3), "no batching rule"),
    (lambda lib, u: u[u > 0].sum().expand(4), "no batching rule"),
], ids=["in-place", "no rule", "data-dependent shape"])
def test_fallbacks_give_torch_results(fn, reason):
    """Each thing the replay cannot do sends the call to the loop (results vs torch)."""
    (x,) = _data((5, 4))
    if reason == "no batching rule" and "histc" in fn.__code__.co_names:
        e = ember.vmap(lambda u: fn(ember, u))(ember.tensor(x))
        t = torch.vmap(lambda u: fn(torch, u))(torch.tensor(x))
    else:  # torch's vmap refuses data-dependent shapes: torch per element is the reference
        e = ember.vmap(lambda u: fn(ember, u))(ember.tensor(x))
        t = torch.stack([fn(torch, u) for u in torch.tensor(x)])
    assert _vmap.last_call.path == "loop"
    assert reason in _vmap.last_call.reason
    assert_same(e, t)


def test_randomness_and_graphs_loop():
    ember.manual_seed(0)
    ember.vmap(lambda u: u * ember.rand(3), randomness="different")(ember.ones(2, 3))
    assert _vmap.last_call.reason == "a random draw"
    w = ember.ones(3, requires_grad=True)
    out = ember.vmap(lambda u: (u * w).sum())(ember.ones(2, 3))
    assert "autograd graph" in _vmap.last_call.reason
    out.sum().backward()
    assert_same(w.grad, torch.full((3,), 2.0))


# ---------------------------------------------------------------- writes run_op does not see

DIRECT_WRITES = {
    "indexed assignment of a number": lambda lib, y, v: y.__setitem__(0, 5.0),
    "indexed assignment of a tensor": lambda lib, y, v: y.__setitem__((slice(None), [1, 3]), v),
    "fill_": lambda lib, y, v: y.fill_(2.0),
    "copy_": lambda lib, y, v: y.copy_(y * 3),
    "masked_fill_": lambda lib, y, v: y.masked_fill_(y > 0, 0.0),
}


@pytest.mark.parametrize("name", DIRECT_WRITES)
def test_direct_writes_into_a_clone_take_the_loop(name):
    """Writes without autograd go straight to the array (no operator is recorded); the
    recording notices the version change and the loop gives torch's results."""
    write = DIRECT_WRITES[name]
    value = _data((4, 2), seed=1)[0]

    def build(lib, func):
        def f(x):
            y = x.clone()
            write(lib, y, lib.tensor(value))
            return y
        return func.vmap(f)
    _both(build, *_data((3, 4, 5)), expect_path="loop")
