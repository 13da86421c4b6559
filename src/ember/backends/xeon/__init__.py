"""``ember.backends.xeon``: torch's launcher for CPU programs (``run_cpu``).

Example::

    >>> from ember.backends.xeon import run_cpu
    >>> run_cpu.create_args().parse_args(["train.py"]).ninstances
    -1
"""

from . import run_cpu

__all__ = ["run_cpu"]
