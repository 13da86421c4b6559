"""The device modules (torch.cuda and its submodules, torch.xpu, torch.mps, torch.cpu,
torch.backends and its submodules) against torch's CPU build, read from torch at test time:

- every public name torch has there exists in ember's module of the same path;
- every function (and class) callable without arguments gives the same outcome: an equal
  value, or an exception of the type torch raises (ember's may also be a RuntimeError);
- the backend flags read and refuse as torch's; the scaled-dot-product-attention switches
  decide, as in torch, which calls of ``scaled_dot_product_attention`` run.
"""

import collections
import contextlib
import enum
import importlib
import inspect
import itertools
import pkgutil
import types
import warnings

import numpy as np
import pytest
import torch

import ember


@pytest.fixture(autouse=True)
def _torch_backend_flags_unfrozen():
    """Importing torch.testing._internal (the OpInfo tests do) calls torch's
    disable_global_flags() for the rest of the process; compare against torch's defaults."""
    state = torch.backends.__dict__["m"].__dict__
    key = "__allow_nonbracketed_mutation_flag"
    saved = state[key]
    state[key] = True
    yield
    state[key] = saved

ROOTS = ("torch.cuda", "torch.xpu", "torch.mps", "torch.cpu", "torch.backends")

# ember answers these differently on purpose; each with its reason
DELIBERATE = {
    # ember has no oneDNN layout: Tensor.to_mkldnn raises, so saying True would send programs
    # down a path that fails
    ("torch.backends.mkldnn", "is_available"):
        "ember has no oneDNN tensor layout (Tensor.to_mkldnn raises)",
    # torch's CPU build crashes on its own default (parser=None); ember builds a parser
    ("torch.backends.xeon.run_cpu", "create_args"):
        "torch dereferences its default parser=None; ember makes one",
    # real CPU facts, read by different means (CPUID in torch, /proc/cpuinfo here): compared
    # by key set and common flags in test_cpu_capabilities_match_torchs
    ("torch.cpu", "get_capabilities"): "compared in test_cpu_capabilities_match_torchs",
    # freezes every flag for the rest of the process: tested with a restore below
    ("torch.backends", "disable_global_flags"): "tested in test_disable_global_flags",
}
DELIBERATE_VALUES = {
    ("torch.backends.quantized", "engine"): "ember has no quantized kernels: engine 'none'",
    ("torch.backends.quantized", "supported_engines"): "ember has no quantized kernels",
}


def _torch_module_names():
    names = []
    for root in ROOTS:
        module = importlib.import_module(root)
        names.append(root)
        for info in pkgutil.walk_packages(module.__path__, root + "."):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001  (torch modules that need CUDA to import)
                continue
            names.append(info.name)
    return sorted(set(names))


MODULES = _torch_module_names()


def _ember_module(torch_name):
    return importlib.import_module("ember" + torch_name[len("torch"):])


def _defined_in_torch(value):
    if isinstance(value, types.ModuleType):
        return value.__name__.startswith("torch.")
    origin = getattr(value, "__module__", None) or ""
    if origin.startswith("torch"):
        return True
    return not callable(value) and not isinstance(value, type) and origin in ("", "builtins")


def _public_names(module):
    """torch's public names of ``module``: its ``__all__``, else the names it defines; for a
    module that wraps itself (torch.backends' PropModule), the wrapped module's names and the
    properties of the wrapper's class."""
    declared = getattr(module, "__all__", None)
    if declared is not None and not isinstance(module.__dict__.get("m"), types.ModuleType):
        return sorted(n for n in declared if not n.startswith("_"))
    names = set()
    inner = module.__dict__.get("m")
    for source in (module, inner) if isinstance(inner, types.ModuleType) else (module,):
        for name, value in vars(source).items():
            if not name.startswith("_") and _defined_in_torch(value):
                names.add(name)
        names.update(getattr(source, "__all__", ()))
    for klass in type(module).__mro__:
        if klass.__module__.startswith("torch"):
            names.update(n for n in vars(klass) if not n.startswith("_"))
    return sorted(n for n in names if not n.startswith("_"))


@pytest.mark.parametrize("torch_name", MODULES)
def test_every_public_name_exists(torch_name):
    torch_module = importlib.import_module(torch_name)
    ours = _ember_module(torch_name)
    missing = [n for n in _public_names(torch_module) if not hasattr(ours, n)]
    assert missing == [], f"{torch_name}: ember lacks {missing}"


def _callable_without_arguments(value):
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in signature.parameters.values())


def _zero_argument_cases():
    cases = []
    for torch_name in MODULES:
        module = importlib.import_module(torch_name)
        for name in _public_names(module):
            value = getattr(module, name, None)
            if (torch_name, name) in DELIBERATE or isinstance(value, types.ModuleType):
                continue
            if callable(value) and _callable_without_arguments(value):
                cases.append((torch_name, name))
    return cases


def _outcome(function):
    """('ok', value) or ('raise', exception); a context manager is entered and left."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = function()
            if isinstance(value, contextlib.AbstractContextManager) and not isinstance(
                    value, (types.ModuleType,)) and type(value).__name__.endswith("Manager"):
                with value:
                    pass
                return ("ok", "<context manager>")
        return ("ok", value)
    except Exception as error:  # noqa: BLE001  (the outcome is what is compared)
        return ("raise", error)


def _comparable(value):
    """A value as compared across libraries: plain data as is, enums by their repr, anything
    else (objects of each library's own classes) by its class name."""
    if isinstance(value, enum.Enum) or type(value).__module__ == "torch._C":
        return repr(value)
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_comparable(v) for v in value]
    if isinstance(value, collections.OrderedDict):
        return "OrderedDict", {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return "instance of " + type(value).__name__


@pytest.mark.parametrize("torch_name,name", _zero_argument_cases())
def test_zero_argument_call_matches_torchs_cpu_build(torch_name, name):
    expected = _outcome(getattr(importlib.import_module(torch_name), name))
    actual = _outcome(getattr(_ember_module(torch_name), name))
    if expected[0] == "raise":
        assert actual[0] == "raise", f"torch raises {expected[1]!r}; ember returned {actual[1]!r}"
        assert isinstance(actual[1], type(expected[1])), (
            f"torch raises {type(expected[1]).__name__}, ember {type(actual[1]).__name__}: "
            f"{actual[1]}")
    else:
        assert actual[0] == "ok", f"torch returns {expected[1]!r}; ember raised {actual[1]!r}"
        assert _comparable(actual[1]) == _comparable(expected[1])


def _value_cases():
    cases = []
    for torch_name in MODULES:
        module = importlib.import_module(torch_name)
        for name in _public_names(module):
            if (torch_name, name) in DELIBERATE_VALUES or not hasattr(module, name):
                continue
            value = getattr(module, name)
            if isinstance(value, (bool, int, float, str, tuple, type(None))) and not (
                    torch_name.endswith("run_cpu")):
                cases.append((torch_name, name))
    return cases


@pytest.mark.parametrize("torch_name,name", _value_cases())
def test_plain_values_match_torchs_cpu_build(torch_name, name):
    expected = getattr(importlib.import_module(torch_name), name)
    actual = getattr(_ember_module(torch_name), name)
    assert _comparable(actual) == _comparable(expected)


def test_cpu_capabilities_match_torchs():
    ours, theirs = ember.cpu.get_capabilities(), torch.cpu.get_capabilities()
    assert set(ours) == set(theirs)
    for key in ("sse2", "avx", "avx2", "avx512_f", "fma3", "num_logical_cores", "architecture"):
        assert ours[key] == theirs[key], key


@pytest.mark.parametrize("module", ["cudnn", "mkldnn", "miopen", "opt_einsum", "cuda.matmul"])
def test_backend_flags_read_as_torchs(module):
    def flags(lib):
        target = lib.backends
        for part in module.split("."):
            target = getattr(target, part)
        names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32",
                 "immediate", "strategy", "fp32_precision", "depthwise_kernel")
        found = {}
        for name in names:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found[name] = _outcome(lambda: getattr(target, name))  # noqa: B023
        return {n: (o[0], _comparable(o[1]) if o[0] == "ok" else type(o[1]).__name__)
                for n, o in found.items()}

    assert flags(ember) == flags(torch)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_flags_blocks_set_and_restore(lib):
    cudnn = lib.backends.cudnn
    with cudnn.flags(enabled=False, benchmark=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)
    with lib.backends.mkldnn.flags(enabled=False):
        assert lib.backends.mkldnn.enabled is False
    assert lib.backends.mkldnn.enabled is True
    assert cudnn.conv.fp32_precision == "tf32" and cudnn.rnn.fp32_precision == "tf32"


def test_fp32_precision_refusals_match_torch():
    def attempt(lib, setter):
        try:
            setter(lib)
        except RuntimeError as error:
            return str(error)
        return None

    setters = [lambda L: setattr(L.backends, "fp32_precision", "bad"),
               lambda L: setattr(L.backends.cudnn.conv, "fp32_precision", "bf16"),
               lambda L: setattr(L.backends.cudnn.conv, "other", "ieee")]
    for setter in setters[:2]:
        assert attempt(ember, setter) == attempt(torch, setter)
    with pytest.raises(AttributeError):
        setters[2](torch)
    with pytest.raises(AttributeError):
        setters[2](ember)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_disable_global_flags(lib):
    backends = lib.backends
    backends.disable_global_flags()
    try:
        assert backends.flags_frozen()
        with pytest.raises(RuntimeError, match="not allowed to set"):
            backends.cudnn.benchmark = True
        with backends.cudnn.flags(enabled=True, benchmark=True):
            assert backends.cudnn.benchmark
        assert not backends.cudnn.benchmark
    finally:
        # both libraries keep the switch in their backends module; put it back
        if lib is torch:
            torch.backends.__dict__["m"].__dict__["__allow_nonbracketed_mutation_flag"] = True
        else:
            ember.backends.m._mutation["allowed"] = True
    assert not backends.flags_frozen()


def test_opt_einsum_switches_refuse_as_torch():
    for value in (True, False):
        outcomes = []
        for lib in (torch, ember):
            try:
                lib.backends.opt_einsum.enabled = value
                outcomes.append(None)
            except ValueError:
                outcomes.append(ValueError)
        assert outcomes[0] == outcomes[1]
    torch.backends.opt_einsum.enabled = torch.backends.opt_einsum.is_available()
    ember.backends.opt_einsum.enabled = ember.backends.opt_einsum.is_available()


def test_preferred_libraries_match_torch():
    for name in ("preferred_linalg_library", "preferred_blas_library",
                 "preferred_rocm_fa_library"):
        ours, theirs = (getattr(lib.backends.cuda, name) for lib in (ember, torch))
        for choice in ("magma", "cusolver", "cublaslt", "aotriton", "nonsense"):
            expected, actual = _outcome(lambda: theirs(choice)), _outcome(lambda: ours(choice))  # noqa: B023
            assert expected[0] == actual[0], (name, choice)
            if expected[0] == "raise":
                assert str(actual[1]).split(" (ember")[0] == str(expected[1])
        # torch's CPU build keeps a refused choice as current; start both from the default
        theirs("default"), ours("default")
        assert repr(ours()) == repr(theirs())


def test_python_native_switches_as_torch():
    for lib in (torch, ember):
        native = importlib.import_module(lib.__name__ + ".backends.python_native")
        assert native.all_dsls == ["cutedsl", "triton"] and native.available_dsls == []
        with native.triton.disabled():
            assert native.is_dsl_disabled("triton") and not native.triton.enabled
        assert native.triton.enabled
        with native.operations_disabled("scaled_mm"):
            assert native.is_operation_disabled("scaled_mm")
        assert not native.is_operation_disabled("scaled_mm")


# ---- scaled-dot-product attention and the backend switches ----

SWITCHES = ("flash", "math", "mem_efficient", "cudnn")


def _set_switches(lib, states):
    for switch, state in zip(SWITCHES, states):
        getattr(lib.backends.cuda, f"enable_{switch}_sdp")(state)


def _attention_inputs(lib, case):
    rng = np.random.default_rng(0)
    shapes, options = case

    def tensor(shape):
        return lib.tensor(rng.standard_normal(shape), dtype=lib.float32)

    arrays = [tensor(shape) for shape in shapes]
    options = dict(options)
    if "mask_shape" in options:
        options["attn_mask"] = tensor(options.pop("mask_shape"))
    if options.pop("transposed_last", False):
        arrays = [a.transpose(-1, -2).contiguous().transpose(-1, -2) for a in arrays]
    return arrays, options


ATTENTION_CASES = {
    "4d": (((2, 3, 5, 8),) * 3, {}),
    "causal": (((2, 3, 5, 8),) * 3, {"is_causal": True}),
    "mask_2d": (((2, 3, 5, 8),) * 3, {"mask_shape": (5, 5)}),
    "mask_4d": (((2, 3, 5, 8),) * 3, {"mask_shape": (1, 3, 5, 5)}),
    "mask_3d": (((2, 3, 5, 8),) * 3, {"mask_shape": (3, 5, 5)}),
    "dropout": (((2, 3, 5, 8),) * 3, {"dropout_p": 0.5}),
    "3d": (((3, 5, 8),) * 3, {}),
    "5d": (((1, 2, 3, 5, 8),) * 3, {}),
    "value_head_dim": (((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 4)), {}),
    "batch_broadcast": (((2, 3, 5, 8), (1, 3, 5, 8), (1, 3, 5, 8)), {}),
    "heads_broadcast": (((2, 3, 5, 8), (2, 1, 5, 8), (2, 1, 5, 8)), {}),
    "gqa": (((2, 4, 5, 8), (2, 2, 5, 8), (2, 2, 5, 8)), {"enable_gqa": True}),
    "gqa_unequal_kv": (((2, 4, 5, 8), (2, 2, 5, 8), (2, 4, 5, 8)), {"enable_gqa": True}),
    "strided_last_dim": (((2, 3, 5, 8),) * 3, {"transposed_last": True}),
    "longer_keys": (((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)), {"is_causal": True}),
}


def _attention_outcome(lib, states, case):
    arrays, options = _attention_inputs(lib, case)
    _set_switches(lib, states)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = lib.nn.functional.scaled_dot_product_attention(*arrays, **options)
        return ("ok", out.numpy() if "dropout_p" not in options else out.shape)
    except RuntimeError as error:
        return ("raise", str(error))
    finally:
        _set_switches(lib, (True,) * 4)


@pytest.mark.parametrize("states", list(itertools.product((True, False), repeat=4)),
                         ids=lambda s: "".join("1" if x else "0" for x in s))
@pytest.mark.parametrize("case", list(ATTENTION_CASES))
def test_sdpa_switches_decide_like_torch(states, case):
    expected = _attention_outcome(torch, states, ATTENTION_CASES[case])
    actual = _attention_outcome(ember, states, ATTENTION_CASES[case])
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "raise":
        assert actual[1] == expected[1]
    elif isinstance(expected[1], np.ndarray):
        np.testing.assert_allclose(actual[1], expected[1], rtol=1e-5, atol=1e-6)
    else:
        assert tuple(actual[1]) == tuple(expected[1])


def test_sdpa_refusal_warns_why_as_torch():
    for lib in (torch, ember):
        q = lib.ones(2, 3, 5, 8)
        lib.backends.cuda.enable_math_sdp(False)
        try:
            with pytest.warns(UserWarning, match="non-zero dropout"), \
                    pytest.raises(RuntimeError, match="No available kernel"):
                lib.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
        finally:
            lib.backends.cuda.enable_math_sdp(True)


def test_sdp_switch_defaults_and_deprecated_context_match_torch():
    names = ("flash_sdp_enabled", "math_sdp_enabled", "mem_efficient_sdp_enabled",
             "cudnn_sdp_enabled", "fp16_bf16_reduction_math_sdp_allowed",
             "is_flash_attention_available")
    for name in names:
        assert getattr(ember.backends.cuda, name)() == getattr(torch.backends.cuda, name)()
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match="sdp_kernel"):
            with lib.backends.cuda.sdp_kernel(enable_math=False):
                assert not lib.backends.cuda.math_sdp_enabled()
        assert lib.backends.cuda.math_sdp_enabled()


@pytest.mark.parametrize("check", ["can_use_flash_attention", "can_use_efficient_attention",
                                   "can_use_cudnn_attention"])
def test_can_use_checks_match_torchs_cpu_build(check):
    answers = []
    for lib in (torch, ember):
        q = lib.ones(1, 2, 3, 4)
        params = lib.backends.cuda.SDPAParams(q, q, q, None, 0.0, False, False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answers.append(getattr(lib.backends.cuda, check)(params))
    assert answers[0] == answers[1]


# ---- with CuPy and a GPU: the CuPy-backed paths (skipped on machines without one) ----

needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a GPU")


@needs_gpu
def test_gpu_runtime_queries_through_cupy():
    import cupy

    assert ember.cuda.current_blas_handle() == int(cupy.cuda.device.get_cublas_handle())
    assert isinstance(ember.cuda.can_device_access_peer(0, 0), bool)
    assert ember.cuda.get_allocator_backend() == "native"
    stream = cupy.cuda.Stream()
    assert ember.cuda.get_stream_from_external(stream.ptr).cuda_stream == stream.ptr


@needs_gpu
def test_gpu_sync_debug_mode_round_trip():
    for name, number in (("warn", 1), ("error", 2), ("default", 0)):
        ember.cuda.set_sync_debug_mode(name)
        assert ember.cuda.get_sync_debug_mode() == number
    with pytest.raises(RuntimeError, match="debug_mode"):
        ember.cuda.set_sync_debug_mode("loud")


@needs_gpu
def test_gpu_caching_allocator_alloc_delete_and_disable():
    pointer = ember.cuda.caching_allocator_alloc(1024)
    assert isinstance(pointer, int) and pointer != 0
    ember.cuda.caching_allocator_delete(pointer)
    with pytest.raises(RuntimeError):
        ember.cuda.caching_allocator_delete(pointer)
    with ember.cuda.caching_allocator_disabled():
        x = ember.ones(4, device="cuda") * 2
    assert x.sum().item() == 8.0


@needs_gpu
def test_gpu_profiler_and_tunable_settings():
    with ember.cuda.profiler.profile():
        ember.ones(3, device="cuda").sum()
    tunable = ember.cuda.tunable
    tunable.enable(True)
    tunable.set_max_tuning_iterations(7)
    assert tunable.is_enabled() and tunable.get_max_tuning_iterations() == 7
    assert tunable.get_results() == () and tunable.read_file() is False
    tunable.enable(False)


# ---- backends.xeon.run_cpu: torch's CPU launcher ----

@pytest.mark.parametrize("argv", [
    ["train.py"], ["--ninstances", "2", "--ncores-per-instance", "1", "train.py", "--lr", "1"],
    ["-m", "--latency-mode", "pkg.main"], ["--core-list", "0,1", "--log-path", "logs", "x.py"],
    ["--no-python", "--disable-taskset", "--enable-jemalloc", "./a.out", "-v"]])
def test_run_cpu_options_parse_as_torchs(argv):
    import argparse

    from torch.backends.xeon import run_cpu as torch_run_cpu

    from ember.backends.xeon import run_cpu

    theirs = argparse.ArgumentParser()
    torch_run_cpu.create_args(theirs)
    assert vars(run_cpu.create_args().parse_args(argv)) == vars(theirs.parse_args(argv))


def test_run_cpu_launches_pinned_instances(tmp_path):
    import os
    import subprocess
    import sys

    cores = sorted(os.sched_getaffinity(0))
    script = tmp_path / "report.py"
    script.write_text("import os, sys\n"
                      "print(os.environ['OMP_NUM_THREADS'], sorted(os.sched_getaffinity(0)),"
                      " sys.argv[1:])\n")
    count = min(len(cores), 2)
    done = subprocess.run([sys.executable, "-m", "ember.backends.xeon.run_cpu", "--ninstances",
                           str(count), "--ncores-per-instance", "1", str(script), "hello"],
                          capture_output=True, text=True, timeout=120, check=True)
    lines = sorted(done.stdout.strip().splitlines())
    assert lines == sorted(f"1 [{core}] ['hello']" for core in cores[:count])


def _device_argument_cases():
    cases = []
    for torch_name in MODULES:
        module = importlib.import_module(torch_name)
        for name in _public_names(module):
            value = getattr(module, name, None)
            if (torch_name, name) in DELIBERATE or isinstance(value, (type, types.ModuleType)):
                continue
            try:
                parameters = list(inspect.signature(value).parameters)
            except (TypeError, ValueError):
                continue
            if parameters and parameters[0] in ("device", "device_id"):
                cases.extend((torch_name, name, index) for index in (0, -1, 1))
    return cases


@pytest.mark.parametrize("torch_name,name,index", _device_argument_cases())
def test_device_index_calls_match_torchs_cpu_build(torch_name, name, index):
    expected = _outcome(lambda: getattr(importlib.import_module(torch_name), name)(index))
    actual = _outcome(lambda: getattr(_ember_module(torch_name), name)(index))
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "raise":
        assert isinstance(actual[1], type(expected[1])), (expected, actual)
    else:
        assert _comparable(actual[1]) == _comparable(expected[1])


def _function_cases():
    cases = []
    for torch_name in MODULES:
        module = importlib.import_module(torch_name)
        for name in _public_names(module):
            value = getattr(module, name, None)
            if isinstance(value, types.FunctionType) and not name.startswith("_"):
                cases.append((torch_name, name))
    return cases


@pytest.mark.parametrize("torch_name,name", _function_cases())
def test_functions_take_torchs_parameters(torch_name, name):
    theirs = inspect.signature(getattr(importlib.import_module(torch_name), name)).parameters
    try:
        ours = inspect.signature(getattr(_ember_module(torch_name), name)).parameters
    except (TypeError, ValueError):
        pytest.fail(f"{torch_name}.{name}: ember's has no signature")
    if any(p.kind is p.VAR_KEYWORD for p in ours.values()):
        return
    keywords = [n for n, p in theirs.items() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                          p.KEYWORD_ONLY)]
    assert [n for n in keywords if n not in ours] == []
