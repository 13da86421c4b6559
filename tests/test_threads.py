"""ember.set_num_threads: torch's argument checks, one threaded pool (oneDNN's OpenMP once it is
loaded, else NumPy's BLAS; issue 17: two pools spinning beside each other made a LeNet step
8x slower on two cores), and the same training results at one and two threads."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

import ember
from ember.nn._functional import _onednn


@pytest.fixture
def restore_threads():
    ember_before, torch_before = ember.get_num_threads(), torch.get_num_threads()
    yield
    ember.set_num_threads(ember_before)
    torch.set_num_threads(torch_before)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_set_num_threads_rejects_what_torch_rejects(bad, restore_threads):
    with pytest.raises(Exception) as theirs:
        torch.set_num_threads(bad)
    with pytest.raises(theirs.type) as ours:
        ember.set_num_threads(bad)
    assert str(ours.value) == str(theirs.value)


def test_set_num_threads_takes_numpy_integers_like_torch(restore_threads):
    torch.set_num_threads(np.int64(1))
    ember.set_num_threads(np.int64(1))
    assert ember.get_num_threads() == torch.get_num_threads() == 1
    assert type(ember.get_num_threads()) is type(torch.get_num_threads())


def _pools():
    return [(pool["user_api"], pool["num_threads"]) for pool in threadpool_info()]


def test_one_pool_holds_the_threads(restore_threads):
    ember.nn.functional.conv2d(ember.ones(1, 1, 8, 8), ember.ones(1, 1, 3, 3))  # loads oneDNN
    ember.set_num_threads(2)
    pools = _pools()
    if _onednn.available():
        assert ("openmp", 2) in pools
        assert all(count == 1 for api, count in pools if api == "blas"), pools
    else:
        assert ("blas", 2) in pools
    ember.set_num_threads(1)
    assert all(count == 1 for _, count in _pools())


def test_the_default_count_goes_to_one_pool_when_onednn_loads():
    # a fresh process that never calls set_num_threads: oneDNN's first use settles the pools
    program = (
        "import ember, json\n"
        "from threadpoolctl import threadpool_info\n"
        "from ember.nn._functional import _onednn\n"
        "n = ember.get_num_threads()\n"
        "ember.nn.functional.conv2d(ember.ones(1, 1, 8, 8), ember.ones(1, 1, 3, 3))\n"
        "print(json.dumps([n, _onednn.available(),\n"
        "                  [(p['user_api'], p['num_threads']) for p in threadpool_info()]]))\n")
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True)
    n, loaded, pools = json.loads(run.stdout.splitlines()[-1])
    if not loaded:  # oneDNN not installed: NumPy's BLAS keeps the threads
        assert ["blas", n] in pools
        return
    assert ["openmp", n] in pools
    assert all(count == 1 for api, count in pools if api == "blas"), pools


def _lenet(nn):
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
        nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def _train(lib, weights, x, y, threads):
    lib.set_num_threads(threads)
    model = _lenet(lib.nn)
    with lib.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(lib.tensor(w))
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y)).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_training_matches_torch_at_one_and_two_threads(restore_threads):
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal(tuple(p.shape)) * 0.1).astype(np.float32)
               for p in _lenet(torch.nn).parameters()]
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    reference = _train(torch, weights, x, y, 1)
    for threads in (1, 2):
        ours = _train(ember, weights, x, y, threads)
        for a, b in zip(ours, reference):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


_INTEROP_PROGRAM = """
import json, sys
lib = __import__(sys.argv[1])
steps = []

def step(call):
    try:
        steps.append(["ok", call()])
    except Exception as error:
        steps.append([type(error).__name__, str(error)])

a = lib.ones(64, 64)
step(lambda: (a @ a).shape[0])  # parallel-capable work first: no reason to refuse
step(lambda: lib.nn.functional.conv2d(lib.ones(1, 1, 8, 8), lib.ones(1, 1, 3, 3)).shape[-1])
step(lambda: lib.set_num_threads(1))
step(lambda: lib.set_num_interop_threads(0))  # a bad argument does not use up the one call
step(lambda: lib.set_num_interop_threads(2))
step(lib.get_num_interop_threads)
step(lambda: lib.set_num_interop_threads(2))
step(lambda: lib.set_num_interop_threads(3))
step(lambda: lib.set_num_interop_threads(0))  # argument checks still come first
step(lambda: lib.set_num_interop_threads(1.5))
step(lib.get_num_interop_threads)
print(json.dumps(steps))
"""


def _interop_steps(library):
    # the one-call rule is per process: a fresh interpreter for each library
    run = subprocess.run([sys.executable, "-c", _INTEROP_PROGRAM, library],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.splitlines()[-1])


def test_set_num_interop_threads_works_once_per_process_like_torch():
    theirs = _interop_steps("torch")
    assert theirs[6][0] == "RuntimeError"  # the oracle does refuse a second call
    assert _interop_steps("ember") == theirs


def test_skinny_product_at_two_threads_matches_torch_and_keeps_the_count(restore_threads):
    # a 64x784 by 784x256 product runs on one thread (see _onednn_gemm), then the team is back
    import ctypes

    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 784), dtype=np.float32)
    w = rng.standard_normal((784, 256), dtype=np.float32)
    ember.set_num_threads(2)
    ours = (ember.tensor(x) @ ember.tensor(w)).numpy()
    theirs = (torch.tensor(x) @ torch.tensor(w)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)
    if _onednn.available():
        assert ctypes.CDLL("libgomp.so.1").omp_get_max_threads() == 2
