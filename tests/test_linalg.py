"""Linear algebra against torch: the matmul family, contractions, decompositions, norms."""

import numpy as np
import pytest
import torch

import ember
from conftest import DTYPE_PAIRS, assert_grads_match, assert_same, float_for, make_pair

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float64, seed=None):
    rng = RNG if seed is None else np.random.default_rng(seed)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def spd(n, batch=(), seed=1):
    """A well-conditioned symmetric positive-definite matrix (batch)."""
    a = rand(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def well(n, batch=(), seed=2):
    """A well-conditioned square matrix (batch)."""
    return rand(*batch, n, n, seed=seed) + 3 * np.eye(n)


def pair(array, dtype_name=None):
    e, t = make_pair(array)
    if dtype_name is not None:
        ed, td = DTYPE_PAIRS[dtype_name]
        e, t = e.to(ed), t.to(td)
    return e, t


def same_error(e_fn, t_fn, match_message=True):
    """ember raises the same exception type as torch (and the same message by default)."""
    with pytest.raises(Exception) as t_info:
        t_fn()
    with pytest.raises(Exception) as e_info:
        e_fn()
    t_exc, e_exc = t_info.value, e_info.value
    if isinstance(t_exc, torch.linalg.LinAlgError):
        assert isinstance(e_exc, ember.linalg.LinAlgError), repr(e_exc)
    assert isinstance(e_exc, type(t_exc).__mro__[0] if type(t_exc).__module__ == "builtins"
                      else RuntimeError), f"{e_exc!r} vs torch {t_exc!r}"
    if match_message:
        assert str(e_exc).splitlines()[0] == str(t_exc).splitlines()[0]


# ================================================================ matmul family: values

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)),
    ((3,), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
    ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (6, 3, 2)), ((0, 3), (3, 2)), ((2, 0), (0, 3)),
    ((4, 2, 0), (0,)), ((0, 2, 3), (3, 1)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes(sa, sb):
    (ea, ta), (eb, tb) = pair(rand(*sa, dtype=np.float32)), pair(rand(*sb, dtype=np.float32))
    assert_same(ember.matmul(ea, eb), torch.matmul(ta, tb))
    assert_same(ea @ eb, ta @ tb)


@pytest.mark.parametrize("name", ["float64", "int64", "int32", "uint8", "complex64",
                                  "complex128", "float16", "bfloat16"])
def test_matmul_dtypes(name):
    for sa, sb in [((3,), (3,)), ((2, 3), (3, 4)), ((2, 3), (3,)), ((4, 2, 3), (4, 3, 2))]:
        kind = np.complex128 if "complex" in name else np.float64
        if name in ("int64", "int32", "uint8"):
            kind = np.int64
        (ea, ta), (eb, tb) = pair(rand(*sa, dtype=kind), name), pair(rand(*sb, dtype=kind), name)
        tol = dict(rtol=2e-2, atol=2e-2) if name in ("float16", "bfloat16") else {}
        assert_same(ember.matmul(ea, eb), torch.matmul(ta, tb), **tol)


def test_matmul_non_contiguous():
    a, b = rand(4, 6, 5), rand(4, 6, 3)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    assert_same(ea.mT @ eb, ta.mT @ tb)
    assert_same(ea[:, ::2].mT @ eb[:, ::2], ta[:, ::2].mT @ tb[:, ::2])
    assert_same(ember.mm(ea[0].t(), eb[1]), torch.mm(ta[0].t(), tb[1]))
    assert_same(ember.mv(ea[0].t(), eb[1, :, 0]), torch.mv(ta[0].t(), tb[1, :, 0]))
    assert_same(ember.dot(ea[0, :, 1], eb[1, :, 0]), torch.dot(ta[0, :, 1], tb[1, :, 0]))


def test_matmul_float32_large_is_blas():
    # 1024x1024 float32 through the copy-free path: same values as torch (timing in bench/).
    a, b = rand(1024, 1024, dtype=np.float32), rand(1024, 1024, dtype=np.float32)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    result = ea @ eb
    assert result._data.flags["C_CONTIGUOUS"]
    assert_same(result, ta @ tb, rtol=1e-4, atol=1e-3)


def test_products():
    (ea, ta), (eb, tb) = pair(rand(3, 4)), pair(rand(4, 5))
    (eb3, tb3), (ec3, tc3) = pair(rand(2, 3, 4)), pair(rand(2, 4, 5))
    (ev, tv), (ew, tw) = pair(rand(4)), pair(rand(4))
    (ec, tc), (ed, td) = pair(rand(4, dtype=np.complex128)), pair(rand(4, dtype=np.complex128))
    assert_same(ember.mm(ea, eb), torch.mm(ta, tb))
    assert_same(ea.mm(eb), ta.mm(tb))
    assert_same(ember.bmm(eb3, ec3), torch.bmm(tb3, tc3))
    assert_same(ember.mv(ea, ev), torch.mv(ta, tv))
    assert_same(ember.dot(ev, ew), torch.dot(tv, tw))
    assert_same(ember.vdot(ec, ed), torch.vdot(tc, td))
    assert_same(ember.dot(ec, ed), torch.dot(tc, td))
    assert_same(ember.inner(ea, eb.t()), torch.inner(ta, tb.t()))
    assert_same(ember.inner(ev, ew), torch.inner(tv, tw))
    assert_same(ember.inner(ea, ember.tensor(2.0, dtype=ember.float64)),
                torch.inner(ta, torch.tensor(2.0, dtype=torch.float64)))
    assert_same(ember.outer(ev, ew), torch.outer(tv, tw))
    assert_same(ember.ger(ev, ew), torch.ger(tv, tw))
    i1, i2 = pair(rand(3, dtype=np.int64)), pair(rand(4, dtype=np.int64))
    assert_same(ember.outer(i1[0], i2[0]), torch.outer(i1[1], i2[1]))
    f1 = pair(rand(3, dtype=np.float32))
    assert_same(ember.outer(f1[0], ev), torch.outer(f1[1], tv))  # promotes, as torch
    assert_same(ember.kron(f1[0], ev), torch.kron(f1[1], tv))
    ia, ta_ = pair(rand(2, 3, dtype=np.int64))
    ib, tb_ = pair(rand(3, 2, dtype=np.int64))
    ic, tc_ = pair(rand(2, 2, dtype=np.int64))
    assert_same(ember.addmm(ic, ia, ib, beta=0.5, alpha=1.5),
                torch.addmm(tc_, ta_, tb_, beta=0.5, alpha=1.5))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("scalars", [{}, dict(beta=0.6, alpha=0.2), dict(beta=0)])
def test_half_precision_products_round_once(dtype, scalars):
    """torch computes addmm, baddbmm, linear and each batch step of addbmm in float32 and
    rounds to half once; rounding every intermediate moved results by units of their last
    place."""
    rng = np.random.default_rng(8)

    def values(*shape):
        return pair(rng.uniform(-9, 9, shape), dtype)
    (ei, ti), (e1, t1), (e2, t2), (eb, tb) = (values(5, 10), values(5, 5, 5), values(5, 5, 10),
                                              values(5, 5, 10))
    exact = dict(rtol=0, atol=0)
    assert_same(ember.addbmm(ei, e1, e2, **scalars), torch.addbmm(ti, t1, t2, **scalars), **exact)
    assert_same(ember.baddbmm(eb, e1, e2, **scalars), torch.baddbmm(tb, t1, t2, **scalars),
                **exact)
    assert_same(ember.addmm(ei, e1[0], e2[0], **scalars), torch.addmm(ti, t1[0], t2[0], **scalars),
                **exact)
    assert_same(ember.nn.functional.linear(e1[0], e2[0].t(), ei[0]),
                torch.nn.functional.linear(t1[0], t2[0].t(), ti[0]), **exact)


@pytest.mark.parametrize("kinds", [("bool", "bool", "bool"), ("int64", "bool", "bool"),
                                   ("bool", "int64", "int64"), ("int32", "int64", "int64")])
@pytest.mark.parametrize("scalars", [{}, dict(beta=3, alpha=2), dict(beta=0), dict(alpha=0),
                                     dict(beta=True, alpha=False), dict(beta=1.5),
                                     dict(alpha=2.0), dict(alpha=True)])
def test_addr_integer_and_bool(kinds, scalars):
    """A bool result is (beta and input) or (alpha and outer) for any nonzero scalars; torch
    refuses float scalars for integer results and bool scalars for non-bool ones."""
    rng = np.random.default_rng(3)
    (ei, ti), (ea, ta), (eb, tb) = (pair(rng.integers(0, 2, shape).astype(kind))
                                    for shape, kind in zip([(3, 4), (3,), (4,)], kinds))
    try:
        expected = torch.addr(ti, ta, tb, **scalars)
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=str(error).split(" argument")[0]):
            ember.addr(ei, ea, eb, **scalars)
        return
    assert_same(ember.addr(ei, ea, eb, **scalars), expected)


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1), (2, 0)])
def test_add_products(beta, alpha):
    (ea, ta) = pair(rand(3, 4))
    (eb, tb) = pair(rand(4, 5))
    (ei, ti) = pair(rand(5))
    (eim, tim) = pair(rand(3, 5))
    (ev, tv), (ew, tw) = pair(rand(4)), pair(rand(3))
    (eb1, tb1), (eb2, tb2) = pair(rand(2, 3, 4)), pair(rand(2, 4, 5))
    kw = dict(beta=beta, alpha=alpha)
    assert_same(ember.addmm(ei, ea, eb, **kw), torch.addmm(ti, ta, tb, **kw))
    assert_same(ember.addmv(ew, ea, ev, **kw), torch.addmv(tw, ta, tv, **kw))
    assert_same(ember.addr(eim[:, :4], ew, ev, **kw), torch.addr(tim[:, :4], tw, tv, **kw))
    assert_same(ember.addbmm(eim, eb1, eb2, **kw), torch.addbmm(tim, tb1, tb2, **kw))
    assert_same(ember.baddbmm(ei, eb1, eb2, **kw), torch.baddbmm(ti, tb1, tb2, **kw))
    # beta=0 ignores NaN in input, as torch
    nan_e, nan_t = pair(np.full((3, 5), np.nan))
    assert_same(ember.addmm(nan_e, ea, eb, beta=0), torch.addmm(nan_t, ta, tb, beta=0))
    x = eim.clone()
    x.addmm_(ea, eb, **kw)
    assert_same(x, tim.clone().addmm_(ta, tb, **kw))


def test_matmul_out_and_inplace():
    (ea, ta), (eb, tb) = pair(rand(3, 3)), pair(rand(3, 3))
    out_e, out_t = ember.empty(0, dtype=ember.float64), torch.empty(0, dtype=torch.float64)
    ember.matmul(ea, eb, out=out_e)
    torch.matmul(ta, tb, out=out_t)
    assert_same(out_e, out_t)
    ember.mm(ea, eb, out=out_e)
    assert_same(out_e, torch.mm(ta, tb))
    x, y = ea.clone(), ta.clone()
    x @= eb
    y @= tb
    assert_same(x, y)
    assert_same(eb.__rmatmul__(ea), tb.__rmatmul__(ta))


def test_chain_and_multi_dot():
    arrays = [rand(2, 5), rand(5, 3), rand(3, 7), rand(7, 2)]
    es, ts = zip(*(pair(a) for a in arrays))
    assert_same(ember.chain_matmul(*es), torch.linalg.multi_dot(ts))
    assert_same(ember.linalg.multi_dot(es), torch.linalg.multi_dot(ts))
    (ev, tv), (ew, tw) = pair(rand(2)), pair(rand(2))
    assert_same(ember.linalg.multi_dot([ev, *es, ew]), torch.linalg.multi_dot([tv, *ts, tw]))
    assert_grads_match(lambda *x: ember.linalg.multi_dot(x),
                       lambda *x: torch.linalg.multi_dot(x), *arrays, double_backward=True)


# ================================================================ matmul family: gradients


@pytest.mark.parametrize("sa,sb", [s for s in MATMUL_SHAPES if 0 not in s[0] + s[1]])
def test_matmul_grad(sa, sb):
    assert_grads_match(ember.matmul, torch.matmul, rand(*sa), rand(*sb), double_backward=True)


def test_matmul_grad_complex():
    assert_grads_match(ember.matmul, torch.matmul, rand(2, 3, 4, dtype=np.complex128),
                       rand(4, 2, dtype=np.complex128))
    assert_grads_match(ember.vdot, torch.vdot, rand(4, dtype=np.complex128),
                       rand(4, dtype=np.complex128))


def test_product_grads():
    assert_grads_match(ember.mm, torch.mm, rand(3, 4), rand(4, 2), double_backward=True)
    assert_grads_match(ember.bmm, torch.bmm, rand(2, 3, 4), rand(2, 4, 2),
                       double_backward=True)
    assert_grads_match(ember.mv, torch.mv, rand(3, 4), rand(4), double_backward=True)
    assert_grads_match(ember.dot, torch.dot, rand(4), rand(4), double_backward=True)
    assert_grads_match(ember.outer, torch.outer, rand(3), rand(4))
    assert_grads_match(ember.inner, torch.inner, rand(2, 4), rand(3, 4))
    assert_grads_match(lambda i, a, b: ember.addmm(i, a, b, beta=0.5, alpha=2),
                       lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2),
                       rand(2), rand(3, 4), rand(4, 2), double_backward=True)
    assert_grads_match(ember.addmv, torch.addmv, rand(3), rand(3, 4), rand(4))
    assert_grads_match(ember.addr, torch.addr, rand(3, 4), rand(3), rand(4))
    assert_grads_match(ember.addbmm, torch.addbmm, rand(3, 2), rand(2, 3, 4), rand(2, 4, 2))
    assert_grads_match(ember.baddbmm, torch.baddbmm, rand(1, 2), rand(2, 3, 4),
                       rand(2, 4, 2))


def test_matmul_grad_fn_names():
    a = ember.ones(2, 2, requires_grad=True)
    assert (a @ a).grad_fn.name() == "MmBackward0"
    assert ember.bmm(a[None], a[None]).grad_fn.name() == "BmmBackward0"
    assert ember.mv(a, a[0]).grad_fn.name() == "MvBackward0"
    assert ember.dot(a[0], a[1]).grad_fn.name() == "DotBackward0"


# ================================================================ matmul family: errors


def _errors():
    f64 = torch.float64
    i64 = torch.int64
    b = torch.bool
    return [
        ("matmul", lambda m: m.matmul(m.ones(64, 784), m.ones(256, 10))),
        ("mm", lambda m: m.mm(m.ones(64, 784), m.ones(256, 10))),
        ("mm dtype", lambda m: m.mm(m.ones(2, 3), m.ones(3, 2, dtype=_d(m, f64)))),
        ("mm int", lambda m: m.mm(m.ones(2, 3), m.ones(3, 2, dtype=_d(m, i64)))),
        ("matmul dtype", lambda m: m.matmul(m.ones(2, 3), m.ones(3, 2, dtype=_d(m, f64)))),
        ("mm 1d", lambda m: m.mm(m.ones(3), m.ones(3, 2))),
        ("mm 3d", lambda m: m.mm(m.ones(2, 2, 3), m.ones(3, 2))),
        ("1d1d", lambda m: m.matmul(m.ones(3), m.ones(4))),
        ("1d2d", lambda m: m.matmul(m.ones(3), m.ones(4, 5))),
        ("2d1d", lambda m: m.matmul(m.ones(3, 4), m.ones(5))),
        ("3d3d", lambda m: m.matmul(m.ones(2, 3, 4), m.ones(2, 5, 6))),
        ("batch", lambda m: m.matmul(m.ones(2, 3, 4), m.ones(3, 4, 6))),
        ("1d3d", lambda m: m.matmul(m.ones(3), m.ones(2, 4, 6))),
        ("3d1d", lambda m: m.matmul(m.ones(2, 3, 4), m.ones(5))),
        ("0d", lambda m: m.matmul(m.ones(()), m.ones(3))),
        ("dot dtype", lambda m: m.matmul(m.ones(3), m.ones(3, dtype=_d(m, f64)))),
        ("3d dtype", lambda m: m.matmul(m.ones(2, 2, 3), m.ones(2, 3, 2, dtype=_d(m, f64)))),
        ("mv dtype", lambda m: m.matmul(m.ones(2, 3), m.ones(3, dtype=_d(m, f64)))),
        ("bmm 2d", lambda m: m.bmm(m.ones(2, 3), m.ones(3, 2))),
        ("bmm shape", lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 4, 2))),
        ("bmm batch", lambda m: m.bmm(m.ones(2, 2, 3), m.ones(3, 3, 2))),
        ("bmm dtype", lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 3, 2, dtype=_d(m, f64)))),
        ("mv shape", lambda m: m.mv(m.ones(2, 3), m.ones(4))),
        ("mv 1d", lambda m: m.mv(m.ones(3), m.ones(3))),
        ("mv 2d", lambda m: m.mv(m.ones(2, 3), m.ones(3, 1))),
        ("dot shape", lambda m: m.dot(m.ones(3), m.ones(4))),
        ("dot 2d", lambda m: m.dot(m.ones(3, 1), m.ones(3))),
        ("dot f64", lambda m: m.dot(m.ones(3), m.ones(3, dtype=_d(m, f64)))),
        ("vdot", lambda m: m.vdot(m.ones(3), m.ones(4))),
        ("bool", lambda m: m.matmul(m.ones(2, 2, dtype=_d(m, b)), m.ones(2, 2, dtype=_d(m, b)))),
        ("dot bool", lambda m: m.dot(m.ones(2, dtype=_d(m, b)), m.ones(2, dtype=_d(m, b)))),
        ("addmm shape", lambda m: m.addmm(m.ones(2, 2), m.ones(2, 3), m.ones(4, 2))),
        ("outer 2d", lambda m: m.outer(m.ones(2, 3), m.ones(2))),
        ("trace 3d", lambda m: m.trace(m.ones(2, 2, 2))),
        ("diag 3d", lambda m: m.diag(m.ones(2, 2, 2))),
        ("cross", lambda m: m.cross(m.ones(2, 4), m.ones(2, 4), dim=1)),
        ("linalg.cross", lambda m: m.linalg.cross(m.ones(2, 4), m.ones(2, 4))),
        ("tensordot", lambda m: m.tensordot(m.ones(2, 3), m.ones(4, 5), dims=1)),
        ("einsum", lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), m.ones(4, 5))),
        ("f32 ints", lambda m: m.mm(m.ones(2, 3, dtype=_d(m, i64)), m.ones(3, 2))),
        ("inv nonsq", lambda m: m.linalg.inv(m.ones(2, 3))),
        ("inv 1d", lambda m: m.linalg.inv(m.ones(3))),
        ("inv int", lambda m: m.linalg.inv(m.ones(2, 2, dtype=_d(m, i64)))),
        ("det int", lambda m: m.linalg.det(m.ones(2, 2, dtype=_d(m, i64)))),
        ("inv sing", lambda m: m.linalg.inv(m.zeros(2, 2))),
        ("inv sing 2", lambda m: m.linalg.inv(m.tensor([[1., 2.], [2., 4.]]))),
        ("inv sing batch", lambda m: m.linalg.inv(m.stack([m.eye(2), m.zeros(2, 2)]))),
        ("chol", lambda m: m.linalg.cholesky(-m.eye(2))),
        ("chol 2", lambda m: m.linalg.cholesky(m.tensor([[1., 2.], [2., 1.]]))),
        ("solve sing", lambda m: m.linalg.solve(m.zeros(2, 2), m.ones(2))),
        ("matrix_power", lambda m: m.linalg.matrix_power(m.ones(2, 3), 2)),
        ("uplo", lambda m: m.linalg.eigh(m.eye(2), UPLO="X")),
        ("qr mode", lambda m: m.linalg.qr(m.eye(2), mode="bad")),
        ("addmm dtype", lambda m: m.addmm(m.ones(2, 2, dtype=_d(m, f64)), m.ones(2, 3),
                                          m.ones(3, 2))),
        ("addmv dtype", lambda m: m.addmv(m.ones(2, dtype=_d(m, f64)), m.ones(2, 3), m.ones(3))),
        ("baddbmm dtype", lambda m: m.baddbmm(m.ones(2, 2, dtype=_d(m, f64)), m.ones(1, 2, 3),
                                              m.ones(1, 3, 2))),
        ("addbmm dtype", lambda m: m.addbmm(m.ones(2, 2, dtype=_d(m, f64)), m.ones(1, 2, 3),
                                            m.ones(1, 3, 2))),
        ("inv half", lambda m: m.linalg.inv(m.ones(2, 2, dtype=_d(m, torch.float16)))),
        ("det half", lambda m: m.linalg.det(m.ones(2, 2, dtype=_d(m, torch.float16)))),
        ("qr half", lambda m: m.linalg.qr(m.ones(2, 2, dtype=_d(m, torch.float16)))),
        ("svd half", lambda m: m.linalg.svd(m.ones(2, 2, dtype=_d(m, torch.float16)))),
        ("eigh int", lambda m: m.linalg.eigh(m.ones(2, 2, dtype=_d(m, i64)))),
        ("eig int", lambda m: m.linalg.eig(m.ones(2, 2, dtype=_d(m, i64)))),
        ("svdvals int", lambda m: m.linalg.svdvals(m.ones(2, 2, dtype=_d(m, i64)))),
        ("solve int", lambda m: m.linalg.solve(m.ones(2, 2, dtype=_d(m, i64)),
                                               m.ones(2, dtype=_d(m, i64)))),
        ("solve shape", lambda m: m.linalg.solve(m.eye(3), m.ones(2, 2))),
        ("matrix_exp int", lambda m: m.linalg.matrix_exp(m.ones(2, 2, dtype=_d(m, i64)))),
        ("matrix_exp nonsq", lambda m: m.linalg.matrix_exp(m.ones(2, 3))),
        ("cdist int", lambda m: m.cdist(m.ones(2, 3, dtype=_d(m, i64)), m.ones(2, 3))),
        ("cdist cols", lambda m: m.cdist(m.ones(2, 3), m.ones(2, 4))),
        ("cdist 1d", lambda m: m.cdist(m.ones(3), m.ones(2, 3))),
        ("einsum dtype", lambda m: m.einsum("i,i->", m.ones(2), m.ones(2, dtype=_d(m, f64)))),
        ("einsum nops", lambda m: m.einsum("i,i->", m.ones(2))),
        ("einsum ndim", lambda m: m.einsum("ij->", m.ones(2))),
        ("einsum out", lambda m: m.einsum("ij->k", m.ones(2, 2))),
        ("tensordot dtype", lambda m: m.tensordot(m.ones(2, 2), m.ones(2, 2, dtype=_d(m, f64)))),
        ("inner dtype", lambda m: m.inner(m.ones(2), m.ones(2, dtype=_d(m, f64)))),
        ("vecdot dtype", lambda m: m.linalg.vecdot(m.ones(2), m.ones(2, dtype=_d(m, f64)))),
        ("lstsq", lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(4, 2))),
        ("multi_dot", lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(4, 2)])),
        ("multi_dot 1", lambda m: m.linalg.multi_dot([m.ones(2, 3)])),
        ("pinv int", lambda m: m.linalg.pinv(m.ones(2, 2, dtype=_d(m, i64)))),
        ("rank int", lambda m: m.linalg.matrix_rank(m.ones(2, 2, dtype=_d(m, i64)))),
        ("cross dtype", lambda m: m.linalg.cross(m.ones(3), m.ones(3, dtype=_d(m, f64)))),
        ("power int neg", lambda m: m.linalg.matrix_power(m.ones(2, 2, dtype=_d(m, i64)), -1)),
        ("norm str", lambda m: m.linalg.vector_norm(m.ones(3), "fro")),
        ("matrix_norm 3", lambda m: m.linalg.matrix_norm(m.ones(3, 3), 3)),
        ("norm 3d", lambda m: m.linalg.norm(m.ones(3, 3, 3), "fro")),
    ]


def _d(module, torch_dtype):
    if module is torch:
        return torch_dtype
    return getattr(ember, str(torch_dtype).removeprefix("torch."))


@pytest.mark.parametrize("label,fn", _errors(), ids=[e[0] for e in _errors()])
def test_errors_match_torch(label, fn):
    same_error(lambda: fn(ember), lambda: fn(torch))


def test_linalg_error_is_runtime_error():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError):
        ember.linalg.inv(ember.zeros(3, 3))


# ================================================================ einsum, tensordot, kron, ...

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (1, 3, 4)]),
    ("i...,i->...", [(3, 2, 4), (3,)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,kj->ikj", [(2, 3), (1, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(eq, shapes):
    arrays = [rand(*s) for s in shapes]
    es, ts = zip(*(pair(a) for a in arrays))
    assert_same(ember.einsum(eq, *es), torch.einsum(eq, *ts))
    assert_same(ember.einsum(eq, list(es)), torch.einsum(eq, list(ts)))
    assert_grads_match(lambda *x: ember.einsum(eq, *x), lambda *x: torch.einsum(eq, *x),
                       *arrays, double_backward=True)


def test_einsum_sublist_and_dtypes():
    (ea, ta), (eb, tb) = pair(rand(2, 3)), pair(rand(3, 4))
    assert_same(ember.einsum(ea, [0, 1], eb, [1, 2], [0, 2]),
                torch.einsum(ta, [0, 1], tb, [1, 2], [0, 2]))
    (ia, ta2) = pair(rand(2, 3, dtype=np.int64))
    assert_same(ember.einsum("ij->j", ia), torch.einsum("ij->j", ta2))
    (ca, tca) = pair(rand(2, 3, dtype=np.complex64))
    assert_same(ember.einsum("ij,kj->ik", ca, ca), torch.einsum("ij,kj->ik", tca, tca))


TENSORDOT_CASES = [(2, (4, 5, 2)), (1, (5, 2)), (0, (2, 3)), (([1, 0], [0, 1]), (4, 3, 2)),
                   (([2], [0]), (5, 3)), (([0, 2], [1, 0]), (5, 3, 2))]


@pytest.mark.parametrize("dims,sb", TENSORDOT_CASES)
def test_tensordot(dims, sb):
    a, b = rand(3, 4, 5), rand(*sb)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    assert_same(ember.tensordot(ea, eb, dims), torch.tensordot(ta, tb, dims))
    assert_grads_match(lambda x, y: ember.tensordot(x, y, dims),
                       lambda x, y: torch.tensordot(x, y, dims), a, b)


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((2,), (3, 4)), ((2, 1, 3), (3, 2)),
                                   ((), (2,))])
def test_kron(sa, sb):
    a, b = rand(*sa), rand(*sb)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    assert_same(ember.kron(ea, eb), torch.kron(ta, tb))
    assert_grads_match(ember.kron, torch.kron, a, b)


def test_cross():
    a, b = rand(4, 3), rand(4, 3)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    assert_same(ember.cross(ea, eb, dim=1), torch.cross(ta, tb, dim=1))
    assert_same(ember.linalg.cross(ea, eb), torch.linalg.cross(ta, tb))
    assert_same(ember.linalg.cross(ea.t(), eb.t(), dim=0), torch.linalg.cross(ta.t(), tb.t(),
                                                                              dim=0))
    (e1, t1) = pair(rand(1, 3))
    assert_same(ember.linalg.cross(e1, eb), torch.linalg.cross(t1, tb))
    assert_grads_match(lambda x, y: ember.linalg.cross(x, y),
                       lambda x, y: torch.linalg.cross(x, y), a, b, double_backward=True)


def test_trace_diag():
    a = rand(3, 4)
    (ea, ta) = pair(a)
    assert_same(ember.trace(ea), torch.trace(ta))
    ia, it = pair(rand(3, 3, dtype=np.int32))
    assert_same(ember.trace(ia), torch.trace(it))
    for k in (0, 1, -1, 5):
        assert_same(ember.diag(ea, k), torch.diag(ta, k))
    (ev, tv) = pair(rand(3))
    for k in (0, 2, -1):
        assert_same(ember.diag(ev, k), torch.diag(tv, k))
        assert_grads_match(lambda x: ember.diag(x, k), lambda x: torch.diag(x, k), rand(3))
        assert_grads_match(lambda x: ember.diag(x, k), lambda x: torch.diag(x, k), rand(3, 4))
    assert_grads_match(ember.trace, torch.trace, a)


@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (1, 0, 2), (-1, 2, 0), (2, 1, -1)])
def test_diag_embed(offset, dim1, dim2):
    a = rand(2, 3)
    (ea, ta) = pair(a)
    assert_same(ember.diag_embed(ea, offset, dim1, dim2), torch.diag_embed(ta, offset, dim1, dim2))
    assert_grads_match(lambda x: ember.diag_embed(x, offset, dim1, dim2),
                       lambda x: torch.diag_embed(x, offset, dim1, dim2), a)


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf"), 0.0])
def test_cdist(p):
    a, b = rand(2, 4, 3), rand(2, 5, 3)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    assert_same(ember.cdist(ea, eb, p), torch.cdist(ta, tb, p))
    if p not in (0.0,):
        assert_grads_match(lambda x, y: ember.cdist(x, y, p), lambda x, y: torch.cdist(x, y, p),
                           a, b)
    (e2, t2) = pair(rand(4, 3))
    assert_same(ember.cdist(e2, e2, p, compute_mode="use_mm_for_euclid_dist"),
                torch.cdist(t2, t2, p, compute_mode="use_mm_for_euclid_dist"), atol=1e-6,
                rtol=1e-6)


# ================================================================ inverse, determinants, solve


@pytest.mark.parametrize("batch", [(), (3,), (2, 1)])
def test_inv_det(batch):
    a = well(3, batch)
    (ea, ta) = pair(a)
    assert_same(ember.linalg.inv(ea), torch.linalg.inv(ta))
    assert_same(ember.inverse(ea), torch.inverse(ta))
    assert_same(ember.linalg.det(ea), torch.linalg.det(ta))
    assert_same(ember.det(ea), torch.det(ta))
    assert_same(ember.linalg.slogdet(ea), torch.linalg.slogdet(ta))
    assert_same(ember.logdet(ea), torch.logdet(ta))
    assert_grads_match(ember.linalg.inv, torch.linalg.inv, a, double_backward=True)
    assert_grads_match(ember.linalg.det, torch.linalg.det, a, double_backward=True)
    assert_grads_match(lambda x: ember.linalg.slogdet(x).logabsdet,
                       lambda x: torch.linalg.slogdet(x).logabsdet, a, double_backward=True)
    assert_grads_match(ember.logdet, torch.logdet, spd(3, batch))


def test_det_dtypes_and_complex():
    for name in ("float32", "complex128"):
        kind = np.complex128 if "complex" in name else np.float64
        a = well(3, (2,)).astype(kind) + (1j * rand(2, 3, 3) if kind == np.complex128 else 0)
        (ea, ta) = pair(a, name)
        tol = dict(rtol=1e-4, atol=1e-4) if name == "float32" else {}
        assert_same(ember.linalg.det(ea), torch.linalg.det(ta), **tol)
        assert_same(ember.linalg.inv(ea), torch.linalg.inv(ta), **tol)
        assert_same(ember.linalg.slogdet(ea), torch.linalg.slogdet(ta), **tol)
    c = well(3).astype(np.complex128) + 0.5j * rand(3, 3)
    assert_grads_match(ember.linalg.inv, torch.linalg.inv, c)
    assert_grads_match(ember.linalg.det, torch.linalg.det, c)
    a_neg = np.diag([-1.0, 2.0, 3.0])
    (e, t) = pair(a_neg)
    assert_same(ember.logdet(e), torch.logdet(t))
    assert_same(ember.slogdet(e), torch.slogdet(t))
    (ez, tz) = pair(np.zeros((0, 0)))
    assert_same(ember.linalg.det(ez), torch.linalg.det(tz))
    assert_same(ember.linalg.inv(ez), torch.linalg.inv(tz))
    (eb, tb) = pair(np.zeros((0, 2, 2)))
    assert_same(ember.linalg.inv(eb), torch.linalg.inv(tb))


def test_inv_ex():
    a = np.stack([np.eye(2), np.zeros((2, 2)), np.array([[1., 2.], [2., 4.]])])
    (ea, ta) = pair(a)
    e_res, t_res = ember.linalg.inv_ex(ea), torch.linalg.inv_ex(ta)
    assert_same(e_res.info, t_res.info)
    assert_same(e_res.inverse[0], t_res.inverse[0])
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.inv_ex(ea, check_errors=True)


@pytest.mark.parametrize("sa,sb", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3)),
                                   ((2, 3, 3), (3, 4)), ((3, 3), (2, 3, 1)),
                                   ((1, 3, 3), (4, 3, 2))])
def test_solve(sa, sb):
    a, b = well(3, sa[:-2]), rand(*sb)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    assert_same(ember.linalg.solve(ea, eb), torch.linalg.solve(ta, tb))
    assert_grads_match(ember.linalg.solve, torch.linalg.solve, a, b, double_backward=True)
    res_e, res_t = ember.linalg.solve_ex(ea, eb), torch.linalg.solve_ex(ta, tb)
    assert_same(res_e.result, res_t.result)
    assert_same(res_e.info, res_t.info)


def test_solve_left_false():
    a, b = well(3), rand(2, 3)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    assert_same(ember.linalg.solve(ea, eb, left=False), torch.linalg.solve(ta, tb, left=False))
    assert_grads_match(lambda x, y: ember.linalg.solve(x, y, left=False),
                       lambda x, y: torch.linalg.solve(x, y, left=False), a, b)


def test_solve_errors():
    same_error(lambda: ember.linalg.solve(ember.eye(3), ember.ones(2)),
               lambda: torch.linalg.solve(torch.eye(3), torch.ones(2)), match_message=False)
    same_error(lambda: ember.linalg.solve(ember.eye(3), ember.ones(3, dtype=ember.float64)),
               lambda: torch.linalg.solve(torch.eye(3), torch.ones(3, dtype=torch.float64)))


# ================================================================ cholesky, qr, eigh, svd


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_cholesky(upper, batch):
    a = spd(4, batch)
    (ea, ta) = pair(a)
    assert_same(ember.linalg.cholesky(ea, upper=upper), torch.linalg.cholesky(ta, upper=upper))
    assert_same(ember.cholesky(ea, upper), torch.cholesky(ta, upper))
    ex_e, ex_t = ember.linalg.cholesky_ex(ea, upper=upper), torch.linalg.cholesky_ex(ta,
                                                                                     upper=upper)
    assert_same(ex_e.L, ex_t.L)
    assert_same(ex_e.info, ex_t.info)

    def sym(f):
        return lambda x: f(x + x.mT, upper=upper)

    assert_grads_match(sym(ember.linalg.cholesky), sym(torch.linalg.cholesky), a / 2,
                       double_backward=True)
    assert_same(ember.cholesky_inverse(ember.linalg.cholesky(ea, upper=upper), upper),
                torch.cholesky_inverse(torch.linalg.cholesky(ta, upper=upper), upper))
    (eb, tb) = pair(rand(*batch, 4, 2))
    assert_same(ember.cholesky_solve(eb, ember.linalg.cholesky(ea, upper=upper), upper),
                torch.cholesky_solve(tb, torch.linalg.cholesky(ta, upper=upper), upper))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse_reads_only_the_factors_triangle(upper):
    """torch (LAPACK's potri) ignores the other triangle of a full matrix passed as factor."""
    (ea, ta) = pair(rand(2, 4, 4) + 3 * np.eye(4))
    assert_same(ember.cholesky_inverse(ea, upper), torch.cholesky_inverse(ta, upper))


def test_cholesky_ex_info():
    a = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    (ea, ta) = pair(a)
    assert_same(ember.linalg.cholesky_ex(ea).info, torch.linalg.cholesky_ex(ta).info)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(shape, mode):
    a = rand(*shape)
    (ea, ta) = pair(a)
    q_e, r_e = ember.linalg.qr(ea, mode=mode)
    q_t, r_t = torch.linalg.qr(ta, mode=mode)
    assert_same(q_e, q_t)
    assert_same(r_e, r_t)
    m, n = shape[-2:]
    if mode == "reduced" or (mode == "complete" and m <= n):
        assert_grads_match(lambda x: tuple(ember.linalg.qr(x, mode=mode)),
                           lambda x: tuple(torch.linalg.qr(x, mode=mode)), a)
    if mode == "reduced" and m >= n:
        assert_grads_match(lambda x: tuple(ember.linalg.qr(x, mode=mode)),
                           lambda x: tuple(torch.linalg.qr(x, mode=mode)), a,
                           double_backward=True)


def _sign_fixed(v):
    """Sign-invariant eigen/singular vectors: columns squared elementwise."""
    return v * v


@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(batch, uplo):
    a = rand(*batch, 4, 4)
    (ea, ta) = pair(a)
    w_e, v_e = ember.linalg.eigh(ea, UPLO=uplo)
    w_t, v_t = torch.linalg.eigh(ta, UPLO=uplo)
    assert_same(w_e, w_t)
    assert_same(_sign_fixed(v_e), _sign_fixed(v_t))
    assert_same(ember.linalg.eigvalsh(ea, UPLO=uplo), torch.linalg.eigvalsh(ta, UPLO=uplo))
    s = a + np.swapaxes(a, -1, -2)

    def both(lib):
        return lambda x: (lib.linalg.eigh(x)[0], _sign_fixed(lib.linalg.eigh(x)[1]))

    assert_grads_match(both(ember), both(torch), s, double_backward=True)
    assert_grads_match(ember.linalg.eigvalsh, torch.linalg.eigvalsh, s)


def test_eigh_complex():
    a = rand(3, 3, dtype=np.complex128)
    h = a + a.conj().T
    (e, t) = pair(h)
    assert_same(ember.linalg.eigvalsh(e), torch.linalg.eigvalsh(t))
    v_e, v_t = ember.linalg.eigh(e)[1], torch.linalg.eigh(t)[1]
    assert_same(v_e.abs(), v_t.abs())
    assert_grads_match(lambda x: ember.linalg.eigvalsh(x), lambda x: torch.linalg.eigvalsh(x), h)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(shape, full):
    a = rand(*shape)
    (ea, ta) = pair(a)
    u_e, s_e, vh_e = ember.linalg.svd(ea, full_matrices=full)
    u_t, s_t, vh_t = torch.linalg.svd(ta, full_matrices=full)
    assert_same(s_e, s_t)
    assert_same(_sign_fixed(u_e), _sign_fixed(u_t)) if not full or shape[-2] <= shape[-1] \
        else assert_same(u_e.shape, u_t.shape)
    assert tuple(vh_e.shape) == tuple(vh_t.shape)
    k = min(shape[-2:])
    assert_same(_sign_fixed(vh_e[..., :k, :]), _sign_fixed(vh_t[..., :k, :]))
    assert_same(ember.linalg.svdvals(ea), torch.linalg.svdvals(ta))

    def f(lib):
        def fn(x):  # the complete SVD's extra vectors have no basis to compare: dropped
            u, s, vh = lib.linalg.svd(x, full_matrices=full)
            return s, _sign_fixed(u[..., :k]), _sign_fixed(vh[..., :k, :])
        return fn

    assert_grads_match(f(ember), f(torch), a, double_backward=(shape == (3, 3)))
    assert_grads_match(ember.linalg.svdvals, torch.linalg.svdvals, a)


def test_svd_legacy_and_complex():
    a = rand(4, 3)
    (ea, ta) = pair(a)
    u_e, s_e, v_e = ember.svd(ea)
    u_t, s_t, v_t = torch.svd(ta)
    assert_same(s_e, s_t)
    assert_same(_sign_fixed(v_e), _sign_fixed(v_t))
    c = rand(3, 4, dtype=np.complex128)
    (ec, tc) = pair(c)
    assert_same(ember.linalg.svdvals(ec), torch.linalg.svdvals(tc))
    assert_grads_match(ember.linalg.svdvals, torch.linalg.svdvals, c)


def test_eig():
    a = rand(2, 4, 4)
    (ea, ta) = pair(a)
    w_e, v_e = ember.linalg.eig(ea)
    w_t, _ = torch.linalg.eig(ta)
    order = lambda w: np.lexsort((np.round(w.imag, 8), np.round(w.real, 8)))  # noqa: E731
    for i in range(2):
        we, wt = w_e[i].numpy(), w_t[i].numpy()
        np.testing.assert_allclose(we[order(we)], wt[order(wt)], rtol=1e-10, atol=1e-10)
    assert w_e.dtype is ember.complex128 and v_e.dtype is ember.complex128
    # A V = V diag(w)
    recon = ea.to(ember.complex128) @ v_e - v_e * w_e.unsqueeze(-2)
    assert float(recon.abs().amax()) < 1e-10
    assert_same(ember.linalg.eigvals(ea).abs().sort(-1).values,
                torch.linalg.eigvals(ta).abs().sort(-1).values)
    # eigenvalues of a symmetric matrix are real: a gauge-free gradient check
    s = a[0] + a[0].T
    assert_grads_match(lambda x: ember.linalg.eigvals(x).real.sort().values,
                       lambda x: torch.linalg.eigvals(x).real.sort().values, s)


# ================================================================ pinv, rank, lstsq, powers


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_pinv_rank(shape):
    a = rand(*shape)
    (ea, ta) = pair(a)
    assert_same(ember.linalg.pinv(ea), torch.linalg.pinv(ta))
    assert_same(ember.pinverse(ea), torch.pinverse(ta))
    assert_same(ember.linalg.matrix_rank(ea), torch.linalg.matrix_rank(ta))
    assert_grads_match(ember.linalg.pinv, torch.linalg.pinv, a)
    low = rand(4, 2) @ rand(2, 4)
    (el, tl) = pair(low)
    assert_same(ember.linalg.matrix_rank(el), torch.linalg.matrix_rank(tl))
    assert_same(ember.linalg.matrix_rank(el, atol=1.0, rtol=0.0),
                torch.linalg.matrix_rank(tl, atol=1.0, rtol=0.0))
    assert_same(ember.linalg.matrix_rank(el, hermitian=True),
                torch.linalg.matrix_rank(tl, hermitian=True))
    assert_same(ember.linalg.pinv(el), torch.linalg.pinv(tl))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape, rank", [((4, 4), 2), ((3, 5), 1), ((2, 5, 3), 2)])
def test_pinv_gradients_at_rank_deficient_matrices(shape, rank, dtype):
    """torch differentiates pinv by its own formula (not through the SVD), which holds where
    the rank drops; reverse, double-reverse and forward mode against torch."""
    left, right = rand(*shape[:-1], rank, dtype=dtype), rand(*shape[:-2], rank, shape[-1],
                                                              dtype=dtype)
    a = left @ right
    assert_grads_match(ember.linalg.pinv, torch.linalg.pinv, a,
                       double_backward=dtype is np.float64)
    assert_grads_match(lambda x: ember.linalg.pinv(x + x.mH, hermitian=True),
                       lambda x: torch.linalg.pinv(x + x.mH, hermitian=True),
                       a[..., :shape[-1], :shape[-1]] if shape[-2] >= shape[-1] else
                       a[..., :shape[-2]])
    tangent = rand(*shape, dtype=dtype)
    tangents = []
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(lib.tensor(a), lib.tensor(tangent))
            tangents.append(fw.unpack_dual(lib.linalg.pinv(dual)).tangent)
    assert_same(tangents[0], tangents[1])


@pytest.mark.parametrize("driver", [None, "gelsd", "gelss", "gels"])
def test_lstsq(driver):
    a, b = rand(5, 3), rand(5, 2)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    res_e, res_t = ember.linalg.lstsq(ea, eb, driver=driver), torch.linalg.lstsq(ta, tb,
                                                                                 driver=driver)
    assert_same(res_e.solution, res_t.solution)
    assert_same(res_e.residuals, res_t.residuals)
    assert_same(res_e.rank, res_t.rank)
    assert_same(res_e.singular_values, res_t.singular_values)
    assert_grads_match(lambda x, y: ember.linalg.lstsq(x, y, driver=driver).solution,
                       lambda x, y: torch.linalg.lstsq(x, y, driver=driver).solution, a, b)


@pytest.mark.parametrize("norm", [1e-9, 1e-5, 1e-3, 0.03, 0.3, 1.0, 2.5, 20.0])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_matrix_exp_follows_torchs_taylor_degrees(norm, dtype, batch):
    """Each 1-norm takes torch's Taylor degree (1 to 18) and scaling: results agree with
    torch's to a few units of the dtype's rounding (relative to the largest entry)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(batch + (5, 5)) * norm / 5
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(batch + (5, 5)) * norm / 5
    (ea, ta) = pair(a, dtype)
    expected = torch.linalg.matrix_exp(ta)
    scale = float(expected.abs().max())
    tol = 1e-5 if dtype in ("float32", "complex64") else 1e-13
    assert_same(ember.linalg.matrix_exp(ea), expected, rtol=0, atol=tol * scale)


def test_matrix_exp_of_inf_or_nan_is_nan():
    for a in (np.array([[1.0, np.inf], [0.0, 1.0]]), np.array([[[1.0, np.nan], [0.0, 1.0]],
                                                               [[1.0, 2.0], [3.0, 4.0]]])):
        (ea, ta) = pair(a)
        assert_same(ember.linalg.matrix_exp(ea), torch.linalg.matrix_exp(ta))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, -1, -3])
def test_matrix_power(n):
    a = well(3, (2,)) / 3
    (ea, ta) = pair(a)
    assert_same(ember.linalg.matrix_power(ea, n), torch.linalg.matrix_power(ta, n))
    assert_same(ember.matrix_power(ea, n), torch.matrix_power(ta, n))
    assert_grads_match(lambda x: ember.linalg.matrix_power(x, n),
                       lambda x: torch.linalg.matrix_power(x, n), a)
    (ei, ti) = pair(rand(3, 3, dtype=np.int64))
    if n >= 0:
        assert_same(ember.linalg.matrix_power(ei, n), torch.linalg.matrix_power(ti, n))


@pytest.mark.parametrize("scale", [0.1, 1.0, 30.0])
def test_matrix_exp(scale):
    a = rand(2, 4, 4) * scale
    (ea, ta) = pair(a)
    assert_same(ember.linalg.matrix_exp(ea), torch.linalg.matrix_exp(ta), rtol=1e-9, atol=1e-9)
    assert_same(ember.matrix_exp(ea.float()), torch.matrix_exp(ta.float()), rtol=1e-4,
                atol=1e-3 * scale ** 2)
    if scale <= 1:
        assert_grads_match(ember.linalg.matrix_exp, torch.linalg.matrix_exp, a,
                           double_backward=(scale == 0.1))
    c = rand(3, 3, dtype=np.complex128)
    (ec, tc) = pair(c)
    assert_same(ember.linalg.matrix_exp(ec), torch.linalg.matrix_exp(tc))


# ================================================================ norms, vecdot, householder


@pytest.mark.parametrize("ord", [None, 2, 1, 0, 3.5, float("inf"), -float("inf"), -1])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)])
def test_vector_norm(ord, dim):
    a = rand(3, 4, 2)
    (ea, ta) = pair(a)
    o = 2 if ord is None else ord
    assert_same(ember.linalg.vector_norm(ea, o, dim), torch.linalg.vector_norm(ta, o, dim))
    assert_same(ember.linalg.vector_norm(ea, o, dim, keepdim=True),
                torch.linalg.vector_norm(ta, o, dim, keepdim=True))
    if o != 0:
        assert_grads_match(lambda x: ember.linalg.vector_norm(x, o, dim),
                           lambda x: torch.linalg.vector_norm(x, o, dim), a)
    if dim is None or isinstance(dim, int):
        assert_same(ember.linalg.norm(ea.reshape(-1) if ord is not None else ea, ord, dim),
                    torch.linalg.norm(ta.reshape(-1) if ord is not None else ta, ord, dim))


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf")])
def test_matrix_norm(ord):
    a = rand(2, 3, 4)
    (ea, ta) = pair(a)
    assert_same(ember.linalg.matrix_norm(ea, ord), torch.linalg.matrix_norm(ta, ord))
    assert_same(ember.linalg.matrix_norm(ea, ord, dim=(0, 2), keepdim=True),
                torch.linalg.matrix_norm(ta, ord, dim=(0, 2), keepdim=True))
    assert_same(ember.linalg.norm(ea[0], ord), torch.linalg.norm(ta[0], ord))
    assert_grads_match(lambda x: ember.linalg.matrix_norm(x, ord),
                       lambda x: torch.linalg.matrix_norm(x, ord), a)


def test_norm_dtypes_and_errors():
    (e, t) = pair(rand(3, 4, dtype=np.float32))
    assert_same(ember.linalg.vector_norm(e, dtype=ember.float64),
                torch.linalg.vector_norm(t, dtype=torch.float64))
    (c, tc) = pair(rand(3, 4, dtype=np.complex64))
    assert_same(ember.linalg.norm(c), torch.linalg.norm(tc))
    assert_same(ember.linalg.matrix_norm(c), torch.linalg.matrix_norm(tc))
    same_error(lambda: ember.linalg.vector_norm(ember.ones(2, dtype=ember.int64)),
               lambda: torch.linalg.vector_norm(torch.ones(2, dtype=torch.int64)))
    same_error(lambda: ember.linalg.matrix_norm(ember.ones(2)),
               lambda: torch.linalg.matrix_norm(torch.ones(2)))
    same_error(lambda: ember.linalg.vector_norm(ember.ones(0), float("inf")),
               lambda: torch.linalg.vector_norm(torch.ones(0), float("inf")))


def test_vecdot_householder():
    x, y = rand(3, 4, dtype=np.complex128), rand(4, dtype=np.complex128)
    (ex, tx), (ey, ty) = pair(x), pair(y)
    assert_same(ember.linalg.vecdot(ex, ey), torch.linalg.vecdot(tx, ty))
    assert_same(ember.linalg.vecdot(ex.real, ey.real, dim=-1),
                torch.linalg.vecdot(tx.real, ty.real, dim=-1))
    assert_grads_match(lambda a, b: ember.linalg.vecdot(a, b, dim=0),
                       lambda a, b: torch.linalg.vecdot(a, b, dim=0), rand(3, 2), rand(3, 2))
    a, tau = rand(2, 5, 3), rand(2, 2)
    (ea, ta), (et, tt) = pair(a), pair(tau)
    assert_same(ember.linalg.householder_product(ea, et),
                torch.linalg.householder_product(ta, tt))
    assert_grads_match(ember.linalg.householder_product, torch.linalg.householder_product,
                       a, tau)


def test_linalg_diagonal_and_matmul():
    (e, t) = pair(rand(2, 3, 3))
    assert_same(ember.linalg.diagonal(e, offset=1), torch.linalg.diagonal(t, offset=1))
    assert_same(ember.linalg.matmul(e, e), torch.linalg.matmul(t, t))


# ================================================================ meta device


META_CASES = [
    ("matmul", lambda m, d: m.matmul(m.empty(5, 1, 2, 3, device=d), m.empty(4, 3, 2, device=d))),
    ("matmul1d", lambda m, d: m.matmul(m.empty(3, device=d), m.empty(2, 3, 4, device=d))),
    ("mm", lambda m, d: m.mm(m.empty(2, 3, device=d), m.empty(3, 4, device=d))),
    ("dot", lambda m, d: m.dot(m.empty(3, device=d), m.empty(3, device=d))),
    ("addmm", lambda m, d: m.addmm(m.empty(4, device=d), m.empty(2, 3, device=d),
                                   m.empty(3, 4, device=d))),
    ("einsum", lambda m, d: m.einsum("bij,bjk->bki", m.empty(2, 3, 4, device=d),
                                     m.empty(2, 4, 5, device=d))),
    ("inv", lambda m, d: m.linalg.inv(m.empty(2, 3, 3, device=d))),
    ("det", lambda m, d: m.linalg.det(m.empty(2, 3, 3, device=d))),
    ("slogdet", lambda m, d: tuple(m.linalg.slogdet(m.empty(2, 3, 3, device=d)))),
    ("solve", lambda m, d: m.linalg.solve(m.empty(2, 3, 3, device=d), m.empty(3, 4, device=d))),
    ("cholesky", lambda m, d: m.linalg.cholesky(m.empty(3, 3, device=d))),
    ("qr", lambda m, d: tuple(m.linalg.qr(m.empty(5, 3, device=d)))),
    ("qr complete", lambda m, d: tuple(m.linalg.qr(m.empty(5, 3, device=d), mode="complete"))),
    ("eigh", lambda m, d: tuple(m.linalg.eigh(m.empty(3, 3, device=d)))),
    ("svd", lambda m, d: tuple(m.linalg.svd(m.empty(2, 5, 3, device=d)))),
    ("svd reduced", lambda m, d: tuple(m.linalg.svd(m.empty(5, 3, device=d),
                                                    full_matrices=False))),
    ("eig", lambda m, d: tuple(m.linalg.eig(m.empty(3, 3, device=d)))),
    ("matrix_exp", lambda m, d: m.linalg.matrix_exp(m.empty(3, 3, device=d))),
    ("cross", lambda m, d: m.linalg.cross(m.empty(4, 3, device=d), m.empty(1, 3, device=d))),
    ("diag_embed", lambda m, d: m.diag_embed(m.empty(2, 3, device=d), 1)),
]


@pytest.mark.parametrize("label,fn", META_CASES, ids=[c[0] for c in META_CASES])
def test_meta(label, fn):
    e_out, t_out = fn(ember, "meta"), fn(torch, "meta")
    e_outs = e_out if isinstance(e_out, tuple) else (e_out,)
    t_outs = t_out if isinstance(t_out, tuple) else (t_out,)
    for e, t in zip(e_outs, t_outs):
        assert e.device.type == "meta"
        assert tuple(e.shape) == tuple(t.shape), label
        assert e.dtype.name == str(t.dtype).removeprefix("torch."), label


# ================================================================ devices


def test_device_matmul_and_solve(device):
    # webgpu: float32 (no f64 there); matmul in WGSL, solve and eigvalsh counted CPU fallbacks
    fd, rtol, atol = float_for(device)
    a, b = well(3, (2,)).astype(fd), rand(2, 3, 2).astype(fd)
    ea, eb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    ta, tb = torch.tensor(a), torch.tensor(b)
    before = ember.webgpu.fallback_ops() if device == "webgpu" else {}
    assert_same((ea @ eb).cpu(), ta @ tb, rtol=rtol, atol=atol)
    assert_same(ember.linalg.solve(ea, eb).cpu(), torch.linalg.solve(ta, tb), rtol=rtol,
                atol=atol)
    assert_same(ember.linalg.eigvalsh(ea + ea.mT).cpu(), torch.linalg.eigvalsh(ta + ta.mT),
                rtol=rtol, atol=atol)
    if device == "webgpu":
        counted = ember.webgpu.fallback_ops()
        grew = {op for op in counted if counted[op] > before.get(op, 0)}
        assert "matmul" not in grew and any(op.startswith("linalg.") for op in grew), grew


def test_complex_decomposition_grads():
    rng = np.random.default_rng(3)
    c = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    square = c[:3] + 3 * np.eye(3)
    herm = c[:3] + c[:3].conj().T

    def qr(lib):
        return lambda x: tuple(lib.linalg.qr(x))

    def svd(lib):
        def fn(x):
            u, s, vh = lib.linalg.svd(x, full_matrices=False)
            return s, u.abs() ** 2, vh.abs() ** 2
        return fn

    def eigh(lib):
        def fn(x):
            w, v = lib.linalg.eigh(x)
            return w, v.abs() ** 2
        return fn

    assert_grads_match(qr(ember), qr(torch), c)
    assert_grads_match(svd(ember), svd(torch), c)
    assert_grads_match(eigh(ember), eigh(torch), herm)
    assert_grads_match(lambda x: ember.linalg.solve(x, x.sum(-1)),
                       lambda x: torch.linalg.solve(x, x.sum(-1)), square)
    assert_grads_match(lambda x: ember.linalg.cholesky(x @ x.mH),
                       lambda x: torch.linalg.cholesky(x @ x.mH), square)
    assert_grads_match(lambda x: ember.linalg.slogdet(x).logabsdet,
                       lambda x: torch.linalg.slogdet(x).logabsdet, square)
    assert_grads_match(ember.linalg.matrix_exp, torch.linalg.matrix_exp, square * 0.3)


def test_solve_left_false_vector_error():
    same_error(lambda: ember.linalg.solve(ember.eye(3), ember.ones(3), left=False),
               lambda: torch.linalg.solve(torch.eye(3), torch.ones(3), left=False))
