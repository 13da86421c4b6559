"""The launcher: ``python -m ember.distributed.run --nproc-per-node=N script.py args...``.

Starts N copies of ``script.py`` (torchrun's flags: ``--nproc-per-node``/``--nproc_per_node``,
``--nnodes``, ``--node-rank``, ``--master-addr``, ``--master-port``, ``--standalone``, ``-m``,
``--no-python``), each with ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
``MASTER_ADDR`` and ``MASTER_PORT`` set so that ``init_process_group()`` (``env://``) finds the
others. If a rank fails, the others are stopped and the launcher exits with that rank's exit
code.

Example::

    $ python -m ember.distributed.run --nproc-per-node=2 train.py --epochs 3
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

__all__ = ["main", "get_args_parser"]


def get_args_parser():
    """The launcher's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                     description="Start the ranks of a distributed program.")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc_per_node",
                        default="1", help="processes per node: a number, 'cpu' or 'auto'")
    parser.add_argument("--nnodes", default="1", help="number of nodes (a number or 'N:N')")
    parser.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0)
    parser.add_argument("--master-addr", "--master_addr", dest="master_addr",
                        default="127.0.0.1")
    parser.add_argument("--master-port", "--master_port", dest="master_port", type=int,
                        default=29500)
    parser.add_argument("--standalone", action="store_true",
                        help="single node: pick a free port on 127.0.0.1")
    parser.add_argument("--monitor-interval", "--monitor_interval", dest="monitor_interval",
                        type=float, default=0.1)
    parser.add_argument("-m", "--module", action="store_true",
                        help="run the script as a module (python -m)")
    parser.add_argument("--no-python", "--no_python", dest="no_python", action="store_true",
                        help="run the script as an executable, not with python")
    parser.add_argument("training_script")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def _nproc(value):
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    if value == "gpu":
        from ..cuda import device_count

        return device_count()
    return int(value)


def _free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def main(args=None):
    """Parse ``args`` (default ``sys.argv[1:]``), run the ranks, return the exit code."""
    return run(get_args_parser().parse_args(args))


def run(opts):
    """Run the ranks of parsed arguments ``opts``; return the exit code. Without ``use_env``
    (the deprecated ``ember.distributed.launch``'s default) each rank's script also gets
    ``--local-rank=N``.

    Example::

        >>> run(get_args_parser().parse_args(["--nproc-per-node=2", "train.py"]))
    """
    nproc = _nproc(opts.nproc_per_node)
    nnodes = int(str(opts.nnodes).split(":")[-1])
    if opts.standalone:
        opts.master_addr = "127.0.0.1"
        opts.master_port = _free_port("127.0.0.1")
    world = nproc * nnodes
    if opts.no_python:
        command = [opts.training_script]
    elif opts.module:
        command = [sys.executable, "-u", "-m", opts.training_script]
    else:
        command = [sys.executable, "-u", opts.training_script]
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", uuid.uuid4().hex[:8])
    procs = []
    for local_rank in range(nproc):
        env = dict(os.environ, RANK=str(opts.node_rank * nproc + local_rank),
                   LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK=str(opts.node_rank),
                   MASTER_ADDR=opts.master_addr, MASTER_PORT=str(opts.master_port),
                   TORCHELASTIC_RUN_ID=run_id)
        # the deprecated launcher's --local-rank comes before the script's own arguments
        rank_args = [] if getattr(opts, "use_env", True) else [f"--local-rank={local_rank}"]
        procs.append(subprocess.Popen(command + rank_args + opts.training_script_args,
                                      env=env))

    def forward(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)
    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    # a thread per rank reports its exit as it happens: the first failure is the cause (the
    # other ranks often fail right after it, when their connections to it close)
    exits = queue.Queue()
    for local_rank, p in enumerate(procs):
        threading.Thread(target=lambda r, p: exits.put((r, p.wait())), args=(local_rank, p),
                         daemon=True).start()
    try:
        finished = 0
        while finished < len(procs):
            try:
                local_rank, code = exits.get(timeout=opts.monitor_interval)
            except queue.Empty:
                continue
            finished += 1
            if code != 0:
                _stop(procs)
                global_rank = opts.node_rank * nproc + local_rank
                sys.stderr.write(f"ember.distributed.run: rank {global_rank} (local rank "
                                 f"{local_rank}) failed with exit code {code}\n")
                return code if code > 0 else 128 - code
        return 0
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _stop(procs, grace=5.0):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
