"""ember.utils.cpp_extension's setup.py side: a package built with CppExtension and
BuildExtension (the way torch extensions are packaged) takes and returns ember tensors; the
compiler checks agree with torch's."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch.utils.cpp_extension as theirs

from ember.utils import cpp_extension as ours

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
needs_compiler = pytest.mark.skipif(shutil.which(ours.get_compiler()) is None,
                                    reason="no C++ compiler (set $CXX)")

SOURCE = r"""
#include <ember/extension.h>

ember::Tensor twice(ember::Tensor x) {
  x.check_dtype(ember::kFloat32, "twice");
  auto y = ember::empty_like(x);
  auto xc = x.contiguous();
  const float* a = xc.data_ptr<float>();
  float* b = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) b[i] = 2.0f * a[i];
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice", &twice); }
"""

SETUP = """
from setuptools import setup
from ember.utils.cpp_extension import BuildExtension, CppExtension

setup(name="emberpkg", packages=["emberpkg"],
      ext_modules=[CppExtension("emberpkg.fast", ["fast.cpp"],
                                extra_compile_args={"cxx": ["-O0"]})],
      cmdclass={"build_ext": BuildExtension})
"""

USE = """
import ember
from emberpkg import fast
x = ember.tensor([1.0, -2.5, 3.0])
y = fast.twice(x)
print(type(y).__name__, y.tolist(), fast.__name__)
try:
    fast.twice(ember.ones(2, dtype=ember.float64))
except RuntimeError as error:
    print("RuntimeError", error)
"""


@needs_compiler
def test_setup_py_build_gives_a_module_taking_ember_tensors(tmp_path):
    (tmp_path / "emberpkg").mkdir()
    (tmp_path / "emberpkg" / "__init__.py").write_text("")
    (tmp_path / "fast.cpp").write_text(SOURCE)
    (tmp_path / "setup.py").write_text(textwrap.dedent(SETUP))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    built = sorted(os.listdir(tmp_path / "emberpkg"))
    assert "fast.py" in built and any(".ember-native" in name for name in built)
    run = subprocess.run([sys.executable, "-c", USE], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "Tensor [2.0, -5.0, 6.0] emberpkg.fast"
    assert lines[1] == "RuntimeError twice: expected scalar type Float but found Double"


def test_cpp_extension_arguments():
    extension = ours.CppExtension("pkg.mod", ["a.cpp"], extra_compile_args={"cxx": ["-O1"]})
    assert extension.name == "pkg.mod" and extension.language == "c++"
    assert extension.extra_compile_args == ["-O1", "-std=c++17"]
    assert set(ours.include_paths()) <= set(extension.include_dirs)
    with pytest.raises(RuntimeError, match="cupy.RawKernel"):
        ours.CUDAExtension("pkg.mod", ["a.cu"])
    with pytest.raises(RuntimeError, match="SYCL"):
        ours.SyclExtension("pkg.mod", ["a.sycl"])
    assert ours.library_paths() == []
    assert ours.remove_extension_h_precompiler_headers() is None
    build_ext = ours.BuildExtension.with_options(use_ninja=False)
    assert issubclass(build_ext, ours.BuildExtension)


@needs_compiler
def test_compiler_checks_match_torch(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    compiler = ours.get_cxx_compiler()
    assert compiler == theirs.get_cxx_compiler()
    assert ours.check_compiler_is_gcc(compiler) == theirs.check_compiler_is_gcc(compiler)
    assert ours.check_compiler_ok_for_platform(compiler) == \
        theirs.check_compiler_ok_for_platform(compiler)
    ok, version = ours.get_compiler_abi_compatibility_and_version(compiler)
    torch_ok, torch_version = theirs.get_compiler_abi_compatibility_and_version(compiler)
    assert (ok, version) == (torch_ok, str(torch_version))
    assert not ours.check_compiler_ok_for_platform("no-such-compiler-here")
    assert ours.check_compiler_ok_for_platform("no-such-compiler-here") == \
        theirs.check_compiler_ok_for_platform("no-such-compiler-here")


def test_include_paths_take_torchs_device_type():
    assert ours.include_paths("cpu") == ours.include_paths()
    with pytest.raises(RuntimeError, match="CUDA"):
        ours.include_paths("cuda")
