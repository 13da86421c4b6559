"""float32 matrix products through oneDNN's GEMM (when libdnnl is installed) and through the
NumPy fallback, each against torch: values and gradients for the layouts the GEMM takes
itself (plain, transposed, row-sliced, N-D by 2-D) and the ones it hands back."""

import math

import numpy as np
import pytest
import torch

import ember
from ember.nn._functional import _onednn
from ember.ops.linalg import _onednn_gemm

pytestmark = pytest.mark.usefixtures("one_ember_thread")


def _layouts(rng, rows, cols):
    """A (rows, cols) float32 matrix as plain, transposed, row-strided and column-sliced views,
    plus one with no unit stride (which the GEMM hands back to NumPy)."""
    plain = rng.standard_normal((rows, cols)).astype(np.float32)
    wide = rng.standard_normal((rows, cols + 7)).astype(np.float32)
    tall = rng.standard_normal((2 * rows, cols)).astype(np.float32)
    both = rng.standard_normal((2 * rows, 2 * cols)).astype(np.float32)
    return {"plain": plain, "transposed": np.ascontiguousarray(plain.T).T,
            "column-slice": wide[:, 3:3 + cols], "row-step": tall[::2],
            "no-unit-stride": both[::2, ::2]}


LAYOUTS = ["plain", "transposed", "column-slice", "row-step", "no-unit-stride"]


@pytest.mark.parametrize("left", LAYOUTS)
@pytest.mark.parametrize("right", LAYOUTS)
def test_matmul_layouts_match_torch(onednn_backend, left, right):
    rng = np.random.default_rng(0)
    a = _layouts(rng, 160, 120)[left]
    b = _layouts(rng, 120, 96)[right]
    ours = ember.tensor(a, requires_grad=True) if left == "plain" else ember.from_numpy(a)
    theirs = torch.tensor(a, requires_grad=True) if left == "plain" else torch.from_numpy(a)
    y, expected = ours @ ember.from_numpy(b), theirs @ torch.from_numpy(b)
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), rtol=1e-5,
                               atol=1e-4)
    if left == "plain":
        grad = rng.standard_normal(tuple(expected.shape)).astype(np.float32)
        y.backward(ember.tensor(grad))
        expected.backward(torch.tensor(grad))
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5,
                                   atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 32, 128), (2, 3, 24, 128), (128,), (3, 0, 128)])
def test_linear_on_stacked_rows_matches_torch(onednn_backend, shape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((160, 128)).astype(np.float32)
    bias = rng.standard_normal(160).astype(np.float32)
    ours = [ember.tensor(v, requires_grad=True) for v in (x, w, bias)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x, w, bias)]
    y = ember.nn.functional.linear(*ours)
    expected = torch.nn.functional.linear(*theirs)
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), rtol=1e-5,
                               atol=1e-4)
    y.sum().backward()
    expected.sum().backward()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-5,
                                   atol=1e-4)


def test_products_the_gemm_declines_still_match_torch(onednn_backend):
    rng = np.random.default_rng(2)
    cases = [(rng.standard_normal((5, 3)), rng.standard_normal((3, 4))),          # too small
             (rng.standard_normal((2, 40, 50)), rng.standard_normal((2, 50, 60))),  # batched
             (rng.standard_normal((40, 50)), rng.standard_normal((50,))),         # mv
             (rng.standard_normal((40, 50)), rng.standard_normal((50, 60)))]      # float64
    for i, (a, b) in enumerate(cases):
        if i < 3:
            a, b = a.astype(np.float32), b.astype(np.float32)
        y = ember.from_numpy(a) @ ember.from_numpy(b)
        expected = torch.from_numpy(a) @ torch.from_numpy(b)
        assert y.dtype == (ember.float64 if i == 3 else ember.float32)
        np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shapes", [((5, 5, 0), (0, 5)), ((5, 0, 3), (3, 4)),
                                    ((2, 3, 4), (4, 0)), ((0, 4), (4, 3))])
def test_empty_products_match_torch(onednn_backend, shapes):
    """Empty operands (no rows to fold, or an empty reduction: zeros) as torch."""
    a, b = (np.ones(s, np.float32) for s in shapes)
    y = ember.from_numpy(a) @ ember.from_numpy(b)
    expected = torch.from_numpy(a) @ torch.from_numpy(b)
    assert tuple(y.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(y.numpy(), expected.numpy())


def test_mismatched_shapes_keep_torchs_error(onednn_backend):
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(64x40 and 50x36\)"):
        ember.ones(64, 40).mm(ember.ones(50, 36))
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(64, 40) @ torch.ones(50, 36)
    with pytest.raises(RuntimeError, match=str(theirs.value).replace("(", r"\(")
                       .replace(")", r"\)")):
        ember.ones(64, 40) @ ember.ones(50, 36)


def test_sgemm_declines_what_it_cannot_take():
    small = np.ones((4, 4), np.float32)
    assert _onednn_gemm.sgemm(small, small) is None
    strided = np.ones((256, 256), np.float32)[::2, ::2]
    assert _onednn_gemm.sgemm(strided, strided) is None
    if _onednn.available():
        y = _onednn_gemm.sgemm(np.eye(128, dtype=np.float32), np.full((128, 128), 2, np.float32))
        np.testing.assert_array_equal(y, np.full((128, 128), 2, np.float32))
        previous = ember.get_num_threads()
        ember.set_num_threads(2)   # more threads: still oneDNN's (its pool holds the threads)
        try:
            y2 = _onednn_gemm.sgemm(np.eye(128, dtype=np.float32), y)
        finally:
            ember.set_num_threads(previous)
        np.testing.assert_array_equal(y2, y)


def test_lstm_layer_products_match_torch(onednn_backend):
    # the recurrent layers' per-step products (into a preallocated buffer) and weight gradient
    rng = np.random.default_rng(3)
    inputs = rng.standard_normal((7, 5, 48)).astype(np.float32)  # 5x256 by 256x1024 steps
    weights = None
    results = []
    for lib in (ember, torch):
        lstm = lib.nn.LSTM(48, 256, num_layers=2)
        if weights is None:
            weights = [(rng.standard_normal(tuple(p.shape)) * 0.1).astype(np.float32)
                       for p in lstm.parameters()]
        with lib.no_grad():
            for p, w in zip(lstm.parameters(), weights):
                p.copy_(lib.tensor(w))
        x = lib.tensor(inputs, requires_grad=True)
        out, _ = lstm(x)
        out.pow(2).sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy()]
                       + [p.grad.numpy() for p in lstm.parameters()])
    for mine, reference in zip(*results):
        np.testing.assert_allclose(mine, reference, rtol=1e-4, atol=1e-5)


def test_matrix_product_into_a_buffer_and_declined_buffers():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((120, 100)).astype(np.float32)
    b = rng.standard_normal((100, 110)).astype(np.float32)
    expected = torch.from_numpy(a) @ torch.from_numpy(b)
    out = np.empty((120, 110), np.float32)
    assert _onednn_gemm.matrix_product(np, a, b, out=out) is out
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-5, atol=1e-4)
    strided = np.empty((120, 220), np.float32)[:, ::2]   # not C-contiguous: NumPy writes it
    np.testing.assert_allclose(_onednn_gemm.matrix_product(np, a, b, out=strided),
                               expected.numpy(), rtol=1e-5, atol=1e-4)
    square = rng.standard_normal((128, 128)).astype(np.float32)
    reference = square @ square
    np.testing.assert_allclose(_onednn_gemm.matrix_product(np, square, square, out=square),
                               reference, rtol=1e-5, atol=1e-4)   # out overlaps its operands


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("width", [512, 1024])
def test_products_with_cache_thrashing_row_strides_match_torch(onednn_backend, width, padded,
                                                                monkeypatch):
    # operands walked along k at rows of 512 or 1024 floats, which sgemm first copies into
    # padded rows on CPUs where that pays (AMD's; both ways on every CPU here): x.T @ g (TN)
    # and h @ w (NN), and a linear layer's weight gradient
    monkeypatch.setattr(_onednn_gemm, "_PADDED_MIN_K", 512 if padded else math.inf)
    rng = np.random.default_rng(7)
    stored = rng.standard_normal((512, 512)).astype(np.float32)
    g = rng.standard_normal((512, width)).astype(np.float32)
    h = rng.standard_normal((128, 512)).astype(np.float32)
    for a, b in ((stored.T, g), (h, g)):
        np.testing.assert_allclose((ember.from_numpy(a) @ ember.from_numpy(b)).numpy(),
                                   (torch.from_numpy(a) @ torch.from_numpy(b)).numpy(),
                                   rtol=1e-4, atol=1e-3)
    x = rng.standard_normal((512, width)).astype(np.float32)
    w = rng.standard_normal((256, width)).astype(np.float32) * 0.05
    grads = []
    for lib in (ember, torch):
        weight = lib.tensor(w, requires_grad=True)
        lib.nn.functional.linear(lib.tensor(x), weight).square().sum().backward()
        grads.append(weight.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-4, atol=1e-2)


def test_unaliased_pads_only_the_strides_and_sizes_it_is_for():
    rng = np.random.default_rng(8)
    b = rng.standard_normal((512, 1024)).astype(np.float32)
    copy, operand = _onednn_gemm._unaliased(b, (b"N", 1024), True, 256)
    assert operand == (b"N", 1024 + 16) and copy.strides == ((1024 + 16) * 4, 4)
    np.testing.assert_array_equal(copy, b)
    a = b[:, :384].T   # a transposed operand: its stored rows are walked along k
    copy, operand = _onednn_gemm._unaliased(a, (b"T", 1024), True, 128)
    assert operand == (b"T", 384 + 16) and copy.strides == (4, (384 + 16) * 4)
    np.testing.assert_array_equal(copy, a)
    for walks_rows, leading, other_dim in ((False, 1024, 256), (True, 784, 256),
                                           (True, 1024, 64), (True, 1024, 1024)):
        same, operand = _onednn_gemm._unaliased(b, (b"N", leading), walks_rows, other_dim)
        assert same is b and operand == (b"N", leading)
