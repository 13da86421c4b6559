"""grid_sample(mode='bicubic') against torch: values, float64 gradients for input and grid,
finite-difference gradcheck, and the integer-coded top-level grid_sampler with code 2."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from conftest import assert_grads_match, assert_same, make_pair

PADDINGS = ["zeros", "border", "reflection"]


def _input_and_grid(seed=0, shape=(2, 3, 5, 6), out=(4, 7), spread=1.4, dtype=np.float64):
    """Random input and a grid reaching past [-1, 1], so every padding rule is exercised."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    grid = rng.uniform(-spread, spread, (shape[0], *out, 2)).astype(dtype)
    return x, grid


@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bicubic_values_match_torch(padding_mode, align_corners, dtype):
    x, grid = _input_and_grid(dtype=dtype)
    (ex, tx), (eg, tg) = make_pair(x), make_pair(grid)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert_same(F.grid_sample(ex, eg, "bicubic", padding_mode, align_corners),
                TF.grid_sample(tx, tg, "bicubic", padding_mode, align_corners),
                rtol=tol, atol=tol)


@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_on_a_one_pixel_wide_input_matches_torch(padding_mode, align_corners):
    # reflection over a single pixel maps every tap onto it (a degenerate span)
    x, grid = _input_and_grid(seed=3, shape=(1, 2, 1, 4), out=(3, 3))
    (ex, tx), (eg, tg) = make_pair(x), make_pair(grid)
    assert_same(F.grid_sample(ex, eg, "bicubic", padding_mode, align_corners),
                TF.grid_sample(tx, tg, "bicubic", padding_mode, align_corners),
                rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_gradients_match_torch(padding_mode, align_corners):
    x, grid = _input_and_grid(seed=1, shape=(2, 2, 4, 5), out=(3, 4))
    assert_grads_match(
        lambda a, g: F.grid_sample(a, g, "bicubic", padding_mode, align_corners),
        lambda a, g: TF.grid_sample(a, g, "bicubic", padding_mode, align_corners),
        x, grid, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("padding_mode", PADDINGS)
def test_bicubic_gradcheck(padding_mode):
    # grid points kept off integer pixel positions, where floor() makes the weights kink
    x, grid = _input_and_grid(seed=2, shape=(1, 2, 3, 4), out=(2, 3), spread=0.9)
    ex = ember.tensor(x, requires_grad=True)
    eg = ember.tensor(grid, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda a, g: F.grid_sample(a, g, "bicubic", padding_mode, align_corners=False),
        (ex, eg))


@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sampler_code_2_is_bicubic_like_torch(padding, align_corners):
    x, grid = _input_and_grid(seed=4, shape=(1, 2, 4, 5), out=(3, 3))
    (ex, tx), (eg, tg) = make_pair(x), make_pair(grid)
    assert_same(ember.grid_sampler(ex, eg, 2, padding, align_corners),
                torch.grid_sampler(tx, tg, 2, padding, align_corners), rtol=1e-12, atol=1e-12)
    assert_same(ember.grid_sampler_2d(ex, eg, 2, padding, align_corners),
                torch.grid_sampler_2d(tx, tg, 2, padding, align_corners),
                rtol=1e-12, atol=1e-12)


def test_bicubic_on_5d_input_raises_like_torch():
    x = np.zeros((1, 1, 2, 2, 2))
    grid = np.zeros((1, 1, 1, 1, 3))
    (ex, tx), (eg, tg) = make_pair(x), make_pair(grid)
    with pytest.raises(RuntimeError) as torch_error:
        TF.grid_sample(tx, tg, "bicubic", align_corners=False)
    with pytest.raises(RuntimeError) as ember_error:
        F.grid_sample(ex, eg, "bicubic", align_corners=False)
    assert str(ember_error.value) == str(torch_error.value)
