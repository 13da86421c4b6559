"""ember._assert: torch._assert's behaviour eagerly and under symbolic tracing."""

import pytest
import torch
import torch.fx

import ember
import ember.fx


def test_eager_behaviour_matches_torch():
    for lib in (ember, torch):
        lib._assert(lib.tensor(True), "fine")
        lib._assert(1, "fine")
        with pytest.raises(AssertionError, match="shape mismatch"):
            lib._assert(False, "shape mismatch")
        with pytest.raises(AssertionError):
            lib._assert(lib.tensor(False), "tensor condition")


def test_symbolic_trace_records_the_assert_as_torch():
    def make(lib, base):
        class Checked(base):
            def forward(self, x):
                lib._assert(x.sum() > 0, "needs a positive sum")
                return x * 2
        return Checked()

    ours = ember.fx.symbolic_trace(make(ember, ember.nn.Module))
    theirs = torch.fx.symbolic_trace(make(torch, torch.nn.Module))
    assert ours.code.replace("ember.", "torch.") == theirs.code
    assert ours(ember.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(AssertionError, match="needs a positive sum"):
        ours(-ember.ones(2))
