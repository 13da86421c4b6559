"""torch.nn's newer or rarer pieces, each against torch: pruning, nn.grad, nn.attention,
linear_cross_entropy, conv_tbc, grouped_mm, module utils and factory_kwargs."""

import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention.bias  # noqa: F401
import torch.nn.attention.flex_attention  # noqa: F401
import torch.nn.utils.prune as TP
from tests.conftest import to_ember

import ember
import ember.nn.attention.bias  # noqa: F401
import ember.nn.attention.flex_attention  # noqa: F401
import ember.nn.attention.varlen  # noqa: F401
import ember.nn.utils.prune as EP


def close(a, b, atol=1e-5):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(a, b, atol=atol, rtol=1e-5)


def twin(build):
    """The same layer in torch and ember, with torch's initial weights."""
    torch.manual_seed(0)
    t = build(torch)
    e = build(ember)
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    return t, e


# --- nn.utils.prune ---

def test_prune_l1_then_ln_then_l1_matches_torch_masks_keys_and_forward():
    t, e = twin(lambda lib: lib.nn.Conv2d(3, 6, 3))
    for P, m in ((TP, t), (EP, e)):
        P.l1_unstructured(m, "weight", amount=0.3)
        P.ln_structured(m, "weight", amount=2, n=2, dim=0)
        P.l1_unstructured(m, "weight", amount=5)
    assert sorted(t.state_dict()) == sorted(e.state_dict())
    close(t.weight_mask, e.weight_mask)
    hook = next(iter(e._forward_pre_hooks.values()))
    assert isinstance(hook, EP.PruningContainer) and len(hook) == 3
    x = torch.randn(2, 3, 5, 5)
    close(t(x), e(to_ember(x)), atol=1e-5)
    assert EP.is_pruned(e) and TP.is_pruned(t)
    TP.remove(t, "weight")
    EP.remove(e, "weight")
    assert sorted(dict(t.named_parameters())) == sorted(dict(e.named_parameters()))
    close(t.weight, e.weight)
    assert not EP.is_pruned(e)


def test_prune_mask_reapplied_by_forward_pre_hook_after_orig_changes():
    t, e = twin(lambda lib: lib.nn.Linear(4, 3))
    for P, m in ((TP, t), (EP, e)):
        P.l1_unstructured(m, "weight", amount=0.5)
        with (torch if P is TP else ember).no_grad():
            m.weight_orig.add_(1.0)
    x = torch.randn(2, 4)
    close(t(x), e(to_ember(x)))
    close(t.weight, e.weight)


def test_prune_global_unstructured_and_custom_mask_match_torch():
    a, ea = twin(lambda lib: lib.nn.Linear(5, 4))
    b, eb = twin(lambda lib: lib.nn.Linear(4, 3))
    TP.global_unstructured([(a, "weight"), (b, "weight"), (a, "bias")], TP.L1Unstructured,
                           amount=0.4)
    EP.global_unstructured([(ea, "weight"), (eb, "weight"), (ea, "bias")], EP.L1Unstructured,
                           amount=0.4)
    for x, y in ((a.weight, ea.weight), (b.weight, eb.weight), (a.bias, ea.bias)):
        close(x, y)
    mask = torch.tensor([1.0, 0.0, 1.0])
    TP.custom_from_mask(b, "bias", mask)
    EP.custom_from_mask(eb, "bias", to_ember(mask))
    close(b.bias, eb.bias)


def test_prune_random_methods_draw_torchs_numbers():
    t, e = twin(lambda lib: lib.nn.Linear(6, 5))
    torch.manual_seed(3)
    ember.manual_seed(3)
    TP.random_unstructured(t, "weight", 0.5)
    EP.random_unstructured(e, "weight", 0.5)
    TP.random_structured(t, "weight", 2, dim=1)
    EP.random_structured(e, "weight", 2, dim=1)
    close(t.weight_mask, e.weight_mask)


@pytest.mark.parametrize("amount", [-1, 1.5, "x"])
def test_prune_bad_amount_raises_torchs_error(amount):
    with pytest.raises(Exception) as expected:
        TP.L1Unstructured(amount)
    with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
        EP.L1Unstructured(amount)


def test_prune_errors_leave_module_intact_and_match_torch():
    t, e = twin(lambda lib: lib.nn.Linear(3, 2))
    for P, m in ((TP, t), (EP, e)):
        with pytest.raises(ValueError, match="should be smaller than the number"):
            P.l1_unstructured(m, "weight", amount=7)
        assert sorted(dict(m.named_parameters())) == ["bias", "weight"]
        with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
            P.remove(m, "weight")
        with pytest.raises(ValueError, match="Structured pruning can only be applied"):
            P.ln_structured(m, "bias", amount=1, n=1, dim=0)


def test_prune_identity_and_method_prune():
    t, e = twin(lambda lib: lib.nn.Linear(3, 2))
    TP.identity(t, "bias")
    EP.identity(e, "bias")
    assert sorted(t.state_dict()) == sorted(e.state_dict())
    x = torch.tensor([3.0, -1.0, 2.0, 0.5])
    close(TP.L1Unstructured(amount=2).prune(x), EP.L1Unstructured(amount=2).prune(to_ember(x)))


# --- nn.grad ---

@pytest.mark.parametrize("dims,stride,padding,dilation,groups", [
    (1, 1, 0, 1, 1), (1, 2, 1, 2, 2), (2, (2, 1), 1, 1, 2), (2, 1, (0, 2), (2, 1), 1),
    (3, 2, 1, 1, 1)])
def test_nn_grad_conv_input_and_weight_match_torch(dims, stride, padding, dilation, groups):
    torch.manual_seed(0)
    x = torch.randn(2, 4, *([7] * dims), dtype=torch.float64)
    w = torch.randn(6, 4 // groups, *([3] * dims), dtype=torch.float64)
    conv = getattr(torch.nn.functional, f"conv{dims}d")
    gy = torch.randn_like(conv(x, w, None, stride, padding, dilation, groups))
    t_in = getattr(torch.nn.grad, f"conv{dims}d_input")(x.shape, w, gy, stride, padding,
                                                         dilation, groups)
    e_in = getattr(ember.nn.grad, f"conv{dims}d_input")(x.shape, to_ember(w), to_ember(gy),
                                                         stride, padding, dilation, groups)
    close(t_in, e_in, atol=1e-10)
    t_w = getattr(torch.nn.grad, f"conv{dims}d_weight")(x, w.shape, gy, stride, padding,
                                                        dilation, groups)
    e_w = getattr(ember.nn.grad, f"conv{dims}d_weight")(to_ember(x), w.shape, to_ember(gy),
                                                        stride, padding, dilation, groups)
    close(t_w, e_w, atol=1e-10)


# --- nn.attention ---

@pytest.mark.parametrize("variant", ["causal_lower_right", "causal_upper_left"])
def test_causal_bias_mask_and_sdpa_match_torch(variant):
    torch.manual_seed(0)
    q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4)
    t_bias = getattr(torch.nn.attention.bias, variant)(3, 5)
    e_bias = getattr(ember.nn.attention.bias, variant)(3, 5)
    close(t_bias._materialize(), e_bias._materialize())
    t_out = torch.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=t_bias)
    e_out = ember.nn.functional.scaled_dot_product_attention(to_ember(q), to_ember(k),
                                                             to_ember(k), attn_mask=e_bias)
    close(t_out, e_out, atol=1e-6)


def test_sdpa_kernel_disabling_cpu_backends_raises_torchs_error():
    q = torch.randn(1, 1, 2, 4)
    T, E = torch.nn.attention, ember.nn.attention
    with T.sdpa_kernel(T.SDPBackend.EFFICIENT_ATTENTION), pytest.raises(RuntimeError) as expected:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    with E.sdpa_kernel(E.SDPBackend.EFFICIENT_ATTENTION), pytest.raises(
            RuntimeError, match=re.escape(str(expected.value)[:40])):
        ember.nn.functional.scaled_dot_product_attention(*[to_ember(q)] * 3)
    with E.sdpa_kernel([E.SDPBackend.MATH]):
        out = ember.nn.functional.scaled_dot_product_attention(*[to_ember(q)] * 3)
    close(out, torch.nn.functional.scaled_dot_product_attention(q, q, q), atol=1e-6)
    assert [b.value for b in E.SDPBackend] == [b.value for b in T.SDPBackend.__members__.values()]


def _masks(F):
    causal = lambda b, h, q, k: q >= k  # noqa: E731
    return [causal, F.and_masks(causal, lambda b, h, q, k: (q - k) < 2),
            F.or_masks(lambda b, h, q, k: k == 5, lambda b, h, q, k: q < 0)]


@pytest.mark.parametrize("which", range(3))
def test_flex_attention_reference_matches_torch(which):
    TF, EF = torch.nn.attention.flex_attention, ember.nn.attention.flex_attention
    torch.manual_seed(0)
    q = torch.randn(2, 4, 5, 8, dtype=torch.float64)
    k = torch.randn(2, 2, 6, 8, dtype=torch.float64)
    v = torch.randn(2, 2, 6, 3, dtype=torch.float64)
    score_mod = lambda s, b, h, qi, ki: s + (qi - ki) * 0.1 + h  # noqa: E731
    t_mask, e_mask = _masks(TF)[which], _masks(EF)[which]
    t_block = TF.create_block_mask(t_mask, 2, None, 5, 6, device="cpu")
    e_block = EF.create_block_mask(e_mask, 2, None, 5, 6)
    assert t_block.to_dense().tolist() == e_block.to_dense().tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_out, t_aux = TF.flex_attention(q, k, v, score_mod=score_mod, block_mask=t_block,
                                         enable_gqa=True, return_aux=TF.AuxRequest(lse=True))
    e_out, e_aux = EF.flex_attention(to_ember(q), to_ember(k), to_ember(v), score_mod=score_mod,
                                     block_mask=e_block, enable_gqa=True,
                                     return_aux=EF.AuxRequest(lse=True))
    close(t_out, e_out, atol=1e-12)
    close(t_aux.lse, e_aux.lse, atol=1e-12)
    close(TF.create_mask(t_mask, 2, 3, 5, 6), EF.create_mask(e_mask, 2, 3, 5, 6))


def test_varlen_attention_names_what_to_use_instead():
    with pytest.raises(NotImplementedError, match="scaled_dot_product_attention"):
        ember.nn.attention.varlen.varlen_attn(None, None, None, None, None, 1, 1)


# --- functional extras ---

@pytest.mark.parametrize("options", [None, "chunked"])
def test_linear_cross_entropy_and_module_match_torch(options):
    torch.manual_seed(0)
    x = torch.randn(4, 3, dtype=torch.float64)
    w = torch.randn(5, 2, 3, dtype=torch.float64)
    y = torch.tensor([[0, 1], [4, 2], [3, 3], [1, -100]])
    opts = lambda lib: None if options is None else lib.nn.LinearCrossEntropyOptions(  # noqa: E731
        batch_chunk_size=2)
    xe, we = to_ember(x).requires_grad_(), to_ember(w).requires_grad_()
    xt, wt = x.clone().requires_grad_(), w.clone().requires_grad_()
    t = torch.nn.functional.linear_cross_entropy(xt, wt, y, label_smoothing=0.1,
                                                 options=opts(torch))
    e = ember.nn.functional.linear_cross_entropy(xe, we, to_ember(y), label_smoothing=0.1,
                                                 options=opts(ember))
    close(t, e, atol=1e-12)
    t.backward()
    e.backward()
    close(xt.grad, xe.grad, atol=1e-12)
    close(wt.grad, we.grad, atol=1e-12)
    tm, em = twin(lambda lib: lib.nn.LinearCrossEntropyLoss(3, 5, out_features=(2,), bias=True))
    close(tm(x.float(), y), em(to_ember(x.float()), to_ember(y)), atol=1e-6)
    assert repr(tm) == repr(em).replace("ember.", "torch.")


def test_linear_cross_entropy_options_validate_like_torch():
    for kwargs in ({"acc_policy": "fast"}, {"chunking_method": "rows"},
                   {"batch_chunk_size": 0}):
        with pytest.raises(ValueError) as expected:
            torch.nn.LinearCrossEntropyOptions(**kwargs)
        with pytest.raises(ValueError, match=re.escape(str(expected.value)[:20])):
            ember.nn.LinearCrossEntropyOptions(**kwargs)


def test_conv_tbc_matches_torch():
    torch.manual_seed(0)
    x, w, b = torch.randn(7, 2, 3), torch.randn(3, 3, 4), torch.randn(4)
    close(torch.nn.functional.conv_tbc(x, w, b, 1),
          ember.nn.functional.conv_tbc(to_ember(x), to_ember(w), to_ember(b), 1))


@pytest.mark.parametrize("shapes,offs", [(((8, 16), (3, 16, 8)), [2, 5, 8]),
                                         (((8, 16), (16, 8)), [4, 16]),
                                         (((2, 8, 16), (16, 8)), [4, 8]),
                                         (((3, 8, 16), (3, 16, 8)), None)])
def test_grouped_mm_matches_torch(shapes, offs):
    torch.manual_seed(0)
    a, b = torch.randn(*shapes[0]), torch.randn(*shapes[1])
    t_offs = None if offs is None else torch.tensor(offs, dtype=torch.int32)
    e_offs = None if offs is None else to_ember(t_offs)
    close(torch.nn.functional.grouped_mm(a, b, offs=t_offs),
          ember.nn.functional.grouped_mm(to_ember(a), to_ember(b), offs=e_offs), atol=1e-5)


def test_module_utils_and_factory_kwargs_match_torch():
    from torch.nn.modules import utils as tu

    from ember.nn.modules import utils as eu
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        assert getattr(eu, name)(3) == getattr(tu, name)(3)
        assert getattr(eu, name)([1, 2]) == getattr(tu, name)([1, 2])
    assert eu._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert eu._list_with_default([None, 4], [8, 16, 32]) == tu._list_with_default(
        [None, 4], [8, 16, 32])
    sd_t = {"module.a": 1, "module.b.c": 2, "x": 3}
    sd_e = dict(sd_t)
    tu.consume_prefix_in_state_dict_if_present(sd_t, "module.")
    eu.consume_prefix_in_state_dict_if_present(sd_e, "module.")
    assert sd_t == sd_e
    kwargs = {"device": "cpu", "factory_kwargs": {"memory_format": None}}
    assert torch.nn.factory_kwargs(kwargs) == ember.nn.factory_kwargs(kwargs)
    for bad in ({"devise": "cpu"}, {"device": "cpu", "factory_kwargs": {"device": "cpu"}}):
        with pytest.raises(TypeError):
            torch.nn.factory_kwargs(bad)
        with pytest.raises(TypeError):
            ember.nn.factory_kwargs(bad)


# --- global module hooks, lazy placeholders, spectral-norm hook classes ---

def _hook_log(lib):
    M = lib.nn.modules.module
    log = []
    handles = [
        M.register_module_buffer_registration_hook(
            lambda m, n, b: log.append(("buf", n)) or (b * 2 if n == "scale" else None)),
        M.register_module_module_registration_hook(lambda m, n, s: log.append(("mod", n))),
        M.register_module_parameter_registration_hook(lambda m, n, p: log.append(("param", n))),
        M.register_module_full_backward_pre_hook(
            lambda m, go: log.append(("bpre", type(m).__name__))),
        M.register_module_full_backward_hook(
            lambda m, gi, go: log.append(("bwd", type(m).__name__)))]
    net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh())
    net[0].register_buffer("scale", lib.ones(2))
    x = lib.ones(1, 2, requires_grad=True)
    net(x).sum().backward()
    for handle in handles:
        handle.remove()
    net(x).sum().backward()
    return log, net[0].scale.tolist()


def test_global_module_hooks_run_in_torchs_order():
    assert _hook_log(ember) == _hook_log(torch)
    for lib in (torch, ember):
        M = lib.nn.modules.module
        handle = M.register_module_full_backward_hook(lambda m, gi, go: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
            M.register_module_backward_hook(lambda m, gi, go: None)
        handle.remove()


def test_uninitialized_mixin_and_torch_paths_of_lazy_and_spectral_norm_classes():
    for lib in (torch, ember):
        p = lib.nn.parameter.UninitializedParameter()
        assert isinstance(p, lib.nn.parameter.UninitializedTensorMixin)
        assert repr(p) == "<UninitializedParameter>"
        p.materialize((2, 3))
        assert type(p) is lib.nn.Parameter and tuple(p.shape) == (2, 3)
        b = lib.nn.parameter.UninitializedBuffer()
        b.materialize((4,))
        assert type(b) is lib.Tensor
        from_path = lib.nn.modules.linear.LazyLinear
        assert from_path is lib.nn.LazyLinear
    layer = ember.nn.utils.spectral_norm(ember.nn.Linear(3, 2))
    kinds = {type(h).__name__ for h in layer._state_dict_hooks.values()} | {
        type(h.args[0]).__name__ for h in layer._load_state_dict_pre_hooks.values()}
    t_layer = torch.nn.utils.spectral_norm(torch.nn.Linear(3, 2))
    t_kinds = {type(h).__name__ for h in t_layer._state_dict_hooks.values()} | {
        type(getattr(h, "hook", h)).__name__ for h in t_layer._load_state_dict_pre_hooks.values()}
    assert kinds == t_kinds
    with pytest.raises(NotImplementedError, match="torch.nn.quantized.Linear"):
        ember.nn.quantized.Linear  # noqa: B018
