"""The launcher: ``python -m ember.distributed.run --nproc-per-node=N script.py args...``
(torchrun).

Starts N copies of ``script.py`` through :mod:`ember.distributed.launcher`, each with
``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and
``MASTER_PORT`` set so that ``init_process_group()`` (``env://``) finds the others. torchrun's
flags: ``--nproc-per-node`` (a number, ``cpu``, ``gpu`` or ``auto``), ``--nnodes``,
``--node-rank``, ``--master-addr``/``--master-port`` or ``--rdzv-endpoint``,
``--rdzv-backend`` (``static``; ``c10d`` on one node), ``--standalone``, ``--max-restarts``
(restart every worker when one fails), ``--log-dir``/``--redirects``/``--tee``/
``--local-ranks-filter`` (workers' output in files, teed, or hidden), ``-m``, ``--no-python``,
``--run-path``; each can also come from a ``PET_<FLAG>`` environment variable. If a rank
fails, the others are stopped and the launcher reports it and exits with that rank's exit
code.

Example::

    $ python -m ember.distributed.run --nproc-per-node=2 train.py --epochs 3
"""

from __future__ import annotations

import os
import sys
import uuid
from argparse import REMAINDER, ArgumentParser

from .argparse_util import check_env, env
from .elastic.multiprocessing import DefaultLogsSpecs, LogsSpecs, Std
from .elastic.multiprocessing.errors import ChildFailedError, record
from .elastic.utils import macros
from .elastic.utils.logging import get_logger
from .launcher.api import LaunchConfig, elastic_launch

__all__ = ["DefaultLogsSpecs", "LaunchConfig", "LogsSpecs", "REMAINDER", "Std", "check_env",
           "config_from_args", "determine_local_world_size", "elastic_launch", "env",
           "get_args_parser", "get_logger", "get_rdzv_endpoint", "get_use_env", "logger",
           "macros", "main", "parse_args", "parse_min_max_nnodes", "record", "run",
           "run_script_path"]

logger = get_logger(__name__)


def get_args_parser():
    """The launcher's argument parser (torchrun's flags).

    Example::

        >>> get_args_parser().parse_args(["--nproc-per-node=2", "train.py"]).nproc_per_node
        '2'
    """
    parser = ArgumentParser(prog="python -m ember.distributed.run",
                            description="Start the ranks of a distributed program.")
    add = parser.add_argument
    add("--nnodes", action=env, type=str, default="1:1",
        help="number of nodes, or MIN:MAX (equal: ember has no elastic membership)")
    add("--nproc-per-node", "--nproc_per_node", action=env, type=str, default="1",
        help="workers per node: a number, 'cpu', 'gpu' or 'auto'")
    add("--rdzv-backend", "--rdzv_backend", action=env, type=str, default="static",
        help="'static' (node ranks given), or 'c10d' on one node")
    add("--rdzv-endpoint", "--rdzv_endpoint", action=env, type=str, default="",
        help="the master's host:port")
    add("--rdzv-id", "--rdzv_id", action=env, type=str, default="none",
        help="the job's id (TORCHELASTIC_RUN_ID)")
    add("--rdzv-conf", "--rdzv_conf", action=env, type=str, default="",
        help="extra rendezvous settings: key1=value1,key2=value2")
    add("--standalone", action=check_env, help="one node: a free port on localhost")
    add("--max-restarts", "--max_restarts", action=env, type=int, default=0,
        help="restarts of the worker group after a failure")
    add("--monitor-interval", "--monitor_interval", action=env, type=float, default=0.1,
        help="seconds between checks of the workers")
    add("--start-method", "--start_method", action=env, type=str, default="spawn",
        choices=["spawn", "fork", "forkserver"],
        help="how function workers start (programs are always new processes)")
    add("--event-log-handler", "--event_log_handler", action=env, type=str, default="null")
    add("--role", action=env, type=str, default="default", help="the workers' role name")
    add("-m", "--module", action=check_env, help="run the script as a module (python -m)")
    add("--no-python", "--no_python", action=check_env,
        help="run the script as an executable, not with python")
    add("--run-path", "--run_path", action=check_env,
        help="run the script with runpy.run_path in the worker's interpreter")
    add("--log-dir", "--log_dir", action=env, type=str, default=None,
        help="folder of the workers' log files")
    add("-r", "--redirects", action=env, type=str, default="0",
        help="streams written to log files only: 0 none, 1 out, 2 err, 3 both; or 0:1,1:2")
    add("-t", "--tee", action=env, type=str, default="0",
        help="streams written to log files and the console (same values as --redirects)")
    add("--local-ranks-filter", "--local_ranks_filter", action=env, type=str, default="",
        help="local ranks whose output the console shows: 0,1")
    add("--duplicate-stdout-filters", "--duplicate_stdout_filters", action=env, type=str,
        nargs="*", default=[])
    add("--duplicate-stderr-filters", "--duplicate_stderr_filters", action=env, type=str,
        nargs="*", default=[])
    add("--node-rank", "--node_rank", action=env, type=int, default=0,
        help="this node's rank (static rendezvous)")
    add("--master-addr", "--master_addr", action=env, type=str, default="127.0.0.1",
        help="the master's address (static rendezvous)")
    add("--master-port", "--master_port", action=env, type=int, default=None,
        help="the master's port (static rendezvous)")
    add("--local-addr", "--local_addr", action=env, type=str, default=None)
    add("--logs-specs", "--logs_specs", default=None, type=str,
        help="a torchrun.logs_specs entry point naming a LogsSpecs class")
    add("--numa-binding", "--numa_binding", type=str, default=None,
        choices=["node", "socket", "exclusive", "core-complex"],
        help="torch's NUMA binding of workers (not supported by ember)")
    add("--signals-to-handle", "--signals_to_handle", action=env, type=str,
        default="SIGTERM,SIGINT,SIGHUP,SIGQUIT")
    add("--shutdown-timeout", "--shutdown_timeout", action=env, type=int, default=None)
    add("--virtual-local-rank", "--virtual_local_rank", action=check_env)
    add("training_script", type=str, help="the program (or module, with -m) to run")
    add("training_script_args", nargs=REMAINDER)
    return parser


def parse_args(args):
    """``args`` (a list of strings, None: ``sys.argv[1:]``) parsed by the launcher's parser.

    Example::

        >>> parse_args(["--standalone", "train.py", "--lr", "0.1"]).training_script_args
        ['--lr', '0.1']
    """
    return get_args_parser().parse_args(args)


def parse_min_max_nnodes(nnodes):
    """``(min, max)`` from ``"N"`` or ``"MIN:MAX"``.

    Example::

        >>> parse_min_max_nnodes("2"), parse_min_max_nnodes("1:4")
        ((2, 2), (1, 4))
    """
    parts = nnodes.split(":")
    if len(parts) == 1:
        return int(parts[0]), int(parts[0])
    if len(parts) == 2:
        return int(parts[0]), int(parts[1])
    raise RuntimeError(f'nnodes={nnodes} is not in "MIN:MAX" format')


def determine_local_world_size(nproc_per_node):
    """The number of workers per node: a number, or ``"cpu"`` (CPU count), ``"gpu"`` (CUDA
    devices), ``"auto"`` (GPUs if any, else CPUs).

    Example::

        >>> determine_local_world_size("4")
        4
    """
    try:
        return int(nproc_per_node)
    except ValueError as error:
        from .. import cuda

        if nproc_per_node == "cpu":
            return os.cpu_count() or 1
        if nproc_per_node == "gpu":
            if not cuda.is_available():
                raise ValueError("Cuda is not available.") from error
            return cuda.device_count()
        if nproc_per_node == "xpu":
            raise ValueError("Xpu is not available.") from error
        if nproc_per_node == "auto":
            return cuda.device_count() if cuda.is_available() else (os.cpu_count() or 1)
        raise ValueError(f"Unsupported nproc_per_node value: {nproc_per_node}") from error


def get_rdzv_endpoint(args):
    """The rendezvous endpoint: ``--rdzv-endpoint``, or the master's ``host:port`` for a
    static rendezvous without one.

    Example::

        >>> get_rdzv_endpoint(parse_args(["--master-port=1234", "t.py"]))
        '127.0.0.1:1234'
    """
    if args.rdzv_backend == "static" and not args.rdzv_endpoint:
        return f"{args.master_addr}:{args.master_port}"
    return args.rdzv_endpoint


def get_use_env(args):
    """Whether the workers read LOCAL_RANK from the environment (always, except with the
    deprecated ``ember.distributed.launch`` without ``--use-env``).

    Example::

        >>> get_use_env(parse_args(["t.py"]))
        True
    """
    return getattr(args, "use_env", True)


def _rendezvous_config(text):
    """``"key1=value1,key2=value2"`` as a dict."""
    config = {}
    for item in filter(None, (text or "").split(",")):
        key, _, value = item.partition("=")
        if not key or not _:
            raise ValueError("The rendezvous configuration string must be in format "
                             "<key1>=<value1>,...,<keyN>=<valueN>.")
        config[key.strip()] = value.strip()
    return config


def _logs_specs_class(name):
    if name is None:
        return DefaultLogsSpecs
    from importlib import metadata

    group = metadata.entry_points().select(group="torchrun.logs_specs")
    found = group.select(name=name)
    if not found:
        raise ValueError(f"Could not find entrypoint under 'torchrun.logs_specs[{name}]' key")
    return next(iter(found)).load()


def _local_ranks(text):
    if not text:
        return None
    try:
        ranks = set(map(int, text.split(",")))
    except ValueError as error:
        raise ValueError("--local_ranks_filter must be a comma-separated list of integers "
                         "e.g. --local_ranks_filter=0,1,2") from error
    return ranks


def config_from_args(args):
    """``(LaunchConfig, command, command arguments)`` from parsed launcher arguments.

    Example::

        >>> config, cmd, cmd_args = config_from_args(parse_args(["--standalone", "t.py"]))
        >>> cmd_args
        ['-u', 't.py']
    """
    min_nodes, max_nodes = parse_min_max_nnodes(args.nnodes)
    if not 0 < min_nodes <= max_nodes:
        raise AssertionError(f"min_nodes must be > 0 and <= max_nodes, got min_nodes="
                             f"{min_nodes}, max_nodes={max_nodes}")
    if args.max_restarts < 0:
        raise AssertionError("max_restarts must be >= 0")
    if args.numa_binding is not None:
        raise NotImplementedError("--numa-binding: ember's launcher does not bind workers to "
                                  "NUMA nodes; start them under numactl instead")
    nproc = determine_local_world_size(args.nproc_per_node)
    if "OMP_NUM_THREADS" not in os.environ and nproc > 1:
        logger.warning("Setting OMP_NUM_THREADS environment variable for each process to be "
                       "1 in default, to avoid your system being overloaded, please further "
                       "tune the variable for optimal performance in your application as "
                       "needed.")
        os.environ["OMP_NUM_THREADS"] = "1"
    rdzv_configs = _rendezvous_config(args.rdzv_conf)
    if args.rdzv_backend == "static":
        rdzv_configs["rank"] = args.node_rank
    logs_specs = _logs_specs_class(args.logs_specs)(
        log_dir=args.log_dir, redirects=Std.from_str(args.redirects),
        tee=Std.from_str(args.tee), local_ranks_filter=_local_ranks(args.local_ranks_filter))
    config = LaunchConfig(
        min_nodes=min_nodes, max_nodes=max_nodes, nproc_per_node=nproc, run_id=args.rdzv_id,
        role=args.role, rdzv_endpoint=get_rdzv_endpoint(args), rdzv_backend=args.rdzv_backend,
        rdzv_configs=rdzv_configs, max_restarts=args.max_restarts,
        monitor_interval=args.monitor_interval, start_method=args.start_method,
        log_line_prefix_template=os.getenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"),
        local_addr=args.local_addr, logs_specs=logs_specs,
        event_log_handler=args.event_log_handler, signals_to_handle=args.signals_to_handle,
        duplicate_stdout_filters=args.duplicate_stdout_filters,
        duplicate_stderr_filters=args.duplicate_stderr_filters,
        virtual_local_rank=args.virtual_local_rank, shutdown_timeout=args.shutdown_timeout)
    return (config, *_command(args))


def _command(args):
    """``(command, arguments)`` that start one worker."""
    command_args = []
    if args.run_path:
        command = run_script_path
        command_args.append(args.training_script)
    elif not args.no_python:
        command = os.getenv("PYTHON_EXEC", sys.executable)
        command_args += ["-u", *(["-m"] if args.module else []), args.training_script]
    else:
        if args.module:
            raise ValueError("Don't use both the '--no-python' flag and the '--module' flag "
                             "at the same time.")
        command = args.training_script
    if not get_use_env(args):
        command_args.append(f"--local-rank={macros.local_rank}")
    command_args += args.training_script_args
    return command, command_args


def run_script_path(training_script, *training_script_args):
    """Run ``training_script`` in this interpreter, as ``__main__`` with those arguments.

    Example::

        >>> run_script_path("train.py", "--epochs", "1")        # doctest: +SKIP
    """
    import runpy

    sys.argv = [training_script, *training_script_args]
    runpy.run_path(sys.argv[0], run_name="__main__")


def run(args):
    """Run the workers of parsed ``args``; return the exit code (0, or the first failed
    worker's, after printing torch's failure report).

    Example::

        >>> run(parse_args(["--nproc-per-node=2", "train.py"]))      # doctest: +SKIP
        0
    """
    if args.standalone:
        args.rdzv_backend, args.rdzv_endpoint = "c10d", "localhost:0"
        args.rdzv_id = str(uuid.uuid4())
    elif args.rdzv_backend == "static" and not args.rdzv_endpoint and args.master_port is None:
        if parse_min_max_nnodes(args.nnodes)[1] == 1:
            args.rdzv_backend, args.rdzv_endpoint = "c10d", "localhost:0"
            args.rdzv_id = str(uuid.uuid4())
    if args.master_port is None:
        args.master_port = 29500
    config, command, command_args = config_from_args(args)
    try:
        elastic_launch(config=config, entrypoint=command)(*command_args)
    except ChildFailedError as error:
        rank, failure = error.get_first_failure()
        sys.stderr.write(f"{error.format_msg()}\nember.distributed.run: rank {rank} (local "
                         f"rank {failure.local_rank}) failed with exit code "
                         f"{failure.exitcode}\n")
        code = failure.exitcode
        return code if code > 0 else 128 - code
    return 0


def main(args=None):
    """Parse ``args`` (default ``sys.argv[1:]``), run the workers, return the exit code.

    Example::

        >>> main(["--nproc-per-node=2", "train.py"])                 # doctest: +SKIP
        0
    """
    return run(parse_args(args))


if __name__ == "__main__":
    sys.exit(main())
