"""The webgpu elementwise fast path (operands read at ``offset + i`` or at one element instead
of through their strides) and the buffer-copy path of ``copyto``: the same bits as the generic
strided kernels, and torch's results, for contiguous, offset, transposed, broadcast, 0-dim
and scalar operands of every dtype the device has."""

import numpy as np
import pytest

import ember
from ember.webgpu import _runtime, _xp

needs_gpu = pytest.mark.skipif(not ember.webgpu.is_available(),
                               reason=f"webgpu unavailable: {_runtime.probe().reason}")

DTYPES = ["float32", "float16", "int32", "int64", "uint8", "bool"]


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("EMBER_WEBGPU_STRICT", "1")


def _values(dtype, seed):
    """60 values of ``dtype`` (int64 ones beyond int32's range, so no word is dropped)."""
    rng = np.random.default_rng(seed)
    if dtype in ("float32", "float16"):
        return rng.normal(size=60).astype(dtype) * 4
    if dtype == "int64":
        return rng.integers(-2**40, 2**40, size=60)
    if dtype == "int32":
        return rng.integers(-1000, 1000, size=60).astype(np.int32)
    if dtype == "uint8":
        return rng.integers(0, 256, size=60).astype(np.uint8)
    return rng.integers(0, 2, size=60).astype(bool)


def _scalar(dtype):
    return {"float32": 2.5, "float16": -1.5, "bool": True}.get(dtype, 3)


# (name, the two operands from flat tensors A and B of 60 elements, the access the fast path
# picks for each array operand)
LAYOUTS = {
    "contiguous": (lambda A, B: (A[:48].view(6, 8), B[:48].view(6, 8)), ("linear", "linear")),
    "offset": (lambda A, B: (A[1:49].view(6, 8), B[3:51].view(6, 8)), ("linear", "linear")),
    "transposed": (lambda A, B: (A[:48].view(8, 6).T, B[:48].view(6, 8)),
                   ("strided", "linear")),
    "row": (lambda A, B: (A[:48].view(6, 8), B[:8]), ("linear", "strided")),
    "column": (lambda A, B: (A[2:50].view(6, 8), B[2:8].view(6, 1)), ("linear", "strided")),
    "zero-dim": (lambda A, B: (A[:48].view(6, 8), B[5]), ("linear", "single")),
    "zero-dim first": (lambda A, B: (A[5], B[4:52].view(6, 8)), ("single", "linear")),
    "one element": (lambda A, B: (A[:48].view(6, 8), B[5:6].view(1, 1)), ("linear", "single")),
    "both zero-dim": (lambda A, B: (A[7], B[5]), ("linear", "linear")),
    "scalar": (lambda A, B: (A[1:49].view(6, 8), None), ("linear",)),
}

# (name, f(module, a, b)): each is run by ember on webgpu and by torch on the same views
OPS = {
    "add": lambda lib, a, b: a + b,
    "mul": lambda lib, a, b: a * b,
    "eq": lambda lib, a, b: a == b,
    "where": lambda lib, a, b: lib.where(a > b, a, b),
    "maximum": lambda lib, a, b: lib.maximum(a, b),
}


def _unsupported_by_torch(op, dtype, layout):
    if op == "maximum" and layout == "scalar":
        return True  # torch.maximum takes tensors only
    return dtype == "bool" and op == "add" and layout == "scalar"


def _operands(lib, dtype, layout, device=None):
    A = lib.tensor(_values(dtype, 0))
    B = lib.tensor(_values(dtype, 1))
    if device is not None:
        A, B = A.to(device), B.to(device)
    a, b = LAYOUTS[layout][0](A, B)
    return a, (_scalar(dtype) if b is None else b)


def _generic(x, out_shape):
    """The generic path: every array operand through its (broadcast) strides."""
    return "strided", _xp.broadcast_to(x, out_shape)


@needs_gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_fast_path_reads_each_layout_as_expected(layout):
    a, b = _operands(ember, "float32", layout, "webgpu")
    arrays = [x._data for x in (a, b) if isinstance(x, ember.Tensor)]
    out_shape = np.broadcast_shapes(*[x.shape for x in arrays])
    assert tuple(_xp._access(x, out_shape)[0] for x in arrays) == LAYOUTS[layout][1]


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_fast_path_matches_the_generic_path_and_torch(dtype, layout, strict, monkeypatch):
    import torch

    for name, op in OPS.items():
        if _unsupported_by_torch(name, dtype, layout):
            continue
        expected = op(torch, *_operands(torch, dtype, layout)).numpy()
        fast = op(ember, *_operands(ember, dtype, layout, "webgpu"))
        assert fast.device.type == "webgpu"
        fast = fast.cpu().numpy()
        with monkeypatch.context() as patch:
            patch.setattr(_xp, "_access", _generic)
            generic = op(ember, *_operands(ember, dtype, layout, "webgpu")).cpu().numpy()
        assert fast.dtype == expected.dtype and fast.shape == expected.shape, name
        # the same kernel expression on both paths: the same bits
        np.testing.assert_array_equal(np.atleast_1d(fast).view(np.uint8),
                                      np.atleast_1d(generic).view(np.uint8), err_msg=name)
        # IEEE add and multiply round exactly; float16 computes in float32 and rounds once, as
        # torch's CPU kernels do
        np.testing.assert_array_equal(fast, expected, err_msg=name)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("layout", ["contiguous", "offset", "transposed", "zero-dim"])
def test_unary_float_ops_on_the_fast_path_match_torch(dtype, layout, strict):
    import torch

    for name in ("exp", "tanh", "sigmoid"):
        x = _operands(ember, dtype, layout, "webgpu")[0]
        got = getattr(ember, name)(x).cpu().numpy()
        expected = getattr(torch, name)(_operands(torch, dtype, layout)[0]).numpy()
        tolerance = 2 ** -10 if dtype == "float16" else 2e-6
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance, err_msg=name)


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start", [0, 1, 4])
def test_in_place_ops_and_clones_of_views_match_torch(dtype, start, strict):
    """In-place results come back through copyto: a buffer copy when the target starts and
    ends on a word boundary, the strided-write kernel otherwise (a float16 view at an odd
    element, bool/uint8 ones not at a multiple of four)."""
    import torch

    results = []
    for lib, device in ((ember, "webgpu"), (torch, None)):
        flat = lib.tensor(_values(dtype, 2))
        other = lib.tensor(_values(dtype, 3))[:24].view(4, 6)
        if device is not None:
            flat, other = flat.to(device), other.to(device)
        target = flat[start:start + 24].view(4, 6)
        if dtype == "bool":
            target.logical_or_(other)
        else:
            target.mul_(other).add_(other)
        clone = target.clone()
        column = flat[start:start + 24].view(4, 6)[:, 1]  # strided: the kernel path
        column.copy_(other[:, 2])
        results.append([x.cpu().numpy() if device else x.numpy() for x in (flat, clone)])
    for got, expected in zip(*results):
        np.testing.assert_array_equal(got, expected)


@needs_gpu
def test_a_buffer_copy_is_ordered_with_the_kernels_around_it(strict):
    """A copy ends the open compute pass; kernels recorded after it see the copied data."""
    host = ember.arange(12.0)
    g = host.to("webgpu")
    y = g * 2  # recorded in a compute pass
    y.add_(1)  # the result comes back by a buffer copy
    z = y * 3 - y  # a new pass, after the copy
    assert _runtime.runtime().pending > 0  # all still recorded, not submitted
    np.testing.assert_array_equal(z.cpu().numpy(), ((host * 2 + 1) * 3 - (host * 2 + 1)).numpy())


@needs_gpu
def test_params_of_equal_int_and_float_words_do_not_share_a_buffer(strict):
    """The params cache keys by the words' values; 2.0 == 2 in Python, so floats are keyed by
    their float32 bits: an int kernel after a float one with equal-looking words reads 2."""
    import torch

    for dtype in ("float32", "int32", "float32"):
        values = _values(dtype, 4)[:8]
        scalar = 2.0 if dtype == "float32" else 2
        got = (ember.tensor(values, device="webgpu") * scalar).cpu().numpy()
        np.testing.assert_array_equal(got, (torch.tensor(values) * scalar).numpy())
    runtime = _runtime.runtime()
    assert runtime.params([8, 2.0]) is not runtime.params([8, 2])
    assert runtime.params([8, 2.0]) is runtime.params((8, 2.0))


@needs_gpu
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 5, 7), (4, 8, 4), (9, 2, 13), (64, 33, 10)])
def test_blocked_matmul_matches_torch_at_every_edge(m, k, n, strict):
    """Each thread computes a 4x4 block of outputs: sizes that are not multiples of four,
    transposed operands, broadcast batches and a vector operand against torch."""
    import torch

    rng = np.random.default_rng(m * 100 + n)
    a = rng.normal(size=(2, m, k)).astype(np.float32)
    b = rng.normal(size=(n, k)).astype(np.float32)
    v = rng.normal(size=k).astype(np.float32)
    cases = [lambda lib, a, b, v: a @ b.transpose(0, 1),  # a batch against one matrix
             lambda lib, a, b, v: b @ a[1].T,  # both transposed views
             lambda lib, a, b, v: lib.bmm(a, b.T.expand(2, k, n)),
             lambda lib, a, b, v: a[:, ::2] @ v]  # every other row, times a vector
    for case in cases:
        got = case(ember, *(ember.tensor(x, device="webgpu") for x in (a, b, v)))
        expected = case(torch, *(torch.tensor(x.copy()) for x in (a, b, v)))
        np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
