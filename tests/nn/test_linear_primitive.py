"""F.linear as one primitive (``linear_op``: one GEMM, one graph node, a one-kernel first-order
backward) against torch: values, first- and second-order gradients for 1-D/2-D/3-D inputs,
with and without bias, float32/float64 (on oneDNN's GEMM and on NumPy), non-contiguous
operands, requires_grad on every subset of the inputs; half precision as torch's CPU kernel
rounds it; gradcheck; forward-mode AD; the calls the primitive leaves to the composite (traces,
vmap, a broadcast bias, mixed dtypes) and their errors."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.autograd.forward_ad as fwAD
import ember.nn.functional as F
from conftest import assert_same
from ember.nn._functional import linear as _linear_module
from ember.ops.linalg import _onednn_gemm

pytestmark = pytest.mark.usefixtures("one_ember_thread")


# (input shape, out features): big enough for oneDNN's GEMM (over 2^20 multiply-adds) and small
SHAPES = [((96,), 40), ((160, 96), 80), ((4, 40, 96), 80), ((2, 3, 5), 4), ((0, 96), 80)]
TOL = {np.float32: dict(rtol=1e-4, atol=1e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}


def _operands(rng, shape, out, dtype, bias, contiguous=True):
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal((out, shape[-1])) * 0.2).astype(dtype)
    b = rng.standard_normal(out).astype(dtype) if bias else None
    if not contiguous:  # a transposed input and a row-strided weight, as views
        x = np.ascontiguousarray(np.swapaxes(x, 0, -1)).swapaxes(0, -1) if x.ndim > 1 \
            else np.repeat(x, 2)[::2]
        w = np.repeat(w, 2, axis=0)[::2]
    return [a for a in (x, w, b) if a is not None]


def _pair(arrays, wanted):
    """ember and torch tensors of ``arrays`` (views kept), those in ``wanted`` requiring grad."""
    ours = [ember.from_numpy(a) for a in arrays]
    theirs = [torch.from_numpy(a) for a in arrays]
    for i in wanted:
        ours[i].requires_grad_()
        theirs[i].requires_grad_()
    return ours, theirs


def _check_against_torch(arrays, wanted, tol, double=True):
    """Value, gradients of every input in ``wanted`` and (``double``) the gradients of a
    random projection of those gradients, all against torch."""
    ours, theirs = _pair(arrays, wanted)
    y, expected = F.linear(*ours), TF.linear(*theirs)
    assert_same(y, expected, **tol)
    if not wanted:
        return
    rng = np.random.default_rng(7)
    g = rng.standard_normal(tuple(expected.shape)).astype(arrays[0].dtype)
    e_g, t_g = ember.tensor(g, requires_grad=True), torch.tensor(g, requires_grad=True)
    e_in, t_in = [ours[i] for i in wanted], [theirs[i] for i in wanted]
    mine = ember.autograd.grad(y, e_in, e_g, create_graph=double)
    reference = torch.autograd.grad(expected, t_in, t_g, create_graph=double)
    assert_same(list(mine), list(reference), **tol)
    if not double:
        return
    # second order: through each gradient back to the inputs and to the output gradient
    vs = [rng.standard_normal(tuple(r.shape)).astype(arrays[0].dtype) for r in reference]
    e_total = sum((m * ember.tensor(v)).sum() for m, v in zip(mine, vs))
    t_total = sum((r * torch.tensor(v)).sum() for r, v in zip(reference, vs))
    mine2 = ember.autograd.grad(e_total, [*e_in, e_g], allow_unused=True)
    reference2 = torch.autograd.grad(t_total, [*t_in, t_g], allow_unused=True)
    for m, r in zip(mine2, reference2):
        if r is None:
            assert m is None or float(m.abs().sum()) == 0
        else:
            assert_same(m, r, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("shape, out", SHAPES, ids=lambda v: str(v))
def test_values_and_gradients_of_every_input_subset_match_torch(onednn_backend, shape, out,
                                                                 bias, dtype):
    rng = np.random.default_rng(0)
    arrays = _operands(rng, shape, out, dtype, bias)
    for count in range(len(arrays) + 1):
        for wanted in itertools.combinations(range(len(arrays)), count):
            _check_against_torch(arrays, wanted, TOL[dtype], double=count == len(arrays))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, out", SHAPES[:3], ids=lambda v: str(v))
def test_non_contiguous_operands_match_torch(onednn_backend, shape, out, dtype):
    rng = np.random.default_rng(1)
    arrays = _operands(rng, shape, out, dtype, bias=True, contiguous=False)
    assert not arrays[1].flags.c_contiguous
    _check_against_torch(arrays, (0, 1, 2), TOL[dtype])


def test_one_node_named_as_torchs_and_a_fresh_weight_gradient():
    """2-D input with bias: one AddmmBackward0 node, as torch's; ``.grad`` of the weight is
    the backward kernel's own fresh matrix (no view of another result, no copy needed)."""
    rng = np.random.default_rng(2)
    ours, theirs = _pair(_operands(rng, (64, 96), 80, np.float32, True), (0, 1, 2))
    y, expected = F.linear(*ours), TF.linear(*theirs)
    assert y.grad_fn.name() == expected.grad_fn.name() == "AddmmBackward0"
    assert [edge[0].name() for edge in y.grad_fn.next_functions] == \
        ["torch::autograd::AccumulateGrad"] * 3
    y.sum().backward()
    expected.sum().backward()
    weight_grad = ours[1].grad
    assert weight_grad._base is None and weight_grad.is_contiguous()
    for mine, reference in zip(ours, theirs):
        assert_same(mine.grad, reference.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(5, 96), (2, 7, 96)])
def test_half_precision_rounds_once_as_torch(dtype, shape):
    rng = np.random.default_rng(3)
    arrays = _operands(rng, shape, 40, np.float32, True)
    ours = [ember.tensor(a).to(getattr(ember, dtype)).requires_grad_() for a in arrays]
    theirs = [torch.tensor(a).to(getattr(torch, dtype)).requires_grad_() for a in arrays]
    y, expected = F.linear(*ours), TF.linear(*theirs)
    # one rounding of a float32 sum: at most one ulp apart where torch's CPU kernel adds in
    # another order (its blocking depends on the CPU: equal bits on an AVX-512 machine, a
    # few elements one ulp apart on an AVX2 one)
    assert_same(y, expected, rtol=torch.finfo(expected.dtype).eps, atol=0)
    g = rng.standard_normal(tuple(expected.shape)).astype(np.float32)
    y.backward(ember.tensor(g).to(y.dtype))
    expected.backward(torch.tensor(g).to(expected.dtype))
    for mine, reference in zip(ours, theirs):
        assert_same(mine.grad, reference.grad, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 2, 3)])
def test_gradcheck_and_gradgradcheck(shape, bias):
    rng = np.random.default_rng(4)
    inputs = [ember.tensor(a, requires_grad=True)
              for a in _operands(rng, shape, 5, np.float64, bias)]
    assert ember.autograd.gradcheck(F.linear, inputs)
    assert ember.autograd.gradgradcheck(F.linear, inputs)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("shape", [(96,), (3, 96), (2, 3, 96)])
def test_forward_mode_matches_torch(shape, bias):
    rng = np.random.default_rng(5)
    arrays = _operands(rng, shape, 40, np.float64, bias)
    tangents = [rng.standard_normal(a.shape) for a in arrays]
    for wanted in ([0], [1], list(range(len(arrays)))):
        with fwAD.dual_level():
            ours = [fwAD.make_dual(ember.tensor(a), ember.tensor(t)) if i in wanted
                    else ember.tensor(a) for i, (a, t) in enumerate(zip(arrays, tangents))]
            mine = fwAD.unpack_dual(F.linear(*ours))
        with torch.autograd.forward_ad.dual_level():
            theirs = [torch.autograd.forward_ad.make_dual(torch.tensor(a), torch.tensor(t))
                      if i in wanted else torch.tensor(a)
                      for i, (a, t) in enumerate(zip(arrays, tangents))]
            reference = torch.autograd.forward_ad.unpack_dual(TF.linear(*theirs))
        assert_same(mine.primal, reference.primal)
        assert_same(mine.tangent, reference.tangent)


# (element shape, in_dims of x, weight, bias): each operand batched alone, all, and x along dim 1
VMAP_CASES = [(shape, dims, bias) for shape in ((6,), (3, 6)) for bias in (True, False)
              for dims in ((0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0),
                           (1, 0, None))
              if (bias or dims[:2] != (None, None)) and not (dims[0] == 1 and len(shape) == 1)]


@pytest.mark.parametrize("shape, in_dims, bias", VMAP_CASES, ids=str)
def test_vmap_over_any_operand_matches_torch_on_the_batched_path(shape, in_dims, bias):
    rng = np.random.default_rng(6)
    arrays = _operands(rng, shape, 5, np.float64, bias)
    in_dims = in_dims[:len(arrays)]
    batched = [np.stack([a * (i + 1) for i in range(4)], axis=d) if d is not None else a
               for a, d in zip(arrays, in_dims)]
    mine = ember.func.vmap(F.linear, in_dims=in_dims)(*map(ember.tensor, batched))
    assert ember.func._vmap.last_call.path == "batched", ember.func._vmap.last_call.reason
    reference = torch.func.vmap(TF.linear, in_dims=in_dims)(*map(torch.tensor, batched))
    assert_same(mine, reference)


def test_per_sample_gradients_match_torch():
    """vmap(grad(...)) through nn.Linear: the batched primitive and its composite backward."""
    rng = np.random.default_rng(10)
    x, w, b = _operands(rng, (8, 6), 5, np.float64, True)

    def per_sample(lib, F_):
        def loss(w, b, sample):
            return F_.linear(sample, w, b).tanh().sum()
        return lib.func.vmap(lib.func.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0))
    mine = per_sample(ember, F)(*map(ember.tensor, (w, b, x)))
    reference = per_sample(torch, TF)(*map(torch.tensor, (w, b, x)))
    assert_same(list(mine), list(reference))


def test_jit_trace_records_the_composite_that_saves_loads_and_replays(tmp_path):
    """A trace records the composite ops (which jit's passes know), never the primitive."""
    rng = np.random.default_rng(11)
    model = ember.nn.Linear(6, 5).double()
    traced = ember.jit.trace(model, ember.tensor(rng.standard_normal((3, 6))))
    names = [n.op.name for n in traced.graph.op_nodes()]
    assert "linear" not in names and "mm" in names
    ember.jit.save(traced, str(tmp_path / "linear.pt"))
    loaded = ember.jit.load(str(tmp_path / "linear.pt"))
    reference = torch.nn.Linear(6, 5).double()
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(model.weight.detach().numpy()))
        reference.bias.copy_(torch.tensor(model.bias.detach().numpy()))
    for rows in (1, 7):
        x = rng.standard_normal((rows, 6))
        assert_same(loaded(ember.tensor(x)), reference(torch.tensor(x)))


@pytest.mark.parametrize("shape", [(3, 6), (2, 3, 6)], ids=str)
def test_onnx_export_runs_as_torchs_linear(tmp_path, shape):
    """The export traces the composite ops (a matrix product and an add); onnxruntime's
    result equals torch's Linear."""
    onnx = pytest.importorskip("onnx")
    runtime = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(12)
    model = ember.nn.Linear(6, 5)
    x = rng.standard_normal(shape).astype(np.float32)
    path = str(tmp_path / "linear.onnx")
    ember.onnx.export(model, (ember.tensor(x),), path, input_names=["x"])
    types = [node.op_type for node in onnx.load(path).graph.node]
    assert "MatMul" in types and "Add" in types
    (got,) = runtime.InferenceSession(path).run(None, {"x": x})
    reference = torch.nn.Linear(6, 5)
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(model.weight.detach().numpy()))
        reference.bias.copy_(torch.tensor(model.bias.detach().numpy()))
    np.testing.assert_allclose(got, reference(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_meta_tensors_get_torchs_shape():
    x = ember.empty(4, 7, 96, device="meta")
    w, b = ember.empty(40, 96, device="meta"), ember.empty(40, device="meta")
    expected = TF.linear(torch.empty(4, 7, 96, device="meta"), torch.empty(40, 96, device="meta"),
                         torch.empty(40, device="meta"))
    y = F.linear(x, w, b)
    assert y.device.type == "meta" and tuple(y.shape) == tuple(expected.shape)


def test_calls_the_primitive_leaves_match_torch_and_its_errors():
    rng = np.random.default_rng(8)
    x, w = _operands(rng, (3, 4), 5, np.float64, False)
    broadcast_bias = rng.standard_normal((3, 5))  # torch's addmm broadcasts a (rows, out) bias
    assert_same(F.linear(*map(ember.tensor, (x, w, broadcast_bias))),
                TF.linear(*map(torch.tensor, (x, w, broadcast_bias))))
    cases = [(x.astype(np.float32), w), (x[:, :3], w), (x, w[None])]
    for args in cases:
        with pytest.raises(RuntimeError) as theirs:
            TF.linear(*map(torch.tensor, args))
        with pytest.raises(RuntimeError) as ours:
            F.linear(*map(ember.tensor, args))
        assert str(ours.value) == str(theirs.value)


def test_primitive_applies_to_the_plain_calls_only():
    x, w, b = ember.ones(2, 3), ember.ones(4, 3), ember.ones(4)
    applies = _linear_module._primitive_applies
    assert applies(x, w, b) and applies(x, w, None) and applies(ember.ones(3), w, b)
    assert not applies(x.double(), w, b)            # mixed dtypes: torch's error
    assert not applies(x, w, ember.ones(2, 4))      # a broadcast bias
    assert not applies(x.to(ember.complex64), w.to(ember.complex64), None)
    assert not applies(ember.ones(2, 5), w, None)   # a shape mismatch: torch's error


def test_sgemm_adds_a_bias_as_its_c_operand():
    from ember.nn._functional import _onednn

    rng = np.random.default_rng(9)
    a = rng.standard_normal((256, 128)).astype(np.float32)
    b = rng.standard_normal((96, 128)).astype(np.float32).T
    bias = rng.standard_normal(96).astype(np.float32)
    y = _onednn_gemm.sgemm(a, b, bias=bias)
    if not _onednn.available():
        assert y is None
        return
    expected = torch.addmm(torch.from_numpy(bias), torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_allclose(y, expected.numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_every_device_runs_the_primitive_as_torch(device, bias):
    """The generic kernel (any array module) and its backward on each device against torch."""
    rng = np.random.default_rng(13)
    arrays = _operands(rng, (4, 5, 6), 3, np.float32, bias)
    ours = [ember.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, expected = F.linear(*ours), TF.linear(*theirs)
    assert y.grad_fn.name() == "AddmmBackward0" and y.device.type == device
    g = rng.standard_normal((4, 5, 3)).astype(np.float32)
    y.backward(ember.tensor(g, device=device))
    expected.backward(torch.tensor(g))
    assert_same(y.cpu(), expected, rtol=1e-5, atol=1e-5)
    for mine, reference in zip(ours, theirs):
        assert_same(mine.grad.cpu(), reference.grad, rtol=1e-5, atol=1e-5)
