# ruff: noqa: UP006, UP007, UP035, UP045  (real programs spell types with typing.List, ...)
"""torch.jit's annotation helpers and switches behave in eager mode as torch's."""

import warnings
from typing import Dict, List, Optional, Tuple, Union

import pytest
import torch

import ember

CASES = [
    ([], List[int]), ([1, 2], List[int]), ([1, 2.0], List[int]), ([True], List[int]),
    ({"a": 1}, Dict[str, int]), ({"a": "b"}, Dict[str, int]), ({1: 1}, Dict[str, int]),
    (None, Optional[int]), (3, Optional[int]), ("x", Optional[int]),
    ((1, "a"), Tuple[int, str]), ((1, "a"), Tuple[int, int]), ((1, 2, 3), Tuple[int, ...]),
    (1, Union[int, str]), (1.5, Union[int, str]), (1, float), ([[1], [2]], List[List[int]]),
    ([[1], ["a"]], List[List[int]]), ([{"a": (1, 2)}], List[Dict[str, Tuple[int, int]]]),
]


@pytest.mark.parametrize("obj, target", CASES)
def test_jit_isinstance_matches_torch(obj, target):
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = ember.jit.isinstance(obj, target)
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = torch.jit.isinstance(obj, target)
    assert ours == theirs
    assert bool(ours_warned) == bool(theirs_warned)


def test_tensor_types_in_containers():
    assert ember.jit.isinstance({"w": ember.ones(1)}, Dict[str, ember.Tensor])
    assert not ember.jit.isinstance({"w": 1}, Dict[str, ember.Tensor])


def test_final_annotate_attribute_and_error():
    assert ember.jit.Final is torch.jit.Final
    assert ember.jit.annotate(List[int], []) == torch.jit.annotate(List[int], [])
    ours, theirs = ember.jit.Attribute(0.5, float), torch.jit.Attribute(0.5, float)
    assert (ours.value, ours.type) == (theirs.value, theirs.type)
    assert issubclass(ember.jit.Error, Exception)


def test_class_with_final_constant_runs():
    class Scaled(ember.nn.Module):
        factor: ember.jit.Final[float]

        def __init__(self):
            super().__init__()
            self.factor = 2.0

        def forward(self, x):
            return x * self.factor

    assert Scaled()(ember.ones(2)).tolist() == [2.0, 2.0]


def test_switches_return_what_torch_returns():
    previous_ours = ember.jit.set_fusion_strategy([("DYNAMIC", 3)])
    previous_theirs = torch.jit.set_fusion_strategy([("DYNAMIC", 3)])
    assert previous_ours == previous_theirs
    assert ember.jit.set_fusion_strategy(previous_ours) == [("DYNAMIC", 3)]
    torch.jit.set_fusion_strategy(previous_theirs)
    assert ember.jit.onednn_fusion_enabled() == torch.jit.onednn_fusion_enabled()
    ember.jit.enable_onednn_fusion(True)
    assert ember.jit.onednn_fusion_enabled()
    ember.jit.enable_onednn_fusion(False)


def test_decorators_leave_eager_code_alone():
    @ember.jit.script_if_tracing
    def double(x):
        return x * 2

    @ember.jit.interface
    class Scorer:
        def score(self, x): ...

    assert double(ember.ones(1)).item() == 2.0
    assert isinstance(Scorer, type)
    with ember.jit.strict_fusion():
        assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]


def test_compilation_unit_source_is_refused_clearly():
    ember.jit.CompilationUnit()
    with pytest.raises(NotImplementedError, match="CompilationUnit"):
        ember.jit.CompilationUnit("def f(x):\n    return x\n")


def test_export_opnames_lists_the_traced_operators():
    traced = ember.jit.trace(ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU()),
                             ember.ones(1, 2))
    names = ember.jit.export_opnames(traced)
    assert any("relu" in n for n in names)
