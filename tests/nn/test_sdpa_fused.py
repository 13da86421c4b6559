"""The fused CPU scaled_dot_product_attention (one graph node, one backward kernel) against
torch: which calls take it (grad_fn names as torch's fused CPU kernel), values and first-order
gradients with every kind of mask, scale, GQA, fully masked rows, double backward (through the
composite replay), forward-mode AD and vmap (which see the composite ops), and its errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from torch.nn.attention import SDPBackend, sdpa_kernel

import ember
import ember.autograd.forward_ad as fwAD
import ember.nn.functional as F
from conftest import assert_grads_match, assert_same
from ember.nn._functional import attention as _attention_module

RNG = np.random.default_rng
FUSED_GRAD_FN = "ScaledDotProductFlashAttentionForCpuBackward0"


def _arrays(rng, shapes, dtype):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _masks(rng, L, S):
    """Every mask kind: (name, ember kwargs builder, NumPy mask or None)."""
    keep = rng.random((L, S)) > 0.4
    keep[:, 0] = True
    return {
        "none": ({}, None),
        "causal": ({"is_causal": True}, None),
        "scale": ({"scale": 0.21}, None),
        "bool": ({}, keep),
        "bool_per_batch": ({}, np.broadcast_to(keep, (2, 1, L, S)).copy()),
        "float": ({}, rng.standard_normal((L, S))),
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["none", "causal", "scale", "bool", "bool_per_batch", "float"])
@pytest.mark.parametrize("spread", [1.0, 0.05])
def test_fused_matches_torch_values_grads_and_grad_fn(dtype, kind, spread):
    """``spread`` 0.05 gives scores within log(keys) of their largest, which share one shift
    in the softmax; 1.0 gives wider ones, shifted by each row's maximum."""
    rng = RNG(0)
    L, S = 6, 9
    q, k, v = _arrays(rng, [(2, 3, L, 8), (2, 3, S, 8), (2, 3, S, 5)], dtype)
    q, k = q * dtype(spread), k * dtype(spread)
    kwargs, mask = _masks(rng, L, S)[kind]
    if mask is not None and mask.dtype != bool:
        mask = mask.astype(dtype)
    extra = [] if mask is None else [mask]
    tol = 1e-5 if dtype == np.float32 else 1e-10

    def run(f):
        def call(q, k, v, *m):
            out = f(q, k, v, attn_mask=m[0] if m else None, **kwargs)
            if f is F.scaled_dot_product_attention:
                assert out.grad_fn.name() == FUSED_GRAD_FN
            return out
        return call
    # a float mask is passed as a NumPy array the helpers make require grad: give it as a
    # constant instead, so that the fused op (which never differentiates the mask) runs
    if mask is not None and mask.dtype != bool:
        e_mask, t_mask = ember.tensor(mask), torch.from_numpy(mask.copy())
        assert_grads_match(
            lambda q, k, v: run(F.scaled_dot_product_attention)(q, k, v, e_mask),
            lambda q, k, v: run(TF.scaled_dot_product_attention)(q, k, v, t_mask),
            q, k, v, rtol=tol, atol=tol)
    else:
        assert_grads_match(run(F.scaled_dot_product_attention),
                           run(TF.scaled_dot_product_attention), q, k, v, *extra,
                           rtol=tol, atol=tol)


def test_fused_equals_composite_on_the_bench_shape():
    """The (16, 4, 64, 32) causal case of the GPT bench, fused against ember's composite."""
    rng = RNG(1)
    arrays = _arrays(rng, [(16, 4, 64, 32)] * 3, np.float32)
    grad = rng.standard_normal((16, 4, 64, 32)).astype(np.float32)
    results = []
    for fused in (True, False):
        q, k, v = (ember.tensor(a, requires_grad=True) for a in arrays)
        if fused:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            assert out.grad_fn.name() == FUSED_GRAD_FN
        else:
            out = _attention_module._attention_composite(q, k, v, None, dropout_p=0.0,
                                                         is_causal=True, scale=32 ** -0.5)
        out.backward(ember.tensor(grad))
        results.append([out.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_fused_float32_mask_on_float64_query():
    rng = RNG(2)
    q, k, v = _arrays(rng, [(1, 2, 4, 3)] * 3, np.float64)
    m = rng.standard_normal((4, 4)).astype(np.float32)
    e = F.scaled_dot_product_attention(*(ember.tensor(a) for a in (q, k, v)),
                                       attn_mask=ember.tensor(m))
    t = TF.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)),
                                        attn_mask=torch.from_numpy(m))
    assert_same(e, t)


def test_fused_fully_masked_rows_are_zero_with_zero_grads():
    rng = RNG(3)
    q, k, v = _arrays(rng, [(2, 2, 4, 5)] * 3, np.float64)
    keep = rng.random((2, 2, 4, 4)) > 0.5
    keep[0, 1, 2] = False       # a query that may attend to nothing
    for mask in (keep, np.where(keep, 0.0, -np.inf)):
        e_mask, t_mask = ember.tensor(mask), torch.from_numpy(mask.copy())
        assert_grads_match(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=e_mask),
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, attn_mask=t_mask),
            q, k, v)


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_fused_gqa(kv_heads):
    rng = RNG(4)
    q, k, v = _arrays(rng, [(2, 4, 5, 8), (2, kv_heads, 7, 8), (2, kv_heads, 7, 8)],
                      np.float32)
    assert_grads_match(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        q, k, v, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["causal", "bool", "float"])
def test_double_backward_through_the_composite_replay(kind):
    rng = RNG(5)
    q, k, v = _arrays(rng, [(2, 2, 4, 3), (2, 2, 5, 3), (2, 2, 5, 3)], np.float64)
    kwargs, mask = _masks(rng, 4, 5)[kind if kind != "causal" else "causal"]
    e_mask = None if mask is None else ember.tensor(mask)
    t_mask = None if mask is None else torch.from_numpy(mask.copy())

    def torch_math(q, k, v):    # torch's fused CPU kernel has no double backward
        with sdpa_kernel(SDPBackend.MATH):
            return TF.scaled_dot_product_attention(q, k, v, attn_mask=t_mask, **kwargs)
    assert_grads_match(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=e_mask, **kwargs),
        torch_math, q, k, v, double_backward=True)


def test_gradient_of_only_some_inputs():
    rng = RNG(6)
    q, k, v = _arrays(rng, [(1, 2, 3, 4)] * 3, np.float64)
    eq = ember.tensor(q, requires_grad=True)
    tq = torch.from_numpy(q.copy()).requires_grad_()
    e = F.scaled_dot_product_attention(eq, ember.tensor(k), ember.tensor(v), is_causal=True)
    t = TF.scaled_dot_product_attention(tq, torch.from_numpy(k), torch.from_numpy(v),
                                        is_causal=True)
    e.sum().backward()
    t.sum().backward()
    assert_same(eq.grad, tq.grad)


def test_forward_mode_ad_uses_the_composite():
    rng = RNG(7)
    q, k, v, tangent = _arrays(rng, [(1, 2, 4, 3)] * 4, np.float64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(ember.tensor(q), ember.tensor(tangent))
        out = F.scaled_dot_product_attention(dual, ember.tensor(k), ember.tensor(v),
                                             is_causal=True)
        e_primal, e_tangent = fwAD.unpack_dual(out)
    with torch.autograd.forward_ad.dual_level(), sdpa_kernel(SDPBackend.MATH):
        dual = torch.autograd.forward_ad.make_dual(torch.from_numpy(q),
                                                   torch.from_numpy(tangent))
        out = TF.scaled_dot_product_attention(dual, torch.from_numpy(k), torch.from_numpy(v),
                                              is_causal=True)
        t_primal, t_tangent = torch.autograd.forward_ad.unpack_dual(out)
    assert_same(e_primal, t_primal)
    assert_same(e_tangent, t_tangent)


def test_vmap_over_attention():
    rng = RNG(8)
    q, k, v = _arrays(rng, [(3, 2, 2, 4, 5)] * 3, np.float64)
    e = ember.func.vmap(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))(
        *(ember.tensor(a) for a in (q, k, v)))
    t = torch.vmap(lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True))(
        *(torch.from_numpy(a) for a in (q, k, v)))
    assert_same(e, t)


def test_causal_with_a_mask_is_torchs_error():
    # 3-D: torch's math path raises (its fused 4-D CPU kernel applies both masks instead)
    q = np.zeros((1, 2, 2), np.float32)
    mask = np.ones((2, 2), bool)
    with pytest.raises(RuntimeError) as t_info:
        TF.scaled_dot_product_attention(*(torch.from_numpy(q),) * 3,
                                        attn_mask=torch.from_numpy(mask), is_causal=True)
    with pytest.raises(RuntimeError) as e_info:
        F.scaled_dot_product_attention(*(ember.tensor(q),) * 3, attn_mask=ember.tensor(mask),
                                       is_causal=True)
    assert str(e_info.value) == str(t_info.value)


@pytest.mark.parametrize("split_heads", [True, False], ids=["heads_split_from_a_projection",
                                                             "contiguous"])
def test_fused_output_is_laid_out_after_the_query_as_torchs(split_heads):
    """torch's CPU flash kernel lays its output out in its query's dim order: heads split from
    a (B, T, 3 * H * D) projection give an output whose heads merge back as a view."""
    rng = RNG(3)
    B, T, H, D = 2, 5, 3, 4
    x = rng.standard_normal((B, T, 3 * H * D)).astype(np.float32) * 0.3

    def heads(lib, x):
        if not split_heads:
            return [lib.tensor(np.ascontiguousarray(x[..., :H * D].reshape(B, T, H, D)
                                                    .transpose(0, 2, 1, 3)))] * 3
        return [t.view(B, T, H, D).transpose(1, 2) for t in lib.tensor(x).split(H * D, dim=2)]
    mine = F.scaled_dot_product_attention(*heads(ember, x), is_causal=True)
    reference = TF.scaled_dot_product_attention(*heads(torch, x), is_causal=True)
    assert mine.stride() == reference.stride()
    assert mine.transpose(1, 2).is_contiguous() == reference.transpose(1, 2).is_contiguous()
    assert_same(mine, reference, rtol=1e-6, atol=1e-6)
