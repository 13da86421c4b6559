"""``ember.nn.parallel.replicate``: copies of a module, one per device.

Example::

    >>> from ember.nn.parallel.replicate import replicate
    >>> copies = replicate(ember.nn.Linear(2, 2), ["cpu", "cpu"])
    >>> len(copies), copies[0] is copies[1]
    (2, False)
"""

from __future__ import annotations

import copy

from .comm import _target

__all__ = ["replicate"]


def replicate(network, devices, detach=False):
    """Deep copies of ``network`` moved to each device; with ``detach=False`` the copies'
    parameters stay differentiable copies of the original's (gradients flow back to it).

    Example::

        >>> replicate(ember.nn.Linear(2, 1), ["cpu"])[0].weight.shape
        ember.Size([1, 2])
    """
    replicas = []
    for device in devices:
        replica = copy.deepcopy(network).to(_target(device))
        if not detach:
            originals = dict(network.named_parameters())
            for name in [n for n, _ in replica.named_parameters()]:
                owner = replica.get_submodule(name.rpartition(".")[0]) if "." in name else replica
                leaf = name.rpartition(".")[2]
                del owner._parameters[leaf]
                setattr(owner, leaf, originals[name].to(_target(device)))
        replicas.append(replica)
    return replicas
