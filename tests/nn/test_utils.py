"""nn.utils (gradient clipping, parameter/vector conversion) against torch.nn.utils."""

import math

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same
from ember import nn


def _params_with_grads(shapes, seed=0, dtype=np.float32, scale=1.0, with_none=False):
    """The same parameters (and .grad) in ember and torch."""
    rng = np.random.default_rng(seed)
    e_params, t_params = [], []
    for i, shape in enumerate(shapes):
        value = np.array(rng.standard_normal(shape), dtype=dtype)
        grad = np.array(rng.standard_normal(shape) * scale, dtype=dtype)
        e = nn.Parameter(ember.tensor(value))
        t = torch.nn.Parameter(torch.from_numpy(value.copy()))
        if not (with_none and i == 1):
            e.grad = ember.tensor(grad)
            t.grad = torch.from_numpy(grad.copy())
        e_params.append(e)
        t_params.append(t)
    return e_params, t_params


SHAPES = [(3, 4), (5,), (), (2, 3, 2)]


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, dtype):
    e_params, t_params = _params_with_grads(SHAPES, dtype=dtype, scale=2.0)
    e_total = nn.utils.clip_grad_norm_(e_params, max_norm, norm_type=norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type=norm_type)
    assert_same(e_total, t_total)
    for e, t in zip(e_params, t_params):
        assert_same(e.grad, t.grad)


def test_clip_grad_norm_single_tensor_none_grads_and_generators():
    e_params, t_params = _params_with_grads(SHAPES, with_none=True)
    assert_same(nn.utils.clip_grad_norm_(iter(e_params), 1.0),
                torch.nn.utils.clip_grad_norm_(iter(t_params), 1.0))
    for e, t in zip(e_params, t_params):
        assert (e.grad is None) == (t.grad is None)
        if t.grad is not None:
            assert_same(e.grad, t.grad)
    e_params, t_params = _params_with_grads([(4, 4)], scale=3.0)
    assert_same(nn.utils.clip_grad_norm_(e_params[0], 0.1, foreach=True),
                torch.nn.utils.clip_grad_norm_(t_params[0], 0.1, foreach=True))
    assert_same(e_params[0].grad, t_params[0].grad)
    # no gradients at all: total norm 0
    assert_same(nn.utils.clip_grad_norm_([nn.Parameter(ember.ones(2))], 1.0),
                torch.nn.utils.clip_grad_norm_([torch.nn.Parameter(torch.ones(2))], 1.0))
    assert_same(nn.utils.clip_grad_norm_([], 1.0), torch.nn.utils.clip_grad_norm_([], 1.0))


def test_clip_grad_norm_nonfinite():
    for bad in (math.nan, math.inf):
        e_params, t_params = _params_with_grads([(3,), (2,)])
        e_params[0].grad[1] = bad
        with torch.no_grad():
            t_params[0].grad[1] = bad
        with pytest.raises(RuntimeError, match="non-finite") as e_error:
            nn.utils.clip_grad_norm_(e_params, 1.0, error_if_nonfinite=True)
        with pytest.raises(RuntimeError, match="non-finite") as t_error:
            torch.nn.utils.clip_grad_norm_(t_params, 1.0, error_if_nonfinite=True)
        assert str(e_error.value) == str(t_error.value)
        # without the check, the gradients are scaled by the non-finite norm, as in torch
        assert_same(nn.utils.clip_grad_norm_(e_params, 1.0),
                    torch.nn.utils.clip_grad_norm_(t_params, 1.0))
        for e, t in zip(e_params, t_params):
            assert_same(e.grad, t.grad)


def test_clip_grad_norm_after_backward_on_a_model():
    def build(mod):
        return mod.Sequential(mod.Linear(4, 8), mod.Tanh(), mod.Linear(8, 2))
    e_net, t_net = build(nn), build(torch.nn)
    with torch.no_grad():
        for ep, tp in zip(e_net.parameters(), t_net.parameters()):
            tp.copy_(torch.from_numpy(ep.detach().numpy().copy()))
    x = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    (e_net(ember.tensor(x)) ** 2).sum().backward()
    (t_net(torch.from_numpy(x)) ** 2).sum().backward()
    assert_same(nn.utils.clip_grad_norm_(e_net.parameters(), 0.3),
                torch.nn.utils.clip_grad_norm_(t_net.parameters(), 0.3), rtol=1e-5, atol=1e-6)
    for ep, tp in zip(e_net.parameters(), t_net.parameters()):
        assert_same(ep.grad, tp.grad, rtol=1e-5, atol=1e-7)
    norm = float(nn.utils.get_total_norm([p.grad for p in e_net.parameters()]))
    assert norm == pytest.approx(0.3, rel=1e-4)


@pytest.mark.parametrize("max_norm", [0.5, 1e9])
def test_clip_grad_norm_large_gradients_and_versions(max_norm):
    """The one-pass 2-norm on model-sized gradients (and a mixed-dtype list, which takes the
    general path): torch's total, scaled gradients and version counters, also when the
    coefficient is exactly 1."""
    shapes = [(256, 128), (512,), (128, 512), (64, 3, 3, 3), ()]
    e_params, t_params = _params_with_grads(shapes, seed=3, scale=0.1)
    e_versions = [p.grad._version for p in e_params]
    t_versions = [p.grad._version for p in t_params]
    assert_same(nn.utils.clip_grad_norm_(e_params, max_norm),
                torch.nn.utils.clip_grad_norm_(t_params, max_norm), rtol=1e-6, atol=0)
    for e, t in zip(e_params, t_params):
        assert_same(e.grad, t.grad, rtol=1e-6, atol=1e-9)
    assert ([p.grad._version - v for p, v in zip(e_params, e_versions)]
            == [p.grad._version - v for p, v in zip(t_params, t_versions)])
    e_mixed, t_mixed = _params_with_grads([(4, 5)], seed=4)
    e64, t64 = _params_with_grads([(3,)], seed=5, dtype=np.float64)
    assert_same(nn.utils.get_total_norm([e_mixed[0].grad, e64[0].grad]),
                torch.nn.utils.get_total_norm([t_mixed[0].grad, t64[0].grad]))


def test_clip_grad_norm_deprecated_alias():
    e_params, t_params = _params_with_grads(SHAPES)
    with pytest.warns(FutureWarning):
        e_total = nn.utils.clip_grad_norm(e_params, 1.0)
    with pytest.warns(FutureWarning):
        t_total = torch.nn.utils.clip_grad_norm(t_params, 1.0)
    assert_same(e_total, t_total)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_get_total_norm_and_clip_grads_with_norm(norm_type):
    e_params, t_params = _params_with_grads(SHAPES, seed=3, scale=4.0)
    e_total = nn.utils.get_total_norm([p.grad for p in e_params], norm_type)
    t_total = torch.nn.utils.get_total_norm([p.grad for p in t_params], norm_type)
    assert_same(e_total, t_total)
    nn.utils.clip_grads_with_norm_(e_params, 2.0, e_total)
    torch.nn.utils.clip_grads_with_norm_(t_params, 2.0, t_total)
    for e, t in zip(e_params, t_params):
        assert_same(e.grad, t.grad)
    mixed = [ember.ones(2), ember.ones(3, dtype=ember.float64)]
    assert_same(nn.utils.get_total_norm(mixed, norm_type),
                torch.nn.utils.get_total_norm([torch.ones(2), torch.ones(3, dtype=torch.float64)],
                                              norm_type))


@pytest.mark.parametrize("clip_value", [0.1, 1, 5.0])
def test_clip_grad_value_matches_torch(clip_value):
    e_params, t_params = _params_with_grads(SHAPES, scale=2.0, with_none=True)
    assert nn.utils.clip_grad_value_(e_params, clip_value) is None
    torch.nn.utils.clip_grad_value_(t_params, clip_value)
    for e, t in zip(e_params, t_params):
        if t.grad is None:
            assert e.grad is None
        else:
            assert_same(e.grad, t.grad)
    e_params, t_params = _params_with_grads([(3, 3)], scale=2.0)
    nn.utils.clip_grad_value_(e_params[0], clip_value, foreach=False)
    torch.nn.utils.clip_grad_value_(t_params[0], clip_value, foreach=False)
    assert_same(e_params[0].grad, t_params[0].grad)


def test_parameters_to_vector_and_back():
    e_params, t_params = _params_with_grads(SHAPES, dtype=np.float64)
    e_vec = nn.utils.parameters_to_vector(e_params)
    t_vec = torch.nn.utils.parameters_to_vector(t_params)
    assert_same(e_vec, t_vec)
    # differentiable: the gradient flows back to every parameter
    weights = np.arange(e_vec.numel(), dtype=np.float64)
    (e_vec * ember.tensor(weights)).sum().backward()
    (t_vec * torch.from_numpy(weights)).sum().backward()
    for e, t in zip(e_params, t_params):
        assert_same(e.grad, t.grad)
    new = np.linspace(-1, 1, e_vec.numel())
    nn.utils.vector_to_parameters(ember.tensor(new), e_params)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new), t_params)
    for e, t in zip(e_params, t_params):
        assert_same(e.detach(), t.detach())
        assert isinstance(e, nn.Parameter) and e.requires_grad
    # mixed dtypes promote as torch.cat does
    assert_same(nn.utils.parameters_to_vector([ember.ones(2), ember.ones(2, dtype=ember.float64)]),
                torch.nn.utils.parameters_to_vector([torch.ones(2),
                                                     torch.ones(2, dtype=torch.float64)]))


def test_vector_to_parameters_errors():
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0, 2.0], [nn.Parameter(ember.ones(2))])
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        torch.nn.utils.vector_to_parameters([1.0, 2.0], [torch.nn.Parameter(torch.ones(2))])


def test_module_exposes_utils():
    assert ember.nn.utils.clip_grad_norm_ is nn.utils.clip_grad.clip_grad_norm_
    assert set(nn.utils.__all__) >= {"clip_grad_norm_", "clip_grad_value_", "get_total_norm",
                                     "clip_grads_with_norm_", "parameters_to_vector",
                                     "vector_to_parameters"}
    with pytest.raises(AttributeError):
        nn.utils.does_not_exist  # noqa: B018
