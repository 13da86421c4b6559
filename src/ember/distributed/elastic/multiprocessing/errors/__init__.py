"""``torch.distributed.elastic.multiprocessing.errors``: how a worker's uncaught exception
reaches the launcher (:func:`record` writes it to ``$TORCHELASTIC_ERROR_FILE``) and how the
launcher reports failed workers (:class:`ChildFailedError`, one :class:`ProcessFailure` per
failed rank, the first one as the root cause).

Example::

    >>> @record
    ... def main():
    ...     ...
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import socket
import time
import traceback

__all__ = ["ChildFailedError", "ErrorHandler", "ProcessFailure", "record",
           "get_error_handler"]

_NOT_AVAILABLE = "<N/A>"


@dataclasses.dataclass
class ProcessFailure:
    """One failed worker: its local rank, pid, exit code and error file (read when it
    exists: the message and time the worker recorded).

    Example::

        >>> ProcessFailure(local_rank=1, pid=123, exitcode=3, error_file="").exitcode
        3
    """

    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    error_file_data: dict = dataclasses.field(init=False, default_factory=dict)
    message: str = dataclasses.field(init=False, default="")
    timestamp: int = dataclasses.field(init=False, default=0)

    def __post_init__(self):
        if self.error_file and os.path.isfile(self.error_file):
            with open(self.error_file) as fh:
                self.error_file_data = json.load(fh)
            recorded = self.error_file_data.get("message", {})
            if isinstance(recorded, dict):
                self.message = recorded.get("message", "")
                self.timestamp = int(recorded.get("extraInfo", {}).get("timestamp", 0))
            else:
                self.message = str(recorded)
        else:
            self.message = "To enable traceback see: " \
                "https://pytorch.org/docs/stable/elastic/errors.html"
        if not self.timestamp:
            self.timestamp = int(time.time())

    def signal_name(self):
        """The name of the signal that ended the worker (negative exit code), else <N/A>."""
        if self.exitcode < 0:
            import signal

            try:
                return signal.Signals(-self.exitcode).name
            except ValueError:
                return "UNKNOWN SIGNAL"
        return _NOT_AVAILABLE

    def timestamp_isoformat(self):
        return time.strftime("%Y-%m-%d_%H:%M:%S", time.localtime(self.timestamp))


class ChildFailedError(Exception):
    """Workers of a launch failed: ``failures`` maps each failed global rank to its
    :class:`ProcessFailure`; the earliest is the root cause.

    Example::

        >>> error = ChildFailedError("train.py", {1: ProcessFailure(1, 123, 3, "")})
        >>> error.get_first_failure()[0]
        1
    """

    def __init__(self, name, failures):
        self.name = name
        self.failures = failures
        if not failures:
            raise AssertionError("ChildFailedError needs at least one failure")
        super().__init__(self.format_msg())

    def get_first_failure(self):
        """``(global rank, ProcessFailure)`` of the earliest failure."""
        rank = min(self.failures, key=lambda r: self.failures[r].timestamp)
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim="=", section_delim="-"):
        """The failure report, in torch's layout."""
        width = 60
        root_rank, root = self.get_first_failure()
        others = [self._format_failure(i, rank, failure) for i, (rank, failure) in
                  enumerate((r, f) for r, f in self.failures.items() if r != root_rank)]
        lines = ["", boarder_delim * width, f"{self.name} FAILED", section_delim * width,
                 "Failures:", *(others or ["  <NO_OTHER_FAILURES>"]), section_delim * width,
                 "Root Cause (first observed failure):", self._format_failure(0, root_rank, root),
                 boarder_delim * width]
        return "\n".join(lines)

    @staticmethod
    def _format_failure(index, rank, failure):
        error_file = failure.error_file if failure.error_file_data else _NOT_AVAILABLE
        exit_text = f"{failure.exitcode} (pid: {failure.pid})"
        if failure.exitcode < 0:
            exit_text += f"\n  error_file: {error_file}\n  traceback : Signal {-failure.exitcode}" \
                f" ({failure.signal_name()}) received by PID {failure.pid}"
            body = exit_text
        else:
            body = f"{exit_text} \n  error_file: {error_file}\n  traceback : {failure.message}"
        return (f"[{index}]:\n  time      : {failure.timestamp_isoformat()}\n"
                f"  host      : {socket.getfqdn()}\n"
                f"  rank      : {rank} (local_rank: {failure.local_rank})\n"
                f"  exitcode  : {body}")


class ErrorHandler:
    """Writes a worker's uncaught exception to ``$TORCHELASTIC_ERROR_FILE`` (as JSON: the
    message, the traceback, the time) for the launcher to report.

    Example::

        >>> ErrorHandler().record_exception(ValueError("bad"))   # writes $TORCHELASTIC_ERROR_FILE
    """

    def _get_error_file_path(self):
        return os.environ.get("TORCHELASTIC_ERROR_FILE")

    def initialize(self):
        """Nothing to set up (torch enables faulthandler here)."""

    def record_exception(self, error):
        path = self._get_error_file_path()
        if not path:
            return
        data = {"message": {"message": f"{type(error).__name__}: {error}",
                            "extraInfo": {"py_callstack": traceback.format_exc(),
                                          "timestamp": str(int(time.time()))}}}
        with open(path, "w") as fh:
            json.dump(data, fh)


def get_error_handler():
    """The error handler :func:`record` uses.

    Example::

        >>> isinstance(get_error_handler(), ErrorHandler)
        True
    """
    return ErrorHandler()


def record(fn, error_handler=None):
    """Decorate a worker's entry point: an uncaught exception is written to the error file
    the launcher gave (``$TORCHELASTIC_ERROR_FILE``), then raised as usual.

    Example::

        >>> @record
        ... def main():
        ...     raise ValueError("bad data")
    """
    handler = error_handler or get_error_handler()

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except ChildFailedError as error:  # a launcher inside: report, as torch does
            rank, failure = error.get_first_failure()
            if failure.error_file and os.path.isfile(failure.error_file):
                with open(failure.error_file) as fh:
                    data = fh.read()
                path = handler._get_error_file_path()
                if path:
                    with open(path, "w") as out:
                        out.write(data)
            raise
        except Exception as error:
            handler.record_exception(error)
            raise

    return wrapper
