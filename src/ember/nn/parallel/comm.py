"""``ember.nn.parallel.comm``: copy, split, join and sum tensors across devices.

torch's versions run on CUDA devices only; ember's take any device (an int is ``cuda:<int>``,
``-1`` the CPU), so on a machine without a GPU the CUDA destinations raise ember's CUDA error
while CPU destinations work.

Example::

    >>> from ember.nn.parallel import comm
    >>> [p.tolist() for p in comm.scatter(ember.arange(5), devices=["cpu", "cpu"])]
    [[0, 1, 2], [3, 4]]
"""

from __future__ import annotations

from ..._device import device as _device
from ...ops.shape import cat

__all__ = ["broadcast", "broadcast_coalesced", "reduce_add", "reduce_add_coalesced", "scatter",
           "gather", "nccl"]

from ...cuda import nccl  # noqa: E402  (torch exposes torch.cuda.nccl here too)


def _target(device):
    """An int is a CUDA device index (``-1``: the CPU); anything else is a device spec."""
    if device is None:
        return _device("cuda")
    if isinstance(device, int):
        return _device("cpu") if device == -1 else _device("cuda", device)
    return _device(device)


def broadcast(tensor, devices=None, *, out=None):
    """Copies of ``tensor`` on each of ``devices`` (or into the tensors of ``out``).

    Example::

        >>> [t.device.type for t in broadcast(ember.ones(2), ["cpu", "cpu"])]
        ['cpu', 'cpu']
    """
    if (devices is None) == (out is None):
        raise RuntimeError("Exactly one of 'devices' and 'out' must be specified, but got "
                           f"devices={devices} and out={out}")
    if out is not None:
        for target in out:
            target.copy_(tensor)
        return tuple(out)
    return tuple(tensor.to(_target(d), copy=True) for d in devices)


def broadcast_coalesced(tensors, devices, buffer_size=10485760):
    """For each device, copies of all ``tensors`` (``buffer_size`` only groups CUDA copies).

    Example::

        >>> len(broadcast_coalesced([ember.ones(1), ember.zeros(1)], ["cpu"])[0])
        2
    """
    return [tuple(t.to(_target(d), copy=True) for t in tensors) for d in devices]


def reduce_add(inputs, destination=None):
    """The sum of same-shaped ``inputs``, on ``destination``.

    Example::

        >>> reduce_add([ember.ones(2), ember.ones(2)], destination=-1)
        tensor([2., 2.])
    """
    shapes = {tuple(t.shape) for t in inputs}
    if len(shapes) != 1:
        raise ValueError(f"input {len(inputs) - 1} has invalid size: got "
                         f"{tuple(inputs[-1].shape)}, but expected {tuple(inputs[0].shape)}")
    target = _target(destination)
    total = inputs[0].to(target, copy=True)
    for t in inputs[1:]:
        total = total + t.to(target)
    return total


def reduce_add_coalesced(inputs, destination=None, buffer_size=10485760):
    """Elementwise :func:`reduce_add` of lists of tensors (one list per device).

    Example::

        >>> reduce_add_coalesced([[ember.ones(1)], [ember.ones(1)]], destination=-1)
        (tensor([2.]),)
    """
    return tuple(reduce_add(list(group), destination) for group in zip(*inputs))


def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    """Split ``tensor`` along ``dim`` into one chunk per device (sizes ``chunk_sizes`` or as
    ``tensor.chunk`` gives them), each moved to its device.

    Example::

        >>> [p.shape[0] for p in scatter(ember.ones(4, 2), ["cpu", "cpu"], chunk_sizes=[1, 3])]
        [1, 3]
    """
    if out is not None:
        sizes = [t.shape[dim] for t in out]
        for piece, target in zip(tensor.split(sizes, dim), out):
            target.copy_(piece)
        return tuple(out)
    if devices is None:
        raise RuntimeError("Expected devices or out")
    pieces = tensor.split(list(chunk_sizes), dim) if chunk_sizes is not None else tensor.chunk(
        len(devices), dim)
    return tuple(p.to(_target(d)).contiguous() for p, d in zip(pieces, devices))


def gather(tensors, dim=0, destination=None, *, out=None):
    """Concatenate ``tensors`` along ``dim`` on ``destination`` (``-1``: the CPU).

    Example::

        >>> gather([ember.ones(1), ember.zeros(2)], destination=-1)
        tensor([1., 0., 0.])
    """
    if out is not None:
        return out.copy_(cat([t.to(out.device) for t in tensors], dim))
    target = _target(destination)
    return cat([t.to(target) for t in tensors], dim)

