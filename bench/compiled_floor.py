"""What bounds the compiled train steps: GEMM time against everything else, ember and torch.

Run ``python bench/compiled_floor.py`` (single-threaded; torch must be installed). For each of
bench/run.py's compiled cases (MLP, GPT and LSTM train steps, ResNet inference) it measures,
in one process:

- torch eager's step time, and the part spent in its GEMM and convolution kernels (each
  ``aten.mm``/``addmm``/``bmm``/``convolution``... call timed by a ``TorchDispatchMode``, as
  the profiler's self CPU time but in thread CPU time; torch's fused kernels that hold GEMMs
  inside, its LSTM layer and CPU flash attention, are counted apart), and the same GEMM
  calls ember made, replayed through torch one by one;
- ember's compiled step time and the part spent in its GEMMs and convolutions (oneDNN's
  ``dnnl_sgemm``, NumPy's ``matmul`` on two matrices, oneDNN convolution primitives), timed
  by wrappers this script installs around those entry points for the measurement only;
- the floor: ember's GEMM time / torch's step time, the ratio ember's compiled step would
  reach if every microsecond outside its GEMMs vanished.

All times are thread CPU time (``time.thread_time``) at one thread, so time the 2-core shared
machine gives to other processes is not counted; each is the best of several interleaved
rounds. ``--shapes`` also prints each GEMM shape and layout ember called, timed alone in
ember (oneDNN) and torch (MKL for float32 ``mm``) with the same operands' strides.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402  (bench/run.py: the cases, built the same way)

import ember  # noqa: E402
from ember.nn._functional import _onednn, _onednn_fused  # noqa: E402
from ember.ops.linalg import _onednn_gemm  # noqa: E402

torch = bench.torch

# name, bench/run.py's compiled case, issue 14's target (compiled step / torch eager)
CASES = [
    ("MLP 784-256-10 step, batch 64", bench.mlp_step_compiled, 0.7),
    ("GPT step, 2 layers, d 128, batch 16", bench.gpt_step_compiled, 0.7),
    ("LSTM LM step, seq 35, batch 20", bench.lstm_step_compiled, 0.7),
    ("ResNet (3 BasicBlocks) inference, batch 32", bench.resnet_inference_compiled, 0.8),
]

# torch kernels that are one GEMM or convolution each (their self CPU time is GEMM time)
TORCH_GEMM_KERNELS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "convolution",
                      "convolution_backward"}
# torch kernels that run GEMMs inside, together with other work
TORCH_FUSED_KERNELS = {"mkldnn_rnn_layer", "mkldnn_rnn_layer_backward",
                       "_scaled_dot_product_flash_attention_for_cpu",
                       "_scaled_dot_product_flash_attention_for_cpu_backward"}


# ---------------------------------------------------------------- timing


def best_step_times(fns, rounds=9, min_time=0.3):
    """Best thread CPU time per call of each of ``fns``, rounds interleaved.

    Example::

        >>> [t > 0 for t in best_step_times([lambda: sum(range(1000))], rounds=2,
        ...                                 min_time=0.001)]
        [True]
    """
    calls = [_calls_for(fn, min_time) for fn in fns]
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.thread_time()
            for _ in range(calls[i]):
                fn()
            best[i] = min(best[i], (time.thread_time() - start) / calls[i])
    return best


def _calls_for(fn, min_time):
    start = time.thread_time()
    fn()
    once = max(time.thread_time() - start, 1e-6)
    return max(1, int(min_time / once))


class _GemmLog:
    """Thread CPU time spent in each GEMM-like call, by kind, and ember's sgemm call keys."""

    def __init__(self):
        self.seconds = Counter()   # kind -> seconds
        self.calls = Counter()     # kind -> calls
        self.sgemm_keys = Counter()   # (transa, transb, m, n, k, lda, ldb, beta) -> calls
        self.matmul_keys = Counter()  # (shape_a, strides_a, shape_b, strides_b) -> calls

    def add(self, kind, seconds):
        self.seconds[kind] += seconds
        self.calls[kind] += 1


@contextmanager
def _timed_ember_gemms(log):
    """Wrap ember's GEMM and convolution entry points with thread-CPU timers for the block:
    oneDNN's ``dnnl_sgemm`` (``_onednn_gemm._gemm``), NumPy's ``matmul`` (products of two
    matrices are GEMMs; a vector operand, a column sum, is counted apart), oneDNN's
    convolutions (``_onednn._run``) and fused inference convolutions."""
    _onednn_gemm._enabled()
    saved = (_onednn_gemm._gemm, np.matmul, _onednn._run, _onednn_fused.conv_bias_sum_relu,
             _onednn_gemm._unaliased)
    gemm, matmul, conv, fused, unaliased = saved
    strides_before_padding = {}

    def timed_unaliased(array, operand, *rest):
        # the padded copy sgemm makes of an operand whose stride thrashes the cache is GEMM
        # work; the call is logged with the stride it came with
        start = time.thread_time()
        array, padded = unaliased(array, operand, *rest)
        log.add("oneDNN sgemm", time.thread_time() - start)
        if padded != operand:
            strides_before_padding[padded[1]] = operand[1]
        return array, padded

    def timed_gemm(*args):
        lda, ldb = (strides_before_padding.get(ld, ld) for ld in (args[7], args[9]))
        strides_before_padding.clear()
        log.sgemm_keys[(args[0], args[1], *args[2:5], lda, ldb, args[10])] += 1
        start = time.thread_time()
        status = gemm(*args)
        log.add("oneDNN sgemm", time.thread_time() - start)
        return status

    def timed_matmul(a, b, *rest, **options):
        start = time.thread_time()
        result = matmul(a, b, *rest, **options)
        seconds = time.thread_time() - start
        if np.ndim(a) >= 2 and np.ndim(b) >= 2:
            log.add("NumPy matmul", seconds)
            log.matmul_keys[(a.shape, a.strides, b.shape, b.strides, a.dtype.str)] += 1
        else:
            log.add("NumPy matmul by a vector (column sums)", seconds)
        return result

    def timed(kind, fn):
        def call(*args, **kwargs):
            start = time.thread_time()
            result = fn(*args, **kwargs)
            log.add(kind, time.thread_time() - start)
            return result
        return call

    _onednn_gemm._gemm, np.matmul = timed_gemm, timed_matmul
    _onednn_gemm._unaliased = timed_unaliased
    _onednn._run = timed("oneDNN convolution", conv)
    _onednn_fused.conv_bias_sum_relu = timed("oneDNN convolution (fused)", fused)
    try:
        yield log
    finally:
        (_onednn_gemm._gemm, np.matmul, _onednn._run, _onednn_fused.conv_bias_sum_relu,
          _onednn_gemm._unaliased) = saved


GEMM_KINDS = ("oneDNN sgemm", "NumPy matmul", "oneDNN convolution", "oneDNN convolution (fused)")


class _TorchKernelTimer:
    """A ``TorchDispatchMode`` adding up the thread CPU time of torch's GEMM/convolution
    kernels and of its fused kernels that hold GEMMs (each aten call is timed around the
    kernel alone: the mode's own cost per call is not counted)."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        timer = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                start = time.thread_time()
                result = func(*args, **(kwargs or {}))
                timer.add(func.__name__.split(".")[0], time.thread_time() - start)
                return result

        self.mode = Mode
        self.gemm = self.fused = 0.0

    def add(self, kernel, seconds):
        if kernel in TORCH_GEMM_KERNELS:
            self.gemm += seconds
        elif kernel in TORCH_FUSED_KERNELS:
            self.fused += seconds


def _timed_calls(fn, calls):
    start = time.thread_time()
    for _ in range(calls):
        fn()
    return (time.thread_time() - start) / calls


def _interleaved_times(ember_step, torch_step, rounds=7, min_time=0.3):
    """Best per-step thread CPU times, rounds interleaved so that both frameworks and both
    modes (plain, kernels timed) see the same background load: ember's step, torch's step,
    ember's GEMM time, torch's GEMM and fused-kernel times; and the last round's _GemmLog and
    step count."""
    calls = [_calls_for(ember_step, min_time), _calls_for(torch_step, min_time)]
    best = dict(ember=float("inf"), torch=float("inf"), ember_gemm=float("inf"),
                torch_gemm=float("inf"), torch_fused=float("inf"))
    for _ in range(rounds):
        best["ember"] = min(best["ember"], _timed_calls(ember_step, calls[0]))
        best["torch"] = min(best["torch"], _timed_calls(torch_step, calls[1]))
        log = _GemmLog()
        with _timed_ember_gemms(log):
            _timed_calls(ember_step, calls[0])
        gemm = sum(log.seconds[kind] for kind in GEMM_KINDS) / calls[0]
        best["ember_gemm"] = min(best["ember_gemm"], gemm)
        timer = _TorchKernelTimer()
        with timer.mode():
            _timed_calls(torch_step, calls[1])
        best["torch_gemm"] = min(best["torch_gemm"], timer.gemm / calls[1])
        best["torch_fused"] = min(best["torch_fused"], timer.fused / calls[1])
    return best, log, calls[0]


# ------------------------------------------------ the same GEMM calls, one by one


def _strided_pair(transpose, rows, cols, leading):
    """(buffer rows, buffer cols, view) of a ``rows x cols`` operand stored as oneDNN's
    row-major ``transpose``/``leading`` describe: the view picks it out of the buffer."""
    if transpose == b"N":
        return rows, leading, lambda t: t[:, :cols]
    return cols, leading, lambda t: t[:, :rows].T


def _sgemm_operands(fw, key):
    transa, transb, m, n, k, lda, ldb, _ = key
    rng = np.random.default_rng(0)
    out = []
    for transpose, rows, cols, leading in ((transa, m, k, lda), (transb, k, n, ldb)):
        buffer_rows, buffer_cols, view = _strided_pair(transpose, rows, cols, leading)
        data = rng.standard_normal((buffer_rows, buffer_cols), dtype=np.float32)
        out.append(view(fw.from_numpy(data) if fw is torch else data))
    return out


def sgemm_call_times(key, rounds=7):
    """(ember, torch) thread CPU seconds of one ember ``sgemm`` call on operands of ``key``'s
    layout (oneDNN's arguments), and of torch's ``mm`` (``addmm`` with a bias row where
    ember's call had one, beta = 1) on operands of the same strides.

    Example::

        >>> e, t = sgemm_call_times((b"N", b"T", 64, 256, 784, 784, 784, 0.0), rounds=1)
        >>> e > 0 and (t is None or t > 0)
        True
    """
    a, b = _sgemm_operands(np, key)
    m, n, beta = key[2], key[3], key[7]
    out = np.zeros((m, n), np.float32)
    bias = out[0].copy() if beta else None
    fns = [lambda: _onednn_gemm.sgemm(a, b, out=out, bias=bias)]
    if torch is not None:
        ta, tb = _sgemm_operands(torch, key)
        tout, tbias = torch.zeros(m, n), torch.zeros(n)
        fns.append((lambda: torch.addmm(tbias, ta, tb, out=tout)) if beta else
                   (lambda: torch.mm(ta, tb, out=tout)))
    times = best_step_times(fns, rounds=rounds, min_time=0.02)
    return times[0], (times[1] if torch is not None else None)


def _matmul_call_times(key, rounds=7):
    """(ember, torch) thread CPU seconds of one NumPy ``matmul`` of ``key`` (shapes and byte
    strides), against ``torch.matmul`` on tensors of the same strides."""
    shape_a, strides_a, shape_b, strides_b, dtype = key
    arrays = [_filled(shape, strides, np.dtype(dtype)) for shape, strides in
              ((shape_a, strides_a), (shape_b, strides_b))]
    fns = [lambda: np.matmul(*arrays)]
    if torch is not None:
        tensors = [torch.from_numpy(array) for array in arrays]
        fns.append(lambda: torch.matmul(*tensors))
    times = best_step_times(fns, rounds=rounds, min_time=0.02)
    return times[0], (times[1] if torch is not None else None)


def _filled(shape, strides, dtype):
    """A random array of ``shape`` with byte ``strides`` (expanded dims: stride 0)."""
    span = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides)) // dtype.itemsize
    base = np.random.default_rng(0).standard_normal(span).astype(dtype)
    return np.lib.stride_tricks.as_strided(base, shape, strides)


def _replayed_gemm_times(log, steps):
    """Per step: ember's and torch's time for the GEMM calls ember made (each shape timed
    alone, times its calls), and a row per shape for the ``--shapes`` table."""
    rows, ember_total, torch_total = [], 0.0, 0.0
    for key, calls in log.sgemm_keys.items():
        e, t = sgemm_call_times(key)
        rows.append((_describe_sgemm(key), calls / steps, e, t))
    for key, calls in log.matmul_keys.items():
        e, t = _matmul_call_times(key)
        rows.append((_describe_matmul(key), calls / steps, e, t))
    for _, per_step, e, t in rows:
        ember_total += per_step * e
        torch_total += per_step * (t or 0.0)
    rows.sort(key=lambda row: -row[1] * row[2])
    return ember_total, torch_total, rows


def _describe_sgemm(key):
    transa, transb, m, n, k, lda, ldb, beta = key
    a = f"{m}x{k}" + (".T" if transa == b"T" else "") + (f" (ld {lda})" if lda not in (k, m)
                                                         else "")
    b = f"{k}x{n}" + (".T" if transb == b"T" else "") + (f" (ld {ldb})" if ldb not in (k, n)
                                                         else "")
    return f"sgemm {a} @ {b}" + (" + C" if beta else "")


def _describe_matmul(key):
    shape_a, strides_a, shape_b, strides_b, _ = key
    return f"matmul {shape_a} {strides_a} @ {shape_b} {strides_b}"


# ------------------------------------------------ layouts with a cache-thrashing stride


def _stride_sweep(ks=(512, 1024, 2048)):
    """Rows (m, n, k, layout, ember without the padded copy, ember, torch) for products whose
    operands ember's sgemm walks along k at a row stride of 512 or 1024 floats (2 or 4 KB):
    the layouts ``_onednn_gemm._unaliased`` is about (a weight gradient ``x.T @ g``, ``TN``;
    ``h @ W`` with W of 1024 columns, ``NN``)."""
    rows = []
    for m in (64, 128, 256, 1024):
        for n in (128, 512, 1024):
            for k in ks:
                for layout in ("NN", "TN"):
                    key = (layout[0].encode(), b"N", m, n, k, k if layout[0] == "N" else m, n,
                           0.0)
                    unpadded = _without_padding(lambda: sgemm_call_times(key)[0])
                    ember_t, torch_t = sgemm_call_times(key)
                    rows.append((m, n, k, layout, unpadded, ember_t, torch_t))
                    print(rows[-1], file=sys.stderr)
    return rows


def _without_padding(fn):
    saved = _onednn_gemm._PADDED_MIN_K
    _onednn_gemm._PADDED_MIN_K = float("inf")
    try:
        return fn()
    finally:
        _onednn_gemm._PADDED_MIN_K = saved


def _sweep_table(rows):
    lines = ["| m x n x k | layout | ember, no padded copy | ember | torch | "
             "before / torch | now / torch |", "| --- " * 7 + "|"]
    for m, n, k, layout, unpadded, ember_t, torch_t in rows:
        lines.append(f"| {m}x{n}x{k} | {layout} | {_ms(unpadded)} | {_ms(ember_t)} | "
                     f"{_ms(torch_t)} | {unpadded / torch_t:.2f}x | {ember_t / torch_t:.2f}x |")
    return "\n".join(lines)


# ---------------------------------------------------------------- the table


def _measure(name, make, target):
    """One row: the case's step times, GEMM times and floor (all seconds per step)."""
    ember_step, torch_step = make(ember), make(torch)
    for _ in range(3):
        ember_step(), torch_step()
    row, log, steps = _interleaved_times(ember_step, torch_step)
    replay_ember, replay_torch, shape_rows = _replayed_gemm_times(log, steps)
    row.update(name=name, target=target, torch_replay=replay_torch, ember_replay=replay_ember,
               column_sums=log.seconds["NumPy matmul by a vector (column sums)"] / steps,
               shapes=shape_rows)
    print(f"{name}: " + ", ".join(f"{k} {_ms(v)}" for k, v in row.items()
                                  if isinstance(v, float) and k != "target"), file=sys.stderr)
    return row


def _ms(seconds):
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} us"


def floor_table(rows):
    """The markdown table of :func:`_measure`'s rows (times in seconds per step).

    Example::

        >>> row = dict(name="MLP", target=0.7, torch=1e-3, torch_gemm=6e-4, torch_fused=0.0,
        ...            torch_replay=6e-4, ember=1e-3, ember_gemm=6e-4)
        >>> floor_table([row]).splitlines()[-1].split(" | ")[-3:]
        ['1.00x', '0.60x', '0.7x |']
    """
    lines = [
        "| case | torch eager step | torch GEMM kernels | torch fused kernels "
        "holding GEMMs | torch: ember's GEMM calls | torch non-GEMM | ember compiled step | "
        "ember GEMM | ember non-GEMM | now | floor | target |",
        "| --- " * 12 + "|"]
    for r in rows:
        # the kernel timer misses GEMMs inside fused kernels, the replay misses convolutions:
        # whichever sees more of torch's GEMM work
        torch_non_gemm = r["torch"] - max(r["torch_gemm"], r["torch_replay"])
        lines.append("| " + " | ".join([
            r["name"], _ms(r["torch"]), _ms(r["torch_gemm"]),
            _ms(r["torch_fused"]) if r["torch_fused"] else "-", _ms(r["torch_replay"]),
            _ms(torch_non_gemm), _ms(r["ember"]), _ms(r["ember_gemm"]),
            _ms(r["ember"] - r["ember_gemm"]), f"{r['ember'] / r['torch']:.2f}x",
            f"{r['ember_gemm'] / r['torch']:.2f}x", f"{r['target']}x"]) + " |")
    return "\n".join(lines)


def _shapes_table(rows):
    """Per case, each GEMM ember called: calls per step, ember's and torch's time per call."""
    lines = ["| case | GEMM (ember's call) | calls/step | ember | torch | ember/torch |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        for what, per_step, e, t in r["shapes"]:
            ratio = f"{e / t:.2f}x" if t else "-"
            lines.append(f"| {r['name']} | {what} | {per_step:g} | {_ms(e)} | "
                         f"{_ms(t) if t else '-'} | {ratio} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append",
                        help="run only cases whose name contains this (repeatable)")
    parser.add_argument("--shapes", action="store_true",
                        help="also print each GEMM shape ember called, ember against torch")
    parser.add_argument("--sweep", action="store_true",
                        help="only time products with a 2 or 4 KB operand row stride, ember "
                             "with and without its padded copy, against torch")
    args = parser.parse_args()
    if torch is None:
        sys.exit("bench/compiled_floor.py compares against torch: install it first")
    ember.set_num_threads(1)
    torch.set_num_threads(1)
    if args.sweep:
        print(_sweep_table(_stride_sweep()))
        return
    rows = [_measure(name, make, target) for name, make, target in CASES
            if not args.only or any(part in name for part in args.only)]
    print(floor_table(rows))
    if args.shapes:
        print()
        print(_shapes_table(rows))


if __name__ == "__main__":
    main()
