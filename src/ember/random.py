"""``ember.random``: the global random number generator's seed and state (torch.random).

Example::

    >>> import ember.random
    >>> ember.random.manual_seed(0).initial_seed()
    0
    >>> with ember.random.fork_rng():
    ...     _ = ember.rand(3)   # the global state is restored after the block
"""

from ._backend_info import thread_safe_generator
from .ops.random import fork_rng, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng",
           "thread_safe_generator"]
