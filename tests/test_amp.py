"""ember.amp (autocast, GradScaler, custom_fwd/bwd) against torch's CPU autocast (bfloat16)."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from conftest import assert_same, make_pair

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _pairs(*arrays, requires_grad=False):
    return [make_pair(a, requires_grad=requires_grad) for a in arrays]


CASES = {
    "mm": (lambda m, a, b: m.mm(a, b.t()), [(4, 8), (6, 8)]),
    "matmul_op": (lambda m, a, b: a @ b.t(), [(4, 8), (6, 8)]),
    "matmul_1d": (lambda m, a, b: m.matmul(a[0], b[0]), [(4, 8), (6, 8)]),
    "bmm": (lambda m, a, b: m.bmm(a, b.transpose(1, 2)), [(2, 3, 4), (2, 5, 4)]),
    "addmm": (lambda m, c, a, b: m.addmm(c, a, b.t()), [(6,), (4, 8), (6, 8)]),
    "baddbmm": (lambda m, c, a, b: m.baddbmm(c, a, b.transpose(1, 2)),
                [(1, 1, 5), (2, 3, 4), (2, 5, 4)]),
    "einsum": (lambda m, a, b: m.einsum("ij,kj->ik", a, b), [(4, 8), (6, 8)]),
    "linear": (lambda m, x, w, b: _F(m).linear(x, w, b), [(4, 8), (6, 8), (6,)]),
    "conv2d": (lambda m, x, w, b: _F(m).conv2d(x, w, b, padding=1),
               [(2, 3, 6, 6), (4, 3, 3, 3), (4,)]),
    "conv1d": (lambda m, x, w: _F(m).conv1d(x, w), [(2, 3, 7), (4, 3, 3)]),
    "conv_transpose2d": (lambda m, x, w: _F(m).conv_transpose2d(x, w),
                         [(2, 3, 5, 5), (3, 2, 3, 3)]),
    "softmax": (lambda m, x: _F(m).softmax(x, -1), [(4, 6)]),
    "log_softmax": (lambda m, x: _F(m).log_softmax(x, -1), [(4, 6)]),
    "relu_add": (lambda m, x, y: _F(m).relu(x) + y, [(4, 6), (4, 6)]),
    "mse_loss": (lambda m, x, y: _F(m).mse_loss(x, y), [(4, 6), (4, 6)]),
    "l1_loss": (lambda m, x, y: _F(m).l1_loss(x, y), [(4, 6), (4, 6)]),
    "smooth_l1_loss": (lambda m, x, y: _F(m).smooth_l1_loss(x, y), [(4, 6), (4, 6)]),
    "bce_logits": (lambda m, x, y: _F(m).binary_cross_entropy_with_logits(x, y.sigmoid()),
                   [(4, 6), (4, 6)]),
    "prod": (lambda m, x: x.prod(), [(5,)]),
    "cdist": (lambda m, x, y: m.cdist(x, y), [(4, 3), (5, 3)]),
    "trace": (lambda m, x: m.trace(x), [(4, 4)]),
    "layer_norm": (lambda m, x: _F(m).layer_norm(x, (6,)), [(4, 6)]),
    "sum_exp": (lambda m, x: x.exp().sum(), [(4, 6)]),
}


def _F(m):
    return F if m is ember else TF


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("pre", ["float32", "bfloat16"])
def test_autocast_cpu_matches_torch(name, pre):
    fn, shapes = CASES[name]
    pairs = _pairs(*[_arr(*s) for s in shapes])
    cast = (lambda p: (p[0].to(ember.bfloat16), p[1].to(torch.bfloat16))) \
        if pre == "bfloat16" else (lambda p: p)
    pairs = [cast(p) for p in pairs]
    with ember.autocast("cpu"):
        got = fn(ember, *[p[0] for p in pairs])
    with torch.autocast("cpu"):
        want = fn(torch, *[p[1] for p in pairs])
    # bfloat16 (8 significant bits) rounded from float32 sums that the two add in other
    # orders (torch's CPU kernels block by the CPU's vector width): an element where the
    # terms cancel may differ by some ulps of the terms' scale, not of its own value
    scale = max(1.0, float(want.float().abs().max()))
    assert_same(got, want, rtol=2e-2, atol=2e-2 * scale)


def test_cross_entropy_and_float64_untouched():
    logits, target = make_pair(_arr(4, 6)), make_pair(np.array([0, 3, 5, 1]))
    with ember.autocast("cpu"), torch.autocast("cpu"):
        h = F.linear(logits[0], ember.ones(6, 6))
        th = TF.linear(logits[1], torch.ones(6, 6))
        assert_same(F.cross_entropy(h, target[0]), TF.cross_entropy(th, target[1]),
                    rtol=2e-2, atol=2e-2)
        a, b = make_pair(_arr(3, 3, dtype=np.float64)), make_pair(_arr(3, 3, dtype=np.float64))
        assert_same(ember.mm(a[0], b[0]), torch.mm(a[1], b[1]))


def test_module_forward_and_grads_in_param_dtype():
    ember.manual_seed(0)
    torch.manual_seed(0)
    em = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 3))
    tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    for pe, pt in zip(em.parameters(), tm.parameters()):
        pe.data.copy_(ember.tensor(pt.detach().numpy()))
    x, t = make_pair(_arr(5, 8)), make_pair(np.array([0, 1, 2, 0, 1]))
    with ember.autocast("cpu"):
        out = em(x[0])
        loss = F.cross_entropy(out, t[0])
    with torch.autocast("cpu"):
        tout = tm(x[1])
        tloss = TF.cross_entropy(tout, t[1])
    assert_same(out, tout, rtol=2e-2, atol=2e-2)
    assert_same(loss, tloss, rtol=2e-2, atol=2e-2)
    loss.backward()
    tloss.backward()
    for pe, pt in zip(em.parameters(), tm.parameters()):
        assert_same(pe.grad, pt.grad, rtol=5e-2, atol=5e-2)


def test_param_cast_cached_once_per_region():
    w = ember.randn(3, 3, requires_grad=True)
    x = ember.randn(2, 3)
    with ember.autocast("cpu"):
        y = (x @ w) + (x @ w)
    y.sum().backward()
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    with torch.autocast("cpu"):
        ty = (torch.tensor(x.numpy()) @ tw) + (torch.tensor(x.numpy()) @ tw)
    ty.sum().backward()
    assert_same(y, ty, rtol=2e-2, atol=2e-2)
    assert_same(w.grad, tw.grad, rtol=2e-2, atol=2e-2)


def test_nesting_enabled_false_and_state():
    a = ember.randn(2, 2)
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and torch.is_autocast_enabled("cpu") is False
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(a, a).dtype is ember.float32
        assert ember.mm(a, a).dtype is ember.bfloat16
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.mm(a, a).dtype is ember.float16
            assert ember.get_autocast_dtype("cpu") is ember.float16
        assert ember.get_autocast_dtype("cpu") is ember.bfloat16
    assert ember.mm(a, a).dtype is ember.float32
    assert ember.is_autocast_enabled() is torch.is_autocast_enabled()
    assert str(ember.get_autocast_dtype("cuda"))[6:] == str(torch.get_autocast_dtype("cuda"))[6:]


def test_decorator_and_exception_restores():
    @ember.autocast("cpu")
    def f(a):
        return ember.mm(a, a)

    assert f(ember.ones(2, 2)).dtype is ember.bfloat16
    with pytest.raises(ValueError), ember.autocast("cpu"):
        raise ValueError
    assert not ember.is_autocast_enabled("cpu")


def test_bad_arguments_and_warnings_match_torch():
    for mod in (ember, torch):
        with pytest.raises(ValueError, match="device_type"):
            mod.autocast(1)
        with pytest.raises(RuntimeError, match="device type at start of device string"):
            mod.autocast("foo")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ember.autocast("cpu", dtype=ember.float32)
        ember.autocast("cuda")
        ember.cpu.amp.autocast()
        ember.cuda.amp.autocast()
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        torch.autocast("cpu", dtype=torch.float32)
        torch.autocast("cuda")
        torch.cpu.amp.autocast()
        torch.cuda.amp.autocast()
    got_cats = [(w.category, str(w.message).split(".")[0]) for w in got]
    want_cats = [(w.category, str(w.message).split(".")[0]) for w in want]
    assert got_cats == want_cats


def test_custom_fwd_bwd():
    seen = {}

    class MM(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, a, b):
            seen["fwd"] = (a.dtype, ember.is_autocast_enabled("cpu"))
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            seen["bwd"] = ember.is_autocast_enabled("cpu")
            a, b = ctx.saved_tensors
            return grad.mm(b.t()), a.t().mm(grad)

    a = ember.randn(2, 2, dtype=ember.bfloat16, requires_grad=True)
    with ember.autocast("cpu"):
        out = MM.apply(a, ember.randn(2, 2))
    assert out.dtype is ember.float32 and seen["fwd"] == (ember.float32, False)
    out.sum().backward()
    assert seen["bwd"] is False and a.grad.dtype is ember.bfloat16
    with pytest.raises(ValueError):
        ember.amp.custom_fwd(device_type=1)


# ---------------------------------------------------------------- GradScaler


def _train(mod, scaler_cls, steps, inject_inf_at=(), **kw):
    mod.manual_seed(0)
    np_w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    model = mod.nn.Linear(4, 3)
    with mod.no_grad():
        model.weight.copy_(mod.tensor(np_w))
        model.bias.zero_()
    opt = mod.optim.SGD(model.parameters(), lr=0.1)
    scaler = scaler_cls("cpu", **kw)
    x = mod.tensor(np.arange(20, dtype=np.float32).reshape(5, 4) / 10)
    trace = []
    for i in range(steps):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        if i in inject_inf_at:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), scaler._get_growth_tracker()))
    return model, scaler, trace


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf loss on purpose
def test_grad_scaler_cpu_trajectory_matches_torch():
    kw = dict(init_scale=2.0 ** 10, growth_interval=3)
    em, es, etrace = _train(ember, ember.amp.GradScaler, 9, inject_inf_at=(2, 5), **kw)
    tm, ts, ttrace = _train(torch, torch.amp.GradScaler, 9, inject_inf_at=(2, 5), **kw)
    assert etrace == ttrace
    assert_same(em.weight.detach(), tm.weight.detach(), rtol=1e-5, atol=1e-6)
    assert es.state_dict() == ts.state_dict()
    fresh = ember.amp.GradScaler("cpu")
    fresh.load_state_dict(es.state_dict())
    assert fresh.state_dict() == es.state_dict()


def test_grad_scaler_unscale_and_errors():
    for mod in (ember, torch):
        p = mod.nn.Parameter(mod.ones(3))
        opt = mod.optim.SGD([p], lr=1.0)
        s = mod.amp.GradScaler("cpu", init_scale=4.0)
        assert s.scale(mod.tensor(1.5)).item() == 6.0
        assert [t.item() for t in s.scale([mod.tensor(1.0), mod.tensor(2.0)])] == [4.0, 8.0]
        (s.scale(p.sum())).backward()
        s.unscale_(opt)
        assert p.grad.tolist() == [1.0, 1.0, 1.0]
        with pytest.raises(RuntimeError, match="already been called"):
            s.unscale_(opt)
        s.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            s.step(opt)
        with pytest.raises(RuntimeError, match="after step"):
            s.unscale_(opt)
        s.update(8.0)
        assert s.get_scale() == 8.0
        with pytest.raises(RuntimeError, match="Closure"):
            s.step(opt, closure=lambda: 0)
        with pytest.raises(ValueError, match="iterable"):
            s.scale(3)
        with pytest.raises(AssertionError, match="growth factor"):
            mod.amp.GradScaler("cpu", growth_factor=0.5)
        with pytest.raises(RuntimeError, match="empty"):
            s.load_state_dict({})


def test_grad_scaler_cuda_disables_without_gpu():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present: the scaler stays enabled")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        s = ember.amp.GradScaler()
    assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
    t = ember.ones(2)
    assert s.scale(t) is t
    with pytest.warns(FutureWarning, match="deprecated"), \
            pytest.warns(UserWarning, match="CUDA is not available"):
        ember.cuda.amp.GradScaler()


def test_opt_state_and_autocast_decorator_as_torch():
    from torch.amp.autocast_mode import autocast_decorator as torch_decorator
    from torch.amp.grad_scaler import OptState as TorchOptState

    from ember.amp.autocast_mode import autocast_decorator
    from ember.amp.grad_scaler import OptState

    assert {m.name: m.value for m in OptState} == {m.name: m.value for m in TorchOptState}
    ours = autocast_decorator(ember.autocast("cpu"), lambda x: x @ x)(ember.ones(2, 2))
    theirs = torch_decorator(torch.autocast("cpu"), lambda x: x @ x)(torch.ones(2, 2))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
