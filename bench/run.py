"""Side-by-side benchmarks: ember against PyTorch in one process, printed as ratios.

Run ``python bench/run.py`` (after ``bash scripts/setup_env.sh``; torch must be installed) to
print the table and rewrite ``docs/benchmarks.md``. Each case times the same work in both
frameworks with the best of several repeats; a ratio below 1 means ember is faster.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ember

# torch.compile's kernel cache: a folder of the benchmark's own (set before torch reads it),
# kept between runs so that a repeat run does not spend a minute on torch's cold compiles;
# the torch.compile rows' notes say when kernels came from it. Point
# TORCHINDUCTOR_CACHE_DIR at an empty folder to time torch's cold compile.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                      os.path.join(tempfile.gettempdir(), "ember-bench-inductor"))

try:
    import torch
except ImportError:  # the table notes what could not be compared
    torch = None

ROOT = Path(__file__).resolve().parents[1]


def best_time(fn, repeat=7, min_time=0.2):
    """Best per-call time of ``fn`` over ``repeat`` rounds of at least ``min_time`` seconds."""
    return best_times([fn], repeat, min_time)[0]


def _calls_per_round(fn, min_time):
    fn()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - start >= min_time / 4:
            return calls
        calls *= 4


def best_times(fns, repeat=7, min_time=0.2):
    """Best per-call time of each of ``fns``, their rounds interleaved.

    Alternating the frameworks round by round exposes both to the same background load on a
    shared machine, so a burst of load from elsewhere does not land on one side only.
    """
    calls = [_calls_per_round(fn, min_time) for fn in fns]
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(calls[i]):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / calls[i])
    return best


# ---------------------------------------------------------------- cases


def small_add(fw):
    a, b = fw.ones(8), fw.ones(8)
    return lambda: a + b


def small_add_requires_grad(fw):
    a, b = fw.ones(8, requires_grad=True), fw.ones(8)
    return lambda: a + b


def matmul_1024(fw):
    rng = np.random.default_rng(0)
    a = fw.tensor(rng.standard_normal((1024, 1024), dtype=np.float32))
    b = fw.tensor(rng.standard_normal((1024, 1024), dtype=np.float32))
    return lambda: a @ b


def _eager(fw, fn):
    """The function itself: the eager column."""
    return fn


def pointwise_chain_backward(fw, wrap=_eager):
    x = fw.ones(16, requires_grad=True)

    def forward(x):
        y = x
        for i in range(50):
            y = y * 1.01 if i % 2 else (y + 0.5).tanh()
        return y.sum()
    forward = wrap(fw, forward)
    return lambda: forward(x).backward()


def mlp_step(fw, wrap=_eager):
    rng = np.random.default_rng(0)
    w1 = fw.tensor(rng.standard_normal((784, 256), dtype=np.float32) * 0.05, requires_grad=True)
    w2 = fw.tensor(rng.standard_normal((256, 10), dtype=np.float32) * 0.05, requires_grad=True)
    x = fw.tensor(rng.standard_normal((64, 784), dtype=np.float32))
    target = fw.tensor(rng.standard_normal((64, 10), dtype=np.float32))

    def loss_of(x, target):
        hidden = (x @ w1).tanh()
        return ((hidden @ w2 - target) ** 2).mean()
    loss_of = wrap(fw, loss_of)

    def step():
        loss_of(x, target).backward()
        with fw.no_grad():
            for w in (w1, w2):
                w.sub_(w.grad * 0.01)
                w.grad = None
    return step


def _inference_mlp(fw):
    nn = fw.nn
    model = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Sigmoid(),
                          nn.Linear(256, 10)).eval()
    _same_weights(fw, model)
    x = fw.tensor(np.random.default_rng(0).standard_normal((32, 64), dtype=np.float32))
    return model, x


def _pointwise_fn(x):
    for i in range(50):
        x = x * 1.01 if i % 2 else (x + 0.5).tanh()
    return x


def _jit_optimized(fw, model, x):
    import warnings

    with warnings.catch_warnings():  # torch.jit's deprecation notices
        warnings.simplefilter("ignore")
        traced = fw.jit.trace(model, x)
        return fw.jit.optimize_for_inference(traced) if isinstance(model, fw.nn.Module) \
            else traced


def mlp_inference(fw):
    model, x = _inference_mlp(fw)

    def step():
        with fw.no_grad():
            model(x)
    return step


def mlp_inference_jit(fw):
    model, x = _inference_mlp(fw)
    fast = _jit_optimized(fw, model, x)

    def step():
        with fw.no_grad():
            fast(x)
    return step


def pointwise_inference(fw):
    x = fw.ones(1000)
    return lambda: _pointwise_fn(x)


def pointwise_inference_jit(fw):
    x = fw.ones(1000)
    if fw is torch:  # torch's optimize_for_inference takes modules only: the trace alone
        fast = _jit_optimized(fw, _pointwise_fn, x)
    else:
        fast = ember.jit.optimize_for_inference(ember.jit.trace(_pointwise_fn, x))
    return lambda: fast(x)


# ------------------------------------------------ models (one definition, both frameworks)


def per_sample_grads(fw):
    """torch.func's tutorial pattern: vmap(grad(loss through functional_call)) over a batch."""
    nn = fw.nn
    fw.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    rng = np.random.default_rng(0)
    x = fw.tensor(rng.standard_normal((64, 64), dtype=np.float32))
    y = fw.tensor(rng.integers(0, 10, 64))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def sample_loss(params, sample, target):
        out = fw.func.functional_call(model, params, (sample.unsqueeze(0),))
        return nn.functional.cross_entropy(out, target.unsqueeze(0))

    per_sample = fw.func.vmap(fw.func.grad(sample_loss), in_dims=(None, 0, 0))
    return lambda: per_sample(params, x, y)


def _lib(nn):
    """The framework (``ember`` or ``torch``) whose ``nn`` module this is."""
    return torch if torch is not None and nn is torch.nn else ember


def lenet5(nn):
    """LeNet-5 for 1x28x28 inputs (padding 2 on the first convolution), ReLU and max pooling."""

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
            self.classifier = nn.Sequential(
                nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                nn.Linear(84, 10))

        def forward(self, x):
            return self.classifier(self.features(x).flatten(1))

    return LeNet5()


def resnet_small(nn, widths=(16, 32, 64), classes=10):
    """A CIFAR-style ResNet: a stem and one BasicBlock per width (stride 2 after the first)."""

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    layers = [nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]),
              nn.ReLU()]
    cin = widths[0]
    for i, width in enumerate(widths):
        layers.append(BasicBlock(cin, width, 1 if i == 0 else 2))
        cin = width

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1))
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            return self.fc(self.features(x).flatten(1))

    return ResNet()


def lstm_lm(nn, vocab=10000, hidden=200, layers=2, dropout=0.0):
    """An LSTM language model: embedding, a stacked LSTM (seq-first), a linear head."""

    class LSTMLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.lstm = nn.LSTM(hidden, hidden, layers, dropout=dropout)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, tokens, state=None):
            out, state = self.lstm(self.embed(tokens), state)
            return self.head(out), state

    return LSTMLM()


def gpt_small(nn, vocab=256, dim=128, heads=4, layers=2, context=64):
    """A GPT-style decoder: token + position embeddings, pre-norm causal blocks, tied head."""
    F = nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, dim)
            self.pos = nn.Embedding(context, dim)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, idx):
            positions = _lib(nn).arange(idx.shape[1])
            return self.head(self.ln_f(self.blocks(self.tok(idx) + self.pos(positions))))

    return GPT()


def _same_weights(fw, model):
    """Seed-independent weights: the same NumPy draws in both frameworks."""
    rng = np.random.default_rng(0)
    with fw.no_grad():
        for p in model.parameters():
            scale = 0.05 if p.dim() > 1 else 0.01
            p.copy_(fw.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * scale))
    return model


def _train_step(fw, model, optimizer, inputs, target, loss_of, clip=None):
    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(model(inputs), target)
        loss.backward()
        if clip is not None:
            fw.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
    return step


def lenet_step(fw):
    rng = np.random.default_rng(0)
    model = _same_weights(fw, lenet5(fw.nn))
    x = fw.tensor(rng.standard_normal((64, 1, 28, 28), dtype=np.float32))
    y = fw.tensor(rng.integers(0, 10, 64))
    opt = fw.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return _train_step(fw, model, opt, x, y, fw.nn.functional.cross_entropy)


def resnet_step(fw):
    rng = np.random.default_rng(0)
    model = _same_weights(fw, resnet_small(fw.nn)).train()
    x = fw.tensor(rng.standard_normal((32, 3, 32, 32), dtype=np.float32))
    y = fw.tensor(rng.integers(0, 10, 32))
    opt = fw.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    return _train_step(fw, model, opt, x, y, fw.nn.functional.cross_entropy)


def lstm_step(fw, wrap=_eager):
    rng = np.random.default_rng(0)
    model = _same_weights(fw, lstm_lm(fw.nn))
    x = fw.tensor(rng.integers(0, 10000, (35, 20)))
    y = fw.tensor(rng.integers(0, 10000, (35, 20)))
    opt = fw.optim.SGD(model.parameters(), lr=1.0)

    def loss_of(output, target):
        return fw.nn.functional.cross_entropy(output[0].flatten(0, 1), target.flatten())
    return _train_step(fw, wrap(fw, model), opt, x, y, loss_of, clip=0.25)


def gpt_step(fw, wrap=_eager):
    rng = np.random.default_rng(0)
    model = _same_weights(fw, gpt_small(fw.nn))
    x = fw.tensor(rng.integers(0, 256, (16, 64)))
    y = fw.tensor(rng.integers(0, 256, (16, 64)))
    opt = fw.optim.AdamW(model.parameters(), lr=3e-4)

    def loss_of(logits, target):
        return fw.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
    return _train_step(fw, wrap(fw, model), opt, x, y, loss_of, clip=1.0)


# ------------------------------------------------ compiled: ember.compile against torch eager


def _compiled(fw, fn):
    """``ember.compile(fn)`` for ember; torch's side stays eager (the column to beat)."""
    return fw.compile(fn) if fw is ember else fn


def pointwise_chain_backward_compiled(fw):
    return pointwise_chain_backward(fw, wrap=_compiled)


def mlp_step_compiled(fw):
    return mlp_step(fw, wrap=_compiled)


def gpt_step_compiled(fw):
    return gpt_step(fw, wrap=_compiled)


def lstm_step_compiled(fw):
    return lstm_step(fw, wrap=_compiled)


def resnet_inference_compiled(fw):
    return resnet_inference(fw, wrap=_compiled)


# ------------------------------------------------ compiled: ember.compile against torch.compile


_FIRST_CALLS = {}  # framework name -> seconds of its first call (the compile) in the last case


def _both_compiled(fw, fn):
    """``ember.compile(fn)`` for ember and ``torch.compile(fn)`` for torch."""
    return fw.compile(fn)


def _against_torch_compile(case):
    """A compiled case on both sides; its first call, the compile, is timed here (outside the
    rounds) and reported in the row's note, with the frames torch.compile left eager."""
    def make(fw):
        step = case(fw, wrap=_both_compiled)
        frames = _torch_frames() if fw is torch else None
        start = time.perf_counter()
        step()
        _FIRST_CALLS[fw.__name__] = time.perf_counter() - start
        if frames is not None:
            total, ok, hits = (after - before for after, before in zip(_torch_frames(), frames))
            if total > ok:
                _FIRST_CALLS["torch frames left eager"] = total - ok
            if hits:
                _FIRST_CALLS["torch cache hits"] = hits
        return step
    return make


def _cpu_name():
    """``, <the CPU's model name> (<its widest SIMD level>)`` where Linux says it: absolute
    times differ several-fold between the machines the project is lent."""
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name")), "")
    except OSError:
        return ""
    return f", {name} ({ember.backends.cpu.get_cpu_capability()})" if name else ""


def _torch_frames():
    """torch.compile's frames seen and compiled, and its kernel-cache hits so far."""
    counters = torch._dynamo.utils.counters
    return (counters["frames"]["total"], counters["frames"]["ok"],
            counters["inductor"]["fxgraph_cache_hit"])


def _first_calls_note():
    if not _FIRST_CALLS:
        return ""
    left_eager = _FIRST_CALLS.pop("torch frames left eager", 0)
    hits = _FIRST_CALLS.pop("torch cache hits", 0)
    note = "first call (compile): " + ", ".join(
        f"{name} {seconds:.2f} s" for name, seconds in _FIRST_CALLS.items())
    if hits:
        note += f" (torch: {hits} graph(s) from its kernel cache, " \
                f"{os.environ['TORCHINDUCTOR_CACHE_DIR']})"
    if left_eager:
        note += f"; torch.compile left {left_eager} of its frames eager (dynamo could not " \
                "trace them)"
    _FIRST_CALLS.clear()
    return note


def resnet_inference(fw, wrap=_eager):
    rng = np.random.default_rng(0)
    model = wrap(fw, _same_weights(fw, resnet_small(fw.nn)).eval())
    x = fw.tensor(rng.standard_normal((32, 3, 32, 32), dtype=np.float32))

    def step():
        with fw.no_grad():
            model(x)
    return step


def _loader_epoch(workers):
    def make(fw):
        rng = np.random.default_rng(0)
        data = fw.utils.data.TensorDataset(
            fw.tensor(rng.standard_normal((10000, 1, 28, 28), dtype=np.float32)),
            fw.tensor(rng.integers(0, 10, 10000)))
        loader = fw.utils.data.DataLoader(data, batch_size=64, shuffle=True,
                                          num_workers=workers)

        def epoch():
            seen = 0
            for x, _ in loader:
                seen += x.shape[0]
            assert seen == 10000
        return epoch
    return make


_STATE_MB = 200


def _big_state(fw):
    """A 200 MB float32 state dict: 50 tensors of 1M elements (4 MB each)."""
    rng = np.random.default_rng(0)
    n = _STATE_MB // 4
    return {f"layer{i}.weight": fw.tensor(rng.standard_normal((1000, 1000), dtype=np.float32))
            for i in range(n)}


def _tmp_path(fw, what):
    folder = Path(tempfile.gettempdir()) / f"ember-bench-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    _CLEANUP.append(folder)
    return folder / f"{fw.__name__}-{what}.pt"


_CLEANUP = []


def save_state(fw):
    state = _big_state(fw)
    path = _tmp_path(fw, "save")
    return lambda: fw.save(state, path)


def load_state(fw):
    path = _tmp_path(fw, "load")
    fw.save(_big_state(fw), path)
    return lambda: fw.load(path)


_QUEUE_MB = 100


def _echo_first_element(inbox, outbox):
    """Consumer process: for each array or tensor received, send back its first element."""
    while (item := inbox.get()) is not None:
        outbox.put(float(item.reshape(-1)[0]))


def _round_trip_through(context, payload):
    """A function that sends ``payload`` to a long-lived consumer process and waits for the reply.

    The consumer reads the payload's first element, so the data has really arrived.
    """
    inbox, outbox = context.Queue(), context.Queue()
    consumer = context.Process(target=_echo_first_element, args=(inbox, outbox), daemon=True)
    consumer.start()
    _CONSUMERS.append((consumer, inbox))

    def round_trip():
        inbox.put(payload)
        assert outbox.get(timeout=60) == 0.0
    return round_trip


def queue_tensor(fw):
    """A 100 MB float32 tensor sent through the framework's own multiprocessing Queue.

    The first put moves the tensor into shared memory (in both frameworks); the timed rounds
    send the handle of memory that is already shared, as Hogwild and DataLoader workers do.
    """
    tensor = fw.zeros(_QUEUE_MB * 2**20 // 4)
    return _round_trip_through(fw.multiprocessing.get_context("fork"), tensor)


def queue_pickled_copy():
    """The baseline of issue 5: the same 100 MB sent as a pickled copy (NumPy array, stdlib)."""
    import multiprocessing
    array = np.zeros(_QUEUE_MB * 2**20 // 4, dtype=np.float32)
    return _round_trip_through(multiprocessing.get_context("fork"), array)


_CONSUMERS = []


CASES = [
    ("a + b, 8 float32 elements", small_add, "time", "issue 2: at most 2x"),
    ("a + b, 8 float32 elements, a requires grad", small_add_requires_grad, "time",
     "issue 17: at most 1.5x"),
    ("matmul 1024x1024 float32", matmul_1024, "gflops:2147483648", "issue 2: at least 0.9x"),
    ("50 pointwise ops forward+backward", pointwise_chain_backward, "time", "issue 3: at most 3x"),
    ("MLP 784-256-10 step, batch 64 (raw ops)", mlp_step, "time", "issue 3: at most 1.5x"),
    ("MLP 64-256-256-10 inference, batch 32, eager", mlp_inference, "time", "-"),
    ("MLP 64-256-256-10 inference, batch 32, jit.trace + optimize_for_inference",
     mlp_inference_jit, "time", "-"),
    ("50 pointwise ops forward, 1000 elements, eager", pointwise_inference, "time", "-"),
    ("50 pointwise ops forward, 1000 elements, jit.trace (+ ember's fusion)",
     pointwise_inference_jit, "time", "-"),
    ("per-sample gradients, MLP 64-32-10, batch 64, vmap(grad)", per_sample_grads, "time",
     "at most 3x"),
    ("LeNet-5 SGD step, batch 64, 1x28x28", lenet_step, "time", "at most 2x"),
    ("ResNet (3 BasicBlocks, BatchNorm) SGD step, batch 32, 3x32x32", resnet_step, "time",
     "at most 2x"),
    ("LSTM LM step: seq 35, batch 20, 2x200, vocab 10k head", lstm_step, "time", "at most 2x"),
    ("GPT step: 2 layers, d 128, 4 heads, context 64, batch 16", gpt_step, "time",
     "at most 2x"),
    ("ResNet (3 BasicBlocks) inference, batch 32, 3x32x32, eager", resnet_inference, "time",
     "-"),
    ("compiled: 50 pointwise ops forward+backward (torch column: eager)",
     pointwise_chain_backward_compiled, "time", "issue 14: at most 0.5x"),
    ("compiled: MLP 784-256-10 step, batch 64 (torch column: eager)", mlp_step_compiled,
     "time", "issue 14: at most 0.7x"),
    ("compiled: GPT step, 2 layers, d 128, batch 16 (torch column: eager)", gpt_step_compiled,
     "time", "issue 14: at most 0.7x"),
    ("compiled: LSTM LM step, seq 35, batch 20 (torch column: eager)", lstm_step_compiled,
     "time", "issue 14: at most 0.7x"),
    ("compiled: ResNet (3 BasicBlocks) inference, batch 32 (torch column: eager)",
     resnet_inference_compiled, "time", "issue 14: at most 0.8x"),
    ("compiled: 50 pointwise ops forward+backward (torch column: torch.compile)",
     _against_torch_compile(pointwise_chain_backward), "time", "issue 14: at most 1x", 3),
    ("compiled: MLP 784-256-10 step, batch 64 (torch column: torch.compile)",
     _against_torch_compile(mlp_step), "time", "issue 14: at most 1x", 3),
    ("compiled: GPT step, 2 layers, d 128, batch 16 (torch column: torch.compile)",
     _against_torch_compile(gpt_step), "time", "issue 14: at most 1x", 3),
    ("compiled: LSTM LM step, seq 35, batch 20 (torch column: torch.compile)",
     _against_torch_compile(lstm_step), "time", "issue 14: at most 1x", 3),
    ("compiled: ResNet (3 BasicBlocks) inference, batch 32 (torch column: torch.compile)",
     _against_torch_compile(resnet_inference), "time", "issue 14: at most 1x", 3),
    ("DataLoader epoch: 10k x 1x28x28, batch 64, shuffled, 0 workers", _loader_epoch(0),
     "samples:10000", "at least 1x", 3),
    ("DataLoader epoch: 10k x 1x28x28, batch 64, shuffled, 2 workers", _loader_epoch(2),
     "samples:10000", "at least 1x", 3),
    (f"save a {_STATE_MB} MB state dict (50 x 4 MB float32)", save_state, "time",
     "at most 1x", 3),
    (f"load a {_STATE_MB} MB state dict (50 x 4 MB float32)", load_state, "time",
     "at most 1x", 3),
    (f"send a {_QUEUE_MB} MB tensor through multiprocessing.Queue (already shared)",
     queue_tensor, "time", "-", 3),
    (f"send a {_QUEUE_MB} MB tensor through ember's Queue; torch column: a pickled copy "
     "(NumPy array, Python's Queue)", queue_tensor, "time",
     "issue 5: under 0.1x", 3, queue_pickled_copy),
]


# ------------------------------------------------ the webgpu column: ember on webgpu vs its CPU


def matmul_256(fw):
    rng = np.random.default_rng(0)
    a = fw.tensor(rng.standard_normal((256, 256), dtype=np.float32))
    b = fw.tensor(rng.standard_normal((256, 256), dtype=np.float32))
    return lambda: a @ b


# (name, builder, unit): the builders above, made with webgpu as ember's default device
# (matmul is 256x256: lavapipe's software GPU takes seconds for 1024x1024)
WEBGPU_CASES = [
    ("a + b, 8 float32 elements", small_add, "time"),
    ("matmul 256x256 float32", matmul_256, f"gflops:{2 * 256 ** 3}"),
    ("50 pointwise ops forward+backward", pointwise_chain_backward, "time"),
    ("MLP 784-256-10 step, batch 64 (raw ops)", mlp_step, "time"),
]


def _on_webgpu(make):
    """``make(ember)`` with its tensors on webgpu; each call waits for the GPU to finish."""
    with ember.device("webgpu"):
        fn = make(ember)

    def call():
        fn()
        ember.webgpu.synchronize()
    return call


def run_webgpu(selected=None):
    """Rows of (case, webgpu, ember's CPU, ratio, note), or a one-line note when no adapter."""
    if not ember.webgpu.is_available():
        from ember.webgpu import _runtime

        return f"webgpu column skipped: {_runtime.probe().reason}"
    adapter = ember.webgpu.get_device_name()
    rows = []
    for name, make, unit in WEBGPU_CASES:
        if selected and not any(part in name for part in selected):
            continue
        try:
            gpu_fn = _on_webgpu(make)
            gpu_fn()
        except Exception as error:  # reported, not hidden
            rows.append((name, "error", "-", "-", f"{type(error).__name__}: {error}"))
            continue
        cpu_fn = make(ember)
        gpu_t, cpu_t = best_times([gpu_fn, cpu_fn], repeat=5)
        kind, _, amount = unit.partition(":")
        if kind == "gflops":
            gpu_v, cpu_v = int(amount) / 1e9 / gpu_t, int(amount) / 1e9 / cpu_t
            rows.append((name, f"{gpu_v:,.2f} GFLOP/s", f"{cpu_v:,.1f} GFLOP/s",
                         f"{_ratio(gpu_v / cpu_v)}x throughput", adapter))
        else:
            rows.append((name, _fmt(gpu_t), _fmt(cpu_t), f"{_ratio(gpu_t / cpu_t)}x time",
                         adapter))
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def webgpu_table(rows):
    if isinstance(rows, str):
        return rows
    lines = ["ember on webgpu against ember on the CPU (each webgpu call ends with "
             "`ember.webgpu.synchronize()`):", "",
             "| case | ember webgpu | ember cpu | ratio | adapter |",
             "| --- | --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def run(selected=None):
    rows = []
    for name, make, unit, target, *options in CASES:
        if selected and not any(part in name for part in selected):
            continue
        repeat = options[0] if options else 7
        baseline = options[1] if len(options) > 1 else None
        _FIRST_CALLS.clear()
        try:
            ember_fn = make(ember)
            ember_fn()
        except Exception as error:  # a case ember cannot run yet is reported, not hidden
            rows.append((name, "error", "-", "-", target,
                         f"ember: {type(error).__name__}: {error}".replace("|", "/")))
            continue
        note = ""
        torch_fn = None
        if baseline is not None:
            torch_fn = baseline()
            torch_fn()
        elif torch is None:
            note = "torch is not installed: ember measured alone"
        else:
            try:
                torch_fn = make(torch)
                torch_fn()
            except Exception as error:  # torch lacks something this case needs: say so
                note = f"torch: {type(error).__name__}: {error}".replace("|", "/")
                torch_fn = None
        note = "; ".join(part for part in (note, _first_calls_note()) if part)
        if torch_fn is not None:
            ember_t, torch_t = best_times([ember_fn, torch_fn], repeat=repeat)
        else:
            ember_t, torch_t = best_time(ember_fn, repeat=repeat), None
        kind, _, amount = unit.partition(":")
        if kind in ("gflops", "samples"):
            per_call = int(amount) / (1e9 if kind == "gflops" else 1)
            label = "GFLOP/s" if kind == "gflops" else "samples/s"
            e_val, t_val = per_call / ember_t, (per_call / torch_t if torch_t else None)
            ratio = e_val / t_val if t_val else None
            rows.append((name, f"{e_val:,.1f} {label}",
                         f"{t_val:,.1f} {label}" if t_val else "-",
                         f"{_ratio(ratio)}x throughput" if ratio else "-", target, note))
        else:
            ratio = ember_t / torch_t if torch_t else None
            rows.append((name, _fmt(ember_t), _fmt(torch_t) if torch_t else "-",
                         f"{_ratio(ratio)}x time" if ratio else "-", target, note))
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    for consumer, inbox in _CONSUMERS:
        inbox.put(None)
        consumer.join(timeout=10)
    for folder in _CLEANUP:
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def _ratio(ratio):
    return f"{ratio:.2f}" if ratio >= 0.01 else f"{ratio:.4f}"


def _fmt(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


def table(rows):
    lines = ["| case | ember | torch | ratio | target | note |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", action="append",
                        help="run only cases whose name contains this (repeatable)")
    parser.add_argument("--no-write", action="store_true", help="don't rewrite the docs table")
    parser.add_argument("--threads", type=int, default=_default_threads(),
                        help="BLAS/OpenMP threads for both frameworks (default: the CPUs)")
    parser.add_argument("--no-webgpu", action="store_true",
                        help="leave out the webgpu table (ember on webgpu against its CPU)")
    args = parser.parse_args()
    ember.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    rows = run(args.only)
    text = table(rows)
    if not args.no_webgpu:
        text += "\n\n" + webgpu_table(run_webgpu(args.only))
    print(text)
    if not args.no_write and not args.only:
        versions = (f"ember {ember.__version__}, torch {torch.__version__ if torch else 'absent'}"
                    f", numpy {np.__version__}, Python {platform.python_version()}, "
                    f"{platform.machine()}{_cpu_name()}")
        doc = ROOT / "docs" / "benchmarks.md"
        kept = _sections_after_table(doc)
        doc.write_text(
            "# Benchmarks\n\nember against PyTorch, side by side in one process "
            "(best of 7 rounds, 3 for the DataLoader, save/load and torch.compile cases; the two "
            "frameworks' rounds alternate so that both see the same background load).\n"
            f"Made with `python bench/run.py --threads {args.threads}` on the project's "
            f"{os.cpu_count()}-core "
            f"machine ({versions}).\nBoth frameworks run with the same thread count: "
            f"`ember.set_num_threads({args.threads})` and "
            f"`torch.set_num_threads({args.threads})`.\n\n"
            "The machine was shared with other jobs while this table was made, so the numbers "
            "are noisy (repeat runs can differ by tens of percent); the ratios matter more than "
            "the absolute times.\n\n"
            "The model cases build each architecture once per framework from the same code (a "
            "function taking the `nn` module) with the same weights and time one full training "
            "step: forward, loss, backward, (gradient clipping,) optimiser step. The DataLoader "
            "cases time whole epochs (worker start-up included); the save/load cases write and "
            "read a file in the temporary directory (served from the page cache). The Queue cases "
            "time a round trip to a consumer process that reads the first element; the tensor "
            "was moved into shared memory by its first put (one copy, in both frameworks), "
            "as a Hogwild model or a DataLoader batch is. Time ratios "
            "below 1 and throughput ratios above 1 mean ember is faster.\n\n"
            f"{text}\n" + kept)
        print(f"wrote {doc}", file=sys.stderr)


def _sections_after_table(doc):
    """The ``## `` sections at the end of ``doc`` (written by hand or by other scripts, such as
    bench/compiled_floor.py's), which a rewrite of the table keeps."""
    if not doc.exists():
        return ""
    text = doc.read_text()
    start = text.find("\n## ")
    return "" if start < 0 else "\n" + text[start + 1:]


def _default_threads():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


if __name__ == "__main__":
    main()
