"""ember.export against torch.export: the exported module computes torch's numbers, the
signature lists the same kinds of inputs, and errors match."""

import io

import numpy as np
import pytest
import torch
import torch.export
from tests.conftest import to_ember

import ember
import ember.export


class Net:
    """The same small network in either library."""

    @staticmethod
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def test_exported_module_matches_torch_and_round_trips():
    torch.manual_seed(0)
    t_net = Net.build(torch)
    e_net = Net.build(ember)
    e_net.load_state_dict({k: to_ember(v) for k, v in t_net.state_dict().items()})
    x = torch.randn(5, 3)
    t_ep = torch.export.export(t_net, (x,))
    e_ep = ember.export.export(e_net, (to_ember(x),))
    np.testing.assert_allclose(t_ep.module()(x).detach().numpy(),
                               e_ep.module()(to_ember(x)).detach().numpy(), atol=1e-6)
    t_kinds = [spec.kind.name for spec in t_ep.graph_signature.input_specs]
    e_kinds = [kind for kind, _ in e_ep.graph_signature.input_specs]
    assert e_kinds == t_kinds
    assert sorted(e_ep.state_dict) == sorted(t_ep.state_dict)
    buffer = io.BytesIO()
    ember.export.save(e_ep, buffer)
    buffer.seek(0)
    loaded = ember.export.load(buffer)
    np.testing.assert_allclose(loaded.module()(to_ember(x)).detach().numpy(),
                               t_net(x).detach().numpy(), atol=1e-6)
    for ep in (t_ep, e_ep):
        with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
            ep(x)


def test_export_argument_errors_and_dims_match_torch():
    for lib, E in ((torch, torch.export), (ember, ember.export)):
        with pytest.raises(Exception, match="Expecting `args` to be a tuple"):  # noqa: B017
            E.export(lib.nn.ReLU(), [lib.ones(1)])
        assert repr(E.Dim("batch", min=1, max=8)) == "Dim('batch', min=1, max=8)"
        with pytest.raises(AssertionError, match="inconsistent min=5, max=2"):
            E.Dim("bad", min=5, max=2)
        assert [d.__name__ for d in E.dims("h", "w")] == ["h", "w"]
