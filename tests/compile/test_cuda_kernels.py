"""Element-wise regions and fused chains as CuPy kernels on CUDA (``_inductor/cuda_kernels.py``).

The kernels' device code is checked here on the CPU: each region's generated ``__device__``
function is compiled as C (``__device__`` defined away) and called per element by a small
loop, against torch, for every step that has a C form, NumPy's NaN rules and the reductions.
The kernels themselves (CuPy's ElementwiseKernel/ReductionKernel) run only on a CUDA machine:
those tests take the ``device`` fixture and skip on the CPU."""

import ctypes
import subprocess

import numpy as np
import pytest
import torch

import ember
from ember._dynamo.utils import counters
from ember._inductor import c_loops, cuda_kernels
from ember._inductor.capture import capture
from ember.ops._registry import registry

needs_cc = pytest.mark.skipif(c_loops._compiler() is None, reason="no C compiler on PATH")

_DOMAINS = {"acosh": (1.1, 3.0), "log": (0.1, 3.0), "log2": (0.1, 3.0), "log10": (0.1, 3.0)}


def _ops_with_c_forms():
    return sorted(name for name, ops in registry.items() if not name.startswith("_") and any(
        op.fuse is not None and c_loops._form(op.fuse) is not None for op in ops))


def _function(lib, name):
    for namespace in (lib, lib.nn.functional):
        if hasattr(namespace, name):
            return getattr(namespace, name)
    raise AttributeError(name)


def _arity(name):
    return next(op.fuse.arity for op in registry[name] if op.fuse is not None)


def _device_code_source(region, arrays, name):
    """C calling ``region``'s device function per element: ``double name(in, out, n)`` reads
    the input arrays (one-element ones broadcast), writes its element-wise outputs and
    returns the sum, in double, of the values its reduction adds."""
    ctype, _ = c_loops._C_TYPES[region.dtype]
    reduced = region.reduction[2] if region.reduction is not None else None
    written = [v for v in region.outputs if v is not reduced]
    reads = [f"(({ctype} *)in[{i}])[{'0' if a.size == 1 else 'k'}]"
             for i, a in enumerate(arrays)]
    writes = [f"&(({ctype} *)out[{i}])[k]" for i in range(len(written))]
    return (cuda_kernels.device_function(region, f"{name}_element") +
            f"double {name}(void **in, void **out, long n) {{\n    double acc = 0;\n"
            f"    for (long k = 0; k < n; k++) acc += {name}_element("
            f"{', '.join(reads + writes)});\n    return acc;\n}}\n")


def _run_device_code(cases):
    """``[(region, input arrays)]`` -> ``[(element-wise outputs, reduction's sum)]``: each
    region's device function called per element by a C loop on the CPU (one library)."""
    source = "#include <math.h>\n#define __device__\n" + cuda_kernels.DEVICE_PRELUDE
    source += "".join(_device_code_source(region, arrays, f"run{i}")
                      for i, (region, arrays) in enumerate(cases))
    library = c_loops._library(source, ("-lm",))
    results = []
    for i, (region, arrays) in enumerate(cases):
        run = getattr(library, f"run{i}")
        run.restype = ctypes.c_double
        size = max(a.size for a in arrays)
        reduced = region.reduction[2] if region.reduction is not None else None
        outputs = [np.empty(size, region.dtype) for v in region.outputs if v is not reduced]
        pointers = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        written = (ctypes.c_void_p * max(1, len(outputs)))(*[o.ctypes.data for o in outputs])
        results.append((outputs, run(pointers, written, ctypes.c_long(size))))
    return results


def _region_of(fn, *examples):
    """The one region of ``fn``'s captured graph, and its input arrays in the region's
    order (the graph's inputs, or its constants)."""
    captured = capture(fn, list(examples))
    graph = captured.graph
    regions = list(c_loops.plan_regions(graph, set(graph.output_values())).values())
    assert len(regions) == 1, regions
    region = regions[0]
    by_value = dict(zip(graph.inputs, [e.numpy() for e in examples]))
    for node in graph.nodes:
        if node.kind == "get_attr":  # (a Python number or tensor the function read)
            by_value[node.outputs[0]] = captured.captured[node.params["name"]].numpy()
        elif node.kind == "constant":
            by_value[node.outputs[0]] = graph.constants[node.params["name"]]._data
    return region, [np.ascontiguousarray(by_value[v]).reshape(-1) for v in region.inputs]


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_steps_device_code_matches_torch(dtype):
    rng = np.random.default_rng(0)
    names, cases, expected = _ops_with_c_forms(), [], []
    for name in names:
        low, high = _DOMAINS.get(name, (0.1, 0.9))
        x = rng.uniform(low, high, 300).astype(dtype)
        y = rng.uniform(low, high, 300).astype(dtype)

        def chain(lib, a, b, name=name):
            function = _function(lib, name)
            return (function(a, b) if _arity(name) == 2 else function(a)) * 1.5 - 0.5

        cases.append(_region_of(lambda a, b: chain(ember, a, b), ember.tensor(x),
                                ember.tensor(y)))
        expected.append(chain(torch, torch.tensor(x), torch.tensor(y)).numpy())
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for name, ((result,), _), want in zip(names, _run_device_code(cases), expected):
        np.testing.assert_allclose(result, want, rtol=tolerance, atol=tolerance, err_msg=name)


@needs_cc
def test_nan_rules_of_maximum_minimum_and_logaddexp_as_numpy():
    values = np.array([np.nan, 1.0, -np.inf, np.inf, 2.0, np.nan], np.float32)
    others = np.array([1.0, np.nan, -np.inf, np.inf, 3.0, np.nan], np.float32)
    for name in ("maximum", "minimum", "logaddexp"):
        case = _region_of(lambda a, b: getattr(ember, name)(a, b) * 2 + 1,
                          ember.tensor(values), ember.tensor(others))
        [((result,), _)] = _run_device_code([case])
        expected = getattr(np, name)(values, others) * 2 + 1
        np.testing.assert_array_equal(result, expected.astype(np.float32), err_msg=name)


@needs_cc
@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_a_region_ending_in_a_reduction_sums_its_values(reduce):
    x = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)

    def loss(lib, a):
        hidden = (a * 0.5).tanh()
        return getattr(hidden.exp() - 1, reduce)(), hidden

    region, arrays = _region_of(lambda a: loss(ember, a), ember.tensor(x))
    assert region.reduction is not None and region.reduction[0] == reduce
    [((hidden,), total)] = _run_device_code([(region, arrays)])
    if reduce == "mean":
        total /= x.size  # (the kernel's post-map step divides by the element count)
    expected_total, expected_hidden = loss(torch, torch.tensor(x))
    np.testing.assert_allclose(hidden, expected_hidden.numpy().reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(total, expected_total.item(), rtol=1e-5)


@needs_cc
def test_a_chains_device_code_matches_torch():
    ops = [registry[n][0] for n in ("add", "tanh", "mul")]
    program = [["add", [0, 1], {}], ["tanh", [-1], {}], ["mul", [-1, 2], {}]]
    region = c_loops.chain_region(program, ops, np.dtype(np.float32))
    x = np.linspace(-2, 2, 50, dtype=np.float32)
    bias, scale = np.array([0.25], np.float32), np.linspace(1, 2, 50, dtype=np.float32)
    [((result,), _)] = _run_device_code([(region, [x, bias, scale])])
    expected = torch.tanh(torch.tensor(x) + 0.25) * torch.tensor(scale)
    np.testing.assert_allclose(result, expected.numpy(), rtol=1e-6)


def test_the_device_prelude_has_no_host_only_helpers():
    # every helper is a device function (NVRTC compiles only those into a kernel)
    prelude = cuda_kernels.DEVICE_PRELUDE
    assert "#include" not in prelude and "static inline" not in prelude
    assert prelude.count("static __device__ inline") == c_loops._PRELUDE.count("static inline")
    compiled = subprocess.run(  # and it is valid C once __device__ is defined away
        [c_loops._compiler() or "cc", "-fsyntax-only", "-x", "c", "-"],
        input="#include <math.h>\n#define __device__\n" + prelude, text=True,
        capture_output=True)
    assert compiled.returncode == 0, compiled.stderr


# ------------------------------------------------------------- the kernels, on a CUDA machine


def test_a_compiled_training_step_runs_its_regions_as_cuda_kernels(device):
    if device != "cuda":
        pytest.skip("CuPy kernels run on CUDA only")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    w = rng.standard_normal((16, 8)).astype(np.float32) * 0.1

    def loss(lib, a, weight):
        hidden = (a @ weight).tanh() * 1.5 + 0.25
        return (hidden.sigmoid() ** 2).mean()

    before = counters["inductor"]["cuda_kernel_regions"]
    weight = ember.tensor(w, device="cuda", requires_grad=True)
    value = ember.compile(lambda a, b: loss(ember, a, b))(ember.tensor(x, device="cuda"),
                                                          weight)
    value.backward()
    assert counters["inductor"]["cuda_kernel_regions"] > before
    expected_weight = torch.tensor(w, requires_grad=True)
    expected = loss(torch, torch.tensor(x), expected_weight)
    expected.backward()
    np.testing.assert_allclose(value.cpu().numpy(), expected.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(weight.grad.cpu().numpy(), expected_weight.grad.numpy(),
                               rtol=1e-4, atol=1e-6)


def test_an_inference_chain_is_one_cuda_kernel(device):
    if device != "cuda":
        pytest.skip("CuPy kernels run on CUDA only")
    from ember.jit._passes import FusedOp

    model = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.Tanh(), ember.nn.Sigmoid())
    model = model.to("cuda").eval()
    x = ember.randn(4, 8, device="cuda")
    optimized = ember.jit.optimize_for_inference(ember.jit.trace(model, x))
    fused = [n.op for n in optimized.graph.nodes if isinstance(n.op, FusedOp)]
    with ember.no_grad():
        result, expected = optimized(x), model(x)
    assert fused and all(op._cuda_kernels for op in fused)
    np.testing.assert_allclose(result.cpu().numpy(), expected.cpu().numpy(), rtol=1e-5,
                               atol=1e-6)
