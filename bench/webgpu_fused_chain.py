"""A 50-op element-wise chain on 2**20 float32 elements on the webgpu device: one fused
shader (webgpu/_fused.py) against the chain's eager ops and FusedOp's in-buffer steps.

Wall time (the device's work runs on lavapipe's own threads, so thread CPU time would miss
it), minimum of ``--repeat`` runs each, with a synchronize before and after. Run:
``.venv/bin/python bench/webgpu_fused_chain.py``.
"""

import argparse
import time

import numpy as np

import ember
from ember.jit._passes import FusedOp
from ember.ops._registry import registry
from ember.webgpu import _runtime

CYCLE = [("mul", 1), ("add", 2), ("tanh", None), ("sigmoid", None), ("sin", None)]


def chain(length):
    ops = {n: lst[0] for n, lst in registry.items() if lst[0].fuse}
    program = []
    for k in range(length):
        name, operand = CYCLE[k % len(CYCLE)]
        refs = [0 if k == 0 else -1] + ([operand] if operand else [])
        program.append([name, refs, {}])
    return FusedOp(program, [ops[name] for name, _, _ in program])


def best_time(run, repeat):
    best = float("inf")
    for _ in range(repeat):
        ember.webgpu.synchronize()
        start = time.perf_counter()
        run()
        ember.webgpu.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    fused = chain(args.length)
    rng = np.random.default_rng(0)
    host = [rng.normal(size=args.size).astype(np.float32) for _ in range(2)]
    host.append(rng.normal(size=1).astype(np.float32))
    inputs = [ember.tensor(h).to("webgpu") for h in host]

    def in_buffer_steps():
        fused._shader = False  # FusedOp's kernel without the shader: xp steps with out=
        try:
            return fused(*inputs)
        finally:
            fused._shader = None

    ways = {"one shader": lambda: fused(*inputs),
            "eager ops": lambda: fused._unfused(inputs),
            "in-buffer steps": in_buffer_steps}
    runtime = _runtime.runtime()
    with ember.no_grad():
        for name, run in ways.items():
            run()  # compiles the pipelines
            before = runtime.dispatched
            run()
            dispatches = runtime.dispatched - before
            seconds = best_time(run, args.repeat)
            print(f"{name:16s} {seconds * 1e3:9.1f} ms  {dispatches:3d} dispatches")
        expected = fused(*[ember.tensor(h) for h in host]).numpy()
        got = fused(*inputs).cpu().numpy()
        print(f"max |one shader - cpu| = {np.abs(got - expected).max():.2e}")


if __name__ == "__main__":
    main()
