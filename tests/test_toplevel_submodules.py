"""Submodules torch makes reachable as ``torch.<name>`` after ``import torch`` are reachable on
ember too (some imported on first use), and torch.functional/torch.version hold torch's names."""

import subprocess
import sys
import types

import pytest
import torch

import ember

# torch's attributes that are its own submodules right after ``import torch`` (read in a fresh
# interpreter: other tests import more of torch, which adds attributes)
_LIST_SUBMODULES = (
    "import types, torch; print(' '.join(sorted(n for n in dir(torch) if not n.startswith('_') "
    "and isinstance(getattr(torch, n, None), types.ModuleType) "
    "and getattr(torch, n).__name__.startswith('torch.'))))")
TORCH_SUBMODULES = subprocess.run([sys.executable, "-c", _LIST_SUBMODULES], capture_output=True,
                                  text=True, check=True).stdout.split()
# torch features ember does not have (see docs/migrating-from-pytorch.md)
ABSENT = {"ao", "classes", "monitor", "mtia", "nested", "package", "quantization",
          "torch_version", "windows"}  # torch.windows: torch.signal.windows leaking into torch


@pytest.mark.parametrize("name", [n for n in TORCH_SUBMODULES if n not in ABSENT])
def test_submodule_is_an_attribute(name):
    assert isinstance(getattr(ember, name), types.ModuleType)


def test_functional_and_version_hold_torchs_names():
    assert set(torch.functional.__all__) <= set(dir(ember.functional))
    for name in torch.functional.__all__:
        assert getattr(ember.functional, name) is getattr(ember, name)
    assert ember.version.__version__ == ember.__version__
    assert ember.version.cuda is torch.version.cuda is None
    assert ember.version.debug == torch.version.debug


def test_lazy_submodules_are_not_imported_by_import_ember():
    code = ("import sys, ember; print(sorted(m for m in ('ember.hub', 'ember.export', "
            "'ember.functional') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


@pytest.mark.parametrize("path, names", [
    ("nn.modules.batchnorm", ["_NormBase", "_BatchNorm", "_LazyNormBase"]),
    ("nn.modules.instancenorm", ["_NormBase", "_InstanceNorm", "_LazyNormBase"]),
])
def test_private_bases_real_code_uses_exist_where_torch_has_them(path, names):
    import importlib

    ours, theirs = importlib.import_module(f"ember.{path}"), importlib.import_module(f"torch.{path}")
    for name in names:
        assert isinstance(getattr(theirs, name), type)
        assert isinstance(getattr(ours, name), type)
    assert isinstance(ember.nn.BatchNorm2d(2), ember.nn.modules.batchnorm._BatchNorm)
    assert isinstance(ember.nn.InstanceNorm1d(2), ember.nn.modules.instancenorm._NormBase)
