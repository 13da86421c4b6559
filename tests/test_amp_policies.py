"""Autocast policies declared next to the ops and functions (``Op(..., autocast=...)``,
``@autocast_policy``): every CPU policy gives the result dtype torch's CPU autocast gives,
from float32 and from bfloat16 inputs."""

import numpy as np
import pytest
import torch

import ember


def _spd(n=4):
    a = np.random.default_rng(0).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _mat(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape)


def _positive(*shape):
    return np.abs(_mat(*shape)) + 0.5


# dotted name under ember / torch -> the arrays it takes (cast to the input dtype) and the
# keyword arguments
CASES = {
    # lower precision on the CPU
    "mm": ([_mat(3, 4), _mat(4, 2)], {}),
    "bmm": ([_mat(2, 3, 4), _mat(2, 4, 2)], {}),
    "matmul": ([_mat(3, 4), _mat(4, 2)], {}),
    "addmm": ([_mat(2), _mat(3, 4), _mat(4, 2)], {}),
    "baddbmm": ([_mat(2, 3, 2), _mat(2, 3, 4), _mat(2, 4, 2)], {}),
    "addbmm": ([_mat(3, 2), _mat(2, 3, 4), _mat(2, 4, 2)], {}),
    "nn.functional.linear": ([_mat(3, 4), _mat(2, 4)], {}),
    "nn.functional.prelu": ([_mat(2, 3), _positive(1)], {}),
    "nn.functional.conv1d": ([_mat(1, 2, 6), _mat(3, 2, 3)], {}),
    "linalg.vecdot": ([_mat(3, 4), _mat(3, 4)], {}),
    "linalg.multi_dot": ([[_mat(2, 3), _mat(3, 4), _mat(4, 2)]], {}),
    # float32 on the CPU
    "prod": ([_positive(5)], {}),
    "quantile": ([_mat(6), np.array([0.25, 0.5])], {}),
    "nanquantile": ([_mat(6), np.array([0.25, 0.5])], {}),
    "cdist": ([_mat(3, 2), _mat(4, 2)], {}),
    "trace": ([_mat(3, 3)], {}),
    "inverse": ([_spd()], {}),
    "pinverse": ([_mat(3, 2)], {}),
    "cholesky": ([_spd()], {}),
    "cholesky_inverse": ([np.linalg.cholesky(_spd())], {}),
    "cholesky_solve": ([_mat(4, 2), np.linalg.cholesky(_spd())], {}),
    "polar": ([_positive(3), _mat(3)], {}),
    "linalg.cholesky": ([_spd()], {}),
    "linalg.cholesky_ex": ([_spd()], {}),
    "linalg.eigh": ([_spd()], {}),
    "linalg.eigvalsh": ([_spd()], {}),
    "linalg.eig": ([_spd()], {}),
    "linalg.eigvals": ([_spd()], {}),
    "linalg.inv": ([_spd()], {}),
    "linalg.inv_ex": ([_spd()], {}),
    "linalg.lstsq": ([_mat(4, 3), _mat(4, 2)], {}),
    "linalg.matrix_rank": ([_mat(4, 3)], {}),
    "linalg.qr": ([_mat(4, 3)], {}),
    "linalg.solve": ([_spd(), _mat(4, 2)], {}),
    "linalg.svd": ([_mat(4, 3)], {"full_matrices": False}),
    "linalg.svdvals": ([_mat(4, 3)], {}),
    "nn.functional.mse_loss": ([_mat(3, 4), _mat(3, 4)], {}),
    "nn.functional.l1_loss": ([_mat(3, 4), _mat(3, 4)], {}),
    "nn.functional.kl_div": ([_mat(3, 4), _positive(3, 4)], {"reduction": "batchmean"}),
    "nn.functional.binary_cross_entropy": ([np.full((3, 4), 0.3), np.full((3, 4), 0.6)], {}),
    "nn.functional.avg_pool3d": ([_mat(1, 1, 4, 4, 4)], {"kernel_size": 2}),
    "nn.functional.adaptive_avg_pool3d": ([_mat(1, 1, 4, 4, 4)], {"output_size": 2}),
    "nn.functional.grid_sample": ([_mat(1, 1, 4, 4), np.tanh(_mat(1, 3, 3, 2))],
                                  {"align_corners": False}),
    # no CPU policy: the inputs' own type
    "exp": ([_mat(4)], {}),
    "sum": ([_mat(4)], {}),
    "nn.functional.layer_norm": ([_mat(2, 4)], {"normalized_shape": (4,)}),
}


def _resolve(module, dotted):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


def _first_tensor(result):
    while isinstance(result, (tuple, list)):
        result = result[0]
    return result


def _inputs(arrays, lib, dtype):
    def one(a):
        if isinstance(a, list):
            return [one(x) for x in a]
        return lib.tensor(a, dtype=dtype)
    return [one(a) for a in arrays]


@pytest.mark.parametrize("start", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_declared_cpu_policy_gives_torchs_result_dtype(name, start):
    arrays, kwargs = CASES[name]
    with torch.autocast("cpu"):
        want = _first_tensor(_resolve(torch, name)(*_inputs(arrays, torch, getattr(torch, start)),
                                                   **kwargs))
    with ember.autocast("cpu"):
        got = _first_tensor(_resolve(ember, name)(*_inputs(arrays, ember, getattr(ember, start)),
                                                  **kwargs))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]


def test_policies_are_read_from_the_declarations():
    """The op and the function carry the policy that autocast follows."""
    assert ember.ops.linalg.products.mm_op.autocast == {"cpu": "lower", "cuda": "lower"}
    assert ember.nn.functional.mse_loss.autocast == {"cpu": "fp32", "cuda": "fp32"}
    assert ember.nn.functional.binary_cross_entropy.autocast == {"cpu": "fp32",
                                                                 "cuda": "banned"}
