"""Where each worker's stdout and stderr go: inherited (the console), redirected to a file, or
teed to both; which local ranks' output the console shows."""

from __future__ import annotations

import abc
import dataclasses
import enum
import os
import tempfile

__all__ = ["Std", "LogsSpecs", "DefaultLogsSpecs", "LogsDest", "to_map"]


class Std(enum.IntFlag):
    """Which streams: ``NONE``, ``OUT``, ``ERR`` or ``ALL``.

    Example::

        >>> Std.from_str("0:1,1:2")
        {0: <Std.OUT: 1>, 1: <Std.ERR: 2>}
    """

    NONE = 0
    OUT = 1
    ERR = 2
    ALL = OUT | ERR

    @classmethod
    def from_str(cls, vm):
        """``"3"`` (one value for every rank) or ``"0:1,1:2"`` (per local rank)."""
        if vm.isdigit():
            return cls(int(vm))
        mapping = {}
        for item in vm.split(","):
            rank, value = item.split(":")
            mapping[int(rank)] = cls(int(value))
        return mapping


def to_map(val_or_map, local_world_size):
    """A :class:`Std` per local rank from one value or a partial mapping (others NONE).

    Example::

        >>> to_map(Std.OUT, 2)
        {0: <Std.OUT: 1>, 1: <Std.OUT: 1>}
    """
    if isinstance(val_or_map, Std):
        return dict.fromkeys(range(local_world_size), val_or_map)
    return {rank: val_or_map.get(rank, Std.NONE) for rank in range(local_world_size)}


@dataclasses.dataclass
class LogsDest:
    """The files of each local rank's streams (empty strings: not written to a file).

    Example::

        >>> LogsDest().stdouts
        {}
    """

    stdouts: dict = dataclasses.field(default_factory=dict)
    stderrs: dict = dataclasses.field(default_factory=dict)
    tee_stdouts: dict = dataclasses.field(default_factory=dict)
    tee_stderrs: dict = dataclasses.field(default_factory=dict)
    error_files: dict = dataclasses.field(default_factory=dict)
    filtered_stdout: str = ""
    filtered_stderr: str = ""


class LogsSpecs(abc.ABC):
    """How workers' output is logged; :meth:`reify` gives the files for one set of workers.

    Example::

        >>> isinstance(DefaultLogsSpecs(log_dir="/tmp/logs"), LogsSpecs)   # doctest: +SKIP
        True
    """

    def __init__(self, log_dir=None, redirects=Std.NONE, tee=Std.NONE, local_ranks_filter=None):
        self._root_log_dir = log_dir
        self._redirects = redirects
        self._tee = tee
        self._local_ranks_filter = local_ranks_filter

    @abc.abstractmethod
    def reify(self, envs):
        """The :class:`LogsDest` of the workers whose environments are ``envs`` (local rank
        -> environment)."""

    @property
    @abc.abstractmethod
    def root_log_dir(self):
        """The folder the logs go under."""


class DefaultLogsSpecs(LogsSpecs):
    """Logs under ``log_dir/<run_id>/attempt_<n>/<local_rank>/{stdout,stderr,error}.log``
    (``log_dir`` a new temporary folder when not given).

    Example::

        >>> specs = DefaultLogsSpecs(log_dir="/tmp/logs", redirects=Std.ERR)
        >>> specs.root_log_dir
        '/tmp/logs'
    """

    def __init__(self, log_dir=None, redirects=Std.NONE, tee=Std.NONE, local_ranks_filter=None):
        if log_dir != os.devnull:
            if log_dir is None:
                log_dir = tempfile.mkdtemp(prefix="ember_elastic_")
            elif os.path.isfile(log_dir):
                raise NotADirectoryError(f"log_dir: {log_dir} is a file")
            os.makedirs(log_dir, exist_ok=True)
        super().__init__(log_dir, redirects, tee, local_ranks_filter)

    @property
    def root_log_dir(self):
        return str(self._root_log_dir)

    def reify(self, envs):
        count = len(envs)
        first = next(iter(envs.values()), {})
        run_id = first.get("TORCHELASTIC_RUN_ID", "none")
        attempt = first.get("TORCHELASTIC_RESTART_COUNT", "0")
        folder = os.path.join(self.root_log_dir, str(run_id), f"attempt_{attempt}")
        redirects, tee = to_map(self._redirects, count), to_map(self._tee, count)
        dest = LogsDest()
        for rank in range(count):
            rank_dir = os.path.join(folder, str(rank))
            os.makedirs(rank_dir, exist_ok=True)  # its error file at least
            out_file = os.path.join(rank_dir, "stdout.log")
            err_file = os.path.join(rank_dir, "stderr.log")
            wants_out = bool((redirects[rank] | tee[rank]) & Std.OUT)
            wants_err = bool((redirects[rank] | tee[rank]) & Std.ERR)
            dest.stdouts[rank] = out_file if wants_out else ""
            dest.stderrs[rank] = err_file if wants_err else ""
            dest.tee_stdouts[rank] = out_file if tee[rank] & Std.OUT else ""
            dest.tee_stderrs[rank] = err_file if tee[rank] & Std.ERR else ""
            dest.error_files[rank] = os.path.join(rank_dir, "error.json")
        return dest

    def shows(self, local_rank):
        """Whether the console shows this local rank's output (``local_ranks_filter``)."""
        return self._local_ranks_filter is None or local_rank in self._local_ranks_filter

    def __repr__(self):
        return (f"DefaultLogsSpecs(root_log_dir={self._root_log_dir}, "
                f"redirects={self._redirects}, tee={self._tee}, "
                f"local_ranks_filter={self._local_ranks_filter})")

    def __eq__(self, other):
        return isinstance(other, DefaultLogsSpecs) and vars(self) == vars(other)
