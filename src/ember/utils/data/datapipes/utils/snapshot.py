"""Restoring a DataPipe graph's random state (torch's ``snapshot`` helpers).

Example::

    >>> from ember.utils.data.datapipes.utils.snapshot import apply_random_seed
"""

from __future__ import annotations

from ...graph_settings import apply_random_seed
from ..datapipe import IterDataPipe

__all__ = ["IterDataPipe", "apply_random_seed"]


def _simple_graph_snapshot_restoration(datapipe, n_iterations, rng=None):
    """Fast-forward ``datapipe`` by ``n_iterations`` items from a fresh start (seeded by
    ``rng`` when given), as torch's simple snapshot restoration does."""
    if rng is not None:
        apply_random_seed(datapipe, rng)
    iterator = iter(datapipe)
    for _ in range(n_iterations):
        next(iterator)
    return iterator
