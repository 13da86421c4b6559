"""ember.fx against torch.fx: the same models traced by both give the same graphs, code and
results."""

import copy
import inspect
import operator

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx
from ember.fx.passes.shape_prop import ShapeProp

# ---------------------------------------------------------------------------- the models
# Each model is written once against a "library" (torch or ember), so both get the same code.


def define_models(lib):
    nn, F = lib.nn, lib.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x)))

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.head = nn.Linear(4 * 4 * 4, 5)

        def forward(self, x):
            x = self.pool(nn.functional.relu(self.bn(self.conv(x))))
            return self.head(x.view(x.size(0), -1))

    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(8)
            self.downsample = nn.Sequential(nn.Conv2d(4, 8, 1, stride=2, bias=False),
                                            nn.BatchNorm2d(8))

        def forward(self, x):
            identity = self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)
            self.register_buffer("offset", lib.ones(6))

        def forward(self, x, y):
            h = F.relu(self.fc(x)) + self.offset
            both = lib.cat([h, y], 1)
            scale = self.fc.weight.sum() * 0.5
            flat = both.view(both.size(0), -1) * scale
            first, second = flat.chunk(2, dim=1)
            return lib.sigmoid(first - second), x.shape[0]

    return {"mlp": (MLP, ((2, 8),)), "cnn": (CNN, ((2, 3, 8, 8),)),
            "resnet_block": (BasicBlock, ((2, 4, 8, 8),)), "mixed": (Mixed, ((3, 6), (3, 4)))}


TORCH_MODELS, EMBER_MODELS = define_models(torch), define_models(ember)
MODEL_NAMES = list(TORCH_MODELS)


def copy_weights(torch_module, ember_module):
    state = {name: ember.tensor(value.detach().numpy())
             for name, value in torch_module.state_dict().items()}
    ember_module.load_state_dict(state)


def make_pair(name, seed=0):
    torch.manual_seed(seed)
    torch_class, shapes = TORCH_MODELS[name]
    torch_model = torch_class()
    ember_model = EMBER_MODELS[name][0]()
    copy_weights(torch_model, ember_model)
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    return (torch_model, ember_model, [torch.tensor(a) for a in arrays],
            [ember.tensor(a) for a in arrays])


# ---------------------------------------------------------------------------- normalising


def target_name(target):
    if not callable(target):
        return target
    if (getattr(target, "__module__", None) or "").startswith("ember"):
        return ember.fx.node.qualified_name(target)
    name = torch.fx.node._get_qualified_name(target)
    name = name.replace("torch._C._nn.", "torch.nn.functional.")  # where torch keeps gelu
    return name.replace("torch.", "ember.", 1) if name.startswith("torch.") else name


def node_key(node, node_type):
    def structure(value):
        if isinstance(value, node_type):
            return f"%{value.name}"
        if isinstance(value, (tuple, list)):
            return ("tuple" if isinstance(value, tuple) else "list", tuple(structure(item) for item in value))
        if isinstance(value, dict):
            return {key: structure(item) for key, item in value.items()}
        return value

    kwargs = dict(node.kwargs)
    if node.op == "call_function" and inspect.isfunction(node.target):
        # torch records a Python functional's defaults (F.relu's inplace=False) through
        # __torch_function__; ember records the call as written.
        defaults = inspect.signature(node.target).parameters
        kwargs = {key: value for key, value in kwargs.items()
                  if key not in defaults or defaults[key].default != value}
    return (node.op, node.name, target_name(node.target), structure(node.args),
            structure(kwargs))


def graph_keys(graph, node_type):
    return [node_key(node, node_type) for node in graph.nodes]


def as_ember_text(torch_text):
    """torch's printed form with ember's names; torch also prints the defaults of Python
    functionals it saw through __torch_function__ (F.relu's inplace=False), ember does not."""
    return (torch_text.replace("torch._C._nn.", "torch.nn.functional.")
            .replace("torch.", "ember.").replace(", inplace = False", "")
            .replace("kwargs = {inplace: False}", "kwargs = {}"))


def assert_same_values(ember_value, torch_value, atol=1e-5):
    if isinstance(torch_value, (torch.Tensor, ember.Tensor)):
        np.testing.assert_allclose(ember_value.detach().numpy(), torch_value.detach().numpy(),
                                   rtol=1e-5, atol=atol)
    elif isinstance(torch_value, (tuple, list)):
        assert len(ember_value) == len(torch_value)
        for e, t in zip(ember_value, torch_value):
            assert_same_values(e, t, atol)
    else:
        assert ember_value == torch_value


# ---------------------------------------------------------------------------- tracing


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_node_lists_match_torch(name):
    torch_model, ember_model, _, _ = make_pair(name)
    torch_gm = torch.fx.symbolic_trace(torch_model)
    ember_gm = ember.fx.symbolic_trace(ember_model)
    assert graph_keys(ember_gm.graph, ember.fx.Node) == graph_keys(torch_gm.graph,
                                                                   torch.fx.Node)


@pytest.mark.parametrize("name", MODEL_NAMES)
@pytest.mark.parametrize("training", [True, False])
def test_graph_module_runs_like_the_module_and_like_torch(name, training):
    torch_model, ember_model, torch_inputs, ember_inputs = make_pair(name)
    torch_model.train(training)
    ember_model.train(training)
    ember_gm = ember.fx.symbolic_trace(ember_model)
    expected_eager = ember_model(*ember_inputs)
    assert_same_values(ember_gm(*ember_inputs), torch.fx.symbolic_trace(torch_model)(
        *torch_inputs), atol=1e-4)
    # Training mode updates BatchNorm statistics: compare the traced run with a fresh eager run.
    _, fresh_model, _, _ = make_pair(name)
    fresh_model.train(training)
    np.testing.assert_allclose(
        np.asarray(ember.fx.symbolic_trace(fresh_model)(*ember_inputs)[0].detach().numpy()
                   if isinstance(expected_eager, tuple) else
                   ember.fx.symbolic_trace(fresh_model)(*ember_inputs).detach().numpy()),
        (expected_eager[0] if isinstance(expected_eager, tuple) else expected_eager)
        .detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["cnn", "resnet_block", "mlp"])
def test_generated_code_and_printed_graph_match_torch(name):
    torch_model, ember_model, _, _ = make_pair(name)
    torch_gm = torch.fx.symbolic_trace(torch_model)
    ember_gm = ember.fx.symbolic_trace(ember_model)
    assert ember_gm.code == as_ember_text(torch_gm.code)
    assert str(ember_gm.graph) == as_ember_text(str(torch_gm.graph))
    assert str(ember_gm) == as_ember_text(str(torch_gm))


def test_state_dict_and_parameters_come_from_the_root():
    torch_model, ember_model, _, ember_inputs = make_pair("resnet_block")
    gm = ember.fx.symbolic_trace(ember_model)
    # Attributes are copied in the order the graph first uses them, as torch does.
    assert list(gm.state_dict()) == list(torch.fx.symbolic_trace(torch_model).state_dict())
    assert {id(p) for p in gm.parameters()} == {id(p) for p in ember_model.parameters()}
    duplicate = copy.deepcopy(gm)
    assert all(a is not b for a, b in zip(duplicate.parameters(), gm.parameters()))
    gm.eval()
    duplicate.eval()
    np.testing.assert_array_equal(duplicate(*ember_inputs).detach().numpy(),
                                  gm(*ember_inputs).detach().numpy())
    assert duplicate.code == gm.code


def test_a_function_and_concrete_args():
    def scaled(x, factor, negate):
        return -x * factor if negate else x * factor

    gm = ember.fx.symbolic_trace(scaled, concrete_args={"negate": True})
    torch_gm = torch.fx.symbolic_trace(scaled, concrete_args={"negate": True})
    assert gm.code == torch_gm.code.replace("torch._assert", "ember._assert")
    x = ember.tensor([1.0, -2.0])
    np.testing.assert_array_equal(gm(x, 3.0, True).numpy(), scaled(x, 3.0, True).numpy())
    assert [node.op for node in gm.graph.nodes].count("placeholder") == 3
    for module in (gm, torch_gm):  # the specialized value is checked at run time
        with pytest.raises(AssertionError, match="negate has been specialized to have value "
                                                 "True but got another value"):
            module(x if module is gm else torch.tensor([1.0, -2.0]), 3.0, False)


def test_unpacking_a_proxy_matches_torch():
    def split(x):
        a, b = x.chunk(2)
        return a * b

    ember_graph = ember.fx.symbolic_trace(split).graph
    torch_graph = torch.fx.symbolic_trace(split).graph
    assert graph_keys(ember_graph, ember.fx.Node) == graph_keys(torch_graph, torch.fx.Node)


def clipped(x):
    return x.clamp(0, 1)


ember.fx.wrap("clipped")


def double(x):
    return x * 2


def test_wrap_and_autowrap_functions_record_one_call():
    gm = ember.fx.symbolic_trace(lambda x: clipped(x) + 1)
    targets = [node.target for node in gm.graph.nodes if node.op == "call_function"]
    assert targets == [clipped, operator.add]
    x = ember.tensor([-1.0, 0.5, 2.0])
    np.testing.assert_array_equal(gm(x).numpy(), (clipped(x) + 1).numpy())

    class UsesDouble(ember.nn.Module):
        def forward(self, x):
            return double(x)

    graph = ember.fx.Tracer(autowrap_functions=(double,)).trace(UsesDouble())
    assert [node.target for node in graph.nodes if node.op == "call_function"] == [double]


def test_is_leaf_module_can_be_overridden_like_torch():
    class EverythingTraced(ember.fx.Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            return isinstance(m, ember.nn.Conv2d)

    class TorchEverythingTraced(torch.fx.Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            return isinstance(m, torch.nn.Conv2d)

    torch_model, ember_model, _, _ = make_pair("mlp")
    ember_graph = EverythingTraced().trace(ember_model)
    torch_graph = TorchEverythingTraced().trace(torch_model)
    assert graph_keys(ember_graph, ember.fx.Node) == graph_keys(torch_graph, torch.fx.Node)


# ---------------------------------------------------------------------------- graph editing


def relu_to_gelu(gm, lib, fx):
    """Replace every ReLU (module, function or method) with F.gelu through the graph API."""
    relu_functions = (lib.relu, lib.nn.functional.relu)
    for node in gm.graph.nodes:
        is_relu_module = (node.op == "call_module"
                          and isinstance(gm.get_submodule(node.target), lib.nn.ReLU))
        if is_relu_module or (node.op == "call_function" and node.target in relu_functions):
            with gm.graph.inserting_after(node):
                gelu = gm.graph.call_function(lib.nn.functional.gelu, (node.args[0],))
            node.replace_all_uses_with(gelu)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_replacing_relu_with_gelu_matches_torch(name):
    torch_model, ember_model, torch_inputs, ember_inputs = make_pair(name)
    torch_model.eval()
    ember_model.eval()
    torch_gm = relu_to_gelu(torch.fx.symbolic_trace(torch_model), torch, torch.fx)
    ember_gm = relu_to_gelu(ember.fx.symbolic_trace(ember_model), ember, ember.fx)
    assert graph_keys(ember_gm.graph, ember.fx.Node) == graph_keys(torch_gm.graph,
                                                                   torch.fx.Node)
    assert ember_gm.code == as_ember_text(torch_gm.code)
    assert_same_values(ember_gm(*ember_inputs), torch_gm(*torch_inputs), atol=1e-4)


def test_erasing_a_used_node_and_linting_report_like_torch():
    def f(x):
        return (x + 1).relu()

    for fx_module in (ember.fx, torch.fx):
        graph = fx_module.symbolic_trace(f).graph
        add = next(node for node in graph.nodes if node.name == "add")
        with pytest.raises(RuntimeError, match="Tried to erase Node add but it still had 1 "
                                               r"users in the graph: \{relu: None\}!"):
            graph.erase_node(add)
        relu = next(node for node in graph.nodes if node.name == "relu")
        relu.append(add)  # now used before it is defined
        with pytest.raises(RuntimeError, match="was used before it has been defined"):
            graph.lint()


def test_dead_code_elimination_and_insertion_points_match_torch():
    def f(x):
        unused = x * 3  # noqa: F841
        return x + 1

    results = []
    for fx_module in (ember.fx, torch.fx):
        gm = fx_module.symbolic_trace(f)
        assert gm.graph.eliminate_dead_code()
        output = next(node for node in gm.graph.nodes if node.op == "output")
        with gm.graph.inserting_before(output):
            neg = gm.graph.call_function(operator.neg, (output.args[0],))
            gm.graph.call_function(operator.abs, (neg,))
        x = next(iter(gm.graph.nodes))
        with gm.graph.inserting_after(x):  # torch's reverse order within one block
            gm.graph.call_function(operator.pos, (x,))
            gm.graph.call_function(operator.invert, (x,))
        results.append([(n.op, n.name, target_name(n.target)) for n in gm.graph.nodes])
    assert results[0] == results[1]


# ---------------------------------------------------------------------------- interpreters


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_interpreter_and_transformer_round_trip(name):
    _, ember_model, _, ember_inputs = make_pair(name)
    ember_model.eval()
    gm = ember.fx.symbolic_trace(ember_model)
    assert_same_values(ember.fx.Interpreter(gm).run(*ember_inputs), gm(*ember_inputs))
    rebuilt = ember.fx.Transformer(gm).transform()
    assert graph_keys(rebuilt.graph, ember.fx.Node) == graph_keys(gm.graph, ember.fx.Node)
    assert rebuilt.code == gm.code
    assert_same_values(rebuilt(*ember_inputs), gm(*ember_inputs))


def test_transformer_subclass_matches_torch():
    def make_swapper(fx_module, lib):
        class SigmoidToTanh(fx_module.Transformer):
            def call_function(self, target, args, kwargs):
                if target is lib.sigmoid:
                    target = lib.tanh
                return super().call_function(target, args, kwargs)
        return SigmoidToTanh

    torch_model, ember_model, torch_inputs, ember_inputs = make_pair("mixed")
    torch_gm = make_swapper(torch.fx, torch)(torch.fx.symbolic_trace(torch_model)).transform()
    ember_gm = make_swapper(ember.fx, ember)(ember.fx.symbolic_trace(ember_model)).transform()
    assert graph_keys(ember_gm.graph, ember.fx.Node) == graph_keys(torch_gm.graph,
                                                                   torch.fx.Node)
    assert_same_values(ember_gm(*ember_inputs), torch_gm(*torch_inputs))


def test_interpreter_per_op_override_counts_calls():
    class CountingInterpreter(ember.fx.Interpreter):
        calls = 0

        def call_module(self, target, args, kwargs):
            CountingInterpreter.calls += 1
            return super().call_module(target, args, kwargs)

    _, ember_model, _, ember_inputs = make_pair("resnet_block")
    ember_model.eval()
    gm = ember.fx.symbolic_trace(ember_model)
    result = CountingInterpreter(gm).run(*ember_inputs)
    assert CountingInterpreter.calls == sum(node.op == "call_module" for node in gm.graph.nodes)
    np.testing.assert_array_equal(result.detach().numpy(), gm(*ember_inputs).detach().numpy())


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_shape_prop_matches_torch(name):
    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp
    torch_model, ember_model, torch_inputs, ember_inputs = make_pair(name)
    torch_gm, ember_gm = torch.fx.symbolic_trace(torch_model), ember.fx.symbolic_trace(
        ember_model)
    TorchShapeProp(torch_gm).propagate(*torch_inputs)
    ShapeProp(ember_gm).propagate(*ember_inputs)

    def describe(meta):
        if meta is None:
            return None
        if isinstance(meta, (tuple, list)) and not hasattr(meta, "shape"):
            return [describe(item) for item in meta]
        if not hasattr(meta, "shape"):
            return meta
        return (tuple(meta.shape), str(meta.dtype).split(".")[-1], meta.requires_grad,
                tuple(meta.stride))

    for torch_node, ember_node in zip(torch_gm.graph.nodes, ember_gm.graph.nodes):
        assert describe(ember_node.meta.get("tensor_meta")) == describe(
            torch_node.meta.get("tensor_meta")), torch_node.name
        assert ember_node.meta["type"].__name__ == torch_node.meta["type"].__name__


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize("fn, error, message", [
    (lambda x: x if x.sum() > 0 else -x, "TraceError",
     "symbolically traced variables cannot be used as inputs to control flow"),
    (lambda x: [item for item in x], "TraceError", "Proxy object cannot be iterated"),
    (lambda x: len(x), "RuntimeError", "'len' is not supported in symbolic tracing"),
])
def test_untraceable_code_raises_like_torch(fn, error, message):
    with pytest.raises(Exception, match=message) as torch_error:
        torch.fx.symbolic_trace(fn)
    with pytest.raises(Exception, match=message) as ember_error:
        ember.fx.symbolic_trace(fn)
    assert type(torch_error.value).__name__ == type(ember_error.value).__name__ == error
    assert isinstance(ember_error.value, type(torch_error.value).__mro__[1])
