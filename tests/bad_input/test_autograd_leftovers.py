"""The autograd leftovers of the bad-input check, each compared with torch: forward-mode AD
through ``cdist`` (torch refuses it for every ``p``), gradients of the weights of
``binary_cross_entropy(_with_logits)`` (torch refuses them), and autograd with sparse
leaves (``autograd.grad``, ``nn.Parameter``, ``register_hook``)."""

import math

import numpy as np
import pytest
import torch

import ember


def _pair(shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(values), ember.tensor(values)


def _outcome(fn):
    """``('ok', None)`` or ``(exception type name, message)`` of calling ``fn``."""
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the type and message are what is compared
        return type(error).__name__, str(error).split("\n")[0]
    return "ok", None


# ---------------------------------------------------------------- cdist under forward AD


def _cdist_dual(lib, forward_ad, x1, x2, tangent, p, compute_mode, on_second):
    with forward_ad.dual_level():
        if on_second:
            x2 = forward_ad.make_dual(x2, tangent)
        else:
            x1 = forward_ad.make_dual(x1, tangent)
        lib.cdist(x1, x2, p=p, compute_mode=compute_mode)


@pytest.mark.parametrize("p", [0., 0.5, 1., 2., 3., math.inf])
@pytest.mark.parametrize("rows", [3, 30])
@pytest.mark.parametrize("compute_mode", ["use_mm_for_euclid_dist_if_necessary",
                                          "use_mm_for_euclid_dist",
                                          "donot_use_mm_for_euclid_dist"])
@pytest.mark.parametrize("on_second", [False, True])
def test_cdist_forward_ad_refused_as_torch(p, rows, compute_mode, on_second):
    (t1, e1), (t2, e2), (tt, et) = _pair((rows, 4), 0), _pair((5, 4), 1), \
        _pair((5 if on_second else rows, 4), 2)
    expected = _outcome(lambda: _cdist_dual(torch, torch.autograd.forward_ad, t1, t2, tt, p,
                                            compute_mode, on_second))
    got = _outcome(lambda: _cdist_dual(ember, ember.autograd.forward_ad, e1, e2, et, p,
                                       compute_mode, on_second))
    assert got == expected


@pytest.mark.parametrize("p", [1., 2., math.inf, 0.5])
def test_cdist_func_jvp_refused_as_torch(p):
    (t1, e1), (t2, e2), (tt, et) = _pair((3, 4), 0), _pair((5, 4), 1), _pair((3, 4), 2)
    expected = _outcome(lambda: torch.func.jvp(lambda a: torch.cdist(a, t2, p=p), (t1,), (tt,)))
    got = _outcome(lambda: ember.func.jvp(lambda a: ember.cdist(a, e2, p=p), (e1,), (et,)))
    assert got == expected


def test_cdist_without_tangent_still_differentiates_as_torch():
    (t1, e1), (t2, e2) = _pair((3, 4), 0), _pair((5, 4), 1)
    t1.requires_grad_()
    e1.requires_grad_()
    torch.cdist(t1, t2).sum().backward()
    ember.cdist(e1, e2).sum().backward()
    np.testing.assert_allclose(e1.grad.numpy(), t1.grad.numpy(), rtol=1e-5, atol=1e-6)
