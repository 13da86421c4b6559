"""ember.jit.script on ember's own layers whose Python lies outside TorchScript's subset
(transposed convolutions, instance norms, recurrent layers and cells, attention, transformers),
alone and inside a user model with data-dependent control flow: outputs against
torch.jit.script's on the same weights, the graph's prim::CallMethod, save in this process and
load in a fresh one that lacks the user's classes, and torch's errors."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same

RNG = np.random.default_rng(0)

# name: (constructor, input shapes); every layer is built the same way from ember.nn or torch.nn
LAYERS = {
    "ConvTranspose1d": (lambda nn: nn.ConvTranspose1d(2, 3, 3, stride=2), [(1, 2, 5)]),
    "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1,
                                                      output_padding=1), [(1, 2, 4, 4)]),
    "ConvTranspose3d": (lambda nn: nn.ConvTranspose3d(2, 3, 2, groups=1), [(1, 2, 3, 3, 3)]),
    "InstanceNorm1d": (lambda nn: nn.InstanceNorm1d(3), [(2, 3, 5)]),
    "InstanceNorm2d": (lambda nn: nn.InstanceNorm2d(3, affine=True), [(2, 3, 4, 4)]),
    "InstanceNorm3d": (lambda nn: nn.InstanceNorm3d(3, track_running_stats=True),
                       [(2, 3, 2, 3, 3)]),
    "LSTM": (lambda nn: nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True),
             [(2, 3, 4)]),
    "GRU": (lambda nn: nn.GRU(4, 5), [(3, 2, 4)]),
    "RNN": (lambda nn: nn.RNN(4, 5, nonlinearity="relu"), [(3, 2, 4)]),
    "LSTMCell": (lambda nn: nn.LSTMCell(4, 5), [(2, 4)]),
    "GRUCell": (lambda nn: nn.GRUCell(4, 5), [(2, 4)]),
    "RNNCell": (lambda nn: nn.RNNCell(4, 5), [(2, 4)]),
    "MultiheadAttention": (lambda nn: nn.MultiheadAttention(8, 2),
                           [(3, 2, 8), (4, 2, 8), (4, 2, 8)]),
    "TransformerEncoderLayer": (lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
                                [(3, 2, 8)]),
    "TransformerDecoderLayer": (lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0),
                                [(3, 2, 8), (4, 2, 8)]),
    "TransformerEncoder": (lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, enable_nested_tensor=False),
        [(3, 2, 8)]),
    "TransformerDecoder": (lambda nn: nn.TransformerDecoder(
        nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2, norm=nn.LayerNorm(8)),
        [(3, 2, 8), (4, 2, 8)]),
    "Transformer": (lambda nn: nn.Transformer(8, 2, 1, 1, 16, dropout=0.0),
                    [(4, 2, 8), (3, 2, 8)]),
}


def same_weights(make):
    """The layer from ember.nn and from torch.nn, with ember's initial parameters copied."""
    ember.manual_seed(0)
    e_layer, t_layer = make(ember.nn), make(torch.nn)
    t_layer.load_state_dict({k: torch.tensor(v.detach().numpy())
                             for k, v in e_layer.state_dict().items()})
    return e_layer, t_layer


def inputs(shapes):
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    return [ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_scripts_and_runs_as_torchs(name):
    make, shapes = LAYERS[name]
    e_layer, t_layer = same_weights(make)
    scripted, t_scripted = ember.jit.script(e_layer), torch.jit.script(t_layer)
    ex, tx = inputs(shapes)
    # torch's scripted GRU and RNN keep forward's overloads uncompiled until another scripted
    # module calls them (no ``forward`` attribute): there torch's eager layer is the reference
    t_run = t_scripted if hasattr(t_scripted, "forward") else t_layer
    assert_same(scripted(*ex), t_run(*tx), rtol=1e-4, atol=1e-5)
    # the scripted layer shares the original's parameters, as torch's
    assert {k: v.data_ptr() for k, v in scripted.state_dict().items()} == \
        {k: v.data_ptr() for k, v in e_layer.state_dict().items()}
    assert list(scripted.state_dict()) == list(t_scripted.state_dict())


def test_gradients_flow_through_a_scripted_layer_as_through_torchs():
    e_layer, t_layer = same_weights(LAYERS["GRU"][0])
    scripted = ember.jit.script(e_layer)
    (ex,), (tx,) = inputs([(3, 2, 4)])
    scripted(ex)[0].sum().backward()
    t_layer(tx)[0].sum().backward()  # torch's scripted GRU has no forward of its own
    for e_param, t_param in zip(e_layer.parameters(), t_layer.parameters()):
        assert_same(e_param.grad, t_param.grad, rtol=1e-4, atol=1e-5)


def make_tagger(lib):
    """A user model (a class of this file) around an LSTM, with data-dependent control flow."""
    nn = lib.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.lstm = nn.LSTM(4, 5, batch_first=True)
            self.head = nn.Linear(5, 3)

        def forward(self, tokens, steps: int):
            x = self.embed(tokens)
            out, (h, c) = self.lstm(x)
            for _ in range(steps):
                out, (h, c) = self.lstm(x, (h, c))
            if out.sum() > 0:
                y = self.head(out)
            else:
                y = -self.head(out)
            return y, h

    return Tagger()


def make_encoder(nn):
    """A user subclass of a layer that only chooses its constructor's arguments."""

    class Encoder(nn.TransformerEncoderLayer):
        def __init__(self):
            super().__init__(8, 2, 16, dropout=0.0)

    return Encoder()


def test_a_subclass_that_only_adds_a_constructor_is_called_as_its_layer():
    e_layer, t_layer = same_weights(make_encoder)
    scripted, t_scripted = ember.jit.script(e_layer), torch.jit.script(t_layer)
    (ex,), (tx,) = inputs([(3, 2, 8)])
    assert_same(scripted(ex), t_scripted(tx), rtol=1e-4, atol=1e-5)
    assert scripted.original_name == "Encoder"
    assert type(scripted._library_root) is ember.nn.TransformerEncoderLayer


def tagger_pair():
    ember.manual_seed(0)
    e_model, t_model = make_tagger(ember), make_tagger(torch)
    t_model.load_state_dict({k: torch.tensor(v.detach().numpy())
                             for k, v in e_model.state_dict().items()})
    return e_model, t_model


TOKENS = np.array([[1, 4, 2, 7], [3, 3, 9, 0]])


@pytest.mark.parametrize("steps", [0, 1, 3])
def test_user_model_with_an_lstm_and_control_flow_matches_torch(steps):
    e_model, t_model = tagger_pair()
    scripted, t_scripted = ember.jit.script(e_model), torch.jit.script(t_model)
    assert_same(scripted(ember.tensor(TOKENS), steps), t_scripted(torch.tensor(TOKENS), steps),
                rtol=1e-4, atol=1e-5)
    text = str(scripted.graph)
    assert 'prim::GetAttr[name="lstm"]' in text and 'prim::CallMethod[name="forward"](%lstm' in text
    assert "prim::Loop" in text and "prim::If" in text
    assert "(vlstm).forward(" in scripted.code


LOADER = """
import json, sys
import ember
results = {}
inputs = ember.load("inputs.pt")
for name in sys.argv[1:]:
    model = ember.jit.load(name + ".pt")
    results[name] = [model(*args) for args in inputs[name]]
ember.save(results, "outputs.pt")
print(json.dumps({"user_classes_absent": "test_script_library" not in sys.modules,
                  "torch_absent": "torch" not in sys.modules}))
"""


def test_save_and_load_in_a_fresh_process_without_the_classes(tmp_path):
    expected, saved_inputs = {}, {}
    for name, (make, shapes) in LAYERS.items():
        e_layer, t_layer = same_weights(make)
        ember.jit.script(e_layer).save(tmp_path / f"{name}.pt")
        ex, tx = inputs(shapes)
        saved_inputs[name] = [ex]
        t_scripted = torch.jit.script(t_layer)
        expected[name] = [(t_scripted if hasattr(t_scripted, "forward") else t_layer)(*tx)]
    e_layer, t_layer = same_weights(make_encoder)  # a subclass defined in this file
    ember.jit.script(e_layer).save(tmp_path / "subclass.pt")
    ex, tx = inputs([(3, 2, 8)])
    saved_inputs["subclass"], expected["subclass"] = [ex], [torch.jit.script(t_layer)(*tx)]
    e_model, t_model = tagger_pair()
    ember.jit.save(ember.jit.script(e_model), tmp_path / "tagger.pt")
    t_scripted = torch.jit.script(t_model)
    saved_inputs["tagger"] = [[ember.tensor(TOKENS), steps] for steps in (0, 2)]
    expected["tagger"] = [t_scripted(torch.tensor(TOKENS), steps) for steps in (0, 2)]
    ember.save(saved_inputs, tmp_path / "inputs.pt")
    (tmp_path / "loader.py").write_text(LOADER)
    done = subprocess.run([sys.executable, "loader.py", *expected], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "user_classes_absent": True, "torch_absent": True}
    outputs = ember.load(tmp_path / "outputs.pt")
    for name, want in expected.items():
        assert_same(outputs[name], want, rtol=1e-4, atol=1e-5)


def test_loaded_layer_is_the_layer_with_its_state_and_modes(tmp_path):
    e_layer, t_layer = same_weights(LAYERS["LSTM"][0])
    ember.jit.script(e_layer).save(tmp_path / "lstm.pt")
    loaded = ember.jit.load(tmp_path / "lstm.pt")
    assert (loaded.hidden_size, loaded.num_layers, loaded.bidirectional) == (5, 2, True)
    assert list(loaded.state_dict()) == list(t_layer.state_dict())
    layer, t_enc = same_weights(LAYERS["TransformerEncoderLayer"][0])
    ember.jit.script(layer).save(tmp_path / "enc.pt")
    enc = ember.jit.load(tmp_path / "enc.pt")
    assert isinstance(enc.self_attn, ember.nn.MultiheadAttention)
    enc.eval()
    t_enc.eval()
    (ex,), (tx,) = inputs([(3, 2, 8)])
    assert_same(enc(ex), torch.jit.script(t_enc)(tx), rtol=1e-4, atol=1e-5)


def test_a_layer_holding_an_unsaveable_function_scripts_but_refuses_to_save(tmp_path):
    def twice(x):
        return 2 * x

    layer = ember.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=twice)
    scripted = ember.jit.script(layer)
    (ex,), _ = inputs([(3, 2, 8)])
    assert_same(scripted(ex), torch.tensor(layer(ex).detach().numpy()))
    with pytest.raises(RuntimeError, match="'activation'.*cannot be saved"):
        scripted.save(tmp_path / "twice.pt")


def test_user_code_outside_the_subset_is_refused_as_torch_with_layers_inside():
    for lib in (torch, ember):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = lib.nn.LSTM(2, 3)

            def forward(self, x):
                f = lambda v: v + 1  # noqa: E731 - the construct TorchScript refuses
                return f(self.lstm(x)[0])

        with pytest.raises(lib.jit.frontend.UnsupportedNodeError):
            lib.jit.script(Net())


def test_a_layer_with_weight_norms_hook_keeps_it_when_scripted(tmp_path):
    ember.manual_seed(0)
    e_layer = ember.nn.utils.weight_norm(ember.nn.Linear(3, 2))  # a forward pre-hook
    t_layer = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2))  # (torch cannot script it)
    t_layer.load_state_dict({k: torch.tensor(v.detach().numpy())
                             for k, v in e_layer.state_dict().items()})
    scripted = ember.jit.script(e_layer)
    with ember.no_grad():
        e_layer.weight_g.mul_(2.0)  # the hook recomputes the weight from the shared g and v
    with torch.no_grad():
        t_layer.weight_g.mul_(2.0)
    (ex,), (tx,) = inputs([(2, 3)])
    assert_same(scripted(ex), t_layer(tx), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="_forward_pre_hooks.*cannot be saved"):
        scripted.save(tmp_path / "hooked.pt")


def test_a_scripted_layer_checks_its_arguments_as_torchs():
    for lib in (torch, ember):
        scripted = lib.jit.script(lib.nn.Linear(2, 2))
        with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument "
                                               "'input' but instead found type 'int'"):
            scripted(3)
        with pytest.raises(RuntimeError, match="expected at most 2 argument"):
            scripted(lib.ones(2), lib.ones(2))


def test_moving_a_scripted_layer_to_float64_moves_the_layer_as_torchs():
    e_layer, t_layer = same_weights(LAYERS["MultiheadAttention"][0])
    scripted, t_scripted = ember.jit.script(e_layer).double(), torch.jit.script(t_layer).double()
    ex, tx = inputs(LAYERS["MultiheadAttention"][1])
    assert_same(scripted(*[x.double() for x in ex]), t_scripted(*[x.double() for x in tx]),
                rtol=1e-10, atol=1e-12)
