"""Settings applied across a DataPipe graph: sharding, shuffling, random seeds.

Example::

    >>> from ember.utils.data.datapipes.iter import IterableWrapper
    >>> dp = IterableWrapper(range(6)).sharding_filter()
    >>> list(apply_sharding(dp, 2, 1))
    [1, 3, 5]
"""

from __future__ import annotations

import warnings

from .datapipes.iter.sharding import SHARDING_PRIORITIES, ShardingFilterIterDataPipe
from .graph import traverse_dps

__all__ = ["apply_random_seed", "apply_sharding", "apply_shuffle_seed", "apply_shuffle_settings",
           "get_all_graph_pipes"]


def get_all_graph_pipes(graph):
    """Every DataPipe of a :func:`~ember.utils.data.graph.traverse_dps` graph, once each.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> from ember.utils.data.graph import traverse_dps
        >>> len(get_all_graph_pipes(traverse_dps(IterableWrapper([1]).map(str))))
        2
    """
    pipes, seen = [], set()

    def walk(subgraph):
        for key, (datapipe, children) in subgraph.items():
            if key not in seen:
                seen.add(key)
                pipes.append(datapipe)
                walk(children)

    walk(graph)
    return pipes


def _is_sharding_pipe(datapipe):
    return isinstance(datapipe, ShardingFilterIterDataPipe) or (
        hasattr(datapipe, "apply_sharding") and callable(datapipe.apply_sharding))


def apply_sharding(datapipe, num_of_instances, instance_id,
                   sharding_group=SHARDING_PRIORITIES.DEFAULT):
    """Shard ``datapipe`` for ``instance_id`` of ``num_of_instances`` at its sharding pipes.

    Two sharding pipes on one branch raise ``RuntimeError``, as in torch.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(apply_sharding(IterableWrapper(range(4)).sharding_filter(), 2, 0))
        [0, 2]
    """
    def walk(subgraph, sharded_above):
        for datapipe, children in subgraph.values():
            here = None
            if _is_sharding_pipe(datapipe):
                if sharded_above is not None:
                    raise RuntimeError(
                        "Sharding twice on a single pipeline is likely unintended and will cause "
                        f"data loss. Sharding already applied to {sharded_above} while trying "
                        f"to apply to {datapipe}")
                datapipe.apply_sharding(num_of_instances, instance_id,
                                        sharding_group=sharding_group)
                here = datapipe
            walk(children, sharded_above if here is None else here)

    walk(traverse_dps(datapipe), None)
    return datapipe


def _is_shuffle_pipe(datapipe):
    return all(callable(getattr(datapipe, name, None)) for name in ("set_shuffle", "set_seed"))


def apply_shuffle_settings(datapipe, shuffle=None):
    """Turn shuffling on or off at every shuffle pipe (``None``: leave as is).

    With ``shuffle=True`` and no shuffle pipe in the graph, a warning suggests adding one.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(apply_shuffle_settings(IterableWrapper(range(3)).shuffle(), shuffle=False))
        [0, 1, 2]
    """
    if shuffle is None:
        return datapipe
    shufflers = [dp for dp in get_all_graph_pipes(traverse_dps(datapipe)) if _is_shuffle_pipe(dp)]
    if not shufflers and shuffle:
        warnings.warn("`shuffle=True` was set, but the datapipe does not contain a `Shuffler`. "
                      "Adding one at the end. Be aware that the default buffer size might not be "
                      "sufficient for your task.", stacklevel=2)
        datapipe = datapipe.shuffle()
        shufflers = [datapipe]
    for shuffler in shufflers:
        shuffler.set_shuffle(shuffle)
    return datapipe


def apply_shuffle_seed(datapipe, rng):
    """Deprecated name of :func:`apply_random_seed`.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> dp = apply_shuffle_seed(IterableWrapper([1]), ember.Generator())
    """
    warnings.warn("`apply_shuffle_seed` is deprecated since 1.12 and will be removed in the "
                  "future releases.\nPlease use `apply_random_seed` instead.", FutureWarning,
                  stacklevel=2)
    return apply_random_seed(datapipe, rng)


def apply_random_seed(datapipe, rng):
    """Seed every random pipe (those with ``set_seed``) from the generator ``rng``.

    Each pipe gets ``int(ember.empty((), dtype=ember.int64).random_(generator=rng))``, in graph
    order, so one generator state fixes the whole pipeline's randomness.

    Example::

        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> g = ember.Generator().manual_seed(0)
        >>> dp = apply_random_seed(IterableWrapper(range(4)).shuffle(), g)
    """
    from ... import empty, int64
    for pipe in get_all_graph_pipes(traverse_dps(datapipe)):
        if callable(getattr(pipe, "set_seed", None)):
            pipe.set_seed(int(empty((), dtype=int64).random_(generator=rng).item()))
    return datapipe
