"""Attention and transformers against torch: F.scaled_dot_product_attention,
F.multi_head_attention_forward, nn.MultiheadAttention, the encoder/decoder layers and stacks and
nn.Transformer (same weights copied through state_dict; outputs, input and parameter gradients
in float64, masks of every kind, batch_first, norm_first, errors, repr, state_dict, init), and a
tiny GPT-style model whose loss falls."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from torch.nn.attention import SDPBackend, sdpa_kernel

import ember
import ember.nn.functional as F
from conftest import assert_grads_match, assert_same, float_for, to_torch
from ember import nn

RNG = np.random.default_rng


# ---------------------------------------------------------------- helpers


def _t(x):
    """A torch tensor from a NumPy array (None passes)."""
    return None if x is None else torch.from_numpy(np.ascontiguousarray(x).copy())


def _e(x):
    return None if x is None else ember.tensor(np.ascontiguousarray(x).copy())


def _copy_weights(e_mod, t_mod):
    """Load ember's weights into the torch module (state_dict keys must agree)."""
    state = {k: to_torch(v) for k, v in e_mod.state_dict().items()}
    assert list(state) == list(t_mod.state_dict())
    t_mod.load_state_dict(state)


def _pair(build, dtype=torch.float64):
    """``build(nn_namespace)`` in both frameworks, ember's weights copied into torch's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e_mod, t_mod = build(nn), build(torch.nn)
    e_mod = e_mod.to(ember.float64 if dtype == torch.float64 else ember.float32)
    t_mod = t_mod.to(dtype)
    _copy_weights(e_mod, t_mod)
    return e_mod, t_mod


def _run_both(e_mod, t_mod, arrays, call, rtol=None, atol=None, check_params=True, seed=1):
    """Run ``call(module, inputs, lib)`` in both frameworks on the float arrays (which require
    grad), compare outputs, then input and parameter gradients for a random cotangent."""
    e_in = [_e(a) if a is not None else None for a in arrays]
    t_in = [_t(a) if a is not None else None for a in arrays]
    for e, t in zip(e_in, t_in):
        if e is not None and e.dtype.is_floating_point:
            e.requires_grad_()
            t.requires_grad_()
    e_out = call(e_mod, e_in, ember)
    t_out = call(t_mod, t_in, torch)
    e_outs = e_out if isinstance(e_out, tuple) else (e_out,)
    t_outs = t_out if isinstance(t_out, tuple) else (t_out,)
    assert len(e_outs) == len(t_outs)
    for e, t in zip(e_outs, t_outs):
        if t is None:
            assert e is None
        else:
            assert_same(e, t, rtol=rtol, atol=atol)
    rng = RNG(seed)
    e_loss, t_loss = 0, 0
    for e, t in zip(e_outs, t_outs):
        if t is not None and t.requires_grad:
            c = rng.standard_normal(tuple(t.shape))
            e_loss = e_loss + (e * ember.tensor(c).to(e.dtype)).sum()
            t_loss = t_loss + (t * torch.from_numpy(c).to(t.dtype)).sum()
    e_loss.backward()
    t_loss.backward()
    for e, t in zip(e_in, t_in):
        if t is not None and t.requires_grad:
            assert_same(e.grad, t.grad, rtol=rtol, atol=atol)
    if check_params:
        for (en, ep), (tn, tp) in zip(e_mod.named_parameters(), t_mod.named_parameters()):
            assert en == tn
            if tp.grad is None:
                assert ep.grad is None or float(ep.grad.abs().sum()) == 0, en
            else:
                assert ep.grad is not None, en
                assert_same(ep.grad, tp.grad, rtol=rtol, atol=atol)
    return e_outs, t_outs


def _raises_like(e_fn, t_fn, match=None):
    """Both raise; ember with torch's exception type (and ``match`` in its message)."""
    with pytest.raises(Exception) as t_info:
        t_fn()
    with pytest.raises(t_info.type, match=match):
        e_fn()


# ---------------------------------------------------------------- scaled_dot_product_attention

SDPA_SHAPES = [
    # (q, k, v)
    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)),
    ((3, 4, 8), (3, 4, 8), (3, 4, 8)),          # 3-D
    ((4, 8), (6, 8), (6, 3)),                    # 2-D
    ((2, 3, 4, 8), (3, 5, 8), (1, 3, 5, 6)),     # broadcast batch dims
    ((1, 2, 1, 4), (1, 2, 7, 4), (1, 2, 7, 4)),  # one query
]


@pytest.mark.parametrize("shapes", SDPA_SHAPES)
@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal", "scale"])
def test_sdpa_values_and_grads_float64(shapes, mask):
    rng = RNG(0)
    qs, ks, vs = shapes
    q, k, v = (rng.standard_normal(s) for s in shapes)
    L, S = qs[-2], ks[-2]
    kwargs, extra = {}, []
    if mask == "bool":
        m = rng.random((L, S)) > 0.3
        m[:, 0] = True
        extra = [m]
    elif mask == "float":
        extra = [rng.standard_normal((L, S))]
    elif mask == "causal":
        kwargs["is_causal"] = True
    elif mask == "scale":
        kwargs["scale"] = 0.37

    def run(lib_f, math_backend=False):
        def f(q, k, v, *m):
            if math_backend:    # torch's fused CPU kernel has no double backward
                with sdpa_kernel(SDPBackend.MATH):
                    return lib_f(q, k, v, attn_mask=m[0] if m else None, **kwargs)
            return lib_f(q, k, v, attn_mask=m[0] if m else None, **kwargs)
        return f
    assert_grads_match(run(F.scaled_dot_product_attention),
                       run(TF.scaled_dot_product_attention, True), q, k, v, *extra,
                       double_backward=True)


def test_sdpa_fully_masked_rows_give_zeros_and_zero_grads():
    rng = RNG(1)
    q, k, v = (rng.standard_normal((2, 3, 4, 5)) for _ in range(3))
    m = rng.random((2, 1, 4, 4)) > 0.5
    m[0, 0, 1] = False          # a row with no allowed position
    m[1, 0, :, 0] = True
    fm = np.where(m, 0.0, -np.inf)
    for mask in (m, fm):
        assert_grads_match(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=_e(mask)),
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, attn_mask=_t(mask)),
            q, k, v)


def test_sdpa_float_mask_broadcast_and_grad():
    rng = RNG(2)
    q, k, v = (rng.standard_normal((2, 3, 4, 5)) for _ in range(3))
    mask = rng.standard_normal((3, 1, 4))     # broadcast over batch and query positions
    assert_grads_match(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                       lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
                       q, k, v, mask)


def test_sdpa_causal_rectangular_and_non_contiguous():
    rng = RNG(3)
    # (L=3, S=6): top-left aligned causal mask; inputs are transposed views
    q = rng.standard_normal((2, 3, 2, 4)).transpose(0, 2, 1, 3)
    k = rng.standard_normal((2, 6, 2, 4)).transpose(0, 2, 1, 3)
    v = rng.standard_normal((2, 6, 2, 4)).transpose(0, 2, 1, 3)
    eq, ek, ev = (ember.tensor(np.ascontiguousarray(a.transpose(0, 2, 1, 3))).transpose(1, 2)
                  for a in (q, k, v))
    assert not eq.is_contiguous()
    tq, tk, tv = (_t(a) for a in (q, k, v))
    assert_same(F.scaled_dot_product_attention(eq, ek, ev, is_causal=True),
                TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True))


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_sdpa_gqa(kv_heads):
    rng = RNG(4)
    q = rng.standard_normal((2, 4, 3, 8))
    k = rng.standard_normal((2, kv_heads, 5, 8))
    v = rng.standard_normal((2, kv_heads, 5, 8))
    assert_grads_match(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_sdpa_low_precision_dtypes(dtype):
    rng = RNG(5)
    arrays = [rng.standard_normal((2, 2, 4, 8)).astype(np.float32) for _ in range(3)]
    mask = rng.random((4, 4)) > 0.3
    mask[:, 0] = True
    e_dtype, t_dtype = getattr(ember, dtype), getattr(torch, dtype)
    e = [_e(a).to(e_dtype) for a in arrays]
    t = [_t(a).to(t_dtype) for a in arrays]
    tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    for kw_e, kw_t in (({}, {}), ({"attn_mask": _e(mask)}, {"attn_mask": _t(mask)}),
                       ({"is_causal": True}, {"is_causal": True}),
                       ({"attn_mask": _e(mask.astype(np.float32))},
                        {"attn_mask": _t(mask.astype(np.float32))})):
        assert_same(F.scaled_dot_product_attention(*e, **kw_e),
                    TF.scaled_dot_product_attention(*t, **kw_t), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sdpa_half_precision_rounds_once(dtype):
    """torch computes half-precision attention in float32 and rounds once: with large scores
    (inputs up to 9, as torch's OpInfo samples) rounding every step missed its result."""
    rng = RNG(9)
    q, k, v = (rng.uniform(-9, 9, shape) for shape in [(4, 4, 3, 8), (4, 4, 6, 8), (4, 4, 6, 8)])
    e_dtype, t_dtype = getattr(ember, dtype), getattr(torch, dtype)
    e = [_e(a).to(e_dtype) for a in (q, k, v)]
    t = [_t(a).to(t_dtype) for a in (q, k, v)]
    tol = {"float16": 1e-2, "bfloat16": 5e-2}[dtype]  # the OpInfo tolerances
    for causal in (False, True):
        assert_same(F.scaled_dot_product_attention(*e, is_causal=causal),
                    TF.scaled_dot_product_attention(*t, is_causal=causal), rtol=tol, atol=tol)


def test_sdpa_float32_mask_on_float64_query_keeps_query_dtype():
    rng = RNG(6)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    m = rng.standard_normal((3, 3)).astype(np.float32)
    assert_same(F.scaled_dot_product_attention(_e(q), _e(k), _e(v), attn_mask=_e(m)),
                TF.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=_t(m)))


def test_sdpa_zero_size():
    rng = RNG(7)
    for qs, ks in (((2, 0, 4), (2, 3, 4)), ((2, 3, 4), (2, 0, 4)), ((0, 3, 4), (0, 3, 4))):
        q, k = rng.standard_normal(qs), rng.standard_normal(ks)
        assert_same(F.scaled_dot_product_attention(_e(q), _e(k), _e(k)),
                    TF.scaled_dot_product_attention(_t(q), _t(k), _t(k)))


def test_sdpa_dropout():
    # q = k = 0: uniform weights 1/S; v = 1: each output is (kept fraction) / (1 - p)
    ember.manual_seed(0)
    S, p = 400, 0.25
    q = ember.zeros(2, 50, 4, dtype=ember.float64)
    k = ember.zeros(2, S, 4, dtype=ember.float64)
    v = ember.ones(2, S, 1, dtype=ember.float64)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy()
    kept = out * (1 - p)
    assert abs(kept.mean() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / (S * 100))
    assert np.all(np.abs(out - 1) < 0.25)
    t = TF.scaled_dot_product_attention(to_torch(q), to_torch(k), to_torch(v), dropout_p=p)
    assert abs(float(t.mean()) - 1) < 0.05 and abs(float(out.mean()) - 1) < 0.05
    assert_same(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0),
                TF.scaled_dot_product_attention(to_torch(q), to_torch(k), to_torch(v),
                                                dropout_p=1.0))


def test_sdpa_meta_device():
    q = ember.empty(2, 3, 4, 8, device="meta")
    k = ember.empty(2, 3, 6, 8, device="meta")
    v = ember.empty(2, 3, 6, 5, device="meta")
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3, 4, 5)
    assert out.dtype is ember.float32
    m = ember.empty(4, 6, dtype=ember.bool, device="meta")
    assert tuple(F.scaled_dot_product_attention(q, k, v, attn_mask=m).shape) == (2, 3, 4, 5)


SDPA_ERRORS = [
    ("mask_and_causal", dict(attn_mask=np.zeros((4, 5)), is_causal=True), "Explicit attn_mask"),
    ("rank1", dict(q=(8,)), "at least 2 dimensional"),
    ("dtype_mismatch", dict(k_dtype="float32"), "same dtype"),
    ("int_mask", dict(attn_mask=np.zeros((4, 5), dtype=np.int64)), "attn_mask dtype"),
    ("float64_mask_on_float32", dict(all_dtype="float32", attn_mask=np.zeros((4, 5))),
     "attn_mask dtype"),
    ("head_dim_mismatch", dict(k=(2, 3, 5, 7)), None),
    ("seq_mismatch", dict(v=(2, 3, 4, 6)), None),
    ("bad_mask_shape", dict(attn_mask=np.zeros((5, 4))), None),
    ("dropout_above_one", dict(dropout_p=1.5), "dropout probability"),
    ("integer_inputs", dict(all_dtype="int64"), None),
    ("complex_inputs", dict(all_dtype="complex128"), "softmax"),
    ("gqa_not_divisible", dict(q=(2, 3, 4, 8), k=(2, 2, 5, 8), v=(2, 2, 5, 6), enable_gqa=True),
     "must divide"),
]


@pytest.mark.parametrize("name,case,match", SDPA_ERRORS, ids=[c[0] for c in SDPA_ERRORS])
def test_sdpa_errors_match_torch(name, case, match):
    case = dict(case)
    rng = RNG(8)
    arrays = {n: rng.standard_normal(case.pop(n, s)) for n, s in
              (("q", (2, 3, 4, 8)), ("k", (2, 3, 5, 8)), ("v", (2, 3, 5, 6)))}
    for n in "qkv":
        d = case.pop(f"{n}_dtype", None) or case.get("all_dtype")
        if d:
            arrays[n] = arrays[n].astype(d)
    case.pop("all_dtype", None)
    mask = case.pop("attn_mask", None)

    def call(lib_f, conv):
        return lambda: lib_f(conv(arrays["q"]), conv(arrays["k"]), conv(arrays["v"]),
                             attn_mask=conv(mask), **case)
    _raises_like(call(F.scaled_dot_product_attention, _e),
                 call(TF.scaled_dot_product_attention, _t), match)


def test_sdpa_type_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.scaled_dot_product_attention(1, x, x)
    with pytest.raises(TypeError, match="attn_mask"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=[1])


# ---------------------------------------------------------------- multi_head_attention_forward


def _mha_weights(rng, E, kdim=None, vdim=None):
    w = {"in_proj_weight": rng.standard_normal((3 * E, E)) * 0.3,
         "in_proj_bias": rng.standard_normal(3 * E) * 0.1,
         "out_proj_weight": rng.standard_normal((E, E)) * 0.3,
         "out_proj_bias": rng.standard_normal(E) * 0.1}
    if kdim:
        w["q_proj_weight"] = rng.standard_normal((E, E)) * 0.3
        w["k_proj_weight"] = rng.standard_normal((E, kdim)) * 0.3
        w["v_proj_weight"] = rng.standard_normal((E, vdim)) * 0.3
    return w


def test_functional_mha_matches_torch_with_static_kv_and_bias_kv():
    rng = RNG(9)
    L, S, N, E, H = 4, 5, 2, 6, 2
    q = rng.standard_normal((L, N, E))
    k = rng.standard_normal((S, N, E))
    w = _mha_weights(rng, E)
    bias_k, bias_v = rng.standard_normal((1, 1, E)), rng.standard_normal((1, 1, E))
    static_k = rng.standard_normal((N * H, S, E // H))
    static_v = rng.standard_normal((N * H, S, E // H))
    kpm = rng.random((N, S)) > 0.7
    kpm[:, 0] = False

    def call(f, conv, **kw):
        return f(conv(q), conv(k), conv(k), E, H, conv(w["in_proj_weight"]),
                 conv(w["in_proj_bias"]), kw.pop("bias_k", None), kw.pop("bias_v", None),
                 kw.pop("add_zero_attn", False), 0.0, conv(w["out_proj_weight"]),
                 conv(w["out_proj_bias"]), **kw)
    cases = [dict(bias_k=bias_k, bias_v=bias_v, key_padding_mask=kpm),
             dict(static_k=static_k, static_v=static_v, average_attn_weights=False),
             dict(add_zero_attn=True, key_padding_mask=kpm, need_weights=False)]
    for case in cases:
        e_case = {n: _e(v) if isinstance(v, np.ndarray) else v for n, v in case.items()}
        t_case = {n: _t(v) if isinstance(v, np.ndarray) else v for n, v in case.items()}
        assert_same(call(F.multi_head_attention_forward, _e, **e_case),
                    call(TF.multi_head_attention_forward, _t, **t_case))


def test_functional_mha_double_backward():
    rng = RNG(10)
    L, N, E, H = 3, 2, 4, 2
    w = _mha_weights(rng, E)

    def fn(lib_f):
        def f(x, w_in, b_in, w_out):
            with sdpa_kernel(SDPBackend.MATH):  # torch's fused kernel: no double backward
                return lib_f(x, x, x, E, H, w_in, b_in, None, None, False, 0.0, w_out, None,
                             need_weights=False)[0]
        return f
    assert_grads_match(fn(F.multi_head_attention_forward), fn(TF.multi_head_attention_forward),
                       rng.standard_normal((L, N, E)), w["in_proj_weight"], w["in_proj_bias"],
                       w["out_proj_weight"], double_backward=True)


# ---------------------------------------------------------------- MultiheadAttention


def _mha_build(**kw):
    return lambda mod: mod.MultiheadAttention(**kw)


MHA_CONFIGS = [
    dict(embed_dim=8, num_heads=2),
    dict(embed_dim=8, num_heads=4, batch_first=True),
    dict(embed_dim=6, num_heads=3, kdim=4, vdim=5),
    dict(embed_dim=6, num_heads=2, kdim=4, vdim=5, batch_first=True, bias=False),
    dict(embed_dim=8, num_heads=2, add_bias_kv=True),
    dict(embed_dim=8, num_heads=2, add_zero_attn=True, batch_first=True),
    dict(embed_dim=8, num_heads=1, add_bias_kv=True, add_zero_attn=True),
]


def _mha_inputs(rng, cfg, L=4, S=5, N=3, kind="cross"):
    E = cfg["embed_dim"]
    kdim, vdim = cfg.get("kdim") or E, cfg.get("vdim") or E
    bf = cfg.get("batch_first", False)

    def shape(length, dim):
        return (N, length, dim) if bf else (length, N, dim)
    q = rng.standard_normal(shape(L, E))
    k = rng.standard_normal(shape(S, kdim))
    v = rng.standard_normal(shape(S, vdim))
    return q, k, v


MASKS = ["none", "kpm_bool", "kpm_float", "attn_bool_2d", "attn_float_3d", "both_bool",
         "causal_hint"]


def _masks(rng, kind, L, S, N, H):
    kpm = attn = None
    if kind in ("kpm_bool", "kpm_float", "both_bool"):
        kpm = rng.random((N, S)) > 0.6
        kpm[:, 0] = False
        if kind == "kpm_float":
            kpm = np.where(kpm, -1e9, 0.0) + rng.standard_normal((N, S)) * 0.1
    if kind in ("attn_bool_2d", "both_bool"):
        attn = rng.random((L, S)) > 0.6
        attn[:, 0] = False
    if kind == "attn_float_3d":
        attn = rng.standard_normal((N * H, L, S))
    if kind == "causal_hint":
        attn = np.triu(np.ones((L, S), dtype=bool), 1)
    return kpm, attn


@pytest.mark.parametrize("cfg", MHA_CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in
                                                                       c.items()))
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_matches_torch(cfg, need_weights):
    rng = RNG(11)
    e_mod, t_mod = _pair(_mha_build(**cfg))
    q, k, v = _mha_inputs(rng, cfg)
    L, S, N, H = 4, 5, 3, cfg["num_heads"]
    for mask_kind in MASKS:
        kpm, attn = _masks(rng, mask_kind, L, S, N, H)
        is_causal = mask_kind == "causal_hint"
        if is_causal and (cfg.get("add_bias_kv") or cfg.get("add_zero_attn")):
            continue  # the hint drops the mask; torch's SDPA then gets an L != S causal mask
        for average in ((True, False) if need_weights else (True,)):
            def call(mod, x, lib, kpm=kpm, attn=attn, average=average, is_causal=is_causal):
                conv = _e if lib is ember else _t
                return mod(x[0], x[1], x[2], key_padding_mask=conv(kpm),
                           need_weights=need_weights, attn_mask=conv(attn),
                           average_attn_weights=average, is_causal=is_causal)
            for mod in (e_mod, t_mod):
                mod.zero_grad()
            _run_both(e_mod, t_mod, [q, k, v], call)


@pytest.mark.parametrize("kind", ["self", "kv_same"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_self_attention_identity_paths(kind, batch_first):
    # query is key is value (one packed GEMM) and key is value (split GEMM) give torch's values
    rng = RNG(12)
    e_mod, t_mod = _pair(_mha_build(embed_dim=8, num_heads=2, batch_first=batch_first))
    x = rng.standard_normal((3, 4, 8))
    mem = rng.standard_normal((3, 6, 8) if batch_first else (6, 4, 8))

    def call(mod, inputs, lib):
        x, mem = inputs
        if kind == "self":
            return mod(x, x, x, need_weights=False)
        return mod(x, mem, mem)
    _run_both(e_mod, t_mod, [x, mem], call)


def test_mha_unbatched_and_eval_mode():
    rng = RNG(13)
    e_mod, t_mod = _pair(_mha_build(embed_dim=8, num_heads=2, dropout=0.0))
    q, k = rng.standard_normal((4, 8)), rng.standard_normal((5, 8))
    kpm = np.array([False, True, False, False, True])
    attn3 = rng.standard_normal((2, 4, 5))
    for mode in ("train", "eval"):
        getattr(e_mod, mode)()
        getattr(t_mod, mode)()
        for kw in ({}, {"key_padding_mask": kpm}, {"attn_mask": attn3},
                   {"need_weights": False, "attn_mask": attn3 > 0.5}):
            def call(mod, x, lib, kw=kw):
                conv = _e if lib is ember else _t
                return mod(x[0], x[1], x[1], **{n: conv(v) if isinstance(v, np.ndarray) else v
                                               for n, v in kw.items()})
            _run_both(e_mod, t_mod, [q, k], call, check_params=False)


def test_mha_fully_padded_batch_element():
    # torch: NaN rows on the need_weights path (softmax of all -inf), zeros through SDPA
    rng = RNG(14)
    e_mod, t_mod = _pair(_mha_build(embed_dim=4, num_heads=2))
    q, k = rng.standard_normal((3, 2, 4)), rng.standard_normal((5, 2, 4))
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[1] = True
    for need_weights in (True, False):
        with torch.no_grad():
            t_out = t_mod(_t(q), _t(k), _t(k), key_padding_mask=_t(kpm),
                          need_weights=need_weights)
        e_out = e_mod(_e(q), _e(k), _e(k), key_padding_mask=_e(kpm), need_weights=need_weights)
        assert_same(e_out[0], t_out[0])


def test_mha_float32():
    rng = RNG(15)
    cfg = dict(embed_dim=8, num_heads=2, batch_first=True)
    e_mod, t_mod = _pair(_mha_build(**cfg), dtype=torch.float32)
    q, k, v = (a.astype(np.float32) for a in _mha_inputs(rng, cfg))
    kpm, _ = _masks(rng, "kpm_bool", 4, 5, 3, 2)

    def call(mod, x, lib):
        return mod(x[0], x[1], x[2], key_padding_mask=(_e if lib is ember else _t)(kpm))
    _run_both(e_mod, t_mod, [q, k, v], call, rtol=1e-4, atol=1e-5)


def test_mha_mismatched_mask_types_warn_like_torch():
    rng = RNG(16)
    e_mod, t_mod = _pair(_mha_build(embed_dim=4, num_heads=2))
    x = rng.standard_normal((3, 2, 4))
    kpm = np.zeros((2, 3), dtype=bool)
    attn = np.zeros((3, 3))
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        t_mod(_t(x), _t(x), _t(x), key_padding_mask=_t(kpm), attn_mask=_t(attn))
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        e_mod(_e(x), _e(x), _e(x), key_padding_mask=_e(kpm), attn_mask=_e(attn))


def test_mha_repr_state_dict_and_names():
    for cfg in MHA_CONFIGS:
        e_mod, t_mod = _pair(_mha_build(**cfg))
        assert repr(e_mod) == repr(t_mod)
        assert [n for n, _ in e_mod.named_parameters()] == \
            [n for n, _ in t_mod.named_parameters()]
        for (n, a), (_, b) in zip(e_mod.state_dict().items(), t_mod.state_dict().items()):
            assert tuple(a.shape) == tuple(b.shape), n
        for attr in ("embed_dim", "kdim", "vdim", "_qkv_same_embed_dim", "num_heads",
                     "dropout", "batch_first", "head_dim", "add_zero_attn"):
            assert getattr(e_mod, attr) == getattr(t_mod, attr), attr
        assert (e_mod.bias_k is None) == (t_mod.bias_k is None)
    assert type(e_mod.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert isinstance(e_mod.out_proj, nn.Linear)


def test_mha_init_distributions():
    ember.manual_seed(0)
    E = 96
    m = nn.MultiheadAttention(E, 4, add_bias_kv=True)
    w = m.in_proj_weight.detach().numpy()
    bound = math.sqrt(6.0 / (E + 3 * E))            # xavier_uniform on (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound
    assert float(m.in_proj_bias.abs().sum()) == 0 and float(m.out_proj.bias.abs().sum()) == 0
    ow = m.out_proj.weight.detach().numpy()          # Linear's kaiming_uniform(a=sqrt(5))
    assert np.abs(ow).max() <= 1 / math.sqrt(E)
    bk = np.concatenate([m.bias_k.detach().numpy().ravel(), m.bias_v.detach().numpy().ravel()])
    assert abs(bk.std() - math.sqrt(1.0 / E)) < 0.3 * math.sqrt(1.0 / E)  # xavier_normal
    sep = nn.MultiheadAttention(8, 2, kdim=3, vdim=5)
    kb = math.sqrt(6.0 / (8 + 3))
    assert np.abs(sep.k_proj_weight.detach().numpy()).max() <= kb
    m = nn.MultiheadAttention(8, 2, dtype=ember.float64)
    assert m.in_proj_weight.dtype is ember.float64 and m.out_proj.weight.dtype is ember.float64


def test_mha_constructor_errors():
    for mod in (nn, torch.nn):
        with pytest.raises(ValueError, match="must be greater than 0"):
            mod.MultiheadAttention(0, 2)
        with pytest.raises(ValueError, match="must be greater than 0"):
            mod.MultiheadAttention(4, -1)
        with pytest.raises(AssertionError, match="divisible"):
            mod.MultiheadAttention(5, 2)


MHA_FORWARD_ERRORS = [
    ("query_rank", lambda x, m: dict(q=x[0, 0])),
    ("key_rank", lambda x, m: dict(k=x[0])),
    ("kpm_rank", lambda x, m: dict(key_padding_mask=m[0][0])),
    ("attn_rank", lambda x, m: dict(attn_mask=m[1][None, None])),
    ("attn_2d_shape", lambda x, m: dict(attn_mask=m[1][:2])),
    ("attn_3d_shape", lambda x, m: dict(attn_mask=m[1][None])),
    ("int_mask", lambda x, m: dict(attn_mask=m[1].to_int())),
    ("kpm_shape", lambda x, m: dict(key_padding_mask=m[0][:, :2])),
    ("embed_dim", lambda x, m: dict(q=x[..., :2], k=x[..., :2], v=x[..., :2])),
    ("causal_without_mask", lambda x, m: dict(is_causal=True)),
    ("kv_shape", lambda x, m: dict(v=x[:2])),
]


@pytest.mark.parametrize("name,make", MHA_FORWARD_ERRORS, ids=[c[0] for c in MHA_FORWARD_ERRORS])
def test_mha_forward_errors_match_torch(name, make):
    rng = RNG(17)
    e_mod, t_mod = _pair(_mha_build(embed_dim=4, num_heads=2))
    x = rng.standard_normal((3, 2, 4))
    kpm = np.zeros((2, 3), dtype=bool)
    attn = np.zeros((3, 3), dtype=bool)

    class Arr(np.ndarray):
        def to_int(self):
            return self.astype(np.int64)

    xs = x.view(Arr)
    ms = (kpm.view(Arr), attn.view(Arr))

    def call(mod, conv):
        kw = make(xs, ms)
        q, k, v = (kw.pop(n, x) for n in "qkv")
        kw = {n: conv(np.asarray(a)) if isinstance(a, np.ndarray) else a
              for n, a in kw.items()}
        return lambda: mod(conv(np.asarray(q)), conv(np.asarray(k)), conv(np.asarray(v)), **kw)
    _raises_like(call(e_mod, _e), call(t_mod, _t))


# ---------------------------------------------------------------- encoder / decoder layers


def _activation(kind, mod):
    if kind == "module":
        return mod.GELU()
    if kind == "callable":
        return (F if mod is nn else TF).silu
    return kind


LAYER_CONFIGS = [
    dict(),
    dict(norm_first=True),
    dict(batch_first=True, activation="gelu"),
    dict(batch_first=True, norm_first=True, activation="module", bias=False),
    dict(activation="callable", layer_norm_eps=1e-3),
]


def _layer_build(cls, cfg, d_model=8, nhead=2, ff=16):
    def build(mod):
        kw = dict(cfg)
        if "activation" in kw:
            kw["activation"] = _activation(kw["activation"], mod)
        return getattr(mod, cls)(d_model, nhead, dim_feedforward=ff, dropout=0.0, **kw)
    return build


def _seq(rng, cfg, L, N, E=8):
    return rng.standard_normal((N, L, E) if cfg.get("batch_first") else (L, N, E))


@pytest.mark.parametrize("cfg", LAYER_CONFIGS, ids=str)
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_encoder_layer_matches_torch(cfg, mode):
    rng = RNG(18)
    e_mod, t_mod = _pair(_layer_build("TransformerEncoderLayer", cfg))
    getattr(e_mod, mode)()
    getattr(t_mod, mode)()
    assert repr(e_mod) == repr(t_mod)
    src = _seq(rng, cfg, 5, 3)
    kpm = rng.random((3, 5)) > 0.6
    kpm[:, 0] = False
    causal = np.triu(np.full((5, 5), -np.inf), 1)
    for kw in ({}, {"src_key_padding_mask": kpm}, {"src_mask": causal, "is_causal": True},
               {"src_mask": causal > 0, "src_key_padding_mask": kpm}):
        def call(mod, x, lib, kw=kw):
            conv = _e if lib is ember else _t
            return mod(x[0], **{n: conv(v) if isinstance(v, np.ndarray) else v
                                for n, v in kw.items()})
        for mod in (e_mod, t_mod):
            mod.zero_grad()
        _run_both(e_mod, t_mod, [src], call)


@pytest.mark.parametrize("cfg", LAYER_CONFIGS, ids=str)
def test_decoder_layer_matches_torch(cfg):
    rng = RNG(19)
    e_mod, t_mod = _pair(_layer_build("TransformerDecoderLayer", cfg))
    assert repr(e_mod) == repr(t_mod)
    tgt, mem = _seq(rng, cfg, 4, 2), _seq(rng, cfg, 6, 2)
    tgt_mask = np.triu(np.full((4, 4), -np.inf), 1)
    mem_kpm = np.zeros((2, 6), dtype=bool)
    mem_kpm[1, 4:] = True
    mem_mask = rng.random((4, 6)) > 0.7
    mem_mask[:, 0] = False
    for kw in ({}, {"tgt_mask": tgt_mask, "tgt_is_causal": True,
                    "memory_key_padding_mask": mem_kpm},
               {"tgt_key_padding_mask": mem_kpm[:, :4], "memory_mask": mem_mask}):
        def call(mod, x, lib, kw=kw):
            conv = _e if lib is ember else _t
            return mod(x[0], x[1], **{n: conv(v) if isinstance(v, np.ndarray) else v
                                      for n, v in kw.items()})
        for mod in (e_mod, t_mod):
            mod.zero_grad()
        _run_both(e_mod, t_mod, [tgt, mem], call)


def test_unbatched_layers():
    rng = RNG(20)
    for cls in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        e_mod, t_mod = _pair(_layer_build(cls, {}))
        x, mem = rng.standard_normal((5, 8)), rng.standard_normal((3, 8))

        def call(mod, inputs, lib, cls=cls):
            if cls == "TransformerEncoderLayer":
                return mod(inputs[0])
            return mod(inputs[0], inputs[1])
        _run_both(e_mod, t_mod, [x, mem], call)


def test_layer_dropout_in_training_only():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5).double()
    x = ember.randn(5, 2, 8, dtype=ember.float64)
    assert not bool((layer(x) == layer(x)).all())      # fresh dropout masks each call
    layer.eval()
    assert bool((layer(x) == layer(x)).all())


def test_activation_errors_and_flags():
    for mod in (nn, torch.nn):
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            mod.TransformerEncoderLayer(8, 2, activation="tanh")
        with pytest.raises(RuntimeError, match="activation should be relu/gelu"):
            mod.TransformerDecoderLayer(8, 2, activation="elu")
    for act, flag in (("relu", 1), ("gelu", 2), ("module", 2), ("callable", 0)):
        assert nn.TransformerEncoderLayer(8, 2, activation=_activation(act, nn)) \
            .activation_relu_or_gelu == flag
        assert torch.nn.TransformerEncoderLayer(8, 2, activation=_activation(act, torch.nn)) \
            .activation_relu_or_gelu == flag
    assert nn.TransformerEncoderLayer(8, 2, activation="gelu").activation is F.gelu


# ---------------------------------------------------------------- stacks and Transformer


def _encoder_build(cfg, num_layers=2, norm=True, **kw):
    def build(mod):
        layer = _layer_build("TransformerEncoderLayer", cfg)(mod)
        return mod.TransformerEncoder(layer, num_layers, norm=mod.LayerNorm(8) if norm else None,
                                      **kw)
    return build


@pytest.mark.filterwarnings("ignore:Support for mismatched")
@pytest.mark.parametrize("cfg", [dict(), dict(batch_first=True), dict(norm_first=True)],
                         ids=str)
def test_encoder_stack_matches_torch(cfg):
    rng = RNG(21)
    e_mod, t_mod = _pair(_encoder_build(cfg))
    src = _seq(rng, cfg, 6, 2)
    kpm = np.zeros((2, 6), dtype=bool)
    kpm[0, 4:] = True
    causal = np.triu(np.full((6, 6), -np.inf), 1)
    for kw in ({}, {"mask": causal}, {"mask": causal, "is_causal": True},
               {"src_key_padding_mask": kpm}, {"mask": causal, "src_key_padding_mask": kpm}):
        def call(mod, x, lib, kw=kw):
            conv = _e if lib is ember else _t
            return mod(x[0], **{n: conv(v) if isinstance(v, np.ndarray) else v
                                for n, v in kw.items()})
        for mod in (e_mod, t_mod):
            mod.zero_grad()
        _run_both(e_mod, t_mod, [src], call)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_encoder_nested_tensor_inference_zeroes_padding_like_torch():
    # batch_first, even heads, eval, no grad, left-aligned padding: torch's nested-tensor path
    rng = RNG(22)
    cfg = dict(batch_first=True)
    for norm in (False, True):
        e_mod, t_mod = _pair(_encoder_build(cfg, norm=norm))
        assert e_mod.use_nested_tensor == t_mod.use_nested_tensor is True
        e_mod.eval()
        t_mod.eval()
        src = _seq(rng, cfg, 6, 3)
        kpm = np.zeros((3, 6), dtype=bool)
        kpm[0, 4:] = True
        kpm[2, 2:] = True
        with torch.no_grad():
            t_out = t_mod(_t(src), src_key_padding_mask=_t(kpm))
        with ember.no_grad():
            e_out = e_mod(_e(src), src_key_padding_mask=_e(kpm))
        assert_same(e_out, t_out)
        # not left-aligned: the ordinary path
        kpm2 = kpm.copy()
        kpm2[1, 0] = True
        with torch.no_grad():
            t_out = t_mod(_t(src), src_key_padding_mask=_t(kpm2))
        with ember.no_grad():
            e_out = e_mod(_e(src), src_key_padding_mask=_e(kpm2))
        assert_same(e_out, t_out)


def test_encoder_nested_tensor_flag_and_warning_like_torch():
    cases = [dict(), dict(batch_first=True), dict(batch_first=True, norm_first=True),
             dict(batch_first=True, bias=False), dict(batch_first=True, activation="callable")]
    for cfg in cases:
        results = []
        for mod in (nn, torch.nn):
            layer = _layer_build("TransformerEncoderLayer", cfg)(mod)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                enc = mod.TransformerEncoder(layer, 1)
            results.append((enc.use_nested_tensor, enc.enable_nested_tensor,
                            [str(w.message) for w in caught]))
        assert results[0] == results[1], cfg
    layer = nn.TransformerEncoderLayer(6, 3, batch_first=True)
    with pytest.warns(UserWarning, match="num_heads is odd"):
        nn.TransformerEncoder(layer, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)


def test_decoder_stack_matches_torch():
    rng = RNG(23)

    def build(mod):
        layer = _layer_build("TransformerDecoderLayer", {})(mod)
        return mod.TransformerDecoder(layer, 2, norm=mod.LayerNorm(8))
    e_mod, t_mod = _pair(build)
    tgt, mem = rng.standard_normal((5, 2, 8)), rng.standard_normal((7, 2, 8))
    causal = np.triu(np.full((5, 5), -np.inf), 1)
    for kw in ({}, {"tgt_mask": causal}, {"tgt_mask": causal > 0, "tgt_is_causal": False}):
        def call(mod, x, lib, kw=kw):
            conv = _e if lib is ember else _t
            return mod(x[0], x[1], **{n: conv(v) if isinstance(v, np.ndarray) else v
                                      for n, v in kw.items()})
        for mod in (e_mod, t_mod):
            mod.zero_grad()
        _run_both(e_mod, t_mod, [tgt, mem], call)


def _transformer_build(**kw):
    def build(mod):
        return mod.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                               dim_feedforward=16, dropout=0.0, **kw)
    return build


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True, norm_first=True),
                                dict(activation="gelu", bias=False)], ids=str)
def test_transformer_matches_torch(kw):
    rng = RNG(24)
    e_mod, t_mod = _pair(_transformer_build(**kw))
    bf = kw.get("batch_first", False)
    src = rng.standard_normal((2, 6, 8) if bf else (6, 2, 8))
    tgt = rng.standard_normal((2, 4, 8) if bf else (4, 2, 8))
    tgt_mask = to_torch(nn.Transformer.generate_square_subsequent_mask(4, dtype=ember.float64))
    src_kpm = np.zeros((2, 6), dtype=bool)
    src_kpm[1, 5] = True

    def call(mod, x, lib):
        conv = _e if lib is ember else _t
        mask = tgt_mask.numpy()
        return mod(x[0], x[1], tgt_mask=conv(mask), src_key_padding_mask=conv(src_kpm),
                   memory_key_padding_mask=conv(src_kpm))
    _run_both(e_mod, t_mod, [src, tgt], call)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_structure_repr_state_dict_and_init():
    e_mod, t_mod = _pair(_transformer_build())
    assert list(e_mod.state_dict()) == list(t_mod.state_dict())
    for (n, a), (_, b) in zip(e_mod.state_dict().items(), t_mod.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape), n
    for attr in ("d_model", "nhead", "batch_first"):
        assert getattr(e_mod, attr) == getattr(t_mod, attr)
    # one layer per stack: ModuleList prints each child as torch does
    one = _pair(lambda mod: mod.Transformer(8, 2, 1, 1, 16))
    assert repr(one[0]) == repr(one[1])
    # _reset_parameters: xavier_uniform_ on every matrix (linear1 weight is (16, 8))
    ember.manual_seed(0)
    big = nn.Transformer(16, 2, 1, 1, 256)
    w = big.encoder.layers[0].linear1.weight.detach().numpy()
    bound = math.sqrt(6.0 / (16 + 256))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert float(big.encoder.norm.weight.sum()) == 16      # LayerNorm untouched (1-D)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_errors_and_custom_parts():
    for mod, lib in ((nn, ember), (torch.nn, torch)):
        model = mod.Transformer(8, 2, 1, 1, 16)
        with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
            model(lib.zeros(3, 2, 8), lib.zeros(3, 4, 8))
        with pytest.raises(RuntimeError, match="feature number of src and tgt"):
            model(lib.zeros(3, 2, 8), lib.zeros(3, 2, 6))
        enc, dec = mod.Identity(), mod.Identity()
        custom = mod.Transformer(8, 2, custom_encoder=enc, custom_decoder=dec)
        assert custom.encoder is enc and custom.decoder is dec


def test_generate_square_subsequent_mask():
    for sz, dtype in ((1, None), (4, None), (3, "float64"), (0, None)):
        kw_e = {"dtype": getattr(ember, dtype)} if dtype else {}
        kw_t = {"dtype": getattr(torch, dtype)} if dtype else {}
        assert_same(nn.Transformer.generate_square_subsequent_mask(sz, **kw_e),
                    torch.nn.Transformer.generate_square_subsequent_mask(sz, **kw_t))
    m = nn.Transformer.generate_square_subsequent_mask(3, device="meta")
    assert m.device.type == "meta" and tuple(m.shape) == (3, 3)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_meta_device():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, device="meta")
    assert model.encoder.layers[0].self_attn.in_proj_weight.device.type == "meta"
    src, tgt = ember.empty(5, 2, 8, device="meta"), ember.empty(3, 2, 8, device="meta")
    mask = nn.Transformer.generate_square_subsequent_mask(3, device="meta")
    with pytest.raises(RuntimeError, match="meta"):   # detecting a causal mask reads values,
        model(src, tgt, tgt_mask=mask)                # as in torch
    out = model(src, tgt, tgt_mask=mask, tgt_is_causal=True)
    assert out.device.type == "meta" and tuple(out.shape) == (3, 2, 8)


# ---------------------------------------------------------------- a tiny GPT trains


class TinyGPT(nn.Module):
    def __init__(self, vocab, d_model, n_layers, context):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(ember.randn(context, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context),
                             persistent=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos[:T]
        x = self.blocks(x, mask=self.mask[:T, :T], is_causal=True)
        return self.head(x)


def test_tiny_gpt_loss_falls():
    ember.manual_seed(0)
    rng = RNG(25)
    vocab, context = 11, 12
    model = TinyGPT(vocab, 32, 2, context)
    params = list(model.parameters())
    m = [ember.zeros_like(p) for p in params]
    s = [ember.zeros_like(p) for p in params]
    losses = []
    for step in range(1, 31):
        # sequences counting up by a per-sequence stride: next token is predictable in context
        start = rng.integers(0, vocab, size=(16, 1))
        stride = rng.integers(1, 3, size=(16, 1))
        seq = (start + stride * np.arange(context + 1)) % vocab
        x, y = ember.tensor(seq[:, :-1]), ember.tensor(seq[:, 1:])
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        for p in params:
            p.grad = None
        loss.backward()
        losses.append(float(loss))
        with ember.no_grad():       # Adam, written out
            for p, mi, si in zip(params, m, s):
                g = p.grad
                mi.mul_(0.9).add_(g * 0.1)
                si.mul_(0.999).add_(g * g * 0.001)
                mhat, shat = mi / (1 - 0.9 ** step), si / (1 - 0.999 ** step)
                p.sub_(3e-3 * mhat / (shat.sqrt() + 1e-8))
    assert all(math.isfinite(v) for v in losses)
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:3]), losses



def test_attention_on_device(device, monkeypatch):
    # the same computation on every available device (cuda, webgpu when present) agrees with
    # torch (CPU); webgpu computes in float32, all of it in WGSL kernels (strict mode)
    fd, rtol, atol = float_for(device)
    if device == "webgpu":
        monkeypatch.setenv("EMBER_WEBGPU_STRICT", "1")
    rng = RNG(27)
    q, k, v = (rng.standard_normal((2, 2, 4, 8)).astype(fd) for _ in range(3))
    mask = rng.random((4, 4)) > 0.3
    mask[1] = False
    e = [_e(a).to(device).requires_grad_() for a in (q, k, v)]
    t = [_t(a).requires_grad_() for a in (q, k, v)]
    e_out = F.scaled_dot_product_attention(*e, attn_mask=_e(mask).to(device))
    t_out = TF.scaled_dot_product_attention(*t, attn_mask=_t(mask))
    assert e_out.device.type == device
    assert_same(e_out.cpu(), t_out, rtol=rtol, atol=atol)
    e_out.sum().backward()
    t_out.sum().backward()
    for a, b in zip(e, t):
        assert_same(a.grad.cpu(), b.grad, rtol=rtol, atol=atol)
    e_mod, t_mod = _pair(_mha_build(embed_dim=8, num_heads=2, batch_first=True),
                         torch.float64 if fd == np.float64 else torch.float32)
    e_mod = e_mod.to(device)
    x = rng.standard_normal((2, 5, 8)).astype(fd)
    e_res = e_mod(_e(x).to(device), _e(x).to(device), _e(x).to(device))
    t_res = t_mod(_t(x), _t(x), _t(x))
    assert_same(e_res[0].cpu(), t_res[0], rtol=rtol, atol=atol)
    assert_same(e_res[1].cpu(), t_res[1], rtol=rtol, atol=atol)
