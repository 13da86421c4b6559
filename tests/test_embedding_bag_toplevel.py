"""The top-level ember.embedding_bag against torch.embedding_bag: all four results (output,
offset2bag, bag_size, max_indices) with their shapes and dtypes, the weight's gradient, and
the errors for bad arguments."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, make_pair

WEIGHT = np.random.default_rng(0).standard_normal((6, 3))
INDICES = np.array([0, 2, 4, 5, 4, 1, 2])
OFFSETS = np.array([0, 2, 2, 5])  # bag 1 is empty


def _call(lib, weight, mode, padding_idx, include_last_offset, index_dtype, psw=None):
    offsets = np.append(OFFSETS, len(INDICES)) if include_last_offset else OFFSETS
    as_tensor = ember.tensor if lib is ember else torch.tensor
    return lib.embedding_bag(weight, as_tensor(INDICES.astype(index_dtype)),
                             as_tensor(offsets.astype(index_dtype)), False, mode, False, psw,
                             include_last_offset, padding_idx)


@pytest.mark.parametrize("weight_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 4, -2])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_all_four_results_match_torch(weight_dtype, index_dtype, mode, padding_idx,
                                      include_last_offset):
    ew, tw = make_pair(WEIGHT.astype(weight_dtype))
    ember_results = _call(ember, ew, mode, padding_idx, include_last_offset, index_dtype)
    torch_results = _call(torch, tw, mode, padding_idx, include_last_offset, index_dtype)
    assert isinstance(ember_results, tuple) and len(ember_results) == 4
    tol = 1e-6 if weight_dtype == np.float32 else 1e-12
    assert_same(ember_results, torch_results, rtol=tol, atol=tol)


def test_per_sample_weights_and_weight_gradient_match_torch():
    psw = np.random.default_rng(1).uniform(0.5, 2, len(INDICES))
    (ew, tw), (ep, tp) = make_pair(WEIGHT, True), make_pair(psw, True)
    ember_results = _call(ember, ew, 0, None, False, np.int64, ep)
    torch_results = _call(torch, tw, 0, None, False, np.int64, tp)
    assert_same(ember_results[0].detach(), torch_results[0].detach(), rtol=1e-12, atol=1e-12)
    cotangent = np.random.default_rng(2).standard_normal(tuple(torch_results[0].shape))
    ember_results[0].backward(ember.tensor(cotangent))
    torch_results[0].backward(torch.tensor(cotangent))
    assert_same(ew.grad, tw.grad, rtol=1e-12, atol=1e-12)
    assert_same(ep.grad, tp.grad, rtol=1e-12, atol=1e-12)


def test_max_mode_gradient_matches_torch():
    ew, tw = make_pair(WEIGHT, True)
    ember_out = _call(ember, ew, 2, None, False, np.int64)[0]
    torch_out = _call(torch, tw, 2, None, False, np.int64)[0]
    ember_out.sum().backward()
    torch_out.sum().backward()
    assert_same(ew.grad, tw.grad)


def test_two_dimensional_indices_are_read_flat_like_torch():
    (ew, tw) = make_pair(WEIGHT)
    ei, ti = make_pair(INDICES.reshape(7, 1))
    eo, to = make_pair(np.arange(7))
    assert_same(ember.embedding_bag(ew, ei, eo, False, 1, False, None, False, None),
                torch.embedding_bag(tw, ti, to, False, 1, False, None, False, None))


@pytest.mark.parametrize("kwargs", [dict(mode=3), dict(mode="sum"), dict(padding_idx=7),
                                    dict(padding_idx=-7), dict(offsets=None)])
def test_bad_arguments_raise_like_torch(kwargs):
    def call(lib, weight, indices, offsets):
        arguments = dict(scale_grad_by_freq=False, mode=0, sparse=False,
                         per_sample_weights=None, include_last_offset=False, padding_idx=None)
        arguments.update(kwargs)
        offsets = arguments.pop("offsets", offsets)
        return lib.embedding_bag(weight, indices, offsets, *arguments.values())

    (ew, tw), (ei, ti), (eo, to) = make_pair(WEIGHT), make_pair(INDICES), make_pair(OFFSETS)
    with pytest.raises(Exception) as torch_error:
        call(torch, tw, ti, to)
    with pytest.raises(type(torch_error.value)) as ember_error:
        call(ember, ew, ei, eo)
    assert str(ember_error.value) == str(torch_error.value)
