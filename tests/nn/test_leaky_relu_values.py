"""leaky_relu's forward (computed as ``max(x, slope * x)`` for slopes in (0, 1]) against torch,
bit for bit with signed zeros, infinities, NaN and subnormals, for every kind of slope."""

import numpy as np
import pytest
import torch

import ember

SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 3.0, -3.0, 1e30, -1e30]


@pytest.mark.parametrize("slope", [0.01, 0.2, 1.0, 0.0, -0.5, 2.0])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_leaky_relu_special_values_match_torch_bitwise(slope, dtype):
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL, dtype=dtype)
    ours = ember.nn.functional.leaky_relu(ember.tensor(x), slope).numpy()
    theirs = torch.nn.functional.leaky_relu(torch.tensor(x), slope).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def test_leaky_relu_module_on_a_scalar_and_a_large_tensor():
    rng = np.random.default_rng(0)
    for x in (np.float32(-2.5), rng.standard_normal((3, 50, 60)).astype(np.float32)):
        ours = ember.nn.LeakyReLU(0.2)(ember.tensor(x)).numpy()
        theirs = torch.nn.LeakyReLU(0.2)(torch.tensor(x)).numpy()
        np.testing.assert_array_equal(ours, theirs)
