"""The GPUs' random number generators, as ``torch.cuda``'s RNG functions.

Each GPU has its own :class:`ember.Generator`. As in torch, seeding is silently skipped without
a GPU (torch queues it for a GPU that may appear later), while reading a GPU's seed or state
needs a GPU.

Example::

    >>> ember.cuda.manual_seed(0)            # silently ignored without a GPU
    >>> ember.cuda.get_rng_state_all()
    []
"""

from __future__ import annotations

from ..ops import random as _random
from ._errors import require_gpu

__all__ = ["manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all"]


def _available():
    from . import is_available

    return is_available()


def _generator(device="cuda"):
    """The generator of ``device`` (an index, 'cuda:N' or a device; 'cuda': the current GPU)."""
    from . import _index

    require_gpu()
    return _random.cuda_generator(_index(None if device == "cuda" else device))


def _all_generators():
    from . import device_count

    return [_random.cuda_generator(index) for index in range(device_count())]


def manual_seed(seed):
    """Seed the current GPU's generator (silently ignored without a GPU, as torch).

    Example::

        >>> ember.cuda.manual_seed(0)
    """
    seed = int(seed)  # a bad seed fails with or without a GPU, as in torch
    if _available():
        _generator().manual_seed(seed)


def manual_seed_all(seed):
    """Seed every GPU's generator (a no-op without GPUs).

    Example::

        >>> ember.cuda.manual_seed_all(0)
    """
    seed = int(seed)
    for generator in _all_generators() if _available() else []:
        generator.manual_seed(seed)


def seed():
    """Seed the current GPU's generator non-deterministically (a no-op without a GPU).

    Example::

        >>> ember.cuda.seed()
    """
    if _available():
        _generator().seed()


def seed_all():
    """Seed every GPU's generator non-deterministically (a no-op without GPUs).

    Example::

        >>> ember.cuda.seed_all()
    """
    for generator in _all_generators() if _available() else []:
        generator.seed()


def initial_seed():
    """The seed of the current GPU's generator (needs a GPU).

    Example::

        >>> ember.cuda.initial_seed()        # doctest: +SKIP
        67280421310721
    """
    return _generator().initial_seed()


def get_rng_state(device="cuda"):
    """The state of ``device``'s generator, a uint8 tensor (needs a GPU).

    Example::

        >>> state = ember.cuda.get_rng_state()   # doctest: +SKIP
    """
    return _generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    """Restore ``device``'s generator from :func:`get_rng_state` (skipped without a GPU).

    Example::

        >>> ember.cuda.set_rng_state(ember.zeros(5, dtype=ember.uint8))   # no GPU: ignored
    """
    new_state = new_state.clone()  # torch copies the state first, GPU or not
    if _available():
        _generator(device).set_state(new_state)


def get_rng_state_all():
    """The states of every GPU's generator ([] without GPUs).

    Example::

        >>> ember.cuda.get_rng_state_all()
        []
    """
    return [generator.get_state() for generator in (_all_generators() if _available() else [])]


def set_rng_state_all(new_states):
    """Restore every GPU's generator, one state each (skipped without GPUs).

    Example::

        >>> ember.cuda.set_rng_state_all([])
    """
    states = list(new_states)
    if _available():
        for generator, state in zip(_all_generators(), states):
            generator.set_state(state.clone())
