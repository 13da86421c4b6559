"""``ember.backends.xeon``: torch's launcher for CPU programs (``run_cpu``), imported on first
use so that ``python -m ember.backends.xeon.run_cpu`` runs it as a fresh module.

Example::

    >>> from ember.backends.xeon import run_cpu
    >>> run_cpu.create_args().parse_args(["train.py"]).ninstances
    -1
"""

import importlib

__all__ = ["run_cpu"]


def __getattr__(name):
    if name == "run_cpu":
        return importlib.import_module(f"{__name__}.run_cpu")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
