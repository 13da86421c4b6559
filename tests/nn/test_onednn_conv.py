"""Convolutions through oneDNN (when libdnnl is installed) and through the NumPy fallback,
each against torch: values and both gradients, for the geometries oneDNN handles itself and
the ones it hands back."""

import threading
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.nn._functional import _onednn

GEOMETRIES = [  # (N, C, Cout, H, k, stride, padding, dilation, groups)
    (2, 4, 6, 9, 3, 1, 1, 1, 1),
    (2, 4, 6, 9, 3, 2, 1, 1, 2),
    (2, 6, 6, 10, 3, 1, 2, 2, 3),
    (3, 8, 4, 7, 2, 1, 0, 1, 1),
    (2, 4, 4, 8, 3, 3, 0, 1, 4),
    (1, 1, 5, 12, 5, 1, 2, 1, 1),
]

needs_onednn = pytest.mark.skipif(not _onednn.available(), reason="libdnnl is not installed")


def _compare(ember_fn, torch_fn, *arrays, atol=1e-4):
    rng = np.random.default_rng(1)
    ours = [ember.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, expected = ember_fn(*ours), torch_fn(*theirs)
    grad = rng.standard_normal(tuple(expected.shape)).astype(np.float32)
    y.backward(ember.tensor(grad))
    expected.backward(torch.tensor(grad))
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), atol=atol)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), atol=atol,
                                   rtol=1e-4)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_conv2d_matches_torch(onednn_backend, geometry):
    n, c, cout, h, k, stride, padding, dilation, groups = geometry
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, h + 1)).astype(np.float32)
    w = rng.standard_normal((cout, c // groups, k, k)).astype(np.float32)
    args = (None, stride, padding, dilation, groups)
    _compare(lambda a, b: ember.nn.functional.conv2d(a, b, *args),
             lambda a, b: torch.nn.functional.conv2d(a, b, *args), x, w)


def test_conv1d_conv3d_and_same_padding_match_torch(onednn_backend):
    rng = np.random.default_rng(2)
    x1, w1 = rng.standard_normal((2, 4, 11)), rng.standard_normal((6, 2, 3))
    _compare(lambda a, b: ember.nn.functional.conv1d(a, b, None, 2, 1, 1, 2),
             lambda a, b: torch.nn.functional.conv1d(a, b, None, 2, 1, 1, 2),
             x1.astype(np.float32), w1.astype(np.float32))
    x3, w3 = rng.standard_normal((2, 3, 5, 6, 7)), rng.standard_normal((4, 3, 3, 2, 3))
    _compare(lambda a, b: ember.nn.functional.conv3d(a, b, None, (1, 2, 1), 1),
             lambda a, b: torch.nn.functional.conv3d(a, b, None, (1, 2, 1), 1),
             x3.astype(np.float32), w3.astype(np.float32))
    x2, w2 = rng.standard_normal((2, 4, 9, 9)), rng.standard_normal((4, 4, 4, 4))
    with warnings.catch_warnings():   # torch warns (once) about the even kernel
        warnings.simplefilter("ignore", UserWarning)
        _compare(lambda a, b: ember.nn.functional.conv2d(a, b, padding="same"),
                 lambda a, b: torch.nn.functional.conv2d(a, b, padding="same"),
                 x2.astype(np.float32), w2.astype(np.float32))


@pytest.mark.parametrize("stride, padding, output_padding, groups, dilation",
                         [(2, 1, 1, 1, 1), (1, 1, 1, 2, 2), (3, 0, 2, 1, 1)])
def test_conv_transpose2d_matches_torch(onednn_backend, stride, padding, output_padding, groups,
                                        dilation):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    w = rng.standard_normal((4, 6 // groups, 3, 3)).astype(np.float32)
    args = (None, stride, padding, output_padding, groups, dilation)
    _compare(lambda a, b: ember.nn.functional.conv_transpose2d(a, b, *args),
             lambda a, b: torch.nn.functional.conv_transpose2d(a, b, *args), x, w)


def test_double_backward_matches_torch(onednn_backend):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    results = []
    for fw in (ember, torch):
        a, b = fw.tensor(x, requires_grad=True), fw.tensor(w, requires_grad=True)
        loss = fw.nn.functional.conv2d(a, b, padding=1).square().sum()
        ga, gb = fw.autograd.grad(loss, (a, b), create_graph=True)
        (ga.sum() + gb.square().sum()).backward()
        results.append((a.grad.numpy(), b.grad.numpy()))
    for mine, reference in zip(*results):
        np.testing.assert_allclose(mine, reference, rtol=1e-4, atol=1e-2)


def test_float16_and_bfloat16_round_like_torch(onednn_backend):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    for name in ("float16", "bfloat16"):
        ours = ember.nn.functional.conv2d(ember.tensor(x).to(getattr(ember, name)),
                                          ember.tensor(w).to(getattr(ember, name)))
        theirs = torch.nn.functional.conv2d(torch.tensor(x).to(getattr(torch, name)),
                                            torch.tensor(w).to(getattr(torch, name)))
        np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=2e-2,
                                   atol=5e-2)


@needs_onednn
def test_switch_turns_onednn_off():
    assert _onednn.available()
    with ember.backends.mkldnn.flags(enabled=False):
        assert not _onednn.available()
    assert _onednn.available()


@needs_onednn
def test_plan_cache_evicts_and_frees(monkeypatch):
    monkeypatch.setattr(_onednn, "_MAX_PLANS", 2)
    rng = np.random.default_rng(6)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    for size in range(5, 10):   # five geometries through a cache of two
        x = rng.standard_normal((1, 2, size, size)).astype(np.float32)
        expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w))
        ours = ember.nn.functional.conv2d(ember.tensor(x), ember.tensor(w))
        np.testing.assert_allclose(ours.numpy(), expected.numpy(), atol=1e-4)
    assert len(_onednn._PLANS) == 2


@needs_onednn
def test_threads_share_plans_safely():
    rng = np.random.default_rng(7)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    inputs = [rng.standard_normal((4, 4, 16, 16)).astype(np.float32) for _ in range(4)]
    expected = [torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
                for x in inputs]
    results = [None] * len(inputs)

    def work(i):
        for _ in range(20):
            results[i] = ember.nn.functional.conv2d(ember.tensor(inputs[i]), ember.tensor(w),
                                                    padding=1).numpy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for mine, reference in zip(results, expected):
        np.testing.assert_allclose(mine, reference, atol=1e-4)


@needs_onednn
def test_forked_child_runs_convolutions_after_a_multithreaded_parent():
    # GNU OpenMP's pool does not survive fork: the child must not wait for the parent's threads
    import multiprocessing

    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 16, 32, 32)).astype(np.float32)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    previous = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        ember.nn.functional.conv2d(ember.tensor(x), ember.tensor(w), padding=1)  # the pool
        context = multiprocessing.get_context("fork")
        with context.Pool(1) as pool:
            result = pool.apply_async(_conv_in_child, (x, w)).get(timeout=60)
    finally:
        ember.set_num_threads(previous)
    np.testing.assert_allclose(result, expected, atol=1e-4)


def _conv_in_child(x, w):
    return ember.nn.functional.conv2d(ember.tensor(x), ember.tensor(w), padding=1).numpy()
