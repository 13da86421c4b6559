"""Shared test helpers: PyTorch is the oracle; every test compares ember against it."""

import os
import sys

import numpy as np
import pytest
import torch
from hypothesis import settings

import ember

# Property tests draw the same examples on every run, so CI is reproducible; run with
# HYPOTHESIS_PROFILE=explore to let hypothesis search new examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

torch.set_default_dtype(torch.float32)


def _skip_seeding_absent_accelerators():
    """``torch.manual_seed`` also seeds CUDA, XPU and MTIA; on the CPU-only oracle each of
    those queues a lazy call with ``traceback.format_stack()`` (~0.4 ms under pytest's deep
    stacks), a third of the OpInfo forward checks' time. There is no such device to seed
    here, so those calls are dropped; the CPU generator is seeded as before."""
    for backend in (torch.cuda, torch.xpu, torch.mtia):
        if not backend.is_available():
            backend.manual_seed_all = lambda seed: None


_skip_seeding_absent_accelerators()


def to_torch(t):
    """An ember tensor as a torch tensor with the same values and dtype."""
    if t.dtype is ember.bfloat16:
        return torch.from_numpy(t.detach().float().cpu().numpy().copy()).to(torch.bfloat16)
    return torch.from_numpy(np.array(t.detach().cpu().numpy(), copy=True, order="C"))


def to_ember(t):
    """A torch tensor as an ember tensor with the same values and dtype."""
    if t.dtype == torch.bfloat16:
        return ember.tensor(t.detach().float().numpy()).to(ember.bfloat16)
    return ember.tensor(t.detach().numpy().copy())


DTYPE_PAIRS = {
    "bool": (ember.bool, torch.bool), "uint8": (ember.uint8, torch.uint8),
    "int8": (ember.int8, torch.int8), "int16": (ember.int16, torch.int16),
    "int32": (ember.int32, torch.int32), "int64": (ember.int64, torch.int64),
    "float16": (ember.float16, torch.float16), "bfloat16": (ember.bfloat16, torch.bfloat16),
    "float32": (ember.float32, torch.float32), "float64": (ember.float64, torch.float64),
    "complex64": (ember.complex64, torch.complex64),
    "complex128": (ember.complex128, torch.complex128),
}


def torch_dtype(d):
    """The torch dtype with the same name as ember dtype ``d``."""
    return DTYPE_PAIRS[d.name][1]


def assert_same(actual, expected, rtol=None, atol=None, check_dtype=True):
    """Assert an ember result equals torch's: values, shape and dtype (tuples recursively)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"expected a sequence, got {type(actual)}"
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, rtol=rtol, atol=atol, check_dtype=check_dtype)
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected or (actual != actual and expected != expected), \
            f"{actual} != {expected}"
        return
    assert isinstance(actual, ember.Tensor), f"expected an ember Tensor, got {type(actual)}"
    assert tuple(actual.shape) == tuple(expected.shape), \
        f"shape {tuple(actual.shape)} != torch's {tuple(expected.shape)}"
    if check_dtype:
        assert actual.dtype.name == str(expected.dtype).removeprefix("torch."), \
            f"dtype {actual.dtype} != torch's {expected.dtype}"
    torch.testing.assert_close(to_torch(actual), expected.detach(), rtol=rtol, atol=atol,
                               check_dtype=False, equal_nan=True)


def _devices():
    """cpu; cuda when a GPU is present; webgpu when wgpu finds a Vulkan, Metal or Direct3D 12
    adapter (CI installs Mesa's lavapipe, so there the webgpu tests always run)."""
    found = ["cpu"]
    if ember.cuda.is_available():
        found.append("cuda")
    if ember.webgpu.is_available():
        found.append("webgpu")
    return found


@pytest.fixture(params=_devices())
def device(request):
    """Every device test runs on each device of :func:`_devices`, compared with torch on the
    CPU. Under CI the webgpu adapter must be Vulkan (lavapipe), never a silent substitute."""
    if request.param == "webgpu" and os.environ.get("CI"):
        assert ember.webgpu.adapter_info()["backend_type"] == "Vulkan"
    return request.param


WEBGPU_REFUSED = ("float64", "complex128")  # WGSL has no f64: refused, as torch's MPS does


def refused_on(device, dtype, make=None):
    """Whether ``device`` has no ``dtype`` (webgpu: float64, complex128); if so, checks that
    ``make()`` (default: ``ember.zeros`` of that dtype there) raises torch MPS's TypeError, and
    the caller's test ends.

    Example: ``if refused_on(device, ember.float64): return``
    """
    if device != "webgpu" or dtype.name not in WEBGPU_REFUSED:
        return False
    advice = "use float32" if dtype.name == "float64" else "ComplexDouble.*use complex64"
    with pytest.raises(TypeError, match=advice):
        (make or (lambda: ember.zeros(2, dtype=dtype, device=device)))()
    return True


def float_for(device):
    """The NumPy float dtype a device test computes in and its (rtol, atol) against torch:
    float64 where the device has it, float32 on webgpu (its kernels' order of summation and
    transcendental functions differ from the CPU's in the last bits)."""
    if device == "webgpu":
        return np.float32, 1e-4, 1e-5
    return np.float64, None, None


def make_pair(array, requires_grad=False):
    """The same data as an ember tensor and a torch tensor (NumPy array or nested lists in)."""
    array = np.asarray(array)
    e = ember.tensor(array)
    t = torch.from_numpy(array.copy())
    if requires_grad:
        e.requires_grad_()
        t.requires_grad_()
    return e, t


def assert_grads_match(ember_fn, torch_fn, *arrays, seed=0, rtol=None, atol=None,
                       double_backward=False):
    """Compare ``ember_fn``'s gradients with ``torch_fn``'s on the same inputs and cotangent.

    ``arrays`` are NumPy arrays: float/complex ones require grad, others are passed as they are.
    With ``double_backward``, the gradient of (grads . random vectors) is compared as well,
    which checks that ember's derivative is itself differentiable like torch's.
    """
    rng = np.random.default_rng(seed)
    pairs = [make_pair(a, requires_grad=np.asarray(a).dtype.kind in "fc") for a in arrays]
    e_inputs = [e for e, _ in pairs]
    t_inputs = [t for _, t in pairs]
    e_out = ember_fn(*e_inputs)
    t_out = torch_fn(*t_inputs)
    assert_same(e_out, t_out, rtol=rtol, atol=atol)
    e_outs = e_out if isinstance(e_out, (tuple, list)) else (e_out,)
    t_outs = t_out if isinstance(t_out, (tuple, list)) else (t_out,)
    e_diff = [(e, t) for e, t in zip(e_outs, t_outs) if t.requires_grad]
    cotangents = [rng.standard_normal(tuple(t.shape)).astype(
        torch.empty((), dtype=t.dtype).numpy().dtype if not t.dtype.is_complex else np.complex128)
        for _, t in e_diff]
    wrt = [i for i, t in enumerate(t_inputs) if t.requires_grad]
    t_grads = torch.autograd.grad([t for _, t in e_diff],
                                  [t_inputs[i] for i in wrt],
                                  [torch.from_numpy(c.copy()).to(t.dtype)
                                   for c, (_, t) in zip(cotangents, e_diff)],
                                  allow_unused=True, create_graph=double_backward)
    e_grads = ember.autograd.grad([e for e, _ in e_diff], [e_inputs[i] for i in wrt],
                                  [ember.tensor(c).to(e.dtype) for c, (e, _) in
                                   zip(cotangents, e_diff)],
                                  allow_unused=True, create_graph=double_backward)
    for e_g, t_g in zip(e_grads, t_grads):
        if t_g is None:
            assert e_g is None or float(e_g.abs().sum()) == 0
        else:
            assert_same(e_g, t_g, rtol=rtol, atol=atol)
    if not double_backward:
        return
    pairs2 = [(e, t) for e, t in zip(e_grads, t_grads) if t is not None and t.requires_grad]
    if not pairs2:
        return
    vs = [rng.standard_normal(tuple(t.shape)) for _, t in pairs2]
    t_total = sum((t * torch.from_numpy(v).to(t.dtype)).sum() for (_, t), v in zip(pairs2, vs))
    e_total = sum((e * ember.tensor(v).to(e.dtype)).sum() for (e, _), v in zip(pairs2, vs))
    t_gg = torch.autograd.grad(t_total, [t_inputs[i] for i in wrt], allow_unused=True)
    e_gg = ember.autograd.grad(e_total, [e_inputs[i] for i in wrt], allow_unused=True)
    for e_g, t_g in zip(e_gg, t_gg):
        if t_g is None:
            assert e_g is None or float(e_g.abs().sum()) == 0
        else:
            assert_same(e_g, t_g, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- suite-wide hooks
# (one conftest for the whole suite: a second conftest.py in a subfolder would shadow this
# module for the tests' ``from conftest import ...``)


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # one thread per worker for the oracle and for ember: the workers share the machine's
        # cores, and spinning OpenMP/BLAS pools of two processes stall each other
        torch.set_num_threads(1)
        ember.set_num_threads(1)
    config.addinivalue_line(
        "markers", "stress: fault cases repeated under CPU load; EMBER_STRESS=N repeats each "
                   "N times (default 1)")



_TORCH_VALIDATES = torch.distributions.Distribution._validate_args


def pytest_runtest_teardown(item):
    """torch.distributions' argument validation put back after each test: torch's compiler
    switches it off for the whole process when it first runs (any test that touches
    ``torch.compile``/``torch._dynamo``), and later tests compare torch's validation errors;
    with the files split between workers, which tests come later differs from run to run."""
    torch.distributions.Distribution._validate_args = _TORCH_VALIDATES


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """An OpInfo check's report carries how many samples it compared (under pytest-xdist
    the summary below runs in the controller, which has not run the tests)."""
    report = yield
    module = sys.modules.get("test_opinfo")
    callspec = getattr(item, "callspec", None)  # (the per-op checks are parametrised)
    if call.when == "call" and module is not None and callspec is not None and \
            "test_opinfo.py::test_" in item.nodeid:
        check = item.originalname.removeprefix("test_")
        oid = callspec.params.get("oid")
        report.user_properties.append(("samples", module.RESULTS.get((oid, check), 0)))
    return report


def pytest_terminal_summary(terminalreporter):
    outcomes, samples = {}, {}
    for status in ("passed", "failed", "xfailed", "xpassed", "skipped"):
        for rep in terminalreporter.stats.get(status, []):
            name = getattr(rep, "nodeid", "")
            if "test_opinfo.py::test_" not in name or "[" not in name:
                continue
            check = name.split("::test_")[1].split("[")[0]
            outcomes.setdefault(check, {}).setdefault(status, 0)
            outcomes[check][status] += 1
            samples[check] = samples.get(check, 0) + sum(
                n for key, n in getattr(rep, "user_properties", ()) if key == "samples")
    if not outcomes:
        return
    terminalreporter.section("OpInfo")
    for check, counts in outcomes.items():
        total = sum(counts.values())
        passed = counts.get("passed", 0)
        terminalreporter.write_line(
            f"{check}: {passed}/{total} ops pass ({100 * passed / total:.1f}%), "
            f"{counts.get('xfailed', 0)} known failures, {counts.get('skipped', 0)} not "
            f"measurable; {samples.get(check, 0)} samples compared")


@pytest.fixture(params=["onednn", "numpy"])
def onednn_backend(request):
    """Run the test once with oneDNN (when installed) and once on the NumPy path."""
    from ember.nn._functional import _onednn

    if request.param == "onednn" and not _onednn.available():
        pytest.skip("libdnnl is not installed")
    with ember.backends.mkldnn.flags(enabled=request.param == "onednn"):
        yield request.param


@pytest.fixture
def one_ember_thread():
    """Run the test with ember set to one thread (oneDNN's GEMM runs only then; small
    products are fastest on one), restoring the count afterwards."""
    threads = ember.get_num_threads()
    ember.set_num_threads(1)
    yield
    ember.set_num_threads(threads)


def paired_models(make, seed=0, scale=0.5):
    """The same model built by ``make(nn)`` in ember and torch, with the same seeded weights
    and buffers (running variances kept positive)."""
    e_model, t_model = make(ember.nn), make(torch.nn)
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in e_model.state_dict().items():
        if value.dtype.is_floating_point:
            array = rng.standard_normal(tuple(value.shape)).astype(np.float32) * scale
            if "running_var" in name:
                array = np.abs(array) + 0.5
        else:
            array = value.numpy()
        state[name] = array
    e_model.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    t_model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    return e_model, t_model


@pytest.fixture
def fresh_compile_state():
    """ember's and torch's compile caches and counters empty before and after a test; and
    torch.distributions' argument validation put back (torch.compile switches it off for
    the whole process, and later tests compare torch's validation errors). The compile
    tests use it for each test: ``pytestmark = pytest.mark.usefixtures(...)``."""
    validate = torch.distributions.Distribution._validate_args
    ember._dynamo.reset()
    torch._dynamo.reset()
    ember._dynamo.utils.counters.clear()
    torch._dynamo.utils.counters.clear()
    yield
    ember._dynamo.reset()
    torch._dynamo.reset()
    torch.distributions.Distribution.set_default_validate_args(validate)
