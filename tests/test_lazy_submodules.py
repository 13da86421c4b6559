"""``import ember`` leaves torch's heavier namespaces (fx, onnx, distributions, distributed,
testing, jit's top-level names) to first use (PEP 562), as torch reaches them as attributes."""

import subprocess
import sys

import torch

import ember

LAZY = ("distributed", "distributions", "fx", "onnx", "testing")


def test_import_ember_leaves_heavy_namespaces_unimported():
    code = ("import sys, ember; print(sorted(m for m in sys.modules if m in "
            f"{tuple('ember.' + name for name in LAZY)!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_lazy_namespaces_load_on_first_use_as_torch_exposes_them():
    for name in LAZY:
        assert hasattr(torch, name)
        module = getattr(ember, name)
        assert module.__name__ == f"ember.{name}"
        assert name in dir(ember)
    assert ember.distributions.Normal(0.0, 1.0).mean.item() == 0.0


def test_jit_names_resolve_to_the_jit_classes():
    assert ember.JITException is ember.jit.Error
    assert ember.ScriptModule is ember.jit.ScriptModule
    assert ember.ScriptFunction is ember.jit.ScriptFunction
    assert ember.CompilationUnit is ember.jit.CompilationUnit
    assert torch.JITException is torch.jit.Error   # the alias torch has
    from ember import ScriptModule
    assert ScriptModule is ember.jit.ScriptModule
