"""geqrf, orgqr/householder_product, ormqr and lobpcg against torch (the oracle)."""

import numpy as np
import pytest
import torch

import ember


def _pair(array):
    return ember.tensor(array), torch.tensor(array)


def _random(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    array = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        array = array + 1j * rng.standard_normal(shape)
    return array.astype(dtype)


def _error(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the oracle's exception is what we compare
        return type(error).__name__, str(error)
    return None


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 0, 3), (3, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_geqrf_matches_torch(shape, dtype):
    mine, theirs = _pair(_random(shape, dtype))
    a, tau = ember.geqrf(mine)
    expected = torch.geqrf(theirs)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(a.numpy(), expected.a.numpy(), atol=tolerance)
    np.testing.assert_allclose(tau.numpy(), expected.tau.numpy(), atol=tolerance)
    assert a.dtype == getattr(ember, str(expected.a.dtype).split(".")[1])
    method_a, _ = mine.geqrf()
    np.testing.assert_array_equal(method_a.numpy(), a.numpy())


def test_geqrf_backward_raises_as_torch():
    mine, theirs = _pair(_random((4, 3)))
    mine.requires_grad_()
    theirs.requires_grad_()
    a, _ = ember.geqrf(mine)
    expected, _ = torch.geqrf(theirs)
    assert a.grad_fn.name() == expected.grad_fn.name()
    assert _error(lambda: a.sum().backward()) == _error(lambda: expected.sum().backward())


@pytest.mark.parametrize("make", [lambda: np.ones(3), lambda: np.ones((3, 3), np.int32),
                                  lambda: np.ones((3, 3), np.float16)])
def test_geqrf_bad_input_errors_match_torch(make):
    mine, theirs = _pair(make())
    assert _error(lambda: ember.geqrf(mine)) == _error(lambda: torch.geqrf(theirs))


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_orgqr_is_householder_product_and_matches_torch(shape, dtype):
    mine, theirs = _pair(_random(shape, dtype))
    a, tau = ember.geqrf(mine)
    expected = torch.orgqr(*torch.geqrf(theirs))
    np.testing.assert_allclose(ember.orgqr(a, tau).numpy(), expected.numpy(), atol=1e-12)
    np.testing.assert_allclose(a.orgqr(tau).numpy(), expected.numpy(), atol=1e-12)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_ormqr_matches_torch(left, transpose, dtype, shape):
    mine, theirs = _pair(_random(shape, dtype))
    a, tau = ember.geqrf(mine)
    ta, ttau = torch.geqrf(theirs)
    m = shape[-2]
    other_shape = shape[:-2] + ((m, 2) if left else (2, m))
    other, torch_other = _pair(_random(other_shape, dtype, seed=1))
    result = ember.ormqr(a, tau, other, left, transpose)
    expected = torch.ormqr(ta, ttau, torch_other, left, transpose)
    np.testing.assert_allclose(result.numpy(), expected.numpy(), atol=1e-12)
    method = a.ormqr(tau, other, left=left, transpose=transpose)
    np.testing.assert_allclose(method.numpy(), expected.numpy(), atol=1e-12)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_gradients_match_torch(left, transpose):
    a, ta = _pair(_random((4, 3)))
    tau, ttau = _pair(_random((3,), seed=2))
    other, tother = _pair(_random((4, 2) if left else (2, 4), seed=3))
    for tensor in (a, ta, tau, ttau, other, tother):
        tensor.requires_grad_()
    weights = _random((4, 2) if left else (2, 4), seed=4)
    (ember.ormqr(a, tau, other, left, transpose) * ember.tensor(weights)).sum().backward()
    (torch.ormqr(ta, ttau, tother, left, transpose) * torch.tensor(weights)).sum().backward()
    for mine, theirs in ((a, ta), (tau, ttau), (other, tother)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), atol=1e-12)
    assert ember.autograd.gradcheck(
        lambda x, t, c: ember.ormqr(x, t, c, left, transpose), (a, tau, other))


def test_householder_product_gradients_match_torch():
    a, ta = _pair(_random((4, 3)))
    tau, ttau = _pair(_random((3,), seed=2))
    for tensor in (a, ta, tau, ttau):
        tensor.requires_grad_()
    ember.orgqr(a, tau).pow(2).mul(ember.arange(12.).reshape(4, 3)).sum().backward()
    torch.orgqr(ta, ttau).pow(2).mul(torch.arange(12.).reshape(4, 3)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(tau.grad.numpy(), ttau.grad.numpy(), atol=1e-10)


ORMQR_BAD = [
    (((4, 3), (2,), (4, 2)), {}), (((4, 3), (3,), (3, 2)), {}), (((4, 3), (3,), (4, 3)),
                                                                 {"left": False}),
    (((4, 3), (5,), (4, 2)), {}), (((3,), (3,), (4, 2)), {}), (((4, 3), (3,), (4,)), {}),
    (((2, 4, 3), (2, 3), (4, 2)), {}), (((2, 4, 3), (2, 3), (3, 4, 2)), {}),
    (((2, 4, 3), (3,), (2, 4, 2)), {}), (((2, 4, 3), (3, 3), (2, 4, 2)), {}),
    (((3, 4), (4,), (3, 2)), {}),
]


@pytest.mark.parametrize("shapes,kwargs", ORMQR_BAD)
def test_ormqr_shape_errors_match_torch(shapes, kwargs):
    pairs = [_pair(_random(shape, np.float32)) for shape in shapes]
    mine = [p[0] for p in pairs]
    theirs = [p[1] for p in pairs]
    assert _error(lambda: ember.ormqr(*mine, **kwargs)) == \
        _error(lambda: torch.ormqr(*theirs, **kwargs))


@pytest.mark.parametrize("dtypes", [(np.float32, np.float64, np.float32),
                                    (np.float32, np.float32, np.float64),
                                    (np.int32, np.int32, np.int32),
                                    (np.float16, np.float16, np.float16)])
def test_ormqr_dtype_errors_match_torch(dtypes):
    shapes = ((4, 3), (3,), (4, 2))
    pairs = [_pair(_random(s).astype(d)) for s, d in zip(shapes, dtypes)]
    assert _error(lambda: ember.ormqr(*[p[0] for p in pairs])) == \
        _error(lambda: torch.ormqr(*[p[1] for p in pairs]))


def _spd(m, seed=0, batch=()):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal(batch + (m, m))
    return M @ np.swapaxes(M, -1, -2) + np.eye(m)


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_eigenpairs_equal_eigh_and_torch(largest):
    array = _spd(30)
    ember.manual_seed(0)
    E, X = ember.lobpcg(ember.tensor(array), k=3, largest=largest)
    torch_E, _ = torch.lobpcg(torch.tensor(array), k=3, largest=largest)
    np.testing.assert_allclose(E.numpy(), torch_E.numpy(), rtol=1e-6)
    exact = np.linalg.eigvalsh(array)
    np.testing.assert_allclose(E.numpy(), exact[::-1][:3] if largest else exact[:3], rtol=1e-6)
    residual = array @ X.numpy() - X.numpy() * E.numpy()
    assert np.linalg.norm(residual) < 1e-5 * np.linalg.norm(array, 2)


def test_lobpcg_generalised_batched_with_start_block():
    A, B = _spd(24, seed=1, batch=(2,)), _spd(24, seed=2, batch=(2,))
    start = _random((2, 24, 2), seed=5)
    E, X = ember.lobpcg(ember.tensor(A), B=ember.tensor(B), X=ember.tensor(start))
    torch_E, _ = torch.lobpcg(torch.tensor(A), B=torch.tensor(B), X=torch.tensor(start))
    np.testing.assert_allclose(E.numpy(), torch_E.numpy(), rtol=1e-6)
    assert tuple(X.shape) == (2, 24, 2)
    for i in range(2):  # A x = lambda B x
        residual = A[i] @ X.numpy()[i] - B[i] @ X.numpy()[i] * E.numpy()[i]
        assert np.linalg.norm(residual) < 1e-5 * np.linalg.norm(A[i], 2)


def test_lobpcg_float32_within_default_tolerance():
    array = _spd(40, seed=3).astype(np.float32)
    E, _ = ember.lobpcg(ember.tensor(array), k=2)
    torch_E, _ = torch.lobpcg(torch.tensor(array), k=2)
    np.testing.assert_allclose(E.numpy(), torch_E.numpy(), rtol=1e-3)


@pytest.mark.parametrize("kwargs", [{"k": 4}, {"n": 5}])
def test_lobpcg_too_many_pairs_error_matches_torch(kwargs):
    mine, theirs = _pair(_spd(12))
    assert _error(lambda: ember.lobpcg(mine, **kwargs)) == \
        _error(lambda: torch.lobpcg(theirs, **kwargs))


def test_lobpcg_shape_errors_match_torch():
    mine, theirs = _pair(_random((6, 5)))
    assert _error(lambda: ember.lobpcg(mine)) == _error(lambda: torch.lobpcg(theirs))
    mine, theirs = _pair(_spd(9))
    other, torch_other = _pair(_spd(8))
    assert _error(lambda: ember.lobpcg(mine, B=other)) == \
        _error(lambda: torch.lobpcg(theirs, B=torch_other))


@pytest.mark.parametrize("shapes,dtypes", [
    (((4, 3), (4,)), (np.float32, np.float32)), (((3, 4), (3,)), (np.float32, np.float32)),
    (((4, 3), (3,)), (np.float32, np.float64)), (((2, 4, 3), (3, 3)), (np.float32,) * 2),
    (((2, 4, 3), (3,)), (np.float32,) * 2), (((3,), (3,)), (np.float32,) * 2),
])
def test_householder_product_errors_match_torch(shapes, dtypes):
    pairs = [_pair(_random(s).astype(d)) for s, d in zip(shapes, dtypes)]
    assert _error(lambda: ember.orgqr(*[p[0] for p in pairs])) == \
        _error(lambda: torch.orgqr(*[p[1] for p in pairs]))
