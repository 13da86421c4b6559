"""The inductor backend's inference passes (``ember/_inductor/inference.py``) against torch
eager: a ResNet-style model in eval mode with BatchNorm folded into its convolutions (and a
Linear-BatchNorm1d pair), on several inputs; the folded values computed again after the
parameters change in place, a recompile after a parameter is replaced; training mode and
graphs that need gradients of the parameters left unfolded."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, to_torch

pytestmark = pytest.mark.usefixtures("fresh_compile_state")

counters = ember._dynamo.utils.counters


def resnet(nn, conv_bias=False):
    """A small ResNet: a stem, a BasicBlock, a strided BasicBlock with a 1x1 downsample, a
    pooled linear head."""

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=conv_bias)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=conv_bias)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=conv_bias),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + (x if self.down is None else self.down(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 4, 3, 1, 1, bias=conv_bias),
                                          nn.BatchNorm2d(4), nn.ReLU(), Block(4, 4, 1),
                                          Block(4, 8, 2), nn.AdaptiveAvgPool2d(1))
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            return self.fc(self.features(x).flatten(1))

    return Net()


def _randomise(ember_model, torch_model, seed):
    """The same random parameters and running statistics in both models (BatchNorm with
    statistics far from 0 and 1, so that a fold that ignored them would show)."""
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in torch_model.state_dict().items():
        if value.dtype != torch.float32:
            state[name] = value
        elif name.endswith("running_var"):
            state[name] = torch.tensor(rng.uniform(0.3, 3.0, tuple(value.shape)),
                                       dtype=torch.float32)
        else:
            state[name] = torch.tensor(rng.standard_normal(tuple(value.shape)) * 0.5,
                                       dtype=torch.float32)
    torch_model.load_state_dict(state)
    ember_model.load_state_dict({k: ember.tensor(v.numpy()) for k, v in state.items()})


def _pair(conv_bias=False, seed=0):
    ember_model, torch_model = resnet(ember.nn, conv_bias), resnet(torch.nn, conv_bias)
    _randomise(ember_model, torch_model, seed)
    return ember_model.eval(), torch_model.eval()


def _inputs(count, shape=(2, 3, 8, 8)):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def _optimized_graph(compiled_module):
    """The graph the inductor backend runs for the compiled module's one variant."""
    from ember._inductor import backends

    seen = []
    original = backends.interpret

    def keep(graph, attrs):
        seen.append(graph)
        return original(graph, attrs)
    backends.interpret = keep
    try:
        ember._dynamo.reset()
        with ember.no_grad():
            compiled_module(ember.zeros(1, 3, 8, 8))
    finally:
        backends.interpret = original
    return seen[-1]


@pytest.mark.parametrize("conv_bias", [False, True])
def test_resnet_eval_matches_torch_eager_on_several_inputs(conv_bias):
    model, reference = _pair(conv_bias)
    compiled = ember.compile(model)
    with ember.no_grad(), torch.no_grad():
        for x in _inputs(4):
            assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)),
                        rtol=1e-4, atol=1e-5)
    assert counters["stats"]["unique_graphs"] == 1


def test_batchnorm_is_folded_into_the_convolutions():
    model, _ = _pair()
    graph = _optimized_graph(ember.compile(model))
    calls = [n.params["fn"] for n in graph.nodes if n.kind == "call"]
    ops = [n.op.name for n in graph.nodes if n.kind == "op"]
    assert calls.count("inductor.conv_bias_relu") == 6  # all six convolutions, with shifts
    assert "convolution" not in ops and "rsqrt" not in ops and "mul" not in ops
    assert not [n for n in graph.nodes if n.kind == "fused"]  # residual adds and ReLUs too


def test_in_place_parameter_changes_are_seen():
    model, reference = _pair()
    compiled = ember.compile(model)
    x = _inputs(1)[0]
    with ember.no_grad(), torch.no_grad():
        compiled(ember.tensor(x))
        _randomise(model, reference, seed=1)  # load_state_dict copies in place
        assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                    atol=1e-5)
        # an optimiser-like in-place update of one BatchNorm weight and one running mean
        bn, torch_bn = model.features[3].bn2, reference.features[3].bn2
        bn.weight.mul_(-2.0), torch_bn.weight.mul_(-2.0)
        bn.running_mean.add_(1.5), torch_bn.running_mean.add_(1.5)
        assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                    atol=1e-5)
        # a new storage under the same parameter (``.data =``)
        new = np.random.default_rng(3).standard_normal((8, 4, 3, 3)).astype(np.float32)
        model.features[4].conv1.weight.data = ember.tensor(new)
        reference.features[4].conv1.weight.data = torch.tensor(new)
        assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                    atol=1e-5)
    assert counters["stats"]["unique_graphs"] == 1  # refreshed, not recompiled


def test_replacing_a_parameter_recompiles():
    model, reference = _pair()
    compiled = ember.compile(model)
    x = _inputs(1)[0]
    with ember.no_grad(), torch.no_grad():
        compiled(ember.tensor(x))
        new = np.random.default_rng(4).uniform(0.5, 2.0, 4).astype(np.float32)
        model.features[1].weight = ember.nn.Parameter(ember.tensor(new))
        reference.features[1].weight = torch.nn.Parameter(torch.tensor(new))
        assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                    atol=1e-5)
    assert counters["stats"]["unique_graphs"] == 2


def test_training_mode_is_not_folded():
    model, reference = _pair()
    model.train(), reference.train()
    compiled = ember.compile(model)
    for x in _inputs(3):
        assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                    atol=1e-5)
    # the batch statistics were used and the running statistics updated as torch's
    for value, expected in zip(model.state_dict().values(),
                               reference.state_dict().values()):
        assert_same(value, expected, rtol=1e-4, atol=1e-5)
    model.eval(), reference.eval()
    x = _inputs(1)[0]
    with ember.no_grad(), torch.no_grad():
        assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                    atol=1e-5)


def test_eval_with_grad_gives_torch_gradients():
    model, reference = _pair()
    compiled = ember.compile(model)
    x = _inputs(1)[0]
    compiled(ember.tensor(x)).sum().backward()
    reference(torch.tensor(x)).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert_same(p.grad, q.grad, rtol=1e-4, atol=1e-5)


def test_frozen_parameters_with_grad_on_fold_and_give_input_gradients():
    model, reference = _pair()
    for p in model.parameters():
        p.requires_grad_(False)
    for p in reference.parameters():
        p.requires_grad_(False)
    compiled = ember.compile(model)
    x = _inputs(1)[0]
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    compiled(xe).sum().backward()
    reference(xt).sum().backward()
    assert_same(xe.grad, xt.grad, rtol=1e-4, atol=1e-5)
    # a parameter that starts to require grad is not served by the folded graph
    model.fc.weight.requires_grad_(True), reference.fc.weight.requires_grad_(True)
    compiled(ember.tensor(x)).sum().backward()
    reference(torch.tensor(x)).sum().backward()
    assert_same(model.fc.weight.grad, reference.fc.weight.grad, rtol=1e-4, atol=1e-5)


def test_linear_batchnorm1d_folds_into_the_matrix_product():
    def make(nn):
        return nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 3),
                             nn.BatchNorm1d(3))
    model, reference = make(ember.nn), make(torch.nn)
    _randomise(model, reference, seed=2)
    model.eval(), reference.eval()
    compiled = ember.compile(model)
    rng = np.random.default_rng(5)
    with ember.no_grad(), torch.no_grad():
        for _ in range(3):
            x = rng.standard_normal((5, 6)).astype(np.float32)
            assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                        atol=1e-5)
        model[1].running_var.mul_(2.0), reference[1].running_var.mul_(2.0)
        assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                    atol=1e-5)


def test_parameter_only_values_are_computed_once():
    w = ember.tensor([1.0, 2.0, 3.0])
    tw = torch.tensor([1.0, 2.0, 3.0])
    compiled = ember.compile(lambda x: x * (w.exp() + 1).sqrt())
    x = np.arange(3, dtype=np.float32)
    with ember.no_grad():
        assert_same(compiled(ember.tensor(x)), torch.tensor(x) * (tw.exp() + 1).sqrt())
        w.add_(1.0), tw.add_(1.0)
        assert_same(compiled(ember.tensor(x)), torch.tensor(x) * (tw.exp() + 1).sqrt())


def test_conv_bias_relu_step_matches_torch():
    from ember._inductor.inference import ConvBiasReLU
    from ember.nn._functional.conv import convolution_op

    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    r = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    params = dict(stride=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1), groups=1)
    for relu in (False, True):
        step = ConvBiasReLU(convolution_op, relu)
        got = step(ember.tensor(x), ember.tensor(w), ember.tensor(b).view(4, 1, 1),
                   ember.tensor(r), **params)
        expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w),
                                              torch.tensor(b), padding=1) + torch.tensor(r)
        assert_same(got, expected.relu() if relu else expected, rtol=1e-4, atol=1e-5)
    assert to_torch(got).min() >= 0


def test_a_function_decorated_with_no_grad_is_folded_under_grad_mode():
    from ember._inductor import backends

    model, reference = _pair()
    seen = []
    original = backends.interpret

    def keep(graph, attrs):
        seen.append(graph)
        return original(graph, attrs)

    @ember.compile
    def predict(x):
        with ember.no_grad():
            return model(x)
    x = _inputs(1)[0]
    backends.interpret = keep
    try:
        got = predict(ember.tensor(x))  # grad mode on, parameters require grad
    finally:
        backends.interpret = original
    with torch.no_grad():
        assert_same(got, reference(torch.tensor(x)), rtol=1e-4, atol=1e-5)
    assert not got.requires_grad
    assert any(n.kind == "call" and n.params["fn"] == "inductor.conv_bias_relu"
               for n in seen[-1].nodes)


def test_batch_size_changes_give_torch_results():
    model, reference = _pair()
    compiled = ember.compile(model)
    with ember.no_grad(), torch.no_grad():
        for batch in (2, 3, 5, 4):
            x = _inputs(1, (batch, 3, 8, 8))[0]
            assert_same(compiled(ember.tensor(x)), reference(torch.tensor(x)), rtol=1e-4,
                        atol=1e-5)
