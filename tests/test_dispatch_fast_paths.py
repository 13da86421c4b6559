"""The per-op fast paths (arithmetic dunders that run their primitive directly, the lean graph
recording, the backward engine's plain-node path) give torch's results in every case they
take, and leave every other case to the general path: compared against torch."""

import operator

import numpy as np
import pytest
import torch

import ember
from conftest import assert_grads_match, assert_same

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
SCALARS = [2, -3, 0.5, 7.25, True]


def _pair(array, requires_grad=False):
    return (ember.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_tensor_with_python_scalar_both_ways(op, dtype, scalar):
    """Weak scalars keep a floating tensor's dtype (the direct path); other dtypes promote."""
    array = np.array([0.5, 1.5, 3.0]).astype(dtype)
    e, t = _pair(array)
    for left, right in (((e, scalar), (t, scalar)), ((scalar, e), (scalar, t))):
        try:
            expected = op(*right)
        except Exception as error:  # torch refuses: ember raises the same type
            with pytest.raises(type(error)):
                op(*left)
            continue
        assert_same(op(*left), expected)


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((1, 4), (3, 1)),
                                    ((), (2, 2)), ((0, 3), (3,))])
def test_same_dtype_tensors_broadcast(op, shapes):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2, shapes[0]).astype(np.float32)
    b = rng.uniform(0.5, 2, shapes[1]).astype(np.float32)
    (ea, ta), (eb, tb) = _pair(a), _pair(b)
    assert_same(op(ea, eb), op(ta, tb))
    assert_same(op(eb, ea), op(tb, ta))


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_mismatched_shapes_raise_torchs_error(op):
    ea, ta = _pair(np.ones((2, 3), np.float32))
    eb, tb = _pair(np.ones((4,), np.float32))
    with pytest.raises(RuntimeError) as expected:
        op(ta, tb)
    with pytest.raises(RuntimeError) as actual:
        op(ea, eb)
    assert str(actual.value) == str(expected.value)


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_mixed_dtypes_promote_as_torch(op):
    ea, ta = _pair(np.array([1.5, 2.5], np.float32))
    eb, tb = _pair(np.array([2.0, 3.0], np.float64))
    assert_same(op(ea, eb), op(ta, tb))
    assert_same(op(eb, ea), op(tb, ta))


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_gradients_through_the_direct_path(op):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 2, (3, 4))
    b = rng.uniform(0.5, 2, (4,))
    assert_grads_match(op, op, a, b, double_backward=True)
    assert_grads_match(lambda x: op(x, 1.5) + op(2.5, x), lambda x: op(x, 1.5) + op(2.5, x), a)


def test_parameter_operand_takes_the_direct_path_with_torchs_result():
    weight = np.array([[0.5, -1.0]], np.float32)
    e = ember.nn.Parameter(ember.tensor(weight))
    t = torch.nn.Parameter(torch.tensor(weight))
    e_out, t_out = e * 3 - e / 2, t * 3 - t / 2
    assert type(e_out) is ember.Tensor and e_out.grad_fn.name() == t_out.grad_fn.name()
    assert_same(e_out, t_out)
    e_out.sum().backward()
    t_out.sum().backward()
    assert_same(e.grad, t.grad)


def test_view_of_a_leaf_records_as_torch():
    e, t = _pair(np.ones(4, np.float32), requires_grad=True)
    e_out, t_out = e[1:] * 2.0, t[1:] * 2.0
    assert e_out.grad_fn.name() == t_out.grad_fn.name()
    e_out.sum().backward()
    t_out.sum().backward()
    assert_same(e.grad, t.grad)


def test_no_grad_and_torch_function_modes_are_honoured():
    e, t = _pair(np.ones(3, np.float32), requires_grad=True)
    with ember.no_grad():
        assert not (e + e).requires_grad
    with torch.no_grad():
        assert not (t + t).requires_grad

    def calls_seen(framework):
        seen = []

        class Log(framework.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(func.__name__)
                return func(*args, **(kwargs or {}))

        x = framework.ones(3)
        with Log():
            x * 2.0 + x / x - 1
        return seen

    assert calls_seen(ember) == calls_seen(torch)


def test_node_metadata_and_hooks_as_torch():
    """Nodes keep their rarely-used fields (metadata, hooks) only once set: same behaviour."""
    def run(framework):
        x = framework.ones(3, requires_grad=True)
        y = (x * 2.0) * x
        node = y.grad_fn
        before = dict(node.metadata)
        node.metadata["tag"] = 7
        seen = []
        node.register_prehook(lambda grads: seen.append("pre") or None)
        node.register_hook(lambda grads_in, grads_out: seen.append("post") or None)
        y.sum().backward()
        return before, dict(y.grad_fn.metadata), seen, x.grad.tolist()

    assert run(ember) == run(torch)


def _modes_across_threads(framework):
    """Grad mode, anomaly mode and saved-tensor hooks are per thread: while a worker thread
    sits inside each, the main thread's ops record as usual, and the worker's do not."""
    import threading

    x = framework.ones(3, requires_grad=True)
    inside, leave = threading.Barrier(2), threading.Barrier(2)
    seen = {}

    def worker():
        packed = []
        with framework.no_grad(), framework.autograd.graph.saved_tensors_hooks(
                lambda t: packed.append(1) or t, lambda t: t):
            inside.wait()
            seen["worker requires_grad"] = (x * 2.0).requires_grad
            leave.wait()
        seen["worker packed"] = len(packed)

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait()
    y = x * x
    seen["main requires_grad"] = y.requires_grad
    leave.wait()
    thread.join()
    y.sum().backward()
    seen["grad"] = x.grad.tolist()
    with framework.no_grad():
        seen["no_grad here"] = (x * 2.0).requires_grad
    seen["after"] = (x * 2.0).requires_grad
    return seen


def test_modes_stay_per_thread_as_torchs():
    assert _modes_across_threads(ember) == _modes_across_threads(torch)


def test_anomaly_mode_records_forward_traces_as_torch():
    def run(framework):
        x = framework.tensor([-1.0, 4.0], requires_grad=True)
        with framework.autograd.set_detect_anomaly(True):
            y = (x * x).sqrt() * 0.5 + x
        with pytest.raises(RuntimeError) as error:
            with framework.autograd.set_detect_anomaly(True):
                x.sqrt().sum().backward()
        return y.sum().item(), "nan" in str(error.value).lower()

    with pytest.warns(UserWarning):
        assert run(ember) == run(torch)
