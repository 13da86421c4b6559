"""``python -m ember.backends.xeon.run_cpu [options] script.py [args]``: run a CPU program as
one or more instances, each pinned to its own cores with its thread count set (torch's
``torch.backends.xeon.run_cpu`` options).

ember's launcher splits the cores this process may use (``os.sched_getaffinity``) between the
instances, sets ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` to each instance's core count and pins
it with ``sched_setaffinity``; the memory-allocator and Intel OpenMP switches are accepted and
only logged, as ember preloads no library.

Example::

    >>> args = create_args().parse_args(["--ninstances", "2", "train.py", "--lr", "0.1"])
    >>> args.ninstances, args.program, args.program_args
    (2, 'train.py', ['--lr', '0.1'])
"""

from __future__ import annotations

import enum
import logging
import os
import platform
import subprocess
import sys
from argparse import REMAINDER, ArgumentParser, RawTextHelpFormatter

__all__ = ["create_args", "main", "start_processes", "Std", "REMAINDER", "format_str",
           "logger"]

format_str = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
logger = logging.getLogger(__name__)


class Std(enum.IntFlag):
    """Which standard streams of the launched processes are redirected to log files."""

    NONE = 0
    OUT = 1
    ERR = 2
    ALL = OUT | ERR


_SWITCHES = [("--multi-instance", "Enable multi-instance, by default one instance per node"),
             ("-m", "Run the program as a module (python -m)"),
             ("--no-python", "Run the program directly, not with python"),
             ("--enable-tcmalloc", "Use tcmalloc (accepted; ember preloads nothing)"),
             ("--enable-jemalloc", "Use jemalloc (accepted; ember preloads nothing)"),
             ("--use-default-allocator", "Use the default memory allocator"),
             ("--disable-iomp", "Do not use Intel OpenMP (accepted)"),
             ("--skip-cross-node-cores", "Do not give an instance cores of two NUMA nodes"),
             ("--latency-mode", "4 cores per instance, all physical cores"),
             ("--throughput-mode", "One instance per node, all physical cores"),
             ("--use-logical-core", "Use logical cores too"),
             ("--disable-numactl", "Do not use numactl"),
             ("--disable-taskset", "Do not pin instances to cores")]


def create_args(parser=None):
    """Add run_cpu's options to ``parser`` (a new ArgumentParser when None) and return it.

    Example::

        >>> create_args().parse_args(["--latency-mode", "x.py"]).latency_mode
        True
    """
    if parser is None:
        parser = ArgumentParser(description="Run a CPU program as pinned instances",
                                formatter_class=RawTextHelpFormatter)
    for flag, text in _SWITCHES:
        names = [flag] if flag == "-m" else [flag, flag.replace("-", "_").replace("__", "--")]
        if flag == "-m":
            names.append("--module")
        parser.add_argument(*names, action="store_true", default=False, help=text)
    parser.add_argument("--ncores-per-instance", "--ncores_per_instance", type=int, default=-1,
                        help="Cores per instance")
    parser.add_argument("--ninstances", type=int, default=-1, help="Number of instances")
    parser.add_argument("--rank", type=int, default=-1, help="Run only this instance")
    parser.add_argument("--node-id", "--node_id", type=int, default=-1, help="NUMA node")
    parser.add_argument("--core-list", "--core_list", type=str, default=None,
                        help='Cores to use, e.g. "0,1,2,3"')
    parser.add_argument("--log-path", "--log_path", type=str, default="",
                        help="Folder for the instances' logs")
    parser.add_argument("--log-file-prefix", "--log_file_prefix", type=str, default="run",
                        help="Prefix of the log files")
    parser.add_argument("program", type=str, help="The program to launch, then its arguments")
    parser.add_argument("program_args", nargs=REMAINDER)
    return parser


def _available_cores(args):
    if args.core_list:
        return [int(c) for c in args.core_list.split(",")]
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _instance_cores(args):
    """The core list of each instance, from the instance count and cores per instance."""
    cores = _available_cores(args)
    if args.latency_mode:
        per = 4
    elif args.ncores_per_instance > 0:
        per = args.ncores_per_instance
    else:
        per = len(cores) // max(args.ninstances, 1)
    count = args.ninstances if args.ninstances > 0 else max(len(cores) // max(per, 1), 1)
    if per * count > len(cores) or per < 1:
        raise RuntimeError(f"{count} instances of {per} cores need more than the "
                           f"{len(cores)} cores available")
    chosen = [cores[i * per:(i + 1) * per] for i in range(count)]
    return [chosen[args.rank]] if args.rank >= 0 else chosen


def _launch(name, entrypoint, args, envs, pin=None, log_dir=None, redirects=Std.NONE):
    """Start ``entrypoint`` once per key of ``args`` (command-line tuples) with that key's
    environment from ``envs``, pinned to ``pin[key]``'s cores; returns the Popen objects."""
    processes = []
    for rank, arguments in args.items():
        env = {**os.environ, **envs.get(rank, {})}
        cores = (pin or {}).get(rank)
        out = err = None
        if log_dir and redirects:
            path = os.path.join(log_dir, f"{name}_instance_{rank}")
            out = open(f"{path}.stdout", "w") if redirects & Std.OUT else None  # noqa: SIM115
            err = open(f"{path}.stderr", "w") if redirects & Std.ERR else None  # noqa: SIM115
        preexec = (lambda c=cores: os.sched_setaffinity(0, c)) if cores else None
        processes.append(subprocess.Popen([entrypoint, *arguments], env=env, stdout=out,
                                          stderr=err, preexec_fn=preexec))
    return processes


def start_processes(name, entrypoint, args, envs, logs_specs, log_line_prefixes=None,
                    start_method="spawn", numa_options=None, duplicate_stdout_filters=None,
                    duplicate_stderr_filters=None):
    """torch.distributed.elastic's process launcher (run_cpu imports it): ember has no
    elastic agent, so it raises NotImplementedError; start the processes with
    ``subprocess`` or ``ember.multiprocessing`` instead (:func:`main` uses its own)."""
    raise NotImplementedError(
        "torch.distributed.elastic.multiprocessing.start_processes: ember has no elastic "
        "launcher; use subprocess or ember.multiprocessing.start_processes instead")


def main(args):
    """Launch ``args.program`` as the instances ``args`` asks for and wait for them; raises
    ``subprocess.CalledProcessError`` when one fails.

    Example::

        >>> main(create_args().parse_args(["--ninstances", "1", "prog.py"]))  # doctest: +SKIP
    """
    if platform.system() in ("Windows", "Darwin"):
        raise RuntimeError(f"{platform.system()} is not supported!!!")
    if args.latency_mode and args.throughput_mode:
        raise RuntimeError("Either args.latency_mode or args.throughput_mode should be set")
    if not args.no_python and not args.program.endswith(".py") and not args.module:
        raise RuntimeError('For non Python script, you should use "--no-python" parameter.')
    if args.log_path:
        os.makedirs(args.log_path, exist_ok=True)
    groups = _instance_cores(args)
    command = [args.program, *args.program_args]
    if args.module:
        command = ["-m", *command]
    entry = command.pop(0) if args.no_python else sys.executable
    threads = {rank: {"OMP_NUM_THREADS": str(len(c)), "MKL_NUM_THREADS": str(len(c))}
               for rank, c in enumerate(groups)}
    pin = None if args.disable_taskset else dict(enumerate(groups))
    for rank, cores in enumerate(groups):
        logger.info("instance %d: cores %s", rank, cores)
    processes = _launch(args.log_file_prefix, entry,
                        {rank: tuple(command) for rank in range(len(groups))}, threads,
                        pin=pin, log_dir=args.log_path or None,
                        redirects=Std.ALL if args.log_path else Std.NONE)
    for process in processes:
        if process.wait() != 0:
            raise subprocess.CalledProcessError(process.returncode, process.args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=format_str)
    main(create_args().parse_args())
