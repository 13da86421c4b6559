"""``ember.xpu.random``: torch's path of the XPU generator functions (see :mod:`ember.xpu`).

Example::

    >>> from ember.xpu.random import get_rng_state_all
    >>> get_rng_state_all()
    []
"""

from . import (  # noqa: F401  (re-exported under torch's path)
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed"]
