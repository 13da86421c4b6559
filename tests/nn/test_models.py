"""Whole models built by the same code against ``ember.nn`` and ``torch.nn``.

For a ResNet-style CNN, an LSTM language model, an encoder-decoder Transformer and two GPT-style
decoders (one with attention written out over ``F.scaled_dot_product_attention`` and a tied
head, one from ``nn.TransformerEncoder`` with a causal mask): the state dicts agree with torch's
(keys, order, shapes, dtypes), and with torch's weights copied in, outputs (train and eval),
BatchNorm running statistics and every parameter's gradient agree in float64. A checkpoint
written by ``torch.save`` loads into the ember model (and one written by ``ember.save`` into the
torch model) and gives the same outputs.
"""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_same, to_ember, to_torch
from ember import nn

# ------------------------------------------------------------- architectures (one definition)


def _lib(mod):
    return torch if mod is torch.nn else ember


def resnet(mod, widths=(8, 16), classes=5):
    """A CIFAR-style ResNet: stem, BasicBlocks (projection shortcut on stride 2), pool, fc."""

    class BasicBlock(mod.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = mod.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = mod.BatchNorm2d(cout)
            self.conv2 = mod.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = mod.BatchNorm2d(cout)
            self.relu = mod.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = mod.Sequential(mod.Conv2d(cin, cout, 1, stride, bias=False),
                                                 mod.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    class ResNet(mod.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = mod.Conv2d(3, widths[0], 3, 1, 1, bias=False)
            self.bn1 = mod.BatchNorm2d(widths[0])
            self.relu = mod.ReLU(inplace=True)
            blocks, cin = [], widths[0]
            for i, width in enumerate(widths):
                blocks += [BasicBlock(cin, width, 1 if i == 0 else 2),
                           BasicBlock(width, width, 1)]
                cin = width
            self.layers = mod.Sequential(*blocks)
            self.pool = mod.AdaptiveAvgPool2d((1, 1))
            self.fc = mod.Linear(cin, classes)

        def forward(self, x):
            x = self.layers(self.relu(self.bn1(self.conv1(x))))
            return self.fc(self.pool(x).flatten(1))

    return ResNet()


def lstm_lm(mod, vocab=30, hidden=12, layers=2):
    """Embedding, a stacked LSTM (seq-first), a linear head; returns (logits, (h_n, c_n))."""

    class LSTMLM(mod.Module):
        def __init__(self):
            super().__init__()
            self.embed = mod.Embedding(vocab, hidden)
            self.lstm = mod.LSTM(hidden, hidden, layers)
            self.head = mod.Linear(hidden, vocab)

        def forward(self, tokens, state=None):
            out, state = self.lstm(self.embed(tokens), state)
            return self.head(out), state

    return LSTMLM()


def seq2seq(mod, vocab=20, dim=16):
    """nn.Transformer (2+2 layers, batch first) between embeddings and a linear head."""

    class Seq2Seq(mod.Module):
        def __init__(self):
            super().__init__()
            self.src_embed = mod.Embedding(vocab, dim)
            self.tgt_embed = mod.Embedding(vocab, dim)
            self.transformer = mod.Transformer(dim, 4, 2, 2, dim_feedforward=32, dropout=0.0,
                                               batch_first=True)
            self.head = mod.Linear(dim, vocab)

        def forward(self, src, tgt):
            mask = mod.Transformer.generate_square_subsequent_mask(tgt.shape[1],
                                                                   dtype=self.head.weight.dtype)
            out = self.transformer(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=mask,
                                   tgt_is_causal=True)
            return self.head(out)

    return Seq2Seq()


def gpt(mod, vocab=20, dim=16, heads=4, layers=2, context=8):
    """A GPT-style decoder: token + position embeddings, pre-norm causal blocks, tied head."""
    F = mod.functional

    class Block(mod.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = mod.LayerNorm(dim), mod.LayerNorm(dim)
            self.qkv, self.proj = mod.Linear(dim, 3 * dim), mod.Linear(dim, dim)
            self.mlp = mod.Sequential(mod.Linear(dim, 4 * dim), mod.GELU(approximate="tanh"),
                                      mod.Linear(4 * dim, dim))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.mlp(self.ln2(x))

    class GPT(mod.Module):
        def __init__(self):
            super().__init__()
            self.tok = mod.Embedding(vocab, dim)
            self.pos = mod.Embedding(context, dim)
            self.blocks = mod.ModuleList([Block() for _ in range(layers)])
            self.ln_f = mod.LayerNorm(dim)
            self.head = mod.Linear(dim, vocab, bias=False)
            self.head.weight = self.tok.weight  # tied: one parameter, two state-dict keys

        def forward(self, idx):
            x = self.tok(idx) + self.pos(_lib(mod).arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    return GPT()


def gpt_encoder(mod, vocab=20, dim=16, context=8):
    """A GPT-style decoder from nn.TransformerEncoder (norm first, GELU) and a causal mask."""

    class EncoderGPT(mod.Module):
        def __init__(self):
            super().__init__()
            self.tok = mod.Embedding(vocab, dim)
            self.pos = mod.Parameter(_lib(mod).zeros(1, context, dim))
            layer = mod.TransformerEncoderLayer(dim, 2, 32, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=True)
            self.body = mod.TransformerEncoder(layer, 2, norm=mod.LayerNorm(dim),
                                               enable_nested_tensor=False)
            self.head = mod.Linear(dim, vocab)

        def forward(self, idx):
            T = idx.shape[1]
            mask = mod.Transformer.generate_square_subsequent_mask(T, dtype=self.head.weight.dtype)
            x = self.tok(idx) + self.pos[:, :T]
            return self.head(self.body(x, mask=mask, is_causal=True))

    return EncoderGPT()


# ------------------------------------------------------------- inputs and helpers


def _inputs(name, lib, seed=0):
    rng = np.random.default_rng(seed)
    if name == "resnet":
        return (lib.tensor(rng.standard_normal((4, 3, 12, 12))),)
    if name == "lstm_lm":
        return (lib.tensor(rng.integers(0, 30, (7, 3))),)
    if name == "seq2seq":
        return (lib.tensor(rng.integers(0, 20, (2, 6))), lib.tensor(rng.integers(0, 20, (2, 5))))
    return (lib.tensor(rng.integers(0, 20, (3, 8))),)


MODELS = {"resnet": resnet, "lstm_lm": lstm_lm, "seq2seq": seq2seq, "gpt": gpt,
          "gpt_encoder": gpt_encoder}


def _build(name, dtype="float64"):
    """The model in both frameworks, torch's (random) weights copied into ember's."""
    torch.manual_seed(0)
    t_model = MODELS[name](torch.nn).to(getattr(torch, dtype))
    e_model = MODELS[name](nn).to(getattr(ember, dtype))
    e_model.load_state_dict({k: to_ember(v) for k, v in t_model.state_dict().items()})
    return e_model, t_model


def _outputs(out):
    """A model's output as a flat list of tensors (LSTM LM: logits, h_n, c_n)."""
    if isinstance(out, tuple):
        logits, (h, c) = out
        return [logits, h, c]
    return [out]


def _float_inputs(name, lib, dtype):
    return tuple(x.to(getattr(lib, dtype)) if x.is_floating_point() else x
                 for x in _inputs(name, lib))


# ------------------------------------------------------------- tests


@pytest.mark.parametrize("name", list(MODELS))
def test_state_dict_layout_matches_torch(name):
    e_model, t_model = MODELS[name](nn), MODELS[name](torch.nn)
    e_sd, t_sd = e_model.state_dict(), t_model.state_dict()
    assert list(e_sd) == list(t_sd)  # keys and their order
    for key in t_sd:
        assert tuple(e_sd[key].shape) == tuple(t_sd[key].shape)
        assert e_sd[key].dtype.name == str(t_sd[key].dtype).removeprefix("torch.")
    assert [n for n, _ in e_model.named_parameters()] == \
        [n for n, _ in t_model.named_parameters()]
    assert [n for n, _ in e_model.named_buffers()] == [n for n, _ in t_model.named_buffers()]
    assert [n for n, _ in e_model.named_modules()] == [n for n, _ in t_model.named_modules()]
    assert dict(e_sd._metadata) == dict(t_sd._metadata)
    assert repr(e_model) == repr(t_model)
    assert sum(p.numel() for p in e_model.parameters()) == \
        sum(p.numel() for p in t_model.parameters())


def test_tied_weights_share_one_parameter_like_torch():
    e_model, t_model = _build("gpt")
    assert e_model.head.weight is e_model.tok.weight
    assert len(list(e_model.parameters())) == len(list(t_model.parameters()))
    sd = e_model.state_dict()
    assert "head.weight" in sd and "tok.weight" in sd
    assert sd["head.weight"].data_ptr() == sd["tok.weight"].data_ptr()


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("name", list(MODELS))
def test_outputs_and_parameter_grads_match_torch_float64(name, mode):
    e_model, t_model = _build(name)
    e_model.train(mode == "train")
    t_model.train(mode == "train")
    e_in, t_in = _inputs(name, ember), _inputs(name, torch)
    e_outs, t_outs = _outputs(e_model(*e_in)), _outputs(t_model(*t_in))
    assert len(e_outs) == len(t_outs)
    for e_o, t_o in zip(e_outs, t_outs):
        assert_same(e_o, t_o, rtol=1e-9, atol=1e-10)
    # BatchNorm running statistics (updated in train mode only) and num_batches_tracked
    for e_b, t_b in zip(e_model.state_dict().values(), t_model.state_dict().values()):
        assert_same(e_b, t_b, rtol=1e-9, atol=1e-12)
    rng = np.random.default_rng(1)
    cot = [rng.standard_normal(tuple(t_o.shape)) for t_o in t_outs]
    sum((t_o * torch.from_numpy(c)).sum() for t_o, c in zip(t_outs, cot)).backward()
    sum((e_o * ember.tensor(c)).sum() for e_o, c in zip(e_outs, cot)).backward()
    t_params = dict(t_model.named_parameters())
    for key, e_p in e_model.named_parameters():
        t_p = t_params[key]
        assert e_p.grad is not None, key
        assert_same(e_p.grad, t_p.grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", list(MODELS))
def test_outputs_and_grads_match_torch_float32(name):
    e_model, t_model = _build(name, "float32")
    e_in, t_in = _float_inputs(name, ember, "float32"), _float_inputs(name, torch, "float32")
    e_outs, t_outs = _outputs(e_model(*e_in)), _outputs(t_model(*t_in))
    for e_o, t_o in zip(e_outs, t_outs):
        assert_same(e_o, t_o, rtol=1e-4, atol=1e-5)
    e_outs[0].square().mean().backward()
    t_outs[0].square().mean().backward()
    t_params = dict(t_model.named_parameters())
    for key, e_p in e_model.named_parameters():
        assert_same(e_p.grad, t_params[key].grad, rtol=1e-3, atol=1e-5)


def test_input_gradient_of_resnet_matches_torch():
    e_model, t_model = _build("resnet")
    x = np.random.default_rng(0).standard_normal((4, 3, 12, 12))
    e_x = ember.tensor(x, requires_grad=True)
    t_x = torch.tensor(x, requires_grad=True)
    e_model(e_x).logsumexp(1).sum().backward()
    t_model(t_x).logsumexp(1).sum().backward()
    assert_same(e_x.grad, t_x.grad, rtol=1e-8, atol=1e-10)


def test_torch_checkpoint_loads_into_ember_resnet(tmp_path):
    torch.manual_seed(3)
    t_model = resnet(torch.nn)
    t_model.train()
    t_model(torch.randn(8, 3, 12, 12))  # non-trivial running statistics
    t_model.eval()
    path = tmp_path / "resnet.pt"
    torch.save(t_model.state_dict(), path)
    e_model = resnet(nn)
    result = e_model.load_state_dict(ember.load(path))
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    e_model.eval()
    x = np.random.default_rng(4).standard_normal((2, 3, 12, 12)).astype(np.float32)
    with torch.no_grad():
        expected = t_model(torch.from_numpy(x))
    with ember.no_grad():
        assert_same(e_model(ember.tensor(x)), expected, rtol=1e-5, atol=1e-6)
    for key, value in t_model.state_dict().items():
        assert_same(e_model.state_dict()[key], value, rtol=0, atol=0)


def test_ember_checkpoint_loads_into_torch_resnet(tmp_path):
    ember.manual_seed(5)
    e_model = resnet(nn)
    e_model(ember.randn(8, 3, 12, 12))
    e_model.eval()
    path = tmp_path / "resnet.pt"
    ember.save(e_model.state_dict(), path)
    t_model = resnet(torch.nn)
    t_model.load_state_dict(torch.load(path))
    t_model.eval()
    x = np.random.default_rng(6).standard_normal((2, 3, 12, 12)).astype(np.float32)
    with torch.no_grad():
        expected = t_model(torch.from_numpy(x))
    with ember.no_grad():
        assert_same(e_model(ember.tensor(x)), expected, rtol=1e-5, atol=1e-6)


def test_lstm_state_carries_between_calls_like_torch():
    e_model, t_model = _build("lstm_lm")
    e_in, t_in = _inputs("lstm_lm", ember), _inputs("lstm_lm", torch)
    e_out, e_state = e_model(*e_in)
    t_out, t_state = t_model(*t_in)
    e_state = tuple(s.detach() for s in e_state)  # truncated BPTT
    t_state = tuple(s.detach() for s in t_state)
    e_out2, _ = e_model(e_in[0].flip(0), e_state)
    t_out2, _ = t_model(t_in[0].flip(0), t_state)
    assert_same(e_out2, t_out2, rtol=1e-9, atol=1e-10)
    assert not np.allclose(to_torch(e_out2).numpy(), to_torch(e_out).numpy())


@pytest.mark.parametrize("name", ["resnet", "gpt"])
def test_meta_device_shapes(name):
    e_model = MODELS[name](nn).to("meta")
    t_model = MODELS[name](torch.nn).to("meta")
    e_in = tuple(x.to("meta") for x in _float_inputs(name, ember, "float32"))
    t_in = tuple(x.to("meta") for x in _float_inputs(name, torch, "float32"))
    e_out, t_out = e_model(*e_in), t_model(*t_in)
    assert e_out.device.type == "meta"
    assert tuple(e_out.shape) == tuple(t_out.shape)
    assert e_out.dtype.name == str(t_out.dtype).removeprefix("torch.")
