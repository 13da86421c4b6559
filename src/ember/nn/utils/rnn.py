"""``nn.utils.rnn``: packed and padded batches of variable-length sequences.

A ``packed`` batch stores only the valid time steps of each sequence, time-major: the rows for
step 0 of every sequence, then step 1 of every sequence still running, and so on.
``batch_sizes[t]`` counts the sequences still running at step ``t``, so the sequences must be
sorted by decreasing length; ``sorted_indices`` records that sort when the caller's batch order
differed (``enforce_sorted=False``), and ``unsorted_indices`` undoes it.

Packing and unpadding are one gather (``index_select`` or advanced indexing) each, padding one
gather from the data with one padding row appended, so gradients flow through all of them.

Example::

    >>> from ember.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> packed = pack_sequence([ember.tensor([1, 2, 3]), ember.tensor([4, 5])])
    >>> packed.data, packed.batch_sizes
    (tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
    >>> pad_packed_sequence(packed, batch_first=True)
    (tensor([[1, 2, 3],
            [4, 5, 0]]), tensor([3, 2]))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor, as_tensor
from ...ops.reduce import argsort, sort
from ...ops.shape import cat

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(PackedSequence_):
    """A batch of variable-length sequences in packed (time-major, valid steps only) form.

    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`, not by hand; RNN
    modules take and return them. ``batch_sizes`` always lives on the CPU.

    Example::

        >>> p = pack_sequence([ember.tensor([1., 2.]), ember.tensor([3.])])
        >>> p.batch_sizes
        tensor([2, 1])
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError(
                    "batch_sizes should always be on CPU. Instances of PackedSequence should "
                    "never be created manually. They should be instantiated by functions like "
                    "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                    "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        else:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data.to(...)``; the index tensors follow data's device, ``batch_sizes`` stays."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        non_blocking = kwargs.get("non_blocking", False)

        def move(t):
            return t.to(data.device, non_blocking=non_blocking)

        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, move),
                          _bind(self.unsorted_indices, move))

    def cuda(self, *args, **kwargs):
        """Move the data (and indices) to a CUDA device."""
        if not args and "device" not in kwargs:
            kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        """Move the data (and indices) to the CPU."""
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def pin_memory(self):
        """Return self (ember has no pinned host memory)."""
        return self

    def double(self):
        return self.to(dtype=dt.float64)

    def float(self):
        return self.to(dtype=dt.float32)

    def half(self):
        return self.to(dtype=dt.float16)

    def long(self):
        return self.to(dtype=dt.int64)

    def int(self):
        return self.to(dtype=dt.int32)

    def short(self):
        return self.to(dtype=dt.int16)

    def char(self):
        return self.to(dtype=dt.int8)

    def byte(self):
        return self.to(dtype=dt.uint8)

    @property
    def is_cuda(self):
        """Whether the data lives on a CUDA device."""
        return self.data.is_cuda

    def is_pinned(self):
        """False: ember has no pinned host memory."""
        return False


def invert_permutation(permutation):
    """The inverse of a permutation tensor (``None`` stays ``None``).

    Example::

        >>> invert_permutation(ember.tensor([2, 0, 1]))
        tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    # The position of each value is its inverse image; argsort is one recorded op, so a traced
    # inversion follows the batch size of the new input.
    return argsort(permutation)


def _host_ints(t):
    return np.asarray(t.detach().cpu().numpy(), dtype=np.int64)


def _index(array, device):
    return as_tensor(np.ascontiguousarray(array, dtype=np.int64), device=device)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch ``(T, B, *)`` (or ``(B, T, *)`` with ``batch_first``) of sequences
    with the given lengths.

    With ``enforce_sorted`` the lengths must be decreasing; otherwise the batch is sorted here
    and the permutation kept in the result.

    Example::

        >>> x = ember.tensor([[1, 4], [2, 5], [3, 0]])
        >>> pack_padded_sequence(x, [3, 2]).data
        tensor([1, 4, 2, 5, 3])
    """
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=dt.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=dt.int64)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _traced_call("pack_padded_tensors", pack_padded_tensors,
                                     input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _traced_call(name, function, *args):
    """``function(*args)``; under a size-recording ``ember.jit.trace``, recorded whole as one
    call node (as torch records ``aten::_pack_padded_sequence``), so that the replay packs the
    new input by its own lengths instead of repeating the traced ones."""
    from .._functional.rnn import _dynamic_tracer

    tracer = _dynamic_tracer()
    if tracer is None:
        return function(*args)
    return tracer.record_public_call(f"ember.nn.utils.rnn.{name}", function, args, {})


def max_batch_size(batch_sizes):
    """The batch size of a packed batch (``batch_sizes[0]``) as an int; under a size-recording
    ``ember.jit.trace`` an int that the trace follows, so that a zero initial state built from
    it takes the new input's batch size on replay.

    Example::

        >>> max_batch_size(ember.tensor([3, 2, 2]))
        3
    """
    size = int(batch_sizes.numpy()[0])
    from .._functional.rnn import _dynamic_tracer

    tracer = _dynamic_tracer()
    if tracer is None:
        return size
    return tracer.record_size_call("method:item", [batch_sizes[0]], size)


def pack_padded_tensors(input, lengths, batch_first=False):
    """The two tensors of a packed batch, ``(data, batch_sizes)``, from a padded one whose
    ``lengths`` are sorted (torch's ``torch._pack_padded_sequence``).

    Example::

        >>> pack_padded_tensors(ember.tensor([[1, 4], [2, 5], [3, 0]]), ember.tensor([3, 2]))
        (tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
    """
    if lengths.dim() != 1 or lengths.device.type != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.dim()}D {lengths.device} Long tensor")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if input.dim() < 2:
        raise RuntimeError(f"pack_padded_sequence: expected an input of at least 2 dimensions "
                           f"(time and batch), but got {input.dim()}")
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    lens = _host_ints(lengths)
    if lens.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.shape[0]} (batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if np.any(lens[1:] > lens[:-1]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lens[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length of {int(lens[0])} exceeds the "
                           f"padded sequence length {steps}")
    mask = np.arange(lens[0])[:, None] < lens[None, :]          # (T_max, B), time-major
    batch_sizes = mask.sum(1)
    t_idx, b_idx = np.nonzero(mask)
    if batch_first:
        flat = b_idx * steps + t_idx
    else:
        flat = t_idx * batch + b_idx
    rest = tuple(input.shape[2:])
    data = input.reshape((-1,) + rest).index_select(0, _index(flat, input.device))
    return data, as_tensor(batch_sizes.astype(np.int64), device="cpu")


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo :func:`pack_padded_sequence`: the padded batch and the lengths of its sequences.

    ``total_length`` pads the time dim to that length (at least the longest sequence).

    Example::

        >>> p = pack_sequence([ember.tensor([1, 2]), ember.tensor([3])])
        >>> pad_packed_sequence(p, padding_value=-1)
        (tensor([[ 1,  3],
                [ 2, -1]]), tensor([2, 1]))
    """
    padded, lengths = _traced_call("pad_packed_tensors", pad_packed_tensors, sequence.data,
                                   sequence.batch_sizes, batch_first, padding_value,
                                   total_length)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        return (padded.index_select(0 if batch_first else 1, unsorted),
                lengths[unsorted.cpu()])
    return padded, lengths


def pad_packed_tensors(data, batch_sizes, batch_first=False, padding_value=0.0,
                       total_length=None):
    """The padded batch and the lengths, ``(padded, lengths)``, from the two tensors of a
    packed batch, in its sorted order (torch's ``torch._pad_packed_sequence``).

    Example::

        >>> pad_packed_tensors(ember.tensor([1, 4, 2, 5, 3]), ember.tensor([2, 2, 1]))
        (tensor([[1, 4],
                [2, 5],
                [3, 0]]), tensor([3, 2]))
    """
    sizes = _host_ints(batch_sizes)
    max_seq_length = sizes.shape[0]
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_seq_length}")
        max_seq_length = total_length
    batch = int(sizes[0]) if sizes.shape[0] else 0
    lens = (sizes[None, :] > np.arange(batch)[:, None]).sum(1)
    n = data.shape[0]
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    gather = np.full((max_seq_length, batch), n, dtype=np.int64)
    valid = np.arange(batch)[None, :] < sizes[:, None]
    t_idx, b_idx = np.nonzero(valid)
    gather[t_idx, b_idx] = offsets[t_idx] + b_idx
    if batch_first:
        gather = gather.T
    rest = tuple(data.shape[1:])
    source = data
    if t_idx.shape[0] != gather.size:
        source = cat([data, data.new_full((1,) + rest, padding_value)])
    padded = source.index_select(0, _index(gather.ravel(), data.device))
    padded = padded.reshape(gather.shape + rest)
    return padded, as_tensor(lens.astype(np.int64), device="cpu")


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes ``(L_i, *)`` into one ``(L_max, B, *)`` tensor (or
    ``(B, L_max, *)``), padded with ``padding_value`` on the ``padding_side`` ('right' or 'left').

    The result has the first sequence's dtype.

    Example::

        >>> pad_sequence([ember.tensor([1, 2, 3]), ember.tensor([4])], batch_first=True)
        tensor([[1, 2, 3],
                [4, 0, 0]])
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    first = sequences[0]
    if first.dim() == 0:
        raise RuntimeError("pad_sequence: expected sequences of at least 1 dimension, but got "
                           "a 0-dim tensor")
    rest = tuple(first.shape[1:])
    parts = []
    for seq in sequences:
        if seq.dim() == 0:
            raise RuntimeError("pad_sequence: expected sequences of at least 1 dimension, but "
                               "got a 0-dim tensor")
        if tuple(seq.shape[1:]) != rest:
            _check_broadcast(tuple(seq.shape[1:]), rest)
            seq = seq.expand((seq.shape[0],) + rest)
        if seq.dtype is not first.dtype:
            seq = seq.to(first.dtype)
        parts.append(seq)
    lens = np.array([p.shape[0] for p in parts], dtype=np.int64)
    batch, max_len = len(parts), int(lens.max())
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    total = int(lens.sum())
    steps = np.arange(max_len)[None, :]                                  # (1, T)
    shift = (max_len - lens)[:, None] if padding_side == "left" else 0
    pos = steps - shift                                                  # (B, T)
    valid = (pos >= 0) & (pos < lens[:, None])
    gather = np.where(valid, starts[:, None] + pos, total)              # (B, T)
    if not batch_first:
        gather = gather.T
    source = parts[0] if batch == 1 else cat(parts)
    if not valid.all():
        source = cat([source, source.new_full((1,) + rest, padding_value)])
    out = source.index_select(0, _index(gather.ravel(), first.device))
    return out.reshape(gather.shape + rest)


def _check_broadcast(shape, target):
    """torch's copy message when a sequence's trailing dims cannot broadcast to the first's."""
    offset = len(target) - len(shape)
    ok = offset >= 0
    if ok:
        for i, s in enumerate(shape):
            t = target[offset + i]
            if s != t and s != 1:
                raise RuntimeError(f"The size of tensor a ({t}) must match the size of tensor b "
                                   f"({s}) at non-singleton dimension {offset + i + 1}")
        return
    raise RuntimeError(f"pad_sequence: a sequence has trailing shape {list(shape)}, which cannot "
                       f"be broadcast to the first sequence's {list(target)}")


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of sequences of the given lengths.

    Unlike torch, the input is left as it is (torch transposes it in place when
    ``batch_first`` is False).

    Example::

        >>> x = pad_sequence([ember.tensor([1, 2]), ember.tensor([3])])
        >>> unpad_sequence(x, ember.tensor([2, 1]))
        [tensor([1, 2]), tensor([3])]
    """
    padded = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lens = _host_ints(lengths) if isinstance(lengths, Tensor) else np.asarray(
        [int(n) for n in lengths], dtype=np.int64)
    batch, steps = padded.shape[0], padded.shape[1]
    if lens.shape[0] != batch:
        raise ValueError(f"zip() argument 2 is {'shorter' if lens.shape[0] < batch else 'longer'}"
                         " than argument 1")
    lens = np.minimum(np.maximum(lens, 0), steps)
    mask = np.arange(steps)[None, :] < lens[:, None]
    b_idx, t_idx = np.nonzero(mask)
    rest = tuple(padded.shape[2:])
    flat = padded.reshape((-1,) + rest)
    rows = flat.index_select(0, _index(b_idx * steps + t_idx, padded.device))
    return list(rows.split([int(n) for n in lens]))


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences of shapes ``(L_i, *)`` (decreasing L_i unless ``enforce_sorted`` is
    False).

    Example::

        >>> pack_sequence([ember.tensor([1, 2, 3]), ember.tensor([4, 5])]).data
        tensor([1, 4, 2, 5, 3])
    """
    lengths = as_tensor([v.size(0) for v in sequences], dtype=dt.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Undo :func:`pack_sequence`: the list of sequences, in their original order.

    Example::

        >>> unpack_sequence(pack_sequence([ember.tensor([1, 2]), ember.tensor([3])]))
        [tensor([1, 2]), tensor([3])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
