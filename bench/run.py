"""Side-by-side benchmarks: ember against PyTorch in one process, printed as ratios.

Run ``python bench/run.py`` (after ``bash scripts/setup_env.sh``; torch must be installed) to
print the table and rewrite ``docs/benchmarks.md``. Each case times the same work in both
frameworks with the best of several repeats; a ratio below 1 means ember is faster.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

import ember

try:
    import torch
except ImportError:  # the table notes what could not be compared
    torch = None

ROOT = Path(__file__).resolve().parents[1]


def best_time(fn, repeat=7, min_time=0.2):
    """Best per-call time of ``fn`` over ``repeat`` rounds of at least ``min_time`` seconds."""
    fn()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 4:
            break
        calls *= 4
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


# ---------------------------------------------------------------- cases


def small_add(fw):
    a, b = fw.ones(8), fw.ones(8)
    return lambda: a + b


def matmul_1024(fw):
    rng = np.random.default_rng(0)
    a = fw.tensor(rng.standard_normal((1024, 1024), dtype=np.float32))
    b = fw.tensor(rng.standard_normal((1024, 1024), dtype=np.float32))
    return lambda: a @ b


def pointwise_chain_backward(fw):
    x = fw.ones(16, requires_grad=True)

    def step():
        y = x
        for i in range(50):
            y = y * 1.01 if i % 2 else (y + 0.5).tanh()
        y.sum().backward()
    return step


def mlp_step(fw):
    rng = np.random.default_rng(0)
    w1 = fw.tensor(rng.standard_normal((784, 256), dtype=np.float32) * 0.05, requires_grad=True)
    w2 = fw.tensor(rng.standard_normal((256, 10), dtype=np.float32) * 0.05, requires_grad=True)
    x = fw.tensor(rng.standard_normal((64, 784), dtype=np.float32))
    target = fw.tensor(rng.standard_normal((64, 10), dtype=np.float32))

    def step():
        hidden = (x @ w1).tanh()
        loss = ((hidden @ w2 - target) ** 2).mean()
        loss.backward()
        with fw.no_grad():
            for w in (w1, w2):
                w.sub_(w.grad * 0.01)
                w.grad = None
    return step


CASES = [
    ("a + b, 8 float32 elements", small_add, "time", "issue 2: at most 2x"),
    ("matmul 1024x1024 float32", matmul_1024, "gflops:2147483648", "issue 2: at least 0.9x"),
    ("50 pointwise ops forward+backward", pointwise_chain_backward, "time", "issue 3: at most 3x"),
    ("MLP 784-256-10 step, batch 64 (raw ops)", mlp_step, "time", "issue 3: at most 1.5x"),
]


def run(selected=None):
    rows = []
    for name, make, unit, target in CASES:
        if selected and selected not in name:
            continue
        try:
            ember_t = best_time(make(ember))
        except Exception as error:  # a case ember cannot run yet is reported, not hidden
            rows.append((name, "error", "-", "-", target, f"ember: {error}"))
            continue
        torch_t = best_time(make(torch)) if torch is not None else None
        if unit.startswith("gflops"):
            flops = int(unit.split(":")[1])
            e_val, t_val = flops / ember_t / 1e9, (flops / torch_t / 1e9 if torch_t else None)
            ratio = e_val / t_val if t_val else None
            rows.append((name, f"{e_val:.1f} GFLOP/s", f"{t_val:.1f} GFLOP/s" if t_val else "-",
                         f"{ratio:.2f}x throughput" if ratio else "-", target, ""))
        else:
            ratio = ember_t / torch_t if torch_t else None
            rows.append((name, _fmt(ember_t), _fmt(torch_t) if torch_t else "-",
                         f"{ratio:.2f}x time" if ratio else "-", target, ""))
    return rows


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
    parser.add_argument("--only", help="run only cases whose name contains this")
    parser.add_argument("--no-write", action="store_true", help="don't rewrite the docs table")
    args = parser.parse_args()
    rows = run(args.only)
    text = table(rows)
    print(text)
    if not args.no_write and not args.only:
        versions = (f"ember {ember.__version__}, torch {torch.__version__ if torch else 'absent'}"
                    f", numpy {np.__version__}, Python {platform.python_version()}, "
                    f"{platform.machine()}")
        doc = ROOT / "docs" / "benchmarks.md"
        doc.write_text(
            "# Benchmarks\n\nember against PyTorch, side by side in one process "
            "(best of 7 rounds).\nMade with `python bench/run.py` on the project's 2-core "
            f"machine ({versions}).\n\n{text}\n")
        print(f"wrote {doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
