"""``python -m ember.distributed.launch``: the deprecated launcher, as
``torch.distributed.launch``.

It takes ``ember.distributed.run``'s flags plus ``--use-env``; without ``--use-env`` each rank's
script is also given ``--local-rank=N`` (the rank's local rank). It warns (FutureWarning) that
``ember.distributed.run`` is the launcher to use.

Example::

    $ python -m ember.distributed.launch --nproc-per-node=2 train.py
"""

from __future__ import annotations

import sys
import warnings

from .run import get_args_parser, run

__all__ = ["main", "launch", "parse_args"]

_DEPRECATION = ("The module torch.distributed.launch is deprecated\n"
                "and will be removed in future. Use torchrun.\n"
                "Note that --use-env is set by default in torchrun.\n"
                "If your script expects `--local-rank` argument to be set, please\n"
                "change it to read from `os.environ['LOCAL_RANK']` instead. See \n"
                "https://pytorch.org/docs/stable/distributed.html#launch-utility for \n"
                "further instructions\n")


def parse_args(args):
    """The launcher's flags: ``ember.distributed.run``'s and ``--use-env``.

    Example::

        >>> parse_args(["--nproc-per-node=2", "--use-env", "train.py"]).use_env
        True
    """
    parser = get_args_parser()
    parser.prog = "python -m ember.distributed.launch"
    parser.add_argument("--use-env", "--use_env", dest="use_env", default=False,
                        action="store_true",
                        help="set LOCAL_RANK in the environment only (no --local-rank "
                             "argument to the script)")
    return parser.parse_args(args)


def launch(args):
    """Run the ranks of parsed ``args``; return the exit code.

    Example::

        >>> launch(parse_args(["--nproc-per-node=2", "train.py"]))
    """
    if args.no_python and not args.use_env:
        raise ValueError("When using the '--no-python' flag, you must also set the "
                         "'--use-env' flag.")
    return run(args)


def main(args=None):
    """Warn that the module is deprecated, then launch (``args`` default ``sys.argv[1:]``).

    Example::

        >>> main(["--nproc-per-node=2", "train.py"])
    """
    warnings.warn(_DEPRECATION, FutureWarning, stacklevel=2)
    return launch(parse_args(args))


if __name__ == "__main__":
    sys.exit(main())
