"""Distributed checkpoints: every rank writes its own pieces, rank 0 writes the index.

A checkpoint is a directory. ``__<rank>_0.distcp`` holds, for each tensor of that rank's
state dict, the piece the rank owns (a DTensor's local piece with its offset in the whole
tensor; a plain tensor only from rank 0, since every rank has the same one). ``.metadata``
(written by rank 0 after gathering every rank's list of pieces) maps each flattened key to its
global shape, dtype and pieces, and holds the non-tensor values. Loading fills the given state
dict in place: each tensor (or DTensor piece) is assembled from whichever saved pieces overlap
it, so a checkpoint saved on N ranks loads on any number of ranks, or in one process.

The files are ember's own layout (pickled NumPy arrays), not readable by torch's DCP.
"""

from __future__ import annotations

import os
import pickle

import numpy as np

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["save", "load", "save_state_dict", "load_state_dict", "async_save",
           "FileSystemWriter", "FileSystemReader", "DefaultSavePlanner", "DefaultLoadPlanner",
           "CheckpointException"]

_METADATA = ".metadata"


def _dist():
    from ... import distributed

    return distributed


class CheckpointException(RuntimeError):
    """A failure while saving or loading a distributed checkpoint."""


class FileSystemWriter:
    """Where :func:`save` writes: a directory path.

    Example::

        >>> dcp.save(sd, storage_writer=FileSystemWriter("ckpt"))
    """

    def __init__(self, path, single_file_per_rank=True, sync_files=True, thread_count=1,
                 per_thread_copy_ahead=10_000_000, cache_staged_state_dict=False,
                 overwrite=True, **kwargs):
        self.path = os.fspath(path)


class FileSystemReader:
    """Where :func:`load` reads: a directory path.

    Example::

        >>> dcp.load(sd, storage_reader=FileSystemReader("ckpt"))
    """

    def __init__(self, path, **kwargs):
        self.path = os.fspath(path)


class DefaultSavePlanner:
    """The save planner (ember plans one way: every rank writes the pieces it owns).

    Example::

        >>> dcp.save(sd, checkpoint_id="ckpt", planner=DefaultSavePlanner())
    """

    def __init__(self, flatten_state_dict=True, flatten_sharded_tensors=True,
                 dedup_replicated_tensors=None, dedup_save_to_lowest_rank=False,
                 enable_plan_caching=False):
        self.flatten_state_dict = flatten_state_dict


class DefaultLoadPlanner:
    """The load planner (ember assembles each tensor from the saved pieces that overlap it).

    Example::

        >>> dcp.load(sd, checkpoint_id="ckpt", planner=DefaultLoadPlanner())
    """

    def __init__(self, flatten_state_dict=True, flatten_sharded_tensors=True,
                 allow_partial_load=False):
        self.allow_partial_load = allow_partial_load


# ---------------------------------------------------------------- flattening


def _stateful_to_state_dict(state_dict):
    """Objects with ``state_dict()`` (a model, an optimiser wrapper) replaced by their state."""
    return {k: v.state_dict() if _is_stateful(v) else v for k, v in state_dict.items()}


def _is_stateful(value):
    return (not isinstance(value, (dict, Tensor)) and callable(getattr(value, "state_dict", None))
            and callable(getattr(value, "load_state_dict", None)))


def _flatten(state_dict, prefix=()):
    """``{path tuple: leaf}`` for every leaf of nested dicts."""
    flat = {}
    for key, value in state_dict.items():
        path = prefix + (key,)
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, path))
        else:
            flat[path] = value
    return flat


def _set_path(state_dict, path, value):
    for key in path[:-1]:
        state_dict = state_dict[key]
    state_dict[path[-1]] = value


def _region(tensor):
    """``(offsets, array)``: the part of the whole tensor this rank holds."""
    from ..tensor._api import DTensor
    from ..tensor._collectives import chunk_bounds
    from ..tensor.placement_types import Shard

    array = np.asarray(tensor.detach()._data)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        array = array.copy()
    if not isinstance(tensor, DTensor):
        return (0,) * array.ndim, array
    mesh, placements, global_shape = tensor._spec
    offsets, sizes = [0] * array.ndim, list(global_shape)
    for mesh_dim, p in enumerate(placements):
        if isinstance(p, Shard):
            start, end = chunk_bounds(sizes[p.dim], mesh.size(mesh_dim),
                                      mesh.get_local_rank(mesh_dim))
            offsets[p.dim] += start
            sizes[p.dim] = end - start
    return tuple(offsets), array


def _owns(tensor, rank):
    """Whether this rank writes ``tensor``: its own DTensor piece, or rank 0 for the rest."""
    from ..tensor._api import DTensor
    from ..tensor.placement_types import Shard

    if isinstance(tensor, DTensor):
        # a piece replicated along some mesh dim is written by that dim's first rank only
        mesh, placements, _ = tensor._spec
        return all(isinstance(p, Shard) or mesh.get_local_rank(d) == 0
                   for d, p in enumerate(placements))
    return rank == 0


# ---------------------------------------------------------------- save


def _checkpoint_dir(checkpoint_id, storage):
    if storage is not None:
        return storage.path
    if checkpoint_id is None:
        raise RuntimeError("`checkpoint_id` must be specified if storage_writer/storage_reader "
                           "is None.")
    return os.fspath(checkpoint_id)


def _distributed(no_dist, process_group):
    return not no_dist and _dist().is_initialized()


def save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
         process_group=None, no_dist=False, use_collectives=True):
    """Write ``state_dict`` (nested dicts of tensors, DTensors, objects with ``state_dict()``
    and other picklable values) to the directory ``checkpoint_id``, collectively.

    Example::

        >>> dcp.save({"model": model.state_dict()}, checkpoint_id="ckpt")
    """
    path = _checkpoint_dir(checkpoint_id, storage_writer)
    is_dist = _distributed(no_dist, process_group)
    rank = _dist().get_rank(process_group) if is_dist else 0
    flat = _flatten(_stateful_to_state_dict(state_dict))
    pieces, index, objects = {}, {}, {}
    for key, value in flat.items():
        if isinstance(value, Tensor):
            from ..tensor._api import DTensor

            shape = value._spec[2] if isinstance(value, DTensor) else tuple(value.shape)
            index[key] = {"shape": tuple(shape), "dtype": str(value.dtype), "pieces": []}
            if _owns(value, rank):
                pieces[key] = _region(value)
        else:
            objects[key] = value
    os.makedirs(path, exist_ok=True)
    file_name = f"__{rank}_0.distcp"
    with open(os.path.join(path, file_name), "wb") as f:
        pickle.dump(pieces, f, protocol=pickle.HIGHEST_PROTOCOL)
    mine = {key: (file_name, offsets, array.shape) for key, (offsets, array) in pieces.items()}
    if is_dist:
        everyone = [None] * _dist().get_world_size(process_group)
        _dist().all_gather_object(everyone, mine, group=process_group)
    else:
        everyone = [mine]
    if rank == 0:
        for rank_pieces in everyone:
            for key, piece in rank_pieces.items():
                index[key]["pieces"].append(piece)
        with open(os.path.join(path, _METADATA), "wb") as f:
            pickle.dump({"tensors": index, "objects": objects}, f,
                        protocol=pickle.HIGHEST_PROTOCOL)
    if is_dist:
        _dist().barrier(group=process_group)
    return index


def save_state_dict(state_dict, storage_writer, process_group=None, coordinator_rank=0,
                    no_dist=False, planner=None):
    """Deprecated form of :func:`save` (warns, as torch does).

    Example::

        >>> dcp.save_state_dict(sd, FileSystemWriter("ckpt"))
    """
    import warnings

    warnings.warn("'save_state_dict' is deprecated and will be removed in future versions."
                  "Please use 'save' instead.", FutureWarning, stacklevel=2)
    return save(state_dict, storage_writer=storage_writer, process_group=process_group,
                no_dist=no_dist)


def async_save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
               process_group=None, **kwargs):
    """:func:`save`, done before returning; the result's ``result()`` gives its metadata.

    Example::

        >>> dcp.async_save(sd, checkpoint_id="ckpt").result()
    """
    from concurrent.futures import Future

    future = Future()
    future.set_result(save(state_dict, checkpoint_id=checkpoint_id,
                           storage_writer=storage_writer, process_group=process_group))
    return future


# ---------------------------------------------------------------- load


class _Pieces:
    """Reads the saved files on demand (each at most once)."""

    def __init__(self, path):
        self.path = path
        self.files = {}

    def array(self, file_name, key):
        if file_name not in self.files:
            with open(os.path.join(self.path, file_name), "rb") as f:
                self.files[file_name] = pickle.load(f)
        return self.files[file_name][key][1]


def _assemble(entry, offsets, shape, pieces, key):
    """The block ``[offsets, offsets + shape)`` of a saved tensor, from its pieces."""
    out = None
    for file_name, p_offsets, p_shape in entry["pieces"]:
        lo = [max(a, b) for a, b in zip(offsets, p_offsets)]
        hi = [min(a + n, b + m) for a, n, b, m in zip(offsets, shape, p_offsets, p_shape)]
        if any(h <= low for low, h in zip(lo, hi)) and len(shape):
            continue
        array = pieces.array(file_name, key)
        if out is None:
            out = np.zeros(shape, array.dtype)
        dst = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, offsets))
        src = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, p_offsets))
        out[dst] = array[src]
    if out is None and int(np.prod(shape)) == 0:
        out = np.zeros(shape)
    return out


def load(state_dict, *, checkpoint_id=None, storage_reader=None, planner=None,
         process_group=None, no_dist=False):
    """Fill ``state_dict`` in place from the checkpoint directory ``checkpoint_id``: tensors
    (and each rank's DTensor pieces) are copied into, other values replaced, and objects with
    ``load_state_dict`` given their part. The checkpoint may come from any number of ranks.

    Example::

        >>> sd = {"model": model.state_dict()}
        >>> dcp.load(sd, checkpoint_id="ckpt")
        >>> model.load_state_dict(sd["model"])
    """
    path = _checkpoint_dir(checkpoint_id, storage_reader)
    meta_path = os.path.join(path, _METADATA)
    if not os.path.exists(meta_path):
        raise CheckpointException(f"no checkpoint metadata at {meta_path!r}")
    with open(meta_path, "rb") as f:
        metadata = pickle.load(f)
    statefuls = {k: v for k, v in state_dict.items() if _is_stateful(v)}
    plain = _stateful_to_state_dict(state_dict)
    partial = planner is not None and getattr(planner, "allow_partial_load", False)
    pieces = _Pieces(path)
    for key, value in _flatten(plain).items():
        if isinstance(value, Tensor):
            entry = metadata["tensors"].get(key)
            if entry is None:
                if partial:
                    continue
                raise RuntimeError(f"Missing key in checkpoint state_dict: {_dotted(key)}.")
            _fill(value, entry, pieces, key)
        elif key in metadata["objects"]:
            _set_path(plain, key, metadata["objects"][key])
        elif not partial:
            raise RuntimeError(f"Missing key in checkpoint state_dict: {_dotted(key)}.")
    for name, obj in statefuls.items():
        obj.load_state_dict(plain[name])
    for name, value in plain.items():
        if name not in statefuls:
            state_dict[name] = value


def _fill(tensor, entry, pieces, key):
    offsets, array = _region(tensor)
    if tuple(entry["shape"]) != _whole_shape(tensor):
        raise RuntimeError(f"Size mismatch for {_dotted(key)}: the checkpoint has "
                           f"{tuple(entry['shape'])}, the state_dict {_whole_shape(tensor)}")
    block = _assemble(entry, offsets, array.shape, pieces, key)
    with no_grad():
        tensor._data[...] = block.astype(tensor._data.dtype, copy=False)
        tensor._bump_version()


def _dotted(key):
    return ".".join(map(str, key))


def _whole_shape(tensor):
    spec = getattr(tensor, "_spec", None)
    return tuple(spec[2]) if spec is not None else tuple(tensor.shape)


def load_state_dict(state_dict, storage_reader, process_group=None, coordinator_rank=0,
                    no_dist=False, planner=None):
    """Deprecated form of :func:`load` (warns, as torch does).

    Example::

        >>> dcp.load_state_dict(sd, FileSystemReader("ckpt"))
    """
    import warnings

    warnings.warn("'load_state_dict' is deprecated and will be removed in future versions. "
                  "Please use 'load' instead.", FutureWarning, stacklevel=2)
    return load(state_dict, storage_reader=storage_reader, process_group=process_group,
                no_dist=no_dist)
