"""Transforms and the constraint registry (biject_to / transform_to) against torch: forward,
inverse, log-abs-det-Jacobians, shapes, and the transform chosen for every constraint."""

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.constraints as TC
import torch.distributions.transforms as TT

import ember
import ember.distributions as D
import ember.distributions.constraints as EC
import ember.distributions.transforms as ET
from conftest import assert_grads_match, assert_same

RNG = np.random.default_rng(2)


def _pair(name, *args, **kwargs):
    conv = [ember.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    tconv = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
    return getattr(ET, name)(*conv, **kwargs), getattr(TT, name)(*tconv, **kwargs)


# name -> (constructor args, input array)
TRANSFORMS = {
    "AbsTransform": ((), lambda: RNG.standard_normal((3, 4))),
    "PowerTransform": ((RNG.uniform(0.5, 2.0, 4),), lambda: RNG.uniform(0.5, 2.0, (3, 4))),
    "SoftplusTransform": ((), lambda: RNG.standard_normal((3, 4))),
    "SoftmaxTransform": ((), lambda: RNG.standard_normal((3, 4))),
    "StickBreakingTransform": ((), lambda: RNG.standard_normal((3, 4))),
    "LowerCholeskyTransform": ((), lambda: RNG.standard_normal((2, 3, 3))),
    "PositiveDefiniteTransform": ((), lambda: RNG.standard_normal((2, 3, 3))),
    "CorrCholeskyTransform": ((), lambda: RNG.standard_normal((2, 6))),
    "ReshapeTransform": (((4,), (2, 2)), lambda: RNG.standard_normal((3, 4))),
}
BIJECTIVE_WITH_JACOBIAN = {"PowerTransform", "SoftplusTransform", "StickBreakingTransform",
                           "CorrCholeskyTransform", "ReshapeTransform"}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_matches_torch(name):
    args, make_x = TRANSFORMS[name]
    e, t = _pair(name, *args)
    x = make_x()
    ex, tx = ember.tensor(x), torch.from_numpy(x)
    ey, ty = e(ex), t(tx)
    assert_same(ey, ty)
    assert_same(e.inv(ey), t.inv(ty))
    assert tuple(e.forward_shape(x.shape)) == tuple(t.forward_shape(torch.Size(x.shape)))
    assert tuple(e.inverse_shape(tuple(ty.shape))) == tuple(t.inverse_shape(ty.shape))
    assert e.bijective == t.bijective
    assert e.domain.event_dim == t.domain.event_dim
    assert e.codomain.event_dim == t.codomain.event_dim
    assert bool(e.codomain.check(ey).all())
    if name in BIJECTIVE_WITH_JACOBIAN:
        assert_same(e.log_abs_det_jacobian(ex, ey), t.log_abs_det_jacobian(tx, ty))
        assert_grads_match(lambda a: e.log_abs_det_jacobian(a, e(a)),
                           lambda a: t.log_abs_det_jacobian(a, t(a)), x)
    assert_grads_match(lambda a: e(a), lambda a: t(a), x)


def test_stick_breaking_jacobian_is_the_determinant():
    # the Jacobian of x -> y[:-1] is square; its log |det| is what the transform reports
    x = torch.from_numpy(RNG.standard_normal(4))
    jac = torch.autograd.functional.jacobian(lambda a: TT.StickBreakingTransform()(a)[:-1], x)
    e = ET.StickBreakingTransform()
    ex = ember.tensor(x.numpy())
    expected = torch.linalg.slogdet(jac).logabsdet
    assert_same(e.log_abs_det_jacobian(ex, e(ex)), expected)


def test_independent_cat_stack_cumulative():
    x = RNG.standard_normal((3, 4))
    ex, tx = ember.tensor(x), torch.from_numpy(x)
    pairs = [
        (ET.IndependentTransform(ET.ExpTransform(), 1),
         TT.IndependentTransform(TT.ExpTransform(), 1)),
        (ET.CatTransform([ET.ExpTransform(), ET.AffineTransform(1.0, 3.0)], -1, [1, 3]),
         TT.CatTransform([TT.ExpTransform(), TT.AffineTransform(1.0, 3.0)], -1, [1, 3])),
        (ET.CatTransform([ET.ExpTransform(), ET.SoftplusTransform()], 0, [2, 1]),
         TT.CatTransform([TT.ExpTransform(), TT.SoftplusTransform()], 0, [2, 1])),
        (ET.StackTransform([ET.ExpTransform(), ET.AffineTransform(1.0, 3.0),
                            ET.SigmoidTransform()], 0),
         TT.StackTransform([TT.ExpTransform(), TT.AffineTransform(1.0, 3.0),
                            TT.SigmoidTransform()], 0)),
        (ET.CumulativeDistributionTransform(D.Normal(0.5, 2.0)),
         TT.CumulativeDistributionTransform(TD.Normal(0.5, 2.0))),
    ]
    for e, t in pairs:
        ey, ty = e(ex), t(tx)
        assert_same(ey, ty)
        assert_same(e.inv(ey), t.inv(ty))
        assert_same(e.log_abs_det_jacobian(ex, ey), t.log_abs_det_jacobian(tx, ty))
        assert e.bijective == t.bijective
        assert_same(e.codomain.check(ey), t.codomain.check(ty))
    with pytest.raises(AssertionError, match="must equal length"):
        ET.CatTransform([ET.ExpTransform()], 0, [2])(ex)


def test_new_constraints_match_torch():
    L = TT.CorrCholeskyTransform()(torch.from_numpy(RNG.standard_normal((4, 3))))
    spd = torch.eye(2, dtype=torch.float64).expand(3, 2, 2).clone()
    spd[1] = torch.tensor([[1.0, 2.0], [2.0, 1.0]])
    spd[2] = torch.tensor([[1.0, 1.0], [1.0, 1.0]])
    counts = torch.tensor([[1.0, 2.0], [3.0, 1.0], [-1.0, 0.0]])
    cases = [(EC.corr_cholesky, TC.corr_cholesky, L),
             (EC.corr_cholesky, TC.corr_cholesky, 2 * L),
             (EC.positive_semidefinite, TC.positive_semidefinite, spd),
             (EC.positive_definite, TC.positive_definite, spd),
             (EC.multinomial(3), TC.multinomial(3), counts),
             (EC.cat([EC.positive, EC.real], 0, [1, 1]), TC.cat([TC.positive, TC.real], 0,
                                                               [1, 1]), counts),
             (EC.stack([EC.positive, EC.real], 1), TC.stack([TC.positive, TC.real], 1),
              counts)]
    for ec, tc, value in cases:
        assert_same(ec.check(ember.tensor(value.numpy())), tc.check(value))
        assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete


# every constraint torch registers, with an unconstrained input of the right shape
CONSTRAINTS = [
    ("real", (), (3,)),
    ("real_vector", (), (2, 3)),
    ("positive", (), (3,)),
    ("nonnegative", (), (3,)),
    ("greater_than", (2.5,), (3,)),
    ("greater_than_eq", (-1.0,), (3,)),
    ("less_than", (2.5,), (3,)),
    ("unit_interval", (), (3,)),
    ("interval", (-2.0, 3.0), (3,)),
    ("half_open_interval", (0.0, 1.0), (3,)),
    ("simplex", (), (2, 3)),
    ("lower_cholesky", (), (2, 3, 3)),
    ("positive_definite", (), (2, 3, 3)),
    ("positive_semidefinite", (), (2, 3, 3)),
    ("corr_cholesky", (), (2, 3)),
    ("independent", ("positive", 1), (2, 3)),
    ("cat", (["positive", "real"], 0, [2, 1]), (3,)),
    ("stack", (["positive", "unit_interval"], 0), (2,)),
]


def _constraint(module, name, args):
    obj = getattr(module, name)
    if name == "independent":
        return obj(getattr(module, args[0]), args[1])
    if name in ("cat", "stack"):
        parts = [getattr(module, c) for c in args[0]]
        return obj(parts, *args[1:])
    return obj(*args) if args else obj


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name,args,shape", CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_registry_matches_torch(registry, name, args, shape):
    ec, tc = _constraint(EC, name, args), _constraint(TC, name, args)
    t_registry = getattr(TD, registry)
    e_registry = getattr(D, registry)
    try:
        t = t_registry(tc)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            e_registry(ec)
        return
    e = e_registry(ec)
    assert type(e).__name__ == type(t).__name__
    x = RNG.standard_normal(shape)
    ex, tx = ember.tensor(x), torch.from_numpy(x)
    ey, ty = e(ex), t(tx)
    assert_same(ey, ty)
    assert bool(ec.check(ey).all())
    assert_same(e.inv(ey), t.inv(ty), rtol=1e-6, atol=1e-8)
    if t.bijective:
        assert_same(e.log_abs_det_jacobian(ex, ey), t.log_abs_det_jacobian(tx, ty))


def test_registry_errors_and_custom_registration():
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky"):
        D.biject_to(EC.lower_cholesky)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint"):
        D.biject_to.register(3, lambda c: c)
    registry = D.constraint_registry.ConstraintRegistry()
    registry.register(EC.positive, lambda c: ET.SoftplusTransform())
    assert isinstance(registry(EC.greater_than(2.0)), ET.SoftplusTransform)
