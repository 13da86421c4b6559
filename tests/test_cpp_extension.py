"""ember.utils.cpp_extension: load_inline / load, the build cache, ember/extension.h, autograd.

Compiles three small extensions (the LLTM example, a helpers module, a tiny module built twice
for the rebuild test) plus one that fails; everything else reuses them.
"""

import importlib
import importlib.util
import os
import pydoc
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import ember
from ember.utils import cpp_extension

if shutil.which(cpp_extension.get_compiler()) is None:
    pytest.skip(f"no C++ compiler found ({cpp_extension.get_compiler()!r}; set $CXX)",
                allow_module_level=True)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

HELPERS = r"""
ember::Tensor add_one(ember::Tensor x) {
  x.check_dtype(ember::kFloat32, "add_one");
  auto y = ember::empty_like(x);
  auto xc = x.contiguous();
  const float* a = xc.data_ptr<float>();
  float* b = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) b[i] = a[i] + 1.0f;
  return y;
}

py::array_t<double> scale(py::array_t<double, py::array::c_style | py::array::forcecast> x,
                          double s) {
  py::array_t<double> y(x.request().shape);
  const double* a = x.data();
  double* b = y.mutable_data();
  for (py::ssize_t i = 0; i < x.size(); ++i) b[i] = s * a[i];
  return y;
}

// strided access without a copy; a tuple with a non-tensor
std::tuple<ember::Tensor, int64_t> sum_rows(ember::Tensor x) {
  auto a = x.accessor<double, 2>();
  auto out = ember::zeros({x.size(0)}, ember::kFloat64);
  double* o = out.data_ptr<double>();
  for (int64_t i = 0; i < x.size(0); ++i)
    for (int64_t j = 0; j < x.size(-1); ++j) o[i] += a[i][j];
  return {out, x.numel()};
}

ember::Tensor fill_(ember::Tensor x, double v) {
  auto a = x.accessor<double, 1>();
  for (int64_t i = 0; i < x.size(0); ++i) a[i] = v;
  return x;
}

std::vector<ember::Tensor> negate_all(std::vector<ember::Tensor> xs) {
  std::vector<ember::Tensor> out;
  for (auto& x : xs) {
    auto c = x.contiguous();
    auto y = ember::empty_like(c);
    const double* a = c.data_ptr<double>();
    double* b = y.data_ptr<double>();
    for (int64_t i = 0; i < c.numel(); ++i) b[i] = -a[i];
    out.push_back(y);
  }
  return out;
}

ember::Tensor zeros_as(ember::Tensor x) { return ember::zeros_like(x); }

std::string dtype_name(ember::Tensor x) { return ember::to_string(x.dtype()); }

py::dict describe(ember::Tensor x) {
  py::dict d;
  d["sizes"] = x.sizes();
  d["strides"] = x.strides();
  d["contiguous"] = x.is_contiguous();
  d["numel"] = x.numel();
  return d;
}

int64_t last_size(ember::Tensor x, int64_t dim) {
  EMBER_CHECK(x.dim() == 2, "last_size needs a 2-D tensor, got ", x.dim(), "-D");
  return x.size(dim);
}

std::vector<float> bf16_roundtrip(std::vector<float> xs) {
  std::vector<float> out;
  for (float f : xs) out.push_back(ember::BFloat16::from_float(f).to_float());
  return out;
}
"""

DOCS = {"add_one": "Add one to a float32 tensor.", "scale": "s * x through py::array_t.",
        "sum_rows": "Row sums of a 2-D float64 tensor, and its numel.",
        "fill_": "Fill a 1-D float64 tensor in place.", "negate_all": "Negate a list.",
        "zeros_as": "Zeros like x.", "dtype_name": "torch's name of x's dtype.",
        "describe": "sizes/strides/contiguity.", "last_size": "x.size(dim) of a 2-D tensor.",
        "bf16_roundtrip": "float -> bfloat16 -> float."}


# the test modules' own builds skip optimisation: they test values and the build logic, and
# pybind11's headers compile in ~60% of -O3's time (the LLTM example builds as it ships)
QUICK = ["-O0"]


def _load_example():
    path = os.path.join(ROOT, "examples", "cpp_extension_lltm.py")
    spec = importlib.util.spec_from_file_location("ember_example_cpp_extension_lltm", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build_root(tmp_path_factory):
    return tmp_path_factory.mktemp("ember_ext")


@pytest.fixture(scope="module")
def ext(build_root):
    return cpp_extension.load_inline("ember_test_helpers", HELPERS, functions=DOCS,
                                     extra_cflags=QUICK,
                                     build_directory=str(build_root / "helpers"))


@pytest.fixture(scope="module")
def lltm(build_root):
    example = _load_example()
    directory = str(build_root / "lltm")
    return example, example.load_lltm(directory), directory


def _library(directory):
    return [f for f in os.listdir(directory) if f.endswith(".so")]


# --- values and conversions ---------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("transposed", [False, True])
def test_add_one_values(ext, shape, transposed):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = ember.tensor(a)
    if transposed:
        x, a = x.mT if x.dim() >= 2 else x, a.swapaxes(-1, -2) if a.ndim >= 2 else a
    y = ext.add_one(x)
    assert isinstance(y, ember.Tensor) and y.dtype == ember.float32 and y.shape == x.shape
    np.testing.assert_array_equal(y.numpy(), a + np.float32(1))
    assert not np.shares_memory(y.numpy(), x.numpy())


def test_inputs_are_zero_copy_views(ext):
    x = ember.zeros(4, 6, dtype=ember.float64)
    d = ext.describe(x.t())
    assert d == {"sizes": [6, 4], "strides": [1, 6], "contiguous": False, "numel": 24}
    t = torch.zeros(4, 6)
    for view, tview in [(x, t), (x[:, :1], t[:, :1]), (x[:1], t[:1]), (x[:, 2:3].t(), t[:, 2:3].t()),
                        (x.expand(2, 4, 6), t.expand(2, 4, 6))]:
        assert ext.describe(view)["contiguous"] == tview.is_contiguous()
        assert ext.describe(view)["strides"] == list(tview.stride())


def test_accessor_strided_and_tuple_return(ext):
    a = np.random.default_rng(1).standard_normal((5, 3))
    x = ember.tensor(a).t()                           # non-contiguous (3, 5)
    sums, numel = ext.sum_rows(x)
    assert isinstance(sums, ember.Tensor) and numel == 15
    np.testing.assert_allclose(sums.numpy(), a.T.sum(1), rtol=1e-12)


def test_inplace_returns_the_same_tensor(ext):
    x = ember.zeros(6, dtype=ember.float64)
    y = ext.fill_(x[::2], 3.0)                        # a strided view, written in place
    assert y.shape == (3,)
    np.testing.assert_array_equal(x.numpy(), [3, 0, 3, 0, 3, 0])
    z = ext.fill_(x, 1.0)
    assert z is x


def test_lists_in_and_out(ext):
    xs = [ember.arange(3.0, dtype=ember.float64), ember.ones(2, 2, dtype=ember.float64).t()]
    out = ext.negate_all(xs)
    assert isinstance(out, list) and all(isinstance(t, ember.Tensor) for t in out)
    for x, y in zip(xs, out):
        np.testing.assert_array_equal(y.numpy(), -x.numpy())


def test_py_array_t_arguments(ext):
    x = ember.arange(6.0, dtype=ember.float64).reshape(2, 3)
    y = ext.scale(x, 2.5)
    assert isinstance(y, ember.Tensor) and y.dtype == ember.float64 and y.shape == (2, 3)
    np.testing.assert_array_equal(y.numpy(), 2.5 * x.numpy())
    y32 = ext.scale(ember.ones(3), 2.0)               # forcecast: float32 in, float64 out
    assert y32.dtype == ember.float64
    np.testing.assert_array_equal(y32.numpy(), [2.0, 2.0, 2.0])


TORCH_NAMES = {ember.bool: "Bool", ember.uint8: "Byte", ember.int8: "Char", ember.int16: "Short",
               ember.int32: "Int", ember.int64: "Long", ember.float16: "Half",
               ember.bfloat16: "BFloat16", ember.float32: "Float", ember.float64: "Double",
               ember.complex64: "ComplexFloat", ember.complex128: "ComplexDouble"}


@pytest.mark.parametrize("dtype", list(TORCH_NAMES), ids=str)
def test_every_dtype_both_ways(ext, dtype):
    x = ember.ones(2, 3, dtype=dtype)
    tdtype = getattr(torch, str(dtype).split(".")[1])
    # the names are torch's ScalarType names, as in its dtype error messages
    assert ext.dtype_name(x) == TORCH_NAMES[dtype] == str(torch.empty(0, dtype=tdtype)
                                                         .type()).split(".")[-1][:-6]
    z = ext.zeros_as(x)
    assert z.dtype == dtype and z.shape == (2, 3)
    assert (z == 0).all().item()


def test_bfloat16_conversion_matches_torch(ext):
    values = [0.0, -0.0, 1.0, 1.00390625, 1.01171875, 3.14159, -2.5e-3, 1e30, float("inf")]
    expected = torch.tensor(values).bfloat16().float().tolist()
    assert ext.bf16_roundtrip(values) == expected


# --- errors -------------------------------------------------------------------------------

def test_dtype_errors(ext):
    with pytest.raises(RuntimeError, match="add_one: expected scalar type Float but found Double"):
        ext.add_one(ember.ones(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        ext.sum_rows(ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="TensorAccessor expected 2 dims but tensor has 1"):
        ext.sum_rows(ember.ones(2, dtype=ember.float64))


def test_check_macro_and_dims(ext):
    x = ember.ones(2, 5)
    assert ext.last_size(x, -1) == 5 and ext.last_size(x, 0) == 2
    with pytest.raises(RuntimeError, match="last_size needs a 2-D tensor, got 1-D"):
        ext.last_size(ember.ones(3), 0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        ext.last_size(x, 2)
    with pytest.raises(IndexError):
        torch.ones(2, 5).size(2)                  # torch raises the same type


def test_non_cpu_tensors_are_refused(ext):
    with pytest.raises(RuntimeError, match="take CPU tensors.*device 'meta'"):
        ext.add_one(ember.ones(3, device="meta"))
    if ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="take CPU tensors.*cuda"):
            ext.add_one(ember.ones(3, device="cuda"))


def test_wrong_argument_types(ext):
    with pytest.raises(TypeError, match="incompatible function arguments"):
        ext.add_one("not a tensor")


def test_tensors_that_require_grad_are_passed(ext):
    x = ember.ones(3, requires_grad=True)
    y = ext.add_one(x)
    assert not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), [2, 2, 2])


# --- module, bindings, cache --------------------------------------------------------------

def test_functions_docstrings_visible_in_help(ext):
    text = pydoc.render_doc(ext, renderer=pydoc.plaintext)
    for name, doc in DOCS.items():
        assert name in text and doc in text
    assert "Add one to a float32 tensor." in pydoc.render_doc(ext.add_one,
                                                              renderer=pydoc.plaintext)


def test_import_by_name(ext):
    assert importlib.import_module("ember_test_helpers") is ext
    import ember_test_helpers  # noqa: F401  (the built module, by name)

    assert sys.modules["ember_test_helpers"].add_one is ext.add_one


def test_functions_str_list_dict():
    one = cpp_extension._bindings("f")
    assert 'm.def("f", f, R"ember_doc(f)ember_doc");' in one
    both = cpp_extension._bindings(["f", "g"])
    assert 'm.def("f", f,' in both and 'm.def("g", g,' in both
    documented = cpp_extension._bindings({"f": 'quotes " and\nnewlines'})
    assert 'R"ember_doc(quotes " and\nnewlines)ember_doc"' in documented
    assert "PYBIND11_MODULE(EMBER_EXTENSION_NAME, m)" in one
    with pytest.raises(ValueError, match="Expected 'functions' to be a list or dict"):
        cpp_extension._bindings(5)
    with pytest.raises(ValueError, match="not a C\\+\\+ identifier"):
        cpp_extension._bindings(["a b"])


def test_cache_second_load_does_not_compile(ext, build_root):
    directory = str(build_root / "helpers")
    (lib,) = _library(directory)
    before = os.stat(os.path.join(directory, lib)).st_mtime_ns
    again = cpp_extension.load_inline("ember_test_helpers", HELPERS, functions=DOCS,
                                      extra_cflags=QUICK, build_directory=directory)
    assert again is ext
    # a fresh process finds the library in the cache and does not run the compiler
    code = textwrap.dedent(f"""
        import sys, ember
        sys.path.insert(0, {os.path.join(ROOT, "tests")!r})
        from test_cpp_extension import HELPERS, DOCS
        from ember.utils.cpp_extension import load_inline
        m = load_inline("ember_test_helpers", HELPERS, functions=DOCS, extra_cflags={QUICK!r},
                        build_directory={directory!r}, verbose=True)
        print(m.add_one(ember.zeros(2)).tolist())
    """)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1.0, 1.0]"
    assert "skipping build step" in proc.stderr and "Building" not in proc.stderr
    assert _library(directory) == [lib]
    assert os.stat(os.path.join(directory, lib)).st_mtime_ns == before


def test_is_python_module_false_returns_the_loaded_library(ext, build_root):
    directory = str(build_root / "helpers")
    path = cpp_extension.load_inline("ember_test_helpers", HELPERS, functions=DOCS,
                                     extra_cflags=QUICK, build_directory=directory,
                                     is_python_module=False)
    assert path == os.path.join(directory, _library(directory)[0])


TINY = """
#include <pybind11/pybind11.h>
int version() {{ return {}; }}
PYBIND11_MODULE(EMBER_EXTENSION_NAME, m) {{ m.def("version", &version, "the version"); }}
"""


def test_load_rebuilds_when_the_source_changes(build_root):
    directory = build_root / "tiny"
    directory.mkdir()
    source = directory / "tiny.cpp"
    source.write_text(TINY.format(1))
    first = cpp_extension.load("ember_test_tiny", [str(source)], build_directory=str(directory),
                               extra_cflags=QUICK)
    assert first.version() == 1
    assert cpp_extension.load("ember_test_tiny", str(source), build_directory=str(directory),
                              extra_cflags=QUICK) is first
    source.write_text(TINY.format(2))
    second = cpp_extension.load("ember_test_tiny", [str(source)], build_directory=str(directory),
                                extra_cflags=QUICK)
    assert second is not first and second.version() == 2 and first.version() == 1
    assert second.__name__ == "ember_test_tiny_v1"        # torch's naming of a rebuilt module
    assert len(_library(str(directory))) == 2
    assert importlib.import_module("ember_test_tiny") is second


def test_concurrent_builds_compile_once(build_root, tmp_path):
    # a stand-in compiler: slow, counts its runs, "builds" by copying a library built above
    prebuilt = sorted((build_root / "tiny").glob("ember_test_tiny.*.so"))
    if not prebuilt:
        pytest.skip("needs test_load_rebuilds_when_the_source_changes's library")
    count = tmp_path / "count"
    fake = tmp_path / "fake_cxx"
    fake.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import shutil, sys, time
        open({str(count)!r}, "a").write("x")
        time.sleep(1.0)
        shutil.copy({str(prebuilt[-1])!r}, sys.argv[sys.argv.index("-o") + 1])
    """))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    source = tmp_path / "tiny.cpp"
    source.write_text(TINY.format(1))
    code = textwrap.dedent(f"""
        from ember.utils.cpp_extension import load
        print(load("ember_test_tiny", [{str(source)!r}],
                   build_directory={str(tmp_path / "build")!r}).version())
    """)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), CXX=str(fake))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert [o[0].strip() for o in outs] == ["1", "1"]
    assert count.read_text() == "x"                   # the second process waited, then loaded
    leftovers = [f for f in os.listdir(tmp_path / "build") if f.endswith(".tmp")]
    assert leftovers == []


def test_compile_error(tmp_path):
    source = tmp_path / "broken.cpp"
    source.write_text("int broken( { return 0; }\n")
    with pytest.raises(RuntimeError, match=r"^Error building extension 'ember_test_broken': "
                                           r"(.|\n)*error") as info:
        cpp_extension.load("ember_test_broken", [str(source)], build_directory=str(tmp_path))
    assert "broken.cpp" in str(info.value)
    assert [f for f in os.listdir(tmp_path) if f.endswith((".so", ".tmp"))] == []


def test_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="valid Python identifier"):
        cpp_extension.load_inline("bad-name", "", build_directory=str(tmp_path))
    with pytest.raises(RuntimeError, match="Error building extension 'x'.*CPU"):
        cpp_extension.load_inline("x", "", cuda_sources="__global__ void k() {}",
                                  build_directory=str(tmp_path))
    with pytest.raises(RuntimeError, match="CUDA sources are not supported"):
        cpp_extension.load("x", [str(tmp_path / "k.cu")], build_directory=str(tmp_path))
    with pytest.raises(RuntimeError, match="cannot read source"):
        cpp_extension.load("x", [str(tmp_path / "missing.cpp")], build_directory=str(tmp_path))


def test_include_paths_and_build_root(monkeypatch, tmp_path):
    paths = cpp_extension.include_paths()
    assert os.path.isfile(os.path.join(paths[0], "ember", "extension.h"))
    assert any(os.path.isfile(os.path.join(p, "Python.h")) for p in paths)
    monkeypatch.setenv("EMBER_EXTENSIONS_DIR", str(tmp_path))
    assert cpp_extension.get_default_build_root() == str(tmp_path)
    monkeypatch.delenv("EMBER_EXTENSIONS_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cpp_extension.get_default_build_root() == os.path.join(
        os.path.expanduser("~"), ".cache", "ember_extensions")


# --- autograd: the LLTM cell ----------------------------------------------------------------

def _torch_lltm(input, weights, bias, old_h, old_cell):
    X = torch.cat([old_h, input], dim=1)
    gates = X @ weights.t() + bias
    i, o, c = gates.chunk(3, dim=1)
    new_cell = old_cell + torch.nn.functional.elu(c) * i.sigmoid()
    return new_cell.tanh() * o.sigmoid(), new_cell


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lltm_values_and_grads_match_torch(lltm, dtype):
    example, ext, _ = lltm
    rng = np.random.default_rng(2)
    B, I, S = 4, 3, 5
    arrays = [rng.standard_normal(s).astype(dtype)
              for s in [(B, I), (3 * S, I + S), (3 * S,), (B, S), (B, S)]]
    ours = [ember.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = example.make_function(ext).apply(*ours)
    ref = _torch_lltm(*theirs)
    gh, gc = rng.standard_normal((2, B, S)).astype(dtype)
    (out[0] * ember.tensor(gh) + out[1] * ember.tensor(gc)).sum().backward()
    (ref[0] * torch.tensor(gh) + ref[1] * torch.tensor(gc)).sum().backward()
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(out, ref):
        assert a.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    for a, b in zip(ours, theirs):
        assert a.grad.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


def test_lltm_gradcheck(lltm):
    example, ext, _ = lltm
    gen = ember.Generator().manual_seed(3)
    B, I, S = 2, 3, 4
    inputs = tuple(ember.randn(*s, dtype=ember.float64, generator=gen, requires_grad=True)
                   for s in [(B, I), (3 * S, I + S), (3 * S,), (B, S), (B, S)])
    assert ember.autograd.gradcheck(example.make_function(ext).apply, inputs)


def test_lltm_input_checks(lltm):
    _, ext, _ = lltm
    x, w, b, h, c = (ember.ones(*s) for s in [(2, 3), (12, 7), (12,), (2, 4), (2, 4)])
    with pytest.raises(RuntimeError, match="lltm: expected scalar type Float but found Double"):
        ext.lltm_forward(x, w, b.double(), h, c)
    with pytest.raises(RuntimeError, match="weights must have shape"):
        ext.lltm_forward(x, ember.ones(12, 6), b, h, c)
    with pytest.raises(RuntimeError, match="expected float32 or float64"):
        ext.lltm_forward(*(t.int() for t in (x, w, b, h, c)))


def test_lltm_example_trains(lltm, capsys):
    example, _, directory = lltm
    result = example.main(["--steps", "25", "--build-dir", directory])
    assert result["max_diff"] < 1e-10
    losses = result["losses"]
    assert len(losses) == 25 and np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses
    assert "max difference" in capsys.readouterr().out
    assert len(_library(directory)) == 1               # the example reused the cached build
