"""ember.fx follow-ups against torch.fx: replace_pattern (matches and rewritten code),
*args/**kwargs tracing, pickling a GraphModule, TensorMetadata.memory_format."""

import io
import pickle

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp

import ember
import ember.fx
from ember.fx.passes.shape_prop import ShapeProp


def _same_code(ember_code, torch_code):
    assert ember_code == torch_code.replace("torch.", "ember.")


def _rewrite_cases(lib):
    """(model, pattern, replacement) triples written once against ``lib``."""

    class TwoCopies(lib.nn.Module):
        def forward(self, x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            return x + lib.max(m1) + lib.max(m2)

    class InnerValueUsedOutside(lib.nn.Module):
        def forward(self, x):
            y = lib.relu(x)
            return lib.sigmoid(y) + y  # the pattern's inner relu is used outside: no match

    class Overlapping(lib.nn.Module):
        def forward(self, x):
            return lib.neg(lib.neg(lib.neg(x)))

    return {
        "two_copies": (TwoCopies(), lambda w1, w2: lib.cat([w1, w2]).sum(),
                       lambda w1, w2: lib.stack([w1, w2])),
        "inner_used_outside": (InnerValueUsedOutside(), lambda x: lib.sigmoid(lib.relu(x)),
                               lambda x: lib.tanh(x)),
        "overlapping": (Overlapping(), lambda x: lib.neg(lib.neg(x)), lambda x: x * 2),
        "method_pattern": (Overlapping(), lambda x: x.neg() if False else lib.neg(x),
                           lambda x: x.abs()),
    }


@pytest.mark.parametrize("case", ["two_copies", "inner_used_outside", "overlapping",
                                  "method_pattern"])
def test_replace_pattern_as_torch(case):
    torch_model, torch_pattern, torch_replacement = _rewrite_cases(torch)[case]
    model, pattern, replacement = _rewrite_cases(ember)[case]
    torch_gm, gm = torch.fx.symbolic_trace(torch_model), ember.fx.symbolic_trace(model)
    torch_matches = torch.fx.replace_pattern(torch_gm, torch_pattern, torch_replacement)
    matches = ember.fx.replace_pattern(gm, pattern, replacement)
    assert [m.anchor.name for m in matches] == [m.anchor.name for m in torch_matches]
    assert [{k.name: v.name for k, v in m.nodes_map.items()} for m in matches] == \
        [{k.name: v.name for k, v in m.nodes_map.items()} for m in torch_matches]
    _same_code(gm.code, torch_gm.code)
    gm.graph.lint()


def test_replace_pattern_with_filters_as_torch():
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters as torch_replace

    from ember.fx.subgraph_rewriter import replace_pattern_with_filters

    def keep_first(match, graph, pattern):
        return match.returning_nodes[0].name == "sum_1"

    results = []
    for lib, replace in ((torch, torch_replace), (ember, replace_pattern_with_filters)):
        model, pattern, replacement = _rewrite_cases(lib)["two_copies"]
        gm = lib.fx.symbolic_trace(model)
        results.append((len(replace(gm, pattern, replacement, [keep_first])), gm.code))
    assert results[1][0] == results[0][0]
    _same_code(results[1][1], results[0][1])


def _variadic(lib):
    class Variadic(lib.nn.Module):
        def forward(self, *args, **kwargs):
            return lib.relu(args[0]) + args[1] * kwargs["scale"]
    return Variadic()


def test_star_args_and_kwargs_traced_as_torch():
    torch_gm = torch.fx.symbolic_trace(_variadic(torch))
    gm = ember.fx.symbolic_trace(_variadic(ember))
    _same_code(gm.code, torch_gm.code)
    assert str(gm.graph) == str(torch_gm.graph).replace("torch.", "ember.")
    a, b, s = (np.random.default_rng(i).standard_normal(3).astype(np.float32) for i in range(3))
    expected = torch_gm(torch.tensor(a), torch.tensor(b), scale=torch.tensor(s))
    result = gm(ember.tensor(a), ember.tensor(b), scale=ember.tensor(s))
    np.testing.assert_allclose(result.numpy(), expected.numpy(), rtol=1e-6)


def _small_net():
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.ReLU())
            self.register_buffer("shift", ember.arange(2.0))

        def forward(self, x):
            return ember.sigmoid(self.net(x)) + self.shift
    return Net()


def test_graph_module_survives_pickle_and_save_load():
    gm = ember.fx.symbolic_trace(_small_net())
    x = ember.randn(4, 3)
    copies = [pickle.loads(pickle.dumps(gm))]
    buffer = io.BytesIO()
    ember.save(gm, buffer)
    buffer.seek(0)
    copies.append(ember.load(buffer, weights_only=False))
    for copy in copies:
        # torch rebuilds an unpickled GraphModule under the class name "GraphModule"
        assert type(copy).__name__ == "GraphModule" and copy.code == gm.code
        assert str(copy.graph) == str(gm.graph)
        assert bool((copy(x) == gm(x)).all())
        assert list(copy.state_dict()) == list(gm.state_dict())


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
def test_tensor_metadata_memory_format_as_torch(layout):
    def arrange(lib, t):
        if layout == "channels_last":
            return t.to(memory_format=lib.channels_last)
        return t.transpose(2, 3) if layout == "transposed" else t

    array = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    formats = []
    for lib, fx, prop in ((torch, torch.fx, TorchShapeProp), (ember, ember.fx, ShapeProp)):
        gm = fx.symbolic_trace(lambda x: x * 2)
        prop(gm).propagate(arrange(lib, lib.tensor(array)))
        meta = next(n for n in gm.graph.nodes if n.op == "placeholder").meta["tensor_meta"]
        formats.append(str(meta.memory_format).split(".")[-1])
    assert formats[1] == formats[0]
