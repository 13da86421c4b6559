"""The fixed cost of one call of a tiny compiled function: ember against PyTorch, eager and
compiled, in one process (issue 14).

Four cases, each on tensors so small that the kernels cost next to nothing and the
framework's own work per call (guards, cache lookup, wrapping arrays, the autograd node) is
what is timed:

* ``pointwise``: ``x * 2 + 1`` on 16 float32 elements, ``x`` not requiring grad;
* ``pointwise+backward``: the same with ``x.requires_grad`` and ``.sum().backward()``;
* ``linear``: ``nn.Linear(4, 4)`` forward on a 2x4 batch under ``no_grad``;
* ``linear+backward``: its forward, ``.sum().backward()``.

Each is run in ember eager, ``ember.compile``, torch eager and ``torch.compile`` (default
backends). Timing: ``time.thread_time`` of ``--calls`` calls (2000), best of ``--repeat``
rounds (5), the four frameworks' rounds interleaved, one thread. A ratio below 1 means
ember is faster. ``--profile CASE`` prints cProfile's top entries for ``ember.compile``'s
path of that case instead.

Run: ``.venv/bin/python bench/compile_call_cost.py``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ember

try:
    import torch
except ImportError:  # the table then has ember's columns only
    torch = None

CASES = ("pointwise", "pointwise+backward", "linear", "linear+backward")


def pointwise(x):
    """The tiny function of the pointwise cases.

    Example::

        >>> pointwise(ember.ones(2))
        tensor([3., 3.])
    """
    return x * 2 + 1


def make_step(lib, case, compiled):
    """A no-argument callable doing one call of ``case`` in ``lib`` (ember or torch),
    compiled or eager, warmed up (compiled once).

    Example::

        >>> step = make_step(ember, "pointwise", compiled=False)
        >>> step().shape
        ember.Size([16])
    """
    lib.manual_seed(0)
    compile_fn = lib.compile if compiled else (lambda f: f)
    if case.startswith("pointwise"):
        x = lib.from_numpy(np.linspace(-1, 1, 16, dtype=np.float32))
        fn = compile_fn(pointwise)
    else:
        x = lib.from_numpy(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
        fn = compile_fn(lib.nn.Linear(4, 4))
    if case.endswith("backward"):
        if case.startswith("pointwise"):
            x.requires_grad_(True)

        def step():
            out = fn(x)
            out.sum().backward()
            return out
    elif case == "linear":
        def step():
            with lib.no_grad():
                return fn(x)
    else:
        def step():
            return fn(x)
    for _ in range(3):  # capture, then settle any recompile on the second call
        step()
    return step


def thread_time_per_call(step, calls):
    """Thread CPU seconds per call of ``step`` over ``calls`` calls.

    Example::

        >>> thread_time_per_call(lambda: None, 10) >= 0
        True
    """
    start = time.thread_time()
    for _ in range(calls):
        step()
    return (time.thread_time() - start) / calls


def measure(steps, calls, repeat):
    """Best per-call time of each named step, their rounds interleaved.

    Example::

        >>> sorted(measure({"a": lambda: None}, 10, 2))
        ['a']
    """
    best = {name: float("inf") for name in steps}
    for _ in range(repeat):
        for name, step in steps.items():
            best[name] = min(best[name], thread_time_per_call(step, calls))
    return best


def columns():
    """The frameworks measured: (name, library, compiled).

    Example::

        >>> columns()[0]
        ('ember eager', ...)
    """
    found = [("ember eager", ember, False), ("ember.compile", ember, True)]
    if _with_torch():
        found += [("torch eager", torch, False), ("torch.compile", torch, True)]
    return found


def _with_torch():
    return torch is not None and not _options.ember_only


class _options:
    ember_only = False


def table(calls, repeat):
    """Rows of (case, {framework: seconds per call}).

    Example::

        >>> rows = table(5, 1)  # doctest: +SKIP
    """
    rows = []
    for case in CASES:
        steps = {name: make_step(lib, case, compiled) for name, lib, compiled in columns()}
        rows.append((case, measure(steps, calls, repeat)))
    return rows


def print_table(rows):
    names = [name for name, _, _ in columns()]
    ratios = [("compile/eager", "ember.compile", "ember eager")]
    if _with_torch():
        ratios += [("ec/te", "ember.compile", "torch eager"),
                   ("ec/tc", "ember.compile", "torch.compile"),
                   ("tc/te", "torch.compile", "torch eager")]
    print(f"{'case':<20}" + "".join(f"{n:>15}" for n in names) +
          "".join(f"{r:>15}" for r, _, _ in ratios) + "   (us per call)")
    for case, times in rows:
        print(f"{case:<20}" + "".join(f"{times[n] * 1e6:>15.1f}" for n in names) +
              "".join(f"{times[a] / times[b]:>15.2f}" for _, a, b in ratios))
    print("; ".join(f"{r}: {a} / {b}" for r, a, b in ratios))


def profile(case, calls):
    import cProfile
    import pstats

    step = make_step(ember, case, compiled=True)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        step()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", choices=CASES)
    parser.add_argument("--ember-only", action="store_true",
                        help="skip torch's columns (a quick A/B of ember's code)")
    options = parser.parse_args()
    _options.ember_only = options.ember_only
    ember.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    if options.profile:
        profile(options.profile, options.calls)
        return
    print(f"thread CPU time, best of {options.repeat} rounds of {options.calls} calls, "
          "1 thread, rounds interleaved")
    print_table(table(options.calls, options.repeat))


if __name__ == "__main__":
    main()
