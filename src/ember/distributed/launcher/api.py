"""Start ``nproc_per_node`` workers of one node, each with the rank environment that
``init_process_group()`` (``env://``) reads, watch them, restart them all when one fails (up to
``max_restarts`` times), and report failures as torch's launcher does.

A worker is a program (``entrypoint`` a path, run with the arguments given) or a Python
function (run in a new process from ``start_method``; its return value comes back). The ranks
of several nodes meet through a static rendezvous: ``rdzv_endpoint`` is the master's
``host:port`` and ``rdzv_configs["rank"]`` this node's rank (torchrun's ``--node-rank``).
torch's elastic membership (``min_nodes < max_nodes``) and dynamic multi-node rendezvous
(``c10d``/``etcd`` across nodes) are not built.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

from ..elastic.multiprocessing import DefaultLogsSpecs
from ..elastic.multiprocessing.errors import ChildFailedError, ProcessFailure
from ..elastic.utils.api import macros
from ..elastic.utils.logging import get_logger

__all__ = ["LaunchConfig", "elastic_launch", "launch_agent"]

logger = get_logger(__name__)


@dataclasses.dataclass
class LaunchConfig:
    """What to launch on this node, with torch's fields. ember reads ``min_nodes``/
    ``max_nodes`` (equal), ``nproc_per_node``, ``run_id``, ``role``, ``rdzv_endpoint``,
    ``rdzv_backend`` (``"static"``, or ``"c10d"`` on one node), ``rdzv_configs["rank"]``,
    ``max_restarts``, ``monitor_interval``, ``start_method``, ``logs_specs`` and
    ``local_addr``; the others are kept for torch's signature.

    Example::

        >>> LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=2).rdzv_backend
        'etcd'
    """

    min_nodes: int
    max_nodes: int
    nproc_per_node: int
    logs_specs: object = None
    run_id: str = ""
    role: str = "default_role"
    rdzv_endpoint: str = ""
    rdzv_backend: str = "etcd"
    rdzv_configs: dict = dataclasses.field(default_factory=dict)
    rdzv_timeout: int = -1
    max_restarts: int = 3
    monitor_interval: float = 0.1
    start_method: str = "spawn"
    log_line_prefix_template: str | None = None
    metrics_cfg: dict = dataclasses.field(default_factory=dict)
    local_addr: str | None = None
    event_log_handler: str = "null"
    numa_options: object = None
    signals_to_handle: str = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
    duplicate_stdout_filters: list | None = None
    duplicate_stderr_filters: list | None = None
    virtual_local_rank: bool = False
    shutdown_timeout: int | None = None

    def __post_init__(self):
        if self.rdzv_timeout != -1:
            self.rdzv_configs["timeout"] = self.rdzv_timeout
        else:  # torch's default rendezvous timeout, in seconds
            self.rdzv_configs.setdefault("timeout", 900)
        if self.logs_specs is None:
            self.logs_specs = DefaultLogsSpecs()


class elastic_launch:
    """``elastic_launch(config, entrypoint)(*args)`` runs ``entrypoint`` on every worker of
    this node and returns ``{global rank: return value}`` (None for programs); a failure
    raises :class:`~ember.distributed.elastic.multiprocessing.errors.ChildFailedError`.

    Example::

        >>> config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=2,
        ...                       rdzv_backend="c10d", rdzv_endpoint="localhost:0")
        >>> elastic_launch(config, worker_fn)(3)               # doctest: +SKIP
        {0: ..., 1: ...}
    """

    def __init__(self, config, entrypoint, health_check_server=None):
        self._config = config
        self._entrypoint = entrypoint

    def __call__(self, *args):
        return launch_agent(self._config, self._entrypoint, list(args))


# ---------------------------------------------------------------- rendezvous and environment


def _free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _master_and_node_rank(config):
    """``(master address, master port, this node's rank)`` of a static rendezvous."""
    if config.min_nodes != config.max_nodes:
        raise NotImplementedError(
            f"elastic membership (min_nodes={config.min_nodes} < max_nodes="
            f"{config.max_nodes}) is not supported by ember's launcher; give a fixed number "
            f"of nodes")
    host, _, port = (config.rdzv_endpoint or "").rpartition(":")
    if not host and config.rdzv_endpoint and ":" not in config.rdzv_endpoint:
        host, port = config.rdzv_endpoint, ""
    if config.rdzv_backend != "static" and config.max_nodes > 1:
        raise NotImplementedError(
            f"rdzv_backend={config.rdzv_backend!r} across {config.max_nodes} nodes is not "
            f"supported by ember's launcher; use rdzv_backend='static' with each node's "
            f"rank (torchrun --node-rank) and the master's rdzv_endpoint")
    host = host or "127.0.0.1"
    if host == "localhost":
        host = "127.0.0.1"
    port = int(port) if port and int(port) != 0 else _free_port(host)
    node_rank = int(config.rdzv_configs.get("rank", 0)) if config.rdzv_backend == "static" \
        else 0
    return host, port, node_rank


def _worker_envs(config, master, node_rank, run_id, restart_count):
    """Each local rank's environment: the ranks, the master, the run."""
    host, port = master
    count = config.nproc_per_node
    world = count * config.max_nodes
    envs = {}
    for local_rank in range(count):
        rank = node_rank * count + local_rank
        envs[local_rank] = dict(
            os.environ, RANK=str(rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
            LOCAL_WORLD_SIZE=str(count), GROUP_RANK=str(node_rank), GROUP_WORLD_SIZE=str(
                config.max_nodes), ROLE_RANK=str(rank), ROLE_WORLD_SIZE=str(world),
            ROLE_NAME=config.role, MASTER_ADDR=host, MASTER_PORT=str(port),
            TORCHELASTIC_RUN_ID=run_id, TORCHELASTIC_RESTART_COUNT=str(restart_count),
            TORCHELASTIC_MAX_RESTARTS=str(config.max_restarts),
            TORCHELASTIC_USE_AGENT_STORE="False")
    return envs


# ---------------------------------------------------------------- workers


def _call_entrypoint(function, args, env, sender, stdout_file, stderr_file, quiet):
    """The body of a function worker: its environment and output files, then the call; the
    return value goes back through ``sender``, an exception into the error file."""
    os.environ.clear()
    os.environ.update(env)
    for path, fd, stream in ((stdout_file, 1, sys.stdout), (stderr_file, 2, sys.stderr)):
        target = path or (os.devnull if quiet else None)
        if target:
            stream.flush()
            handle = open(target, "a")  # noqa: SIM115  (kept open for the worker's life)
            os.dup2(handle.fileno(), fd)
    from ..elastic.multiprocessing.errors import record

    value = record(function)(*args)
    sender.send(value)


class _Worker:
    """One running worker: a subprocess or a multiprocessing process."""

    def __init__(self, local_rank, rank, process, receiver=None, error_file=""):
        self.local_rank, self.rank = local_rank, rank
        self.process, self.receiver, self.error_file = process, receiver, error_file

    @property
    def pid(self):
        return self.process.pid

    def exitcode(self):
        """The exit code, or None while it runs."""
        if isinstance(self.process, subprocess.Popen):
            return self.process.poll()
        return self.process.exitcode

    def result(self):
        """A function worker's return value (None for programs, or when it failed)."""
        if self.receiver is None:
            return None
        try:
            return self.receiver.recv() if self.receiver.poll() else None
        except EOFError:  # it ended without sending one
            return None

    def stop(self, grace=5.0):
        if self.exitcode() is None:
            self.process.terminate()
        deadline = time.monotonic() + grace
        while self.exitcode() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.exitcode() is None:
            self.process.kill()
        if isinstance(self.process, subprocess.Popen):
            self.process.wait()
        else:
            self.process.join()


def _tail(path, prefix, stream, done):
    """Echo what is written to ``path`` on ``stream`` with ``prefix`` until ``done`` is set
    and the file is read (torch's tee)."""
    while not os.path.exists(path) and not done.is_set():
        time.sleep(0.01)
    if not os.path.exists(path):
        return
    with open(path, errors="replace") as fh:
        while True:
            line = fh.readline()
            if line:
                stream.write(prefix + line)
                stream.flush()
            elif done.is_set():
                return
            else:
                time.sleep(0.02)


class _Attempt:
    """One start of every local worker, with their logs."""

    def __init__(self, config, entrypoint, args, envs, node_rank):
        self.config, self.entrypoint = config, entrypoint
        self.workers, self.tails, self.done = [], [], threading.Event()
        self.files = []  # log files the programs write to, closed when they end
        specs = config.logs_specs
        dest = specs.reify(envs)
        shows = getattr(specs, "shows", lambda rank: True)
        context = None if isinstance(entrypoint, str) else \
            multiprocessing.get_context(config.start_method)
        for local_rank, env in envs.items():
            env = dict(env, TORCHELASTIC_ERROR_FILE=dest.error_files.get(local_rank, ""))
            if env["TORCHELASTIC_ERROR_FILE"] and os.path.exists(env["TORCHELASTIC_ERROR_FILE"]):
                os.unlink(env["TORCHELASTIC_ERROR_FILE"])
            out, err = dest.stdouts.get(local_rank, ""), dest.stderrs.get(local_rank, "")
            quiet = not shows(local_rank)
            rank = node_rank * config.nproc_per_node + local_rank
            self._tee(dest, local_rank, quiet)
            if context is None:
                process, files = self._start_program(entrypoint, args, local_rank, env, out,
                                                     err, quiet)
                self.files += files
                self.workers.append(_Worker(local_rank, rank, process,
                                            error_file=env["TORCHELASTIC_ERROR_FILE"]))
            else:
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(target=_call_entrypoint, args=(
                    entrypoint, macros.substitute(args, str(local_rank)), env, sender, out,
                    err, quiet))
                process.start()
                sender.close()
                self.workers.append(_Worker(local_rank, rank, process, receiver,
                                            env["TORCHELASTIC_ERROR_FILE"]))

    def _tee(self, dest, local_rank, quiet):
        if quiet:
            return
        prefix = (self.config.log_line_prefix_template or "[${role_name}${local_rank}]:")
        prefix = prefix.replace("${role_name}", self.config.role).replace(
            "${local_rank}", str(local_rank)).replace("${rank}", str(local_rank))
        for path, stream in ((dest.tee_stdouts.get(local_rank), sys.stdout),
                             (dest.tee_stderrs.get(local_rank), sys.stderr)):
            if path:
                thread = threading.Thread(target=_tail, args=(path, prefix, stream, self.done),
                                          daemon=True)
                thread.start()
                self.tails.append(thread)

    @staticmethod
    def _start_program(entrypoint, args, local_rank, env, out, err, quiet):
        """``(process, opened log files)`` of one program worker."""
        files = [open(path, "a") for path in (out, err) if path]  # noqa: SIM115
        opened = iter(files)

        def target(path):
            if path:
                return next(opened)
            return subprocess.DEVNULL if quiet else None

        process = subprocess.Popen([entrypoint, *macros.substitute(args, str(local_rank))],
                                   env=env, stdout=target(out), stderr=target(err))
        return process, files

    def wait(self):
        """``(failures, results)`` once every worker ended or one failed (the others are
        then stopped): failures map global rank -> ProcessFailure."""
        interval = max(self.config.monitor_interval, 0.01)
        while True:
            codes = [w.exitcode() for w in self.workers]
            failed = [w for w, code in zip(self.workers, codes) if code not in (None, 0)]
            if failed or all(code == 0 for code in codes):
                break
            time.sleep(interval)
        results = {w.rank: w.result() for w in self.workers}
        failures = {w.rank: ProcessFailure(w.local_rank, w.pid, w.exitcode(), w.error_file)
                    for w in failed}
        self.stop()
        return failures, results

    def stop(self):
        for worker in self.workers:
            worker.stop()
        for handle in self.files:
            handle.close()
        self.done.set()
        for thread in self.tails:
            thread.join(2.0)


def _forwarding_signals(attempts):
    """Signals to the launcher go on to the workers (as torch's agent does)."""
    def forward(signum, frame):
        for attempt in attempts:
            for worker in attempt.workers:
                if worker.exitcode() is None:
                    os.kill(worker.pid, signum)
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}


def launch_agent(config, entrypoint, args):
    """Run the workers of this node to the end (see the module); ``{global rank: return
    value}``.

    Example::

        >>> launch_agent(config, sys.executable, ["-u", "train.py"])    # doctest: +SKIP
    """
    if not config.run_id:
        config.run_id = uuid.uuid4().hex[:8]
    name = entrypoint if isinstance(entrypoint, str) else getattr(entrypoint, "__qualname__",
                                                                 repr(entrypoint))
    host, port, node_rank = _master_and_node_rank(config)
    logger.info("launching %s on %d local workers (node %d)", name, config.nproc_per_node,
                node_rank)
    current = []
    saved = _forwarding_signals(current)
    try:
        for restart in range(config.max_restarts + 1):
            envs = _worker_envs(config, (host, port), node_rank, config.run_id, restart)
            current[:] = [_Attempt(config, entrypoint, args, envs, node_rank)]
            failures, results = current[0].wait()
            if not failures:
                return results
            if restart < config.max_restarts:
                logger.warning("worker group failed (%s); restarting (%d/%d)",
                               sorted(failures), restart + 1, config.max_restarts)
        raise ChildFailedError(name=name, failures=failures)
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
