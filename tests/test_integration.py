"""End to end: models train on generated data with ember.optim and ember.utils.data, and a
training run checkpointed with ember.save and resumed in fresh objects continues exactly.

Each training test checks that the loss falls clearly (the last epoch's mean loss is a small
fraction of the first's) and that the trained model does its task on held-out data. The data
are generated from seeded NumPy generators, so the tests are deterministic.
"""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader, TensorDataset

pytestmark = pytest.mark.usefixtures("one_ember_thread")


def _fit(model, loader, optimizer, loss_fn, epochs, scheduler=None, clip=None):
    """Train; return the mean loss of every epoch."""
    means = []
    model.train()
    for _ in range(epochs):
        total, count = 0.0, 0
        for batch in loader:
            optimizer.zero_grad()
            loss = loss_fn(model, *batch)
            loss.backward()
            if clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            total += loss.item()
            count += 1
        means.append(total / count)
    return means


# ------------------------------------------------------------- a small CNN


def _quadrant_images(n, seed):
    """1x12x12 noise images with a bright 3x3 patch somewhere in quadrant ``label`` (4 classes)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, n)
    images = rng.normal(0.0, 0.5, (n, 1, 12, 12)).astype(np.float32)
    rows = (labels // 2) * 6 + rng.integers(0, 4, n)
    cols = (labels % 2) * 6 + rng.integers(0, 4, n)
    for dr in range(3):
        for dc in range(3):
            images[np.arange(n), 0, rows + dr, cols + dc] += 2.0
    return ember.tensor(images), ember.tensor(labels)


def test_small_cnn_learns_quadrants():
    ember.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
    head = nn.Linear(8 * 3 * 3, 4)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.head = model, head

        def forward(self, x):
            return self.head(self.body(x).flatten(1))

    net = Net()
    loader = DataLoader(TensorDataset(*_quadrant_images(512, seed=1)), batch_size=32,
                        shuffle=True)
    optimizer = ember.optim.Adam(net.parameters(), lr=5e-3)
    means = _fit(net, loader, optimizer, lambda m, x, y: F.cross_entropy(m(x), y), epochs=4)
    assert means[0] > 0.6, means  # starts near chance (log 4 = 1.39)
    assert means[-1] < 0.25 * means[0], means
    x, y = _quadrant_images(256, seed=2)
    net.eval()
    with ember.no_grad():
        accuracy = (net(x).argmax(1) == y).float().mean().item()
    assert accuracy > 0.9, accuracy


# ------------------------------------------------------------- sequence data for the LMs

VOCAB, STEPS = 16, (1, 3)


def _progressions(n, length, seed):
    """Sequences ``x[t] = (x0 + step * t) % VOCAB`` with a random start and step from STEPS."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, VOCAB, (n, 1))
    step = np.asarray(STEPS)[rng.integers(0, len(STEPS), (n, 1))]
    seq = (start + step * np.arange(length + 1)) % VOCAB
    return ember.tensor(seq[:, :-1]), ember.tensor(seq[:, 1:])


def _lm_loss(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


def _held_out_accuracy(model, length):
    """Next-token accuracy from the third position on (where the step is determined)."""
    x, y = _progressions(128, length, seed=99)
    model.eval()
    with ember.no_grad():
        predictions = model(x).argmax(-1)
    return (predictions[:, 2:] == y[:, 2:]).float().mean().item()


class LSTMLM(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, hidden)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, VOCAB)

    def forward(self, x):
        return self.head(self.lstm(self.embed(x))[0])


def test_lstm_language_model_learns_progressions():
    ember.manual_seed(0)
    model = LSTMLM()
    loader = DataLoader(TensorDataset(*_progressions(384, 12, seed=1)), batch_size=32,
                        shuffle=True)
    optimizer = ember.optim.Adam(model.parameters(), lr=1e-2)
    means = _fit(model, loader, optimizer, _lm_loss, epochs=5, clip=1.0)
    assert means[0] > 1.5, means  # starts near log 16 = 2.77
    assert means[-1] < 0.3 * means[0], means
    assert _held_out_accuracy(model, 12) > 0.9


class GPT(nn.Module):
    """Token + position embeddings, pre-norm causal self-attention blocks, a tied head."""

    def __init__(self, dim=32, heads=4, layers=2, context=16):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(dim), "qkv": nn.Linear(dim, 3 * dim),
                "proj": nn.Linear(dim, dim), "ln2": nn.LayerNorm(dim),
                "mlp": nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                     nn.Linear(4 * dim, dim))}))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB, bias=False)
        self.head.weight = self.tok.weight
        self.heads = heads

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(ember.arange(T))
        for b in self.blocks:
            C = x.shape[-1]
            q, k, v = b["qkv"](b["ln1"](x)).split(C, dim=2)
            q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                       for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + b["proj"](y.transpose(1, 2).reshape(B, T, C))
            x = x + b["mlp"](b["ln2"](x))
        return self.head(self.ln_f(x))


def test_gpt_decoder_learns_progressions():
    ember.manual_seed(0)
    model = GPT()
    loader = DataLoader(TensorDataset(*_progressions(384, 12, seed=1)), batch_size=32,
                        shuffle=True)
    optimizer = ember.optim.Adam(model.parameters(), lr=3e-3)
    means = _fit(model, loader, optimizer, _lm_loss, epochs=6, clip=1.0)
    assert means[0] > 1.5, means
    assert means[-1] < 0.3 * means[0], means
    assert _held_out_accuracy(model, 12) > 0.9


def test_training_with_worker_processes():
    """The same CNN data through a 2-worker DataLoader: batches arrive whole, loss falls."""
    ember.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(4),
                        _Flatten(),
                        nn.Linear(4 * 3 * 3, 4))
    loader = DataLoader(TensorDataset(*_quadrant_images(256, seed=3)), batch_size=32,
                        shuffle=True, num_workers=2, persistent_workers=True)
    optimizer = ember.optim.Adam(net.parameters(), lr=1e-2)
    means = _fit(net, loader, optimizer, lambda m, x, y: F.cross_entropy(m(x), y), epochs=4)
    assert means[-1] < 0.5 * means[0], means


class _Flatten(nn.Module):  # nn.Flatten is not in ember yet
    def forward(self, x):
        return x.flatten(1)


# ------------------------------------------------------------- checkpoint round trip


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.drop, self.fc2 = nn.Linear(6, 16), nn.Dropout(0.2), nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.drop(self.fc1(x).relu()))


def _regression_data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    return TensorDataset(ember.tensor(x), ember.tensor(np.tanh(x @ w)))


def _fresh():
    model = _MLP()
    optimizer = ember.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-3)
    scheduler = ember.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    loader = DataLoader(_regression_data(), batch_size=16, shuffle=True)
    return model, optimizer, scheduler, loader


def _mse(model, x, y):
    return F.mse_loss(model(x), y)


def test_checkpoint_round_trip_continues_exactly(tmp_path):
    epochs, split = 6, 3
    ember.manual_seed(11)
    model, optimizer, scheduler, loader = _fresh()
    straight = _fit(model, loader, optimizer, _mse, epochs, scheduler=scheduler)
    expected_params = {k: v.clone() for k, v in model.state_dict().items()}
    expected_lr = scheduler.get_last_lr()

    ember.manual_seed(11)
    model, optimizer, scheduler, loader = _fresh()
    first = _fit(model, loader, optimizer, _mse, split, scheduler=scheduler)
    path = tmp_path / "checkpoint.pt"
    ember.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "rng": ember.get_rng_state(),
                "epoch": split}, path)
    del model, optimizer, scheduler, loader

    ember.manual_seed(12345)  # fresh objects start from different weights and RNG state
    model, optimizer, scheduler, loader = _fresh()
    checkpoint = ember.load(path)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    ember.set_rng_state(checkpoint["rng"])
    assert checkpoint["epoch"] == split
    second = _fit(model, loader, optimizer, _mse, epochs - split, scheduler=scheduler)

    assert first + second == straight  # per-epoch losses equal exactly
    assert straight[-1] < 0.8 * straight[0], straight  # it trains (dropout, decaying LR)
    assert scheduler.get_last_lr() == expected_lr
    assert math.isclose(expected_lr[0], 1e-2 * 0.5 ** (epochs * 4 // 5))
    for key, value in model.state_dict().items():
        assert ember.equal(value, expected_params[key]), key
