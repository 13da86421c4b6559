"""Known gaps against torch, closed: internal-overlap writes, tie/NaN index rules of the
selection ops, det/slogdet/logdet gradients at singular matrices, linalg.lstsq's drivers."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same, make_pair

_OVERLAP = "more than one element of the written-to tensor"


# ================================================================ internal overlap


@pytest.mark.parametrize("write", [
    lambda x, lib: x.add_(1),
    lambda x, lib: x.mul_(2.0),
    lambda x, lib: x.exp_(),
    lambda x, lib: x.copy_(lib.ones(3, 2, dtype=lib.float64)),
    lambda x, lib: x.__setitem__(Ellipsis, 3.0),
])
def test_as_strided_overlap_without_zero_stride_is_written(write):
    # torch cannot prove the overlap (no zero stride) and writes; which value wins is
    # implementation-defined, so only "no error" (and a version bump) is compared
    for lib in (ember, torch):
        base = lib.zeros(4, dtype=lib.float64)
        view = base.as_strided((3, 2), (1, 1))
        version = view._version
        write(view, lib)
        assert view._version > version


def test_overlapping_unfold_is_written():
    for lib in (ember, torch):
        lib.arange(6.0).unfold(0, 3, 1).add_(1)


def test_nonoverlapping_as_strided_writes_match_torch():
    e, t = make_pair(np.arange(12.0))
    e.as_strided((3, 2), (4, 2), 1).mul_(10)
    t.as_strided((3, 2), (4, 2), 1).mul_(10)
    assert_same(e, t)
    e, t = make_pair(np.arange(8.0))
    e.unfold(0, 2, 3).add_(100)
    t.unfold(0, 2, 3).add_(100)
    assert_same(e, t)


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(3).expand(2, 3),
    lambda lib: lib.zeros(4).as_strided((2, 3), (0, 1)),
    lambda lib: lib.zeros(2, 1, 3).expand(2, 4, 3)[:, 1:],
])
@pytest.mark.parametrize("write", [
    lambda x, lib: x.add_(1),
    lambda x, lib: x.sub_(lib.ones(x.shape)),
    lambda x, lib: x.copy_(lib.ones(x.shape)),
    lambda x, lib: x.clamp_(0, 1),
    lambda x, lib: x.uniform_(),
    lambda x, lib: lib.add(lib.ones(x.shape), 1, out=x),
])
def test_zero_stride_overlap_raises_like_torch(make, write):
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match=_OVERLAP):
            write(make(lib), lib)


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(3).expand(0, 3),           # empty: no overlap
    lambda lib: lib.zeros(3).expand(1, 3),           # zero stride over size 1
    lambda lib: lib.zeros(4).as_strided((2, 0), (0, 1)),
    lambda lib: lib.zeros(3).expand(2, 3)[0],        # one row of an expanded tensor
])
def test_zero_stride_without_overlap_is_written(make):
    outs = []
    for lib in (ember, torch):
        x = make(lib)
        x.add_(1)
        outs.append(x)
    assert_same(*outs)


@pytest.mark.parametrize("write", [lambda x: x.fill_(2.5), lambda x: x.zero_()])
def test_fill_and_zero_write_expanded_tensors_as_torch(write):
    outs = []
    for lib in (ember, torch):
        base = lib.arange(3.0)
        write(base.expand(2, 3))
        outs.append(base)
    assert_same(*outs)


def test_meta_overlap_is_not_checked():
    for lib in (ember, torch):
        lib.zeros(3, device="meta").expand(2, 3).add_(1)


# ================================================================ ties and NaN in selections


def _tie_inputs(seed, shape):
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 3, size=shape).astype(np.float64)
    same = np.ones(shape)
    binary = rng.integers(0, 2, size=shape).astype(np.float64)
    nan = small.copy()
    nan[rng.random(shape) < 0.3] = np.nan
    inf = small.copy()
    inf[rng.random(shape) < 0.3] = np.inf
    inf[rng.random(shape) < 0.2] = -np.inf
    return [small, same, binary, nan, inf]


_TIE_SHAPES = [(7,), (1,), (4, 6), (3, 5, 4), (2, 16), (5, 1), (3, 40), (2, 1000)]


def _same_pair(e, t):
    assert_same(e.values, t.values)
    assert_same(e.indices, t.indices)


@pytest.mark.parametrize("shape", _TIE_SHAPES)
@pytest.mark.parametrize("op", ["max", "min", "median", "nanmedian"])
def test_dim_selection_indices_with_ties_and_nan(shape, op):
    # max/min: the first extreme (the first NaN when there is one); median/nanmedian: the
    # ((count - 1) // 2)-th element in stable sorted order (ties by index, NaN last)
    for a in _tie_inputs(len(shape) * 7 + 1, shape):
        e, t = make_pair(a)
        for d in range(-a.ndim, a.ndim):
            _same_pair(getattr(e, op)(d), getattr(t, op)(d))
            _same_pair(getattr(e, op)(d, True), getattr(t, op)(d, True))


@pytest.mark.parametrize("shape", _TIE_SHAPES)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_extremes_first_index(shape, op):
    for a in _tie_inputs(3, shape):
        e, t = make_pair(a)
        assert_same(getattr(e, op)(), getattr(t, op)())
        for d in range(-a.ndim, a.ndim):
            assert_same(getattr(e, op)(d), getattr(t, op)(d))


@pytest.mark.parametrize("n", [1, 2, 5, 9, 16])
@pytest.mark.parametrize("descending", [False, True])
def test_unstable_sort_ties_up_to_16_keep_order(n, descending):
    # torch's CPU sort (stable=False) keeps equal elements in their order up to 16 elements
    # along the dim (NaN last ascending, first descending); so does ember at every length
    for a in _tie_inputs(n, (3, n)):
        e, t = make_pair(a)
        _same_pair(e.sort(-1, descending), t.sort(-1, descending))
        assert_same(e.argsort(-1, descending), t.argsort(-1, descending))


@pytest.mark.parametrize("shape", [(4, 50), (2, 1000)])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_ties(shape, descending):
    for a in _tie_inputs(5, shape):
        e, t = make_pair(a)
        _same_pair(e.sort(dim=-1, descending=descending, stable=True),
                   t.sort(dim=-1, descending=descending, stable=True))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12, 16])
def test_mode_ties_last_index(n):
    # without NaN, torch's mode is the smallest most frequent value at its last position
    # (up to 16 elements, where its sort keeps ties in order)
    for a in _tie_inputs(n, (4, n))[:3]:
        e, t = make_pair(a)
        _same_pair(e.mode(-1), t.mode(-1))
        _same_pair(e.mode(0, True), t.mode(0, True))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_topk_kthvalue_ties_small(n):
    # up to 3 elements torch's topk selection is an insertion sort (ties keep their order);
    # kthvalue's own quickselect does too up to 2 elements
    for a in _tie_inputs(n, (5, n)):
        e, t = make_pair(a)
        for k in range(1, n + 1):
            if n <= 2:
                _same_pair(e.kthvalue(k, -1), t.kthvalue(k, -1))
            for largest in (True, False):
                for sort in (True, False):
                    _same_pair(e.topk(k, -1, largest, sort), t.topk(k, -1, largest, sort))


@pytest.mark.parametrize("shape", [(6, 9), (3, 40)])
def test_topk_kthvalue_values_with_ties(shape):
    # for longer rows the tie-breaking index follows torch's partition internals (not a
    # documented rule): values match, and ember's indices point at equal values
    for a in _tie_inputs(11, shape):
        e, t = make_pair(a)
        n = shape[-1]
        for k in (1, 2, n // 2, n):
            ek, tk = e.kthvalue(k, -1), t.kthvalue(k, -1)
            assert_same(ek.values, tk.values)
            picked = np.take_along_axis(a, ek.indices.numpy()[..., None], -1)[..., 0]
            np.testing.assert_array_equal(picked, tk.values.numpy())
            for largest in (True, False):
                et, tt = e.topk(k, -1, largest), t.topk(k, -1, largest)
                assert_same(et.values, tt.values)
                picked = np.take_along_axis(a, et.indices.numpy(), -1)
                np.testing.assert_array_equal(picked, tt.values.numpy())


# ================================================================ det / slogdet / logdet


_SINGULAR = {
    "rank1_2x2": np.array([[1.0, 2.0], [2.0, 4.0]]),
    "rank2_3x3": np.arange(1.0, 10.0).reshape(3, 3),
    "rank3_4x4": np.array([[1.0, 2.0, 0.5, 3.5], [0.0, 1.0, 1.0, 2.0], [2.0, 1.0, -1.0, 0.0],
                           [3.0, 4.0, 0.5, 5.5]]),
    "zero_row": np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [4.0, 1.0, 2.0]]),
    "zero_1x1": np.zeros((1, 1)),
    "zero_2x2": np.zeros((2, 2)),
    "rank1_3x3": np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]),
}


def _first_order_under_create_graph(fn_e, fn_t, a, seed=0):
    # torch 2.13 returns the adjugate at singular matrices only under create_graph (a plain
    # backward gives zeros for n >= 2); ember returns the adjugate in both modes
    g = np.random.default_rng(seed).standard_normal(a.shape[:-2])
    e, t = make_pair(a, requires_grad=True)
    (ge,) = ember.autograd.grad(fn_e(e), e, ember.tensor(g))
    (gt,) = torch.autograd.grad(fn_t(t), t, torch.from_numpy(g), create_graph=True)
    assert_same(ge, gt.detach(), rtol=1e-7, atol=1e-10)
    (ge2,) = ember.autograd.grad(fn_e(e), e, ember.tensor(g), create_graph=True)
    assert_same(ge2.detach(), gt.detach(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("name", sorted(_SINGULAR))
def test_det_grad_at_singular_matrices(name):
    a = _SINGULAR[name]
    _first_order_under_create_graph(ember.linalg.det, torch.linalg.det, a)
    _first_order_under_create_graph(ember.det, torch.det, a)


@pytest.mark.parametrize("name", ["rank1_2x2", "rank2_3x3", "rank3_4x4", "zero_row"])
def test_det_double_backward_rank_n_minus_1(name):
    assert_grads_match(ember.linalg.det, torch.linalg.det, _SINGULAR[name], rtol=1e-7, atol=1e-9,
                       double_backward=True)


def test_det_grad_batched_mixed_singular_and_invertible():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3, 3))
    a[0, 1] = _SINGULAR["rank2_3x3"]
    a[1, 2] = _SINGULAR["rank1_3x3"]
    a[1, 0, 2] = a[1, 0, 0] * 2
    _first_order_under_create_graph(ember.linalg.det, torch.linalg.det, a)
    b = a[:, :2].copy()
    b[1, 0] = np.eye(3)
    b[0, 0] = _SINGULAR["zero_row"]
    assert_grads_match(ember.linalg.det, torch.linalg.det, b, rtol=1e-7, atol=1e-9,
                       double_backward=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_det_grad_invertible_unchanged(dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3, 3)).astype(dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert_grads_match(ember.linalg.det, torch.linalg.det, a, rtol=tol, atol=tol,
                       double_backward=dtype == np.float64)


def test_det_grad_complex_singular():
    a = np.array([[1 + 1j, 2 - 1j], [2 + 2j, 1 - 3j]])
    a[1] = a[0] * (1 - 2j)
    e, t = make_pair(a, requires_grad=True)
    (ge,) = ember.autograd.grad(ember.linalg.det(e), e, ember.tensor(0.5 - 1j))
    (gt,) = torch.autograd.grad(torch.linalg.det(t), t, torch.tensor(0.5 - 1j,
                                dtype=torch.complex128), create_graph=True)
    assert_same(ge, gt.detach(), rtol=1e-7, atol=1e-10)


def test_det_grad_meta():
    x = ember.zeros(2, 3, 3, device="meta", requires_grad=True)
    (g,) = ember.autograd.grad(ember.linalg.det(x).sum(), x)
    assert g.shape == (2, 3, 3) and g.device.type == "meta" and g.dtype == ember.float32


def _grad_pattern(fn_e, fn_t, a):
    e, t = make_pair(a, requires_grad=True)
    (ge,) = ember.autograd.grad(fn_e(e).sum(), e)
    (gt,) = torch.autograd.grad(fn_t(t).sum(), t)
    return ge.numpy(), gt.numpy()


@pytest.mark.parametrize("name", ["rank1_2x2", "zero_1x1", "zero_row"])
@pytest.mark.parametrize("which", ["slogdet", "logdet"])
def test_slogdet_logdet_grad_at_singular_is_nonfinite_like_torch(name, which):
    # torch solves with the LU factors: a zero pivot gives inf/NaN instead of an error
    fn_e = (lambda x: ember.linalg.slogdet(x).logabsdet) if which == "slogdet" else ember.logdet
    fn_t = (lambda x: torch.linalg.slogdet(x).logabsdet) if which == "slogdet" else torch.logdet
    ge, gt = _grad_pattern(fn_e, fn_t, _SINGULAR[name])
    # no LinAlgError; torch's inf/NaN entries are inf/NaN in ember too (which of the other
    # entries stay finite depends on the order of the triangular solves)
    assert not np.isfinite(gt).all()
    assert not np.isfinite(ge[~np.isfinite(gt)]).any()


def test_slogdet_grad_invertible_batched():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 4))
    assert_grads_match(lambda x: ember.linalg.slogdet(x).logabsdet,
                       lambda x: torch.linalg.slogdet(x).logabsdet, a, double_backward=True)
    spd = a @ a.transpose(0, 2, 1) + np.eye(4)
    assert_grads_match(ember.logdet, torch.logdet, spd, double_backward=True)


# ================================================================ linalg.lstsq


_DRIVERS = [None, "gels", "gelsy", "gelsd", "gelss"]


def _lstsq_pair(a, b, driver, rcond=None):
    e = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), rcond, driver=driver)
    t = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), rcond, driver=driver)
    return e, t


def _check_lstsq(e, t, tol=1e-8, solution=True):
    for name in ("solution", "residuals", "rank", "singular_values"):
        if name == "solution" and not solution:
            assert tuple(e.solution.shape) == tuple(t.solution.shape)
            continue
        assert_same(getattr(e, name), getattr(t, name), rtol=tol, atol=tol)


@pytest.mark.parametrize("driver", _DRIVERS)
@pytest.mark.parametrize("shapes", [
    ((5, 3), (5, 2)), ((3, 3), (3, 2)), ((2, 4), (2, 3)), ((4, 6, 3), (4, 6, 2)),
    ((5, 3), (5,)), ((4, 5, 3), (4, 5)), ((1, 5, 3), (2, 5, 2)), ((2, 5, 3), (1, 5, 2)),
    ((2, 1, 4, 2), (1, 3, 4, 1)), ((0, 5, 3), (0, 5, 2)),
])
def test_lstsq_fields_full_rank(driver, shapes):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    _check_lstsq(*_lstsq_pair(a, b, driver))
    e, t = _lstsq_pair(a.astype(np.float32), b.astype(np.float32), driver)
    _check_lstsq(e, t, tol=1e-4)


@pytest.fixture
def one_thread():
    """Single-threaded BLAS/LAPACK in both libraries: with several threads, the rank-revealing
    factorisations of an exactly rank-deficient matrix rarely took different pivots from one
    run to the next (seen as a flaky mismatch in a loaded full run)."""
    ember_threads, torch_threads = ember.get_num_threads(), torch.get_num_threads()
    ember.set_num_threads(1)
    torch.set_num_threads(1)
    yield
    ember.set_num_threads(ember_threads)
    torch.set_num_threads(torch_threads)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_rank_deficient(driver, one_thread):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 4))
    a[:, 3] = a[:, 0] - 2 * a[:, 1]
    b = rng.standard_normal((6, 2))
    _check_lstsq(*_lstsq_pair(a, b, driver))            # minimum-norm solution, rank 3
    full = rng.standard_normal((6, 4))
    batch = np.stack([a, full])
    _check_lstsq(*_lstsq_pair(batch, np.stack([b, b]), driver))  # mixed: no residuals
    _check_lstsq(*_lstsq_pair(full, b, driver, rcond=0.5))       # rcond cuts singular values
    wide = a.T.copy()
    _check_lstsq(*_lstsq_pair(wide, rng.standard_normal((4, 3)), driver))


def test_lstsq_complex():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))
    b = rng.standard_normal((5, 2)) + 1j * rng.standard_normal((5, 2))
    for driver in _DRIVERS:
        _check_lstsq(*_lstsq_pair(a, b, driver))


@pytest.mark.parametrize("driver", _DRIVERS)
@pytest.mark.parametrize("shapes", [((5, 3), (5, 2)), ((3, 3), (3,)), ((2, 4), (2, 2)),
                                    ((2, 5, 3), (1, 5, 2))])
def test_lstsq_solution_grad(driver, shapes):
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    assert_grads_match(lambda x, y: ember.linalg.lstsq(x, y, driver=driver).solution,
                       lambda x, y: torch.linalg.lstsq(x, y, driver=driver).solution, a, b,
                       double_backward=True)


def test_lstsq_residuals_grad_and_rank_deficient_grad():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    assert_grads_match(lambda x, y: ember.linalg.lstsq(x, y, driver="gelsd").residuals,
                       lambda x, y: torch.linalg.lstsq(x, y, driver="gelsd").residuals, a, b)
    a[:, 2] = a[:, 0] + a[:, 1]
    assert_grads_match(lambda x, y: ember.linalg.lstsq(x, y).solution,
                       lambda x, y: torch.linalg.lstsq(x, y).solution, a, b)


def test_lstsq_meta():
    # torch has no meta kernel for lstsq: compare with its CPU result's shapes and dtypes
    a = ember.zeros(2, 5, 3, device="meta")
    b = ember.zeros(2, 5, 4, device="meta")
    rng = np.random.default_rng(8)
    for driver in _DRIVERS:
        e = ember.linalg.lstsq(a, b, driver=driver)
        t = torch.linalg.lstsq(torch.from_numpy(rng.standard_normal((2, 5, 3))).float(),
                               torch.from_numpy(rng.standard_normal((2, 5, 4))).float(),
                               driver=driver)
        assert all(x.device.type == "meta" for x in e)
        for x, y in zip(e, t):
            assert tuple(x.shape) == tuple(y.shape), driver
            assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]


@pytest.mark.parametrize("args", [
    lambda lib: (lib.ones(3), lib.ones(3)),
    lambda lib: (lib.ones(5, 3), lib.ones(2, 5, 2)),
    lambda lib: (lib.ones(2, 5, 3), lib.ones(5)),
    lambda lib: (lib.ones(5, 3), lib.ones(4, 2)),
    lambda lib: (lib.ones(3, 5), lib.ones(4)),
    lambda lib: (lib.ones(2, 5, 3), lib.ones(5, 2)),
    lambda lib: (lib.ones(4, 1, 5, 3), lib.ones(2, 5, 2)),
    lambda lib: (lib.ones(3, 3), lib.ones(3, 2, dtype=lib.float64)),
    lambda lib: (lib.ones(3, 3, dtype=lib.int64), lib.ones(3, 2, dtype=lib.int64)),
    lambda lib: (lib.ones(3, 3, dtype=lib.float16), lib.ones(3, 2, dtype=lib.float16)),
])
def test_lstsq_errors(args):
    with pytest.raises(RuntimeError) as t_err:
        torch.linalg.lstsq(*args(torch))
    with pytest.raises(RuntimeError) as e_err:
        ember.linalg.lstsq(*args(ember))
    assert str(e_err.value).split(":")[-1].strip()[:25] == \
        str(t_err.value).split(":")[-1].strip()[:25]


def test_lstsq_bad_driver():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="driver"):
            lib.linalg.lstsq(lib.ones(3, 3), lib.ones(3, 2), driver="gesv")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_det_grad_nonfinite_input(bad):
    a = np.array([[1.0, bad], [2.0, 3.0]])
    e, t = make_pair(a, requires_grad=True)
    (ge,) = ember.autograd.grad(ember.linalg.det(e), e)
    (gt,) = torch.autograd.grad(torch.linalg.det(t), t)
    assert_same(ge, gt)
