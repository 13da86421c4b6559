"""torch.autograd's remaining public names, each against torch: the deprecated Jacobian
helpers, gradient edges, engine flags and the profiler utilities."""

import sys
import warnings

import numpy as np
import pytest
import torch
import torch.autograd.profiler as TP
import torch.autograd.profiler_util as TU

import ember
import ember.autograd.profiler as EP
import ember.autograd.profiler_legacy as EL
import ember.autograd.profiler_util as EU

TG = sys.modules["torch.autograd.gradcheck"]
EG = sys.modules["ember.autograd.gradcheck"]


def pair(values, requires_grad=True):
    t = torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)
    return t, ember.tensor(values, dtype=ember.float64, requires_grad=requires_grad)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def test_numerical_and_analytical_jacobians_match_torch():
    tx, ex = pair([1.0, 2.0, 3.0])
    ty, ey = pair([0.5, -1.0])

    def fn(inp):
        return (inp[0][:2] * inp[1]).sin()

    for t, e in zip(TG.get_numerical_jacobian(fn, (tx, ty), eps=1e-6),
                    EG.get_numerical_jacobian(fn, (ex, ey), eps=1e-6)):
        assert tuple(t.shape) == tuple(e.shape)
        np.testing.assert_allclose(t.numpy(), e.numpy(), atol=1e-9)
    t_out, e_out = fn((tx, ty)), fn((ex, ey))
    t_res, e_res = TG.get_analytical_jacobian((tx, ty), t_out), EG.get_analytical_jacobian(
        (ex, ey), e_out)
    for t, e in zip(t_res[0], e_res[0]):
        np.testing.assert_allclose(t.numpy(), e.numpy(), atol=1e-12)
    assert t_res[1:] == e_res[1:]

    def two_args(a, b):
        return (a[:2] * b).sin()

    for t, e in zip(TG.get_numerical_jacobian_wrt_specific_input(two_args, 1, (tx, ty),
                                                                  (t_out,), 1e-6),
                    EG.get_numerical_jacobian_wrt_specific_input(two_args, 1, (ex, ey),
                                                                  (e_out,), 1e-6)):
        np.testing.assert_allclose(t.numpy(), e.numpy(), atol=1e-9)
    for mod, x in ((TG, tx), (EG, ex)):
        with pytest.raises(ValueError, match="Expected grad_out to be 1.0"):
            mod.get_numerical_jacobian(fn, (x,), grad_out=2.0)


def test_gradient_edge_matches_torch():
    tx, ex = pair([1.0, 2.0])
    t_edge = torch.autograd.graph.get_gradient_edge(tx * 2)
    e_edge = ember.autograd.graph.get_gradient_edge(ex * 2)
    assert t_edge.node.name() == e_edge.node.name()
    assert t_edge.output_nr == e_edge.output_nr and e_edge._fields == t_edge._fields
    assert ember.autograd.graph.get_gradient_edge(ex).node.name() == \
        torch.autograd.graph.get_gradient_edge(tx).node.name()
    tz, ez = pair([1.0], requires_grad=False)
    for lib, z in ((torch, tz), (ember, ez)):
        with pytest.raises(RuntimeError, match="does not require gradients"):
            lib.autograd.graph.get_gradient_edge(z)


def test_engine_flags_restore_like_torch():
    for lib in (torch, ember):
        with lib.autograd.enforce_grad_layout_policy(False):
            x = lib.ones(2, requires_grad=True)
            (x * 2).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        with lib.autograd.grad_mode.set_multithreading_enabled(False):
            assert not lib.autograd.is_multithreading_enabled()
        assert lib.autograd.is_multithreading_enabled()
        for budget, error in ((0.5, RuntimeError), (2.0, ValueError), ("x", TypeError)):
            with pytest.raises(error, match="region_activation_memory_budget"):
                with lib.autograd.graph.region_activation_memory_budget(budget):
                    pass
    assert ember.autograd.function.FunctionMeta is type(ember.autograd.Function)
    assert ember.autograd.variable.VariableMeta is type(ember.autograd.Variable)


def test_profiler_utilities_match_torch():
    for mod in (TP, EP):
        seen = mod.EnforceUnique()
        seen.see("a", 1)
        with pytest.raises(RuntimeError, match="duplicate key"):
            seen.see("a", 1)
    steps = []
    for mod in (TP, EP):
        tracker = mod.KinetoStepTracker
        tracker.init_step_count("test_a")
        tracker.init_step_count("test_b")
        counts = [tracker.increment_step("test_a"), tracker.increment_step("test_a"),
                  tracker.increment_step("test_b")]
        steps.append([c - counts[0] for c in counts])
        assert tracker.erase_step_count("test_a") and not tracker.erase_step_count("nope")
        tracker.erase_step_count("test_b")
    assert steps[0] == steps[1]
    assert EU.Interval(1.0, 4.5).elapsed_us() == TU.Interval(1.0, 4.5).elapsed_us()
    assert EU.Kernel._fields == TU.Kernel._fields

    class Record:
        def __init__(self, start):
            self.start = start

        def start_ns(self):
            return self.start

    records = [(Record(s), s) for s in (5, 1, 9, 3)]
    for mod in (TU, EU):
        assert [r[1] for r in mod.MemRecordsAcc(records).in_interval(2, 6)] == [3, 5]
    with pytest.raises(Exception):  # noqa: B017  (torch: AssertionError, ember: its CUDA error)
        with TP.emit_nvtx():
            pass
    with pytest.raises(Exception):  # noqa: B017
        with EP.emit_nvtx():
            pass
    with EP.emit_itt():
        pass
    assert EP.profile is EL.profile
