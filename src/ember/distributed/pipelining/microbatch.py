"""Splitting a step's inputs into microbatches and merging the outputs back
(``torch.distributed.pipelining.microbatch``)."""

from __future__ import annotations

__all__ = ["TensorChunkSpec", "split_args_kwargs_into_chunks", "merge_chunks"]


class TensorChunkSpec:
    """The dim along which a tensor argument is split into microbatches.

    Example::

        >>> TensorChunkSpec(0).split_dim
        0
    """

    def __init__(self, split_dim):
        self.split_dim = split_dim

    def __repr__(self):
        return f"TensorChunkSpec({self.split_dim})"

    def __str__(self):
        return f"TensorChunkSpec({self.split_dim})"


def _split(value, chunks, spec):
    from ..._tensor import Tensor

    if not isinstance(value, Tensor):
        return [value] * chunks
    dim = spec.split_dim if spec is not None else 0
    pieces = value.tensor_split(chunks, dim)
    if len(pieces) != chunks or any(piece.shape[dim] == 0 for piece in pieces):
        raise ValueError(f"Tensor size {value.shape[dim]} along dim {dim} is too small to be "
                         f"split into {chunks} chunks")
    return list(pieces)


def split_args_kwargs_into_chunks(args, kwargs, chunks, args_chunk_spec=None,
                                  kwargs_chunk_spec=None):
    """``(list of args tuples, list of kwargs dicts)``, one per microbatch: tensors split
    along their spec's dim (0 by default), other values repeated.

    Example::

        >>> args, kwargs = split_args_kwargs_into_chunks((ember.arange(4.),), {}, 2)
        >>> [a[0].tolist() for a in args]
        [[0.0, 1.0], [2.0, 3.0]]
    """
    kwargs = kwargs or {}
    specs = list(args_chunk_spec or [None] * len(args))
    split_args = [_split(value, chunks, spec) for value, spec in zip(args, specs)]
    split_kwargs = {key: _split(value, chunks, (kwargs_chunk_spec or {}).get(key))
                    for key, value in kwargs.items()}
    return ([tuple(parts[i] for parts in split_args) for i in range(chunks)],
            [{key: parts[i] for key, parts in split_kwargs.items()} for i in range(chunks)])


def merge_chunks(chunks, chunk_spec=None):
    """The microbatches' outputs joined back (tensors concatenated along dim 0, tuples item by
    item).

    Example::

        >>> merge_chunks([ember.ones(1), ember.zeros(1)]).tolist()
        [1.0, 0.0]
    """
    from ..._tensor import Tensor
    from ...ops.shape import cat

    first = chunks[0]
    if isinstance(first, Tensor):
        dim = chunk_spec.split_dim if isinstance(chunk_spec, TensorChunkSpec) else 0
        return cat(list(chunks), dim)
    if isinstance(first, (tuple, list)):
        specs = chunk_spec if isinstance(chunk_spec, (tuple, list)) else [None] * len(first)
        return type(first)(merge_chunks([c[i] for c in chunks], specs[i])
                           for i in range(len(first)))
    return first
