"""Forward-mode AD (ember.autograd.forward_ad) against torch.autograd.forward_ad: the same
primals and tangents (float64), for pointwise, special, activation, reduction and shape ops."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same


def _data(shape, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def run_jvp(fn, arrays, tangents):
    """``fn(lib, *duals)`` in ember and torch; returns the (primal, tangent) pairs of both."""
    results = []
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            duals = [lib.tensor(a) if t is None else fw.make_dual(lib.tensor(a), lib.tensor(t))
                     for a, t in zip(arrays, tangents)]
            out = fn(lib, *duals)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            results.append([tuple(fw.unpack_dual(o)) for o in outs])
    return results


def check(fn, *shapes, domain=(-2.0, 2.0), tangent_for=None, seed=0, rtol=1e-7, atol=1e-9):
    arrays = [_data(s, seed + i, *domain) for i, s in enumerate(shapes)]
    tangents = [_data(s, seed + 10 + i) if tangent_for is None or i in tangent_for else None
                for i, s in enumerate(shapes)]
    mine, theirs = run_jvp(fn, arrays, tangents)
    for (p, t), (tp, tt) in zip(mine, theirs):
        assert_same(p, tp, rtol=rtol, atol=atol)
        if tt is None:  # torch skips tangents that are known zeros
            assert t is None or not t.detach().numpy().any()
        else:
            assert t is not None
            assert_same(t, tt, rtol=rtol, atol=atol)


POS = (0.2, 3.0)
UNIT = (-0.9, 0.9)
PROB = (0.05, 0.95)

UNARY = {
    "exp2": None, "expm1": None, "log2": POS, "log10": POS, "log1p": POS, "rsqrt": POS,
    "tan": (-1.2, 1.2), "asin": UNIT, "acos": UNIT, "atan": None, "sinh": None, "cosh": None,
    "asinh": None, "acosh": (1.1, 3.0), "atanh": UNIT, "sigmoid": None, "erf": None,
    "erfc": None, "erfinv": UNIT, "lgamma": POS, "digamma": POS, "i0": None, "sign": None,
    "sgn": None, "floor": None, "ceil": None, "trunc": None, "frac": None, "round": None,
    "reciprocal": POS, "deg2rad": None, "rad2deg": None, "sinc": None, "relu": None,
    "abs": None, "neg": None, "square": None, "logit": PROB, "nan_to_num": None,
    "exp": None, "log": POS, "sqrt": POS, "sin": None, "cos": None, "tanh": None,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    check(lambda lib, x: getattr(lib, name)(x), (3, 4), domain=UNARY[name] or (-2.0, 2.0))


def test_unary_method_noncontiguous_and_0dim():
    check(lambda lib, x: x.t().sigmoid(), (3, 4))
    check(lambda lib, x: lib.erf(x), ())
    check(lambda lib, x: lib.atan(x), (0, 3))


SPECIAL = {
    "erfcx": None, "i0e": None, "i1": None, "i1e": None, "ndtr": None, "ndtri": PROB,
    "log_ndtr": None, "entr": POS, "expit": None, "logit": PROB, "erfinv": UNIT,
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_unary(name):
    check(lambda lib, x: getattr(lib.special, name)(x), (3, 4),
          domain=SPECIAL[name] or (-2.0, 2.0))


def test_polygamma_and_mvlgamma():
    check(lambda lib, x: lib.polygamma(2, x), (5,), domain=POS)
    check(lambda lib, x: lib.mvlgamma(x, 2), (5,), domain=(1.5, 3.0))


BINARY = {
    "atan2": None, "hypot": None, "maximum": None, "minimum": None, "fmax": None,
    "fmin": None, "copysign": None, "logaddexp": None, "logaddexp2": None, "xlogy": POS,
    "fmod": POS, "remainder": POS, "add": None, "sub": None, "mul": None, "div": POS,
    "pow": POS,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)),
                                    ((), (3,))])
@pytest.mark.parametrize("which", [(0,), (1,), (0, 1)])
def test_binary_broadcast(name, shapes, which):
    check(lambda lib, x, y: getattr(lib, name)(x, y), *shapes, domain=BINARY[name] or (-2, 2),
          tangent_for=which)


@pytest.mark.parametrize("which", [(0,), (1,), (0, 1)])
def test_special_binary(which):
    check(lambda lib, x, y: lib.special.xlog1py(x, y), (3, 4), (4,), domain=POS,
          tangent_for=which)
    for lib in (ember, torch):  # torch has no forward formula for zeta: both refuse
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(lib.tensor([2.0, 3.0]), lib.tensor([1.0, 1.0]))
            with pytest.raises(NotImplementedError):
                lib.special.zeta(x, lib.tensor([1.0, 2.0]))


def test_rounded_div_lerp_clamp():
    check(lambda lib, x, y: lib.div(x, y, rounding_mode="floor"), (3,), (3,), domain=POS)
    check(lambda lib, x, y: lib.div(x, y, rounding_mode="trunc"), (3,), (3,), domain=POS)
    check(lambda lib, x, y, w: lib.lerp(x, y, w), (3, 4), (4,), (3, 1))
    check(lambda lib, x: lib.lerp(x, x * 2, 0.3), (3, 4))
    check(lambda lib, x: lib.clamp(x, -0.5, 0.7), (3, 4))
    check(lambda lib, x, lo, hi: lib.clamp(x, lo, hi), (3, 4), (4,), (3, 1),
          tangent_for=(0, 1, 2))
    check(lambda lib, x, y, z: lib.addcmul(x, y, z, value=0.5), (3, 4), (4,), (3, 1))
    check(lambda lib, x, y, z: lib.addcdiv(x, y, z, value=0.5), (3, 4), (4,), (3, 1),
          domain=POS)


def test_comparisons_carry_no_tangent():
    check(lambda lib, x, y: (x > y, lib.isnan(x), x.argmax(), x.signbit()), (3, 4), (4,))
    mine, theirs = run_jvp(lambda lib, x: (x > 0, x.argmax(), x.max(0).indices),
                           [_data((3, 4), 0)], [_data((3, 4), 1)])
    assert all(t is None for _, t in mine) and all(t is None for _, t in theirs)


ACTIVATIONS = {
    "relu": {}, "relu6": {}, "elu": {"alpha": 0.7}, "selu": {}, "celu": {"alpha": 1.3},
    "gelu": {}, "silu": {}, "mish": {}, "softplus": {"beta": 2.0, "threshold": 3.0},
    "logsigmoid": {}, "hardsigmoid": {}, "hardswish": {}, "hardtanh": {"min_val": -0.5},
    "leaky_relu": {"negative_slope": 0.2}, "hardshrink": {"lambd": 0.3},
    "softshrink": {"lambd": 0.3}, "tanhshrink": {}, "softsign": {}, "sigmoid": {},
    "tanh": {},
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name):
    kwargs = ACTIVATIONS[name]
    check(lambda lib, x: getattr(lib.nn.functional, name)(x, **kwargs), (3, 5))


def test_activation_variants():
    check(lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"), (3, 5))
    check(lambda lib, x: lib.nn.functional.threshold(x, 0.1, -2.0), (3, 5))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(dim):
    check(lambda lib, x: lib.nn.functional.softmax(x, dim=dim), (3, 5))
    check(lambda lib, x: lib.nn.functional.log_softmax(x, dim=dim), (3, 5))
    check(lambda lib, x: x.softmax(dim).log_softmax(dim), (3, 5))


REDUCTIONS = {
    "amax": lambda lib, x, d, k: lib.amax(x, d, keepdim=k),
    "amin": lambda lib, x, d, k: lib.amin(x, d, keepdim=k),
    "max_dim": lambda lib, x, d, k: lib.max(x, d, keepdim=k).values,
    "min_dim": lambda lib, x, d, k: lib.min(x, d, keepdim=k).values,
    "prod": lambda lib, x, d, k: lib.prod(x, d, keepdim=k),
    "var": lambda lib, x, d, k: lib.var(x, d, keepdim=k),
    "var0": lambda lib, x, d, k: lib.var(x, d, keepdim=k, correction=0),
    "std": lambda lib, x, d, k: lib.std(x, d, keepdim=k),
    "norm": lambda lib, x, d, k: lib.linalg.vector_norm(x, 2, d, keepdim=k),
    "norm1": lambda lib, x, d, k: lib.linalg.vector_norm(x, 1, d, keepdim=k),
    "norm3": lambda lib, x, d, k: lib.linalg.vector_norm(x, 3, d, keepdim=k),
    "norminf": lambda lib, x, d, k: lib.linalg.vector_norm(x, float("inf"), d, keepdim=k),
    "logsumexp": lambda lib, x, d, k: lib.logsumexp(x, d, keepdim=k),
    "sum": lambda lib, x, d, k: lib.sum(x, d, keepdim=k),
    "mean": lambda lib, x, d, k: lib.mean(x, d, keepdim=k),
    "nansum": lambda lib, x, d, k: lib.nansum(x, d, keepdim=k),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_dim(name, dim, keepdim):
    check(lambda lib, x: REDUCTIONS[name](lib, x, dim, keepdim), (3, 4, 2))


@pytest.mark.parametrize("name", ["amax", "amin", "var", "std", "norm", "logsumexp"])
def test_reduction_multi_dim(name):
    check(lambda lib, x: REDUCTIONS[name](lib, x, (0, 2), True), (3, 4, 2))
    check(lambda lib, x: REDUCTIONS[name](lib, x, (-1, 0), False), (3, 4, 2))


def test_full_reductions_and_ties():
    check(lambda lib, x: (x.max(), x.min(), x.prod(), x.var(), x.std(), x.norm(),
                          x.logsumexp((0, 1)), x.amax()), (3, 4))
    ties = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.5]])
    tang = _data((2, 3), 5)
    for fn in (lambda lib, x: x.max(), lambda lib, x: x.amax(1), lambda lib, x: x.amin(0),
               lambda lib, x: x.max(1).values):
        mine, theirs = run_jvp(fn, [ties], [tang])
        assert_same(mine[0][1], theirs[0][1])


def test_prod_with_zeros():
    x = np.array([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [1.0, 2.0, -1.0]])
    t = _data((3, 3), 4)
    for fn in (lambda lib, a: a.prod(1), lambda lib, a: a.prod(), lambda lib, a: a.prod(0)):
        mine, theirs = run_jvp(fn, [x], [t])
        assert_same(mine[0][1], theirs[0][1])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumulative(dim):
    check(lambda lib, x: lib.cumsum(x, dim), (3, 4))
    check(lambda lib, x: lib.cumprod(x, dim), (3, 4))
    x = np.array([[1.5, 0.0, 2.0, 1.0], [0.0, 0.0, 3.0, 2.0], [1.0, 2.0, -1.0, 0.0]])
    mine, theirs = run_jvp(lambda lib, a: lib.cumprod(a, dim), [x], [_data((3, 4), 6)])
    assert_same(mine[0][1], theirs[0][1])


@pytest.mark.parametrize("dim", [0, -1])
def test_selecting_ops(dim):
    check(lambda lib, x: (lib.sort(x, dim).values, lib.sort(x, dim, descending=True).values,
                          lib.topk(x, 2, dim).values, lib.topk(x, 2, dim, largest=False).values,
                          lib.kthvalue(x, 2, dim).values, lib.median(x, dim).values,
                          lib.nanmedian(x, dim, keepdim=True).values,
                          lib.mode(x.round(), dim).values, lib.cummax(x, dim).values,
                          lib.cummin(x, dim).values, x.median(), x.nanmedian()), (3, 4))


@pytest.mark.parametrize("dim", [0, -1])
def test_logcumsumexp_diff(dim):
    check(lambda lib, x: lib.logcumsumexp(x, dim), (3, 4))
    # A wide range, where torch's own jvp underflows to ~0: vs sum_{i<=k} t_i exp(x_i - y_k).
    x, t = _data((3, 4), 0, -60.0, 60.0), _data((3, 4), 1)
    (_, tangent), = run_jvp(lambda lib, a: lib.logcumsumexp(a, dim), [x], [t])[0]
    xm, tm = np.moveaxis(x, dim, 0), np.moveaxis(t, dim, 0)
    y = np.logaddexp.accumulate(xm, 0)
    exact = np.stack([(tm[:k + 1] * np.exp(xm[:k + 1] - y[k])).sum(0) for k in range(len(y))])
    np.testing.assert_allclose(tangent.numpy(), np.moveaxis(exact, 0, dim), rtol=1e-10)
    check(lambda lib, x: lib.diff(x, dim=dim), (3, 4))
    check(lambda lib, x: lib.diff(x, n=2, dim=dim), (3, 4))
    # complex input: the same values and tangents as torch (its imaginary parts unwrapped)
    rng = np.random.default_rng(5)
    z = rng.standard_normal((3, 4)) * 2 + 4j * rng.standard_normal((3, 4))
    tz = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    check_pairs(lambda lib, a: lib.logcumsumexp(a, dim), [z], [tz], func_jvp=False)


def test_inplace_on_dual():
    check(lambda lib, x: x.clone().sin_().mul_(2.0).clamp_(-1.0, 1.0), (3, 4))
    check(lambda lib, x, y: x.clone().add_(y).sigmoid_(), (3, 4), (4,))


def _write_into_view(lib, x, src):
    y = x.clone()
    y[1:, ::2].copy_(src)
    y.diagonal().mul_(3.0)
    return y


def _fill_and_zero(lib, x):
    y = x.clone()
    y[0].fill_(2.0)
    y[:, -1].zero_()
    return y, x.clone().fill_(1.5), x.clone().zero_()


def test_inplace_writes_through_views_carry_tangents():
    """The written elements take the source's tangent (zero for a constant) and the base's
    tangent changes there, as torch's in-place forward AD."""
    check(_write_into_view, (3, 4), (2, 2))
    check(_write_into_view, (3, 4), (2, 2), tangent_for=(1,))
    check(_fill_and_zero, (3, 4))
    check(lambda lib, x, v: x.clone().fill_(v), (3,), ())
    check(lambda lib, x, v: x.index_fill(1, lib.tensor([0, 2]), v), (2, 3), ())


def _views_after_base_writes(lib, x, s):
    y = x.clone()
    v, w = y[1:3], y[:, 2:]
    y.mul_(2)                    # every view of y sees the change
    before = v * 1
    v.add_(s)                    # and a write through one view reaches the others
    return before, y, w, v.t()


def test_views_see_in_place_writes_to_their_base():
    """A view's tangent is its base's at the view's elements, also after the base (or
    another view of it) was written in place, as torch's views of the base's tangent."""
    check(_views_after_base_writes, (4, 5), (2, 5))
    check(_views_after_base_writes, (4, 5), (2, 5), tangent_for=(1,))


def _write_through_duals(lib, x, s):
    x[1:].mul_(3.0)              # a view of the dual: the dual's own tangent changes there
    middle = x[1:3]
    x[2:].copy_(s)
    return x * 1, middle * 1


def test_writes_through_views_of_a_dual_reach_the_dual():
    """make_dual's result is a view of a primal without a tangent: writes through views of
    it change the dual's tangent (not the primal's), as torch."""
    check(_write_through_duals, (4,), (2,))
    check(_write_through_duals, (4,), (2,), tangent_for=(0,))


@pytest.mark.parametrize("name, view, src_shape", [
    ("slice_scatter", lambda lib, x, s: lib.slice_scatter(x, s, 1, 1, 4, 2), (3, 2)),
    ("select_scatter", lambda lib, x, s: lib.select_scatter(x, s, 0, 1), (5,)),
    ("diagonal_scatter", lambda lib, x, s: lib.diagonal_scatter(x, s, 1), (3,)),
])
def test_scatter_into_views_carry_src_tangent(name, view, src_shape):
    check(view, (3, 5), src_shape)
    check(view, (3, 5), src_shape, tangent_for=(1,))


def test_scatter_with_repeated_indices_takes_the_written_tangent():
    """scatter's tangent is the same scatter of the tangents: where an index repeats, the
    tangent of the element whose value was written (max_unpool builds on it)."""
    index = [[0, 2, 0, 1], [1, 1, 1, 0]]
    check(lambda lib, x, src: x.scatter(1, lib.tensor(index), src), (2, 3), (2, 4))
    check(lambda lib, x, src: x.scatter(1, lib.tensor(index), src), (2, 3), (2, 4),
          tangent_for=(1,))
    pooled = [[[1, 1, 4, 4]]]
    check(lambda lib, x: lib.nn.functional.max_unpool1d(x, lib.tensor(pooled), 3, 2,
                                                       output_size=(9,)), (1, 1, 4))


def test_eig_and_eigvals_tangents():
    """linalg.eig's tangents: dL = diag(V^-1 dA V), dV keeping unit-norm eigenvectors."""
    check(lambda lib, a: tuple(lib.linalg.eig(a)), (4, 4))
    check(lambda lib, a: lib.linalg.eigvals(a), (2, 3, 3))
    check(lambda lib, a: tuple(lib.linalg.eig(a)), (0, 3, 3))


@pytest.mark.parametrize("correction", [1, 2])
def test_cov_with_float32_weights_rounds_as_torch(correction):
    """A quotient's tangent is torch's (ta - tb * y) / b: with float32 weights its rounding
    (amplified by a small normaliser) then matches torch's."""
    x = np.array([[-4.826984902407649, -7.582430495695129, -0.6046891126565539],
                  [-1.5411692216498662, -1.9719097652168658, -4.146041530864057]])
    tx = np.array([[-1.8580434300552766, 2.100538024945526, 0.8259432547407205],
                   [-0.137267618756433, -0.16439947778715525, 0.6812371515218862]])
    w = np.array([0.36664134, 0.058300734, 0.70064473], np.float32)
    tw = np.array([-1.1433916, 0.064785585, -1.3661306], np.float32)
    tangents = []
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            out = lib.cov(fw.make_dual(lib.tensor(x), lib.tensor(tx)), correction=correction,
                          aweights=fw.make_dual(lib.tensor(w), lib.tensor(tw)))
            tangents.append(fw.unpack_dual(out).tangent)
    assert_same(tangents[0], tangents[1], rtol=1e-12, atol=1e-12)


def test_cholesky_inverse_tangent_is_exact():
    """X = (L L^H)^-1 has dX = -X (dL L^H + L dL^H) X: checked against central differences
    (torch 2.13's JVP computes -X dL X L^H + its adjoint, which is not this derivative) and
    against ember's own reverse mode through <dX, G> = <dL, grad>."""
    rng = np.random.default_rng(3)
    factor = np.eye(4) + 0.3 * np.tril(rng.standard_normal((4, 4)))
    direction = np.tril(rng.standard_normal((4, 4)))
    fw = ember.autograd.forward_ad
    with fw.dual_level():
        dual = fw.make_dual(ember.tensor(factor), ember.tensor(direction))
        tangent = fw.unpack_dual(ember.cholesky_inverse(dual)).tangent.numpy()
    step = 1e-6
    plus = torch.cholesky_inverse(torch.tensor(factor + step * direction)).numpy()
    minus = torch.cholesky_inverse(torch.tensor(factor - step * direction)).numpy()
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * step), rtol=1e-7, atol=1e-8)
    cotangent = rng.standard_normal((4, 4))
    leaf = ember.tensor(factor, requires_grad=True)
    grad, = ember.autograd.grad(ember.cholesky_inverse(leaf), leaf, ember.tensor(cotangent))
    np.testing.assert_allclose((grad.numpy() * direction).sum(), (cotangent * tangent).sum(),
                               rtol=1e-10)


def test_cumprod_0dim_and_reduction_0dim():
    check(lambda lib, x: (lib.cumprod(x, 0), lib.cumsum(x, 0), x.prod(), x.amax(), x.sum()), ())


@pytest.mark.parametrize("which", [(0,), (1,), (0, 1)])
def test_cat_stack(which):
    check(lambda lib, x, y: lib.cat([x, y], 0), (2, 3), (4, 3), tangent_for=which)
    check(lambda lib, x, y: lib.cat([x, y], -1), (2, 3), (2, 1), tangent_for=which)
    check(lambda lib, x, y: lib.stack([x, y], 1), (2, 3), (2, 3), tangent_for=which)
    check(lambda lib, x, y: lib.stack([x, y, x]), (2, 3), (2, 3), tangent_for=which)


def test_indexing():
    idx = [2, 0, 2]
    check(lambda lib, x: lib.index_select(x, 1, lib.tensor(idx)), (3, 4))
    check(lambda lib, x: lib.gather(x, 0, lib.tensor([[0, 2], [1, 1]])), (3, 4))
    check(lambda lib, x: x[lib.tensor(idx)], (3, 4))
    check(lambda lib, x: x[1:, lib.tensor([0, 3])], (3, 4))
    check(lambda lib, x: x[x > 0], (3, 4))
    check(lambda lib, x: x[1, ::2], (3, 4))
    check(lambda lib, x: x[..., None, -1], (3, 4))


def test_shape_ops():
    check(lambda lib, x: (x.flip(0), x.roll(1, 1), x.repeat(2, 1), x.tril(), x.triu(1),
                          x.permute(1, 0), x.repeat_interleave(2, dim=0)), (3, 4))
    check(lambda lib, x: lib.nn.functional.pad(x, (1, 2), value=3.0), (3, 4))
    check(lambda lib, x: lib.nn.functional.pad(x, (1, 1, 2, 0), mode="reflect"), (1, 3, 4))
    check(lambda lib, x: lib.nn.functional.pad(x, (1, 2), mode="replicate"), (1, 3, 4))


def test_composite_program():
    check(lambda lib, x, y: (lib.nn.functional.softmax(x @ y.t(), -1) * x.sum(1, keepdim=True)
                             ).logsumexp(0).sigmoid(), (3, 4), (5, 4))


def test_tangent_is_differentiable():
    a, t = _data((3, 4), 0), _data((3, 4), 1)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            tangent = fw.unpack_dual(fw.make_dual(x, lib.tensor(t)).erf().var(1)).tangent
        grads.append(lib.autograd.grad(tangent.sum(), x)[0])
    assert_same(grads[0], grads[1])


COMPLEX = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
           "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
           "tanh", "sigmoid", "reciprocal", "sinc", "abs"]


@pytest.mark.parametrize("name", COMPLEX)
def test_complex_holomorphic(name):
    rng = np.random.default_rng(3)
    a = rng.uniform(0.2, 0.8, (2, 3)) + 1j * rng.uniform(-0.5, 0.5, (2, 3))
    t = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    mine, theirs = run_jvp(lambda lib, x: getattr(lib, name)(x), [a], [t])
    assert_same(mine[0][0], theirs[0][0])
    assert_same(mine[0][1], theirs[0][1], rtol=1e-7, atol=1e-9)


def _complex_data(shape, seed, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)


def torch_func_jvp(fn, arrays, tangents):
    """``fn(torch, ...)`` through torch.func.jvp (inputs without a tangent are constants)."""
    which = [i for i, t in enumerate(tangents) if t is not None]

    def f(*xs):
        args = [torch.tensor(a) for a in arrays]
        for i, x in zip(which, xs):
            args[i] = x
        out = fn(torch, *args)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    return torch.func.jvp(f, tuple(torch.tensor(arrays[i]) for i in which),
                          tuple(torch.tensor(tangents[i]) for i in which))


def check_pairs(fn, arrays, tangents, rtol=1e-7, atol=1e-9, func_jvp=True):
    """ember's forward AD against torch.autograd.forward_ad and torch.func.jvp: primals and
    tangents (values, shapes, dtypes: a real output has a real tangent)."""
    mine, theirs = run_jvp(fn, arrays, tangents)
    for (p, t), (tp, tt) in zip(mine, theirs):
        assert_same(p, tp, rtol=rtol, atol=atol)
        assert t is not None and tt is not None
        assert_same(t, tt, rtol=rtol, atol=atol)
    if func_jvp:
        primals, jvps = torch_func_jvp(fn, arrays, tangents)
        assert_same([p for p, _ in mine], list(primals), rtol=rtol, atol=atol)
        assert_same([t for _, t in mine], list(jvps), rtol=rtol, atol=atol)


# Non-holomorphic (and complex <-> real) elementwise ops on complex inputs: the tangent map
# t -> alpha * t + beta * conj(t) recovered from the reverse-mode derivative.
NON_HOLOMORPHIC = {
    "abs": lambda lib, x: x.abs(),
    "angle": lambda lib, x: x.angle(),
    "sgn": lambda lib, x: x.sgn(),
    "real": lambda lib, x: x.real,
    "imag": lambda lib, x: x.imag,
    "conj": lambda lib, x: x.conj() * 1,
    "conj_mul": lambda lib, x: x * x.conj(),
    "abs_sq": lambda lib, x: x.abs() ** 2,
    "abs_exp": lambda lib, x: x.abs().exp() * x,
    "mul_real": lambda lib, x: x * x.real,
    "angle_sin": lambda lib, x: x.angle().sin() + x.imag,
    "complex_parts": lambda lib, x: lib.complex(x.imag, x.real * 2),
    "polar_parts": lambda lib, x: lib.polar(x.abs(), x.angle()),
    "sgn_t": lambda lib, x: x.t().sgn(),
    "where_abs": lambda lib, x: lib.where(x.real > 0, x.abs(), x.angle()),
}


@pytest.mark.parametrize("name", sorted(NON_HOLOMORPHIC))
def test_complex_non_holomorphic(name):
    a, t = _complex_data((3, 4), 0), _complex_data((3, 4), 1)
    check_pairs(NON_HOLOMORPHIC[name], [a], [t])


@pytest.mark.parametrize("shape", [(), (0, 3), (2, 1, 3)])
def test_complex_non_holomorphic_shapes(shape):
    a, t = _complex_data(shape, 2), _complex_data(shape, 3)
    check_pairs(lambda lib, x: (x.abs(), x.angle(), x.sgn(), x.real, x.imag), [a], [t])


MIXED = {
    "complex": lambda lib, r, i: lib.complex(r, i),
    "polar": lambda lib, r, i: lib.polar(r, i),
    "mul": lambda lib, r, i: lib.complex(r, i) * r,
    "complex_abs": lambda lib, r, i: lib.complex(r, i).abs(),
    "complex_angle": lambda lib, r, i: lib.complex(r, i).angle(),
}


@pytest.mark.parametrize("name", sorted(MIXED))
@pytest.mark.parametrize("which", [(0,), (1,), (0, 1)])
def test_real_to_complex(name, which):
    a, b = _data((3, 4), 0, 0.2, 2.0), _data((4,), 1)
    ta, tb = _data((3, 4), 2), _data((4,), 3)
    check_pairs(MIXED[name], [a, b], [ta if 0 in which else None, tb if 1 in which else None])


@pytest.mark.parametrize("which", [(0,), (1,), (0, 1)])
def test_complex_with_real_operand(which):
    """A complex tensor and a real one in the same op: each tangent keeps its input's dtype."""
    a, b = _complex_data((3, 4), 0), _data((4,), 1, 0.5, 2.0)
    ta, tb = _complex_data((3, 4), 2), _data((4,), 3)
    tangents = [ta if 0 in which else None, tb if 1 in which else None]
    for fn in (lambda lib, x, y: x * y, lambda lib, x, y: x / y, lambda lib, x, y: x.abs() * y,
               lambda lib, x, y: (x * y).sgn(), lambda lib, x, y: x.angle() + y):
        check_pairs(fn, [a, b], tangents)


def test_complex_generic_rule_on_holomorphic_ops():
    """Holomorphic ops that take the generic R-linear rule (beta = 0, complex alpha): logaddexp,
    and addcmul/addcdiv with a real operand."""
    a, b = _complex_data((3, 4), 0, -1.0, 1.0), _data((4,), 1, 0.5, 2.0)
    ta, tb = _complex_data((3, 4), 2), _data((4,), 3)
    for fn in (lambda lib, x, y: lib.logaddexp(x, x * 2 + y),
               lambda lib, x, y: lib.addcmul(y, x, x, value=0.5),
               lambda lib, x, y: lib.addcdiv(y, x, x + 3)):
        check_pairs(fn, [a, b], [ta, tb])
        check_pairs(fn, [a, b], [ta, None])


def test_complex_silu_matches_composite():
    """torch's own silu jvp on complex inputs is the conjugate of the derivative of
    x * sigmoid(x) (its backward formula reused without conj; torch refuses complex backward
    for silu). ember's is the holomorphic derivative: it matches torch's composite."""
    a, t = _complex_data((3, 4), 0, -1.0, 1.0), _complex_data((3, 4), 1)
    mine, _ = run_jvp(lambda lib, x: lib.nn.functional.silu(x), [a], [t])
    _, theirs = run_jvp(lambda lib, x: x * x.sigmoid(), [a], [t])
    assert_same(mine[0][0], theirs[0][0])
    assert_same(mine[0][1], theirs[0][1])


@pytest.mark.parametrize("dim", [0, -1])
def test_complex_reductions(dim):
    a, t = _complex_data((3, 4), 4, -1.0, 1.0), _complex_data((3, 4), 5)
    check_pairs(lambda lib, x: (x.sum(dim), x.mean(dim), x.prod(dim), x.var(dim),
                                x.std(dim, keepdim=True), lib.linalg.vector_norm(x, 2, dim),
                                lib.linalg.vector_norm(x, 1, dim), x.logsumexp(dim),
                                x.abs().amax(dim), x.cumsum(dim), x.cumprod(dim)), [a], [t])
    check_pairs(lambda lib, x: (x.prod(), x.var(), x.norm(), x.abs().sum()), [a], [t])


def test_complex_tangent_is_differentiable():
    a, t = _complex_data((3, 4), 6), _complex_data((3, 4), 7)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(x, lib.tensor(t))
            tangent = fw.unpack_dual(d.sgn() * d.abs().log() + d.angle()).tangent
        grads.append(lib.autograd.grad(tangent.abs().sum(), x)[0])
    assert_same(grads[0], grads[1])


def test_complex_meta_device():
    fw = ember.autograd.forward_ad
    x = ember.empty(3, 4, dtype=ember.complex64, device="meta")
    with fw.dual_level():
        d = fw.make_dual(x, ember.empty(3, 4, dtype=ember.complex64, device="meta"))
        for y in (d.abs(), d.angle(), d.sgn(), d.real, d.var(1), d * d.conj()):
            primal, tangent = fw.unpack_dual(y)
            assert tangent.device.type == "meta"
            assert tangent.shape == primal.shape and tangent.dtype is primal.dtype


def test_complex64():
    a = _complex_data((3, 4), 8).astype(np.complex64)
    t = _complex_data((3, 4), 9).astype(np.complex64)
    mine, theirs = run_jvp(lambda lib, x: (x.abs(), x.angle(), x.sgn(), x.var(1)), [a], [t])
    for (p, tg), (tp, tt) in zip(mine, theirs):
        assert_same(p, tp, rtol=1e-5, atol=1e-6)
        assert_same(tg, tt, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- normalization


def _norm_case(fn, shapes, which, seed=0):
    arrays = [_data(s, seed + i) for i, s in enumerate(shapes)]
    tangents = [_data(s, seed + 10 + i) if i in which else None for i, s in enumerate(shapes)]
    check_pairs(fn, arrays, tangents, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 2, 3)])
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_training(shape, affine):
    c = (shape[1],)

    def fn(lib, x, w, b):
        return lib.nn.functional.batch_norm(x, None, None, w if affine else None,
                                            b if affine else None, training=True, eps=1e-3)

    _norm_case(fn, [shape, c, c], (0, 1, 2) if affine else (0,))
    if affine:
        _norm_case(fn, [shape, c, c], (1,))


@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_eval(affine):
    def fn(lib, x, m, v, w, b):
        return lib.nn.functional.batch_norm(x, m, v.abs() + 0.5, w if affine else None,
                                            b if affine else None, training=False)

    _norm_case(fn, [(4, 3, 5), (3,), (3,), (3,), (3,)], (0, 3, 4) if affine else (0,))


@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_training_running_stats(affine):
    """Tangents vs torch, and the running statistics updated (without tangents) as torch's."""
    x, tx, w, b = (_data((4, 3, 5), 20), _data((4, 3, 5), 21), _data((3,), 22),
                   _data((3,), 23))
    results = []
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        rm, rv = lib.tensor(_data((3,), 24)), lib.tensor(_data((3,), 25, 0.5, 2.0))
        with fw.dual_level():
            d = fw.make_dual(lib.tensor(x), lib.tensor(tx))
            wt = fw.make_dual(lib.tensor(w), lib.tensor(tx[0, :, 0])) if affine else None
            y = lib.nn.functional.batch_norm(d, rm, rv, wt, lib.tensor(b) if affine else None,
                                             training=True, momentum=0.3)
            primal, tangent = fw.unpack_dual(y)
            assert fw.unpack_dual(rm).tangent is None and fw.unpack_dual(rv).tangent is None
        results.append((primal, tangent, rm, rv))
    assert_same(results[0], results[1], rtol=1e-6, atol=1e-8)


def test_batch_norm_module():
    x, tx = _data((5, 3, 4), 30), _data((5, 3, 4), 31)
    for training in (True, False):
        results = []
        for lib in (ember, torch):
            lib.manual_seed(0)
            bn = lib.nn.BatchNorm1d(3, dtype=lib.float64)
            bn.train(training)
            fw = lib.autograd.forward_ad
            with fw.dual_level():
                primal, tangent = fw.unpack_dual(bn(fw.make_dual(lib.tensor(x),
                                                                 lib.tensor(tx))))
            results.append((primal.detach(), tangent.detach(), bn.running_mean))
        assert_same(results[0], results[1], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(affine):
    def fn(lib, x, w, b):
        return lib.nn.functional.layer_norm(x, (3, 5), w if affine else None,
                                            b if affine else None)

    _norm_case(fn, [(4, 3, 5), (3, 5), (3, 5)], (0, 1, 2) if affine else (0,))
    _norm_case(lambda lib, x: lib.nn.functional.layer_norm(x, (5,), eps=1e-2), [(2, 5)], (0,))


@pytest.mark.parametrize("affine", [False, True])
def test_group_and_instance_norm(affine):
    def fn(lib, x, w, b):
        return lib.nn.functional.group_norm(x, 2, w if affine else None, b if affine else None)

    _norm_case(fn, [(3, 4, 5), (4,), (4,)], (0, 1, 2) if affine else (0,))
    _norm_case(lambda lib, x, w, b: lib.nn.functional.instance_norm(
        x, weight=w if affine else None, bias=b if affine else None), [(3, 4, 5), (4,), (4,)],
        (0, 1, 2) if affine else (0,))


def test_normalization_meta_and_float32():
    fw = ember.autograd.forward_ad
    F = ember.nn.functional
    x = ember.empty(4, 3, 5, device="meta")
    with fw.dual_level():
        d = fw.make_dual(x, ember.empty(4, 3, 5, device="meta"))
        for y in (F.batch_norm(d, None, None, training=True), F.layer_norm(d, (5,)),
                  F.group_norm(d, 3)):
            primal, tangent = fw.unpack_dual(y)
            assert tangent.device.type == "meta"
            assert tangent.shape == primal.shape and tangent.dtype is primal.dtype
    a, t = _data((4, 3, 5), 0).astype(np.float32), _data((4, 3, 5), 1).astype(np.float32)
    mine, theirs = run_jvp(lambda lib, x: (lib.nn.functional.batch_norm(x, None, None,
                                                                        training=True),
                                           lib.nn.functional.layer_norm(x, (5,))), [a], [t])
    for (p, tg), (tp, tt) in zip(mine, theirs):
        assert_same(p, tp, rtol=1e-5, atol=1e-5)
        assert_same(tg, tt, rtol=1e-5, atol=1e-5)


META_PROGRAMS = [lambda a: a.erfinv(), lambda a: a.amax(1), lambda a: a.prod(0),
                 lambda a: a.var(1, keepdim=True), lambda a: a.cumprod(1),
                 lambda a: a.logcumsumexp(0), lambda a: a.sort(1).values,
                 lambda a: a.max(0).values, lambda a: a.norm(), lambda a: a.logsumexp(1),
                 lambda a: a.softmax(1), lambda a: ember.cat([a, a]), lambda a: a[:, 1:]]


@pytest.mark.parametrize("index", range(len(META_PROGRAMS)))
def test_meta_device(index):
    fw = ember.autograd.forward_ad
    x = ember.empty(3, 4, device="meta")
    with fw.dual_level():
        y = META_PROGRAMS[index](fw.make_dual(x, ember.empty(3, 4, device="meta")))
        primal, tangent = fw.unpack_dual(y)
    assert tangent.device.type == "meta"
    assert tangent.shape == primal.shape and tangent.dtype is primal.dtype


def test_float32():
    a, t = _data((3, 4), 0).astype(np.float32), _data((3, 4), 1).astype(np.float32)
    mine, theirs = run_jvp(lambda lib, x: (x.sigmoid().logsumexp(1), x.erf().cumprod(0),
                                           x.amax(0), x.var(1), x.softmax(1)), [a], [t])
    for (p, tg), (tp, tt) in zip(mine, theirs):
        assert_same(p, tp, rtol=1e-5, atol=1e-6)
        assert_same(tg, tt, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- the generic rule (any op with a
# reverse derivative, real tensors): linear algebra, convolutions, pooling, losses

def _spd(lib, m):
    return m @ m.mT + 3 * lib.eye(m.shape[-1], dtype=m.dtype)


GENERIC = {
    "inv": ((lambda lib, x: lib.linalg.inv(x + 3 * lib.eye(3, dtype=x.dtype))), [(3, 3)]),
    "det": ((lambda lib, x: lib.linalg.det(x)), [(2, 3, 3)]),
    "slogdet": ((lambda lib, x: lib.linalg.slogdet(_spd(lib, x))[1]), [(3, 3)]),
    "solve": ((lambda lib, a, b: lib.linalg.solve(_spd(lib, a), b)), [(3, 3), (3, 2)]),
    "cholesky": ((lambda lib, x: lib.linalg.cholesky(_spd(lib, x))), [(4, 4)]),
    "eigvalsh": ((lambda lib, x: lib.linalg.eigvalsh(x + x.mT)), [(4, 4)]),
    "svdvals": ((lambda lib, x: lib.linalg.svdvals(x)), [(4, 3)]),
    "pinv": ((lambda lib, x: lib.linalg.pinv(x)), [(4, 3)]),
    "matrix_exp": ((lambda lib, x: lib.linalg.matrix_exp(x)), [(3, 3)]),
    "qr_r": ((lambda lib, x: lib.linalg.qr(x)[1]), [(4, 3)]),
    "conv2d": ((lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1, stride=2)),
               [(2, 3, 6, 6), (4, 3, 3, 3)]),
    "conv_transpose1d": ((lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w)),
                         [(2, 3, 5), (3, 2, 3)]),
    "max_pool2d": ((lambda lib, x: lib.nn.functional.max_pool2d(x, 2)), [(2, 3, 4, 4)]),
    "avg_pool1d": ((lambda lib, x: lib.nn.functional.avg_pool1d(x, 3, 2)), [(2, 3, 7)]),
    "interpolate": ((lambda lib, x: lib.nn.functional.interpolate(
        x, scale_factor=2, mode="bilinear", align_corners=False)), [(1, 2, 3, 3)]),
    "cross_entropy": ((lambda lib, x: lib.nn.functional.cross_entropy(
        x, lib.tensor([0, 2, 1]))), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_generic_rule_from_the_reverse_derivative(name):
    fn, shapes = GENERIC[name]
    check(fn, *shapes, rtol=1e-6, atol=1e-8)


def test_generic_rule_tangent_is_differentiable_by_reverse_mode():
    # forward-over-reverse: the tangent of inv is itself differentiable (a Hessian-vector product)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(np.eye(3) * 2 + 0.1, requires_grad=True)
        v = lib.ones(3, 3, dtype=lib.float64)
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            tangent = fw.unpack_dual(lib.linalg.inv(fw.make_dual(x, v))).tangent
        grads.append(lib.autograd.grad(tangent.sum(), x)[0])
    assert_same(*grads)


def test_generic_rule_refuses_an_op_without_a_derivative_as_torch():
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(lib.tensor([2.0, 3.0]), lib.tensor([1.0, 1.0]))
            with pytest.raises(NotImplementedError):
                lib.special.zeta(x, lib.tensor([1.0, 2.0]))


@pytest.mark.parametrize("fn", [
    lambda x: ember.linalg.svd(x, full_matrices=False)[0],   # U: signs are LAPACK's, not torch's
    lambda x: ember.linalg.svd(x, full_matrices=False)[2],
    lambda x: ember.linalg.eigh(x + x.mT)[1],
])
def test_generic_rule_against_finite_differences(fn):
    rng = np.random.default_rng(4)
    a, t = rng.uniform(-2, 2, (4, 4)), rng.standard_normal((4, 4))
    fw = ember.autograd.forward_ad
    with fw.dual_level():
        tangent = fw.unpack_dual(fn(fw.make_dual(ember.tensor(a), ember.tensor(t)))).tangent
    eps = 1e-6
    numeric = (fn(ember.tensor(a + eps * t)).numpy() - fn(ember.tensor(a - eps * t)).numpy())
    np.testing.assert_allclose(tangent.numpy(), numeric / (2 * eps), rtol=1e-5, atol=1e-6)
