"""ember.func.jvp / jacfwd / hessian / linearize against torch.func on the same inputs:
values, shapes, pytrees, argnums, has_aux, strict, errors; compositions (jacfwd(jacfwd),
jacrev(jacfwd), jvp of jvp, grad of jvp, vmap of jvp); gradients kept through jvp."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

LIBS = ((ember, ember.func), (torch, torch.func))


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _run_both(build, *arrays):
    """``build(lib, func)(*tensors)`` for ember and for torch on the same float64 data."""
    return [build(lib, func)(*[lib.tensor(a) for a in arrays]) for lib, func in LIBS]


def _assert_both(build, *arrays, **tol):
    e, t = _run_both(build, *arrays)
    assert_same(e, t, **tol)
    return e, t


def _mlp(lib):
    def f(x, w1, w2):
        return (lib.tanh(x @ w1) @ w2).softmax(-1)
    return f


# ---------------------------------------------------------------- jvp


def test_jvp_values_and_tangents_vs_torch():
    x, w1, w2, tx, tw1, tw2 = _data((5, 3), (3, 4), (4, 2), (5, 3), (3, 4), (4, 2))
    e, t = _assert_both(lambda lib, func: lambda *a: func.jvp(_mlp(lib), a[:3], a[3:]),
                        x, w1, w2, tx, tw1, tw2)
    assert not e[1].requires_grad
    # several outputs, one of which ignores the input; a linear-algebra op
    _assert_both(lambda lib, func: lambda a, ta: func.jvp(
        lambda m: (lib.linalg.inv(m @ m.T + 3 * lib.eye(3, dtype=m.dtype)), m.new_ones(2)),
        (a,), (ta,)), w1[:, :3], tw1[:, :3])


def test_jvp_pytrees_aux_and_strict():
    x, w, tx, tw = _data((4,), (4, 4), (4,), (4, 4))

    def tree(lib, func):
        def f(inputs, scale):
            y = inputs["w"] @ inputs["x"] * scale
            return {"y": y, "norm": y.norm()}, y.detach().sum()
        return lambda x, w, tx, tw: func.jvp(lambda d: f(d, 2.0), ({"x": x, "w": w},),
                                             ({"x": tx, "w": tw},), has_aux=True)
    e, t = _run_both(tree, x, w, tx, tw)
    for k in ("y", "norm"):
        assert_same(e[0][k], t[0][k])
        assert_same(e[1][k], t[1][k])
    assert_same(e[2], t[2])
    for lib, func in LIBS:
        ones = lib.ones(2)
        with pytest.raises(RuntimeError, match="independent of the inputs"):
            func.jvp(lambda a: ones * 2, (ones,), (ones,), strict=True)
        zero = func.jvp(lambda a: ones * 2, (ones,), (ones,))[1]
        assert float(zero.abs().sum()) == 0


@pytest.mark.parametrize("call", [
    lambda lib, func: func.jvp(lambda a: a, lib.ones(2), (lib.ones(2),)),
    lambda lib, func: func.jvp(lambda a, b: a, (lib.ones(2), lib.ones(2)), (lib.ones(2),)),
    lambda lib, func: func.jvp(lambda a: a, (lib.ones(2),), (lib.ones(3),)),
    lambda lib, func: func.jvp(lambda a: a, ((),), ((),)),
    lambda lib, func: func.jvp(lambda a: 3, (lib.ones(2),), (lib.ones(2),)),
    lambda lib, func: func.jvp(lambda a: a, (lib.ones(2),), (lib.ones(2),), has_aux=True),
], ids=["primals not tuple", "structure", "tangent shape", "no tensors", "non-tensor output",
        "aux missing"])
def test_jvp_errors_are_runtime_errors_as_torch(call):
    messages = []
    for lib, func in LIBS:
        with pytest.raises(RuntimeError) as info:
            call(lib, func)
        messages.append(str(info.value))
    head = messages[1].split(" structure ")[0].split(" size ")[0].split("Tensor is of")[0]
    assert messages[0].startswith(head[:40])


def test_jvp_keeps_graph_for_inputs_that_require_grad():
    x, tx = _data((3,), (3,))
    grads = []
    for lib, func in LIBS:
        p = lib.tensor(x, requires_grad=True)
        out, tangent = func.jvp(lambda a: (a.sin() * a).exp(), (p,), (lib.tensor(tx),))
        (out.sum() + tangent.sum()).backward()
        grads.append(p.grad)
    assert_same(*grads)


# ---------------------------------------------------------------- jacfwd, hessian


@pytest.mark.parametrize("argnums", [0, 1, (0, 2), (2, 1)])
def test_jacfwd_vs_torch(argnums):
    x, w1, w2 = _data((2, 3), (3, 4), (4, 2))
    e, _ = _assert_both(lambda lib, func: func.jacfwd(_mlp(lib), argnums=argnums), x, w1, w2)
    _assert_both(lambda lib, func: func.jacrev(_mlp(lib), argnums=argnums), x, w1, w2)


def test_jacfwd_outputs_aux_scalar_and_dict_inputs():
    x, y = _data((3,), (2, 2))
    _assert_both(lambda lib, func: func.jacfwd(lambda a, b: (a.sum() * b, a.cumsum(0)),
                                               argnums=(0, 1)), x, y)
    _assert_both(lambda lib, func: func.jacfwd(lambda a: (a.exp(), a.max()), has_aux=True), x)
    s = np.array(0.3)
    _assert_both(lambda lib, func: func.jacfwd(lambda a: lib.stack([a.sin(), a.cos()])), s)
    e, t = _run_both(lambda lib, func: lambda a, b: func.jacfwd(
        lambda d: d["a"].outer(d["b"].flatten()))({"a": a, "b": b}), x, y)
    assert sorted(e) == sorted(t)
    for k in t:
        assert_same(e[k], t[k])


def test_jacfwd_refuses_complex_as_torch():
    for lib, func in LIBS:
        z = lib.ones(2, dtype=lib.complex64)
        with pytest.raises(RuntimeError, match="Expected all inputs to be real"):
            func.jacfwd(lambda a: a)(z)
        with pytest.raises(RuntimeError, match="Expected all outputs to be real"):
            func.jacfwd(lambda a: a * z)(lib.ones(2))


def test_jacfwd_random_ops_follow_vmap_randomness():
    for lib, func in LIBS:
        with pytest.raises(RuntimeError, match="randomness error mode"):
            func.jacfwd(lambda a: a * lib.rand(2))(lib.ones(2))
    (x,) = _data((2,))
    results = []
    for lib, func in LIBS:
        lib.manual_seed(5)
        results.append(func.jacfwd(lambda a: a * lib.rand(2, dtype=lib.float64),
                                   randomness="same")(lib.tensor(x)))
    assert_same(*results)


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_hessian_vs_torch(argnums):
    x, w = _data((3,), (3, 3))

    def build(lib, func):
        return func.hessian(lambda a, m: (a @ m @ a).sin() + (a ** 3).sum() + (a * m).tanh().sum()
                            + m.sigmoid().sum(), argnums=argnums)
    e, _ = _assert_both(build, x, w)
    leaves = [e] if argnums == 0 else [b for row in e for b in row]
    assert not any(b.requires_grad for b in leaves)


@pytest.mark.parametrize("compose", ["jacfwd(jacfwd)", "jacrev(jacfwd)", "jacrev(jacrev)"])
def test_second_order_compositions_vs_torch(compose):
    (x,) = _data((3,))

    def build(lib, func):
        outer, inner = compose.rstrip(")").split("(")
        f = lambda a: (a.sin() * a.roll(1, 0)).exp()             # noqa: E731
        return getattr(func, outer)(getattr(func, inner)(f))
    _assert_both(build, x)


def test_jvp_of_jvp_grad_of_jvp_and_vmap_of_jvp_vs_torch():
    x, u, v = _data((3,), (3,), (3,))

    def f(lib):
        return lambda a: (a.tanh() * a.sum()).exp()

    def jvp_of_jvp(lib, func):
        inner = lambda a: func.jvp(f(lib), (a,), (lib.tensor(u),))[1]   # noqa: E731
        return lambda a: func.jvp(inner, (a,), (lib.tensor(v),))
    _assert_both(jvp_of_jvp, x)

    def grad_of_jvp(lib, func):
        return func.grad(lambda a: func.jvp(f(lib), (a,), (lib.tensor(u),))[1].sum())
    _assert_both(grad_of_jvp, x)

    def vmap_of_jvp(lib, func):
        return lambda a, t: func.vmap(lambda ti: func.jvp(f(lib), (a,), (ti,)),
                                      in_dims=0)(t)
    _assert_both(vmap_of_jvp, x, np.stack([u, v]))


# ---------------------------------------------------------------- linearize


def test_linearize_vs_torch():
    x, t1, t2 = _data((2, 3), (2, 3), (2, 3))
    results = []
    for lib, func in LIBS:
        out, jvp_fn = func.linearize(lambda a: (a.sin() @ a.T).tanh(), lib.tensor(x))
        results.append((out, jvp_fn(lib.tensor(t1)), jvp_fn(lib.tensor(t2))))
        with pytest.raises(RuntimeError, match="doesn't match the shape"):
            jvp_fn(lib.ones(3, 2, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="doesn't match the dtype"):
            jvp_fn(lib.ones(2, 3, dtype=lib.float32))
        with pytest.raises(RuntimeError, match="same argspec"):
            jvp_fn(lib.tensor(t1), lib.tensor(t2))
    assert_same(*results)
