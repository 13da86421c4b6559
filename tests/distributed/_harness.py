"""Worlds of spawned ranks that run task functions sent from the test process.

``world(n)`` starts ``n`` processes once (cached for the whole test session), each joined to a
gloo process group on 127.0.0.1; ``run(fn, *args)`` sends ``fn`` (a module-level function of
``_tasks``, pickled by reference) to every rank and returns the list of per-rank results. An
exception in a rank comes back as the exception object (``raises=True`` returns them instead of
raising). A world that stops answering is torn down and the next ``world(n)`` starts a new one.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import socket
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(rank, world_size, port, conn, init, timeout):
    for path in (HERE, SRC):
        if path not in sys.path:
            sys.path.insert(0, path)
    import datetime

    import ember.distributed as dist

    if init:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size,
                                timeout=datetime.timedelta(seconds=timeout))
    while True:
        message = conn.recv()
        if message is None:
            break
        fn, args = message
        try:
            result = ("ok", fn(rank, world_size, *args))
        except BaseException as e:  # noqa: BLE001 - every error goes back to the test
            try:
                result = ("error", e, traceback.format_exc())
                conn.send(result)
                continue
            except Exception:
                result = ("error", RuntimeError(repr(e)), traceback.format_exc())
        conn.send(result)
    if init and dist.is_initialized():
        dist.destroy_process_group()


class RankError(Exception):
    pass


class World:
    def __init__(self, n, init=True, timeout=10.0):
        ctx = multiprocessing.get_context("spawn")
        port = free_port()
        self.n = n
        self.conns, self.procs = [], []
        for rank in range(n):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(rank, n, port, child, init, timeout),
                            daemon=True)
            p.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(p)
        self.alive = True

    def run(self, fn, *args, timeout=60.0, raises=False):
        for c in self.conns:
            c.send((fn, args))
        results, errors = [], []
        for rank, c in enumerate(self.conns):
            if not c.poll(timeout):
                self.close()
                raise RankError(f"rank {rank} did not answer within {timeout}s")
            status, *payload = c.recv()
            if status == "ok":
                results.append(payload[0])
            else:
                results.append(payload[0])
                errors.append((rank, payload[1]))
        if errors and not raises:
            raise RankError("\n".join(f"rank {r}:\n{tb}" for r, tb in errors))
        return results

    def close(self):
        if not self.alive:
            return
        self.alive = False
        for c in self.conns:
            try:
                c.send(None)
            except OSError:
                pass
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()


_WORLDS = {}


def world(n, init=True):
    key = (n, init)
    w = _WORLDS.get(key)
    if w is None or not w.alive:
        w = _WORLDS[key] = World(n, init)
    return w


@atexit.register
def _close_all():
    for w in _WORLDS.values():
        w.close()
