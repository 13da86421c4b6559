"""nn.Module, Parameter and the containers, against torch.nn on the same structures."""

import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, to_ember
from ember import nn


def _pair(build):
    """The same architecture built in ember and torch (``build(nn_module)``), same weights."""
    e, t = build(nn), build(torch.nn)
    with torch.no_grad():
        for (_, ep), (_, tp) in zip(e.named_parameters(), t.named_parameters()):
            tp.copy_(torch.from_numpy(ep.detach().numpy().copy()))
    return e, t


class _Block:
    """A two-level model defined once for both frameworks."""

    @staticmethod
    def build(mod):
        class Block(mod.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = mod.Linear(4, 3)
                self.inner = mod.Sequential(mod.Linear(3, 3), mod.Linear(3, 2, bias=False))
                self.register_buffer("steps", (torch if mod is torch.nn else ember).zeros(1))
                self.register_buffer("cache", (torch if mod is torch.nn else ember).ones(2),
                                     persistent=False)
                self.scale = mod.Parameter((torch if mod is torch.nn else ember).ones(1))

            def forward(self, x):
                return self.inner(self.fc1(x)) * self.scale
        return Block()


def test_registration_names_and_state_dict_keys_match_torch():
    e, t = _pair(_Block.build)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert list(e.state_dict()) == list(t.state_dict())
    for (_, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape)
    assert dict(e.state_dict()._metadata) == dict(t.state_dict()._metadata)


def test_repr_matches_torch():
    e, t = _pair(_Block.build)
    assert repr(e) == repr(t)
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())
    assert repr(nn.Linear(2, 3, bias=False)) == repr(torch.nn.Linear(2, 3, bias=False))


def test_parameter_semantics():
    p = nn.Parameter(ember.zeros(2))
    assert isinstance(p, ember.Tensor) and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(ember.zeros(2), requires_grad=False).requires_grad
    assert type(p * 2) is ember.Tensor
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.data_ptr() != p.data_ptr()


def test_setattr_rules_and_errors_match_torch():
    for mod, lib in ((nn, ember), (torch.nn, torch)):
        m = mod.Linear(2, 2)
        with pytest.raises(TypeError):
            m.weight = lib.zeros(2, 2)
        m.weight = None
        assert m.weight is None and "weight" in m._parameters
        with pytest.raises(AttributeError, match="has no attribute 'missing'"):
            getattr(m, "missing")  # noqa: B009
        with pytest.raises(KeyError):
            m.register_buffer("a.b", lib.zeros(1))
        m.extra = mod.Linear(1, 1)
        assert "extra" in m._modules
        del m.extra
        assert "extra" not in m._modules


def test_load_state_dict_reports_like_torch():
    e, t = _pair(_Block.build)
    state_e = OrderedDict(e.state_dict())
    state_t = OrderedDict(t.state_dict())
    for state in (state_e, state_t):
        del state["fc1.bias"]
        state["bogus"] = state["steps"]
    with pytest.raises(RuntimeError) as error_e:
        e.load_state_dict(state_e)
    with pytest.raises(RuntimeError) as error_t:
        t.load_state_dict(state_t)
    assert str(error_e.value) == str(error_t.value)
    result_e = e.load_state_dict(state_e, strict=False)
    result_t = t.load_state_dict(state_t, strict=False)
    assert result_e.missing_keys == result_t.missing_keys
    assert result_e.unexpected_keys == result_t.unexpected_keys


def test_load_state_dict_shape_mismatch_message():
    e, t = nn.Linear(2, 3), torch.nn.Linear(2, 3)
    with pytest.raises(RuntimeError) as error_t:
        t.load_state_dict({"weight": torch.zeros(3, 3), "bias": torch.zeros(3)})
    with pytest.raises(RuntimeError) as error_e:
        e.load_state_dict({"weight": ember.zeros(3, 3), "bias": ember.zeros(3)})
    assert str(error_e.value) == str(error_t.value)


def test_load_state_dict_copies_and_assign_replaces():
    source, target = nn.Linear(3, 2), nn.Linear(3, 2)
    target.load_state_dict(source.state_dict())
    assert target.weight.tolist() == source.weight.tolist()
    assert target.weight.data_ptr() != source.weight.data_ptr()
    target.load_state_dict(source.state_dict(), assign=True)
    assert target.weight.data_ptr() == source.weight.data_ptr()
    assert isinstance(target.weight, nn.Parameter)


def test_modes_conversion_and_zero_grad():
    e = _Block.build(nn)
    assert e.training and all(m.training for m in e.modules())
    e.eval()
    assert not any(m.training for m in e.modules())
    e.double()
    assert all(p.dtype is ember.float64 for p in e.parameters())
    e.to(ember.float32)
    assert all(p.dtype is ember.float32 for p in e.parameters())
    for p in e.parameters():
        p.grad = ember.ones_like(p)
    e.zero_grad(set_to_none=False)
    assert all(p.grad.abs().sum().item() == 0 for p in e.parameters())
    e.zero_grad()
    assert all(p.grad is None for p in e.parameters())
    e.requires_grad_(False)
    assert not any(p.requires_grad for p in e.parameters())
    seen = []
    e.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Block" and seen.count("Linear") == 3
    assert e.get_submodule("inner.1") is e.inner[1]
    assert e.get_parameter("inner.0.bias") is e.inner[0].bias
    with pytest.raises(AttributeError):
        e.get_submodule("inner.7")


def test_containers_behave_like_torch():
    for mod in (nn, torch.nn):
        seq = mod.Sequential(mod.Linear(2, 2), mod.Linear(2, 3))
        assert len(seq) == 2 and isinstance(seq[-1], mod.Linear)
        assert len(seq[1:]) == 1 and isinstance(seq[1:], mod.Sequential)
        seq.append(mod.Linear(3, 1))
        assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
        del seq[0]
        assert [n for n, _ in seq.named_children()] == ["0", "1"]
        named = mod.Sequential(OrderedDict(a=mod.Linear(1, 1)))
        assert [n for n, _ in named.named_children()] == ["a"]
        ml = mod.ModuleList([mod.Linear(1, 1) for _ in range(3)])
        assert len(list(ml.parameters())) == 6 and len(ml[:2]) == 2
        md = mod.ModuleDict({"x": mod.Linear(1, 1)})
        md["y"] = mod.Linear(2, 2)
        assert list(md.keys()) == ["x", "y"] and "y" in md
        pl = mod.ParameterList([mod.Parameter((torch if mod is torch.nn else ember).ones(2))])
        pl.append((torch if mod is torch.nn else ember).zeros(3))
        assert len(list(pl.parameters())) == 2 and isinstance(pl[1], mod.Parameter)
        pd = mod.ParameterDict({"s": mod.Parameter((torch if mod is torch.nn else ember).ones(1))})
        assert list(pd.keys()) == ["s"] and len(list(pd.parameters())) == 1
    assert [n for n, _ in nn.ParameterList([nn.Parameter(ember.ones(1))] * 2).named_parameters()] \
        == ["0"]


def test_forward_and_hooks_match_torch():
    e, t = _pair(lambda mod: mod.Linear(4, 3))
    calls = []
    for m, lib in ((e, "ember"), (t, "torch")):
        m.register_forward_pre_hook(lambda mod, args, lib=lib: calls.append((lib, "pre")))
        m.register_forward_hook(lambda mod, args, out, lib=lib: out * 2)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    out_e, out_t = e(ember.tensor(x)), t(torch.tensor(x))
    assert_same(out_e, out_t)
    assert calls == [("ember", "pre"), ("torch", "pre")]


def test_full_backward_hooks_see_torchs_gradients():
    e, t = _pair(lambda mod: mod.Linear(4, 3))
    seen = {"ember": [], "torch": []}
    for m, lib in ((e, "ember"), (t, "torch")):
        def hook(module, grad_input, grad_output, lib=lib):
            seen[lib].append((grad_input, grad_output))
        m.register_full_backward_hook(hook)
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (e(xe) ** 2).sum().backward()
    (t(xt) ** 2).sum().backward()
    (gi_e, go_e), = seen["ember"]
    (gi_t, go_t), = seen["torch"]
    assert_same(gi_e[0], gi_t[0], rtol=1e-5, atol=1e-6)
    assert_same(go_e[0], go_t[0], rtol=1e-5, atol=1e-6)
    assert_same(xe.grad, xt.grad, rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_through_torch(tmp_path):
    e, t = _pair(_Block.build)
    ember.save(e.state_dict(), tmp_path / "e.pt")
    t.load_state_dict(torch.load(tmp_path / "e.pt"))
    torch.save(t.state_dict(), tmp_path / "t.pt")
    fresh = _Block.build(nn)
    fresh.load_state_dict(ember.load(tmp_path / "t.pt"))
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    assert_same(fresh(ember.tensor(x)), t(torch.tensor(x)), rtol=1e-5, atol=1e-6)
    assert_same(to_ember(t.fc1.weight), t.fc1.weight)


@pytest.mark.parametrize("args", [(), (0,), (1, 2), (-3, -1)])
def test_flatten_matches_torch(args):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    e, t = nn.Flatten(*args), torch.nn.Flatten(*args)
    assert_same(e(ember.tensor(x)), t(torch.tensor(x)))
    assert repr(e) == repr(t)


def test_unflatten_matches_torch():
    x = np.random.default_rng(0).standard_normal((2, 12))
    e, t = nn.Unflatten(1, (3, 4)), torch.nn.Unflatten(1, (3, 4))
    assert_same(e(ember.tensor(x)), t(torch.tensor(x)))
    assert repr(e) == repr(t)
    with pytest.raises(TypeError):
        nn.Unflatten(1, 3)
    with pytest.raises(TypeError):
        torch.nn.Unflatten(1, 3)
