"""The safetensors format: a JSON header and raw tensor bytes, nothing executable.

A file is an 8-byte little-endian header length, a JSON header mapping each name to its
``dtype``, ``shape`` and ``data_offsets`` (plus an optional ``__metadata__`` dict of strings),
then the tensors' bytes. Files written here load with the ``safetensors`` package (and so in
PyTorch), and files it writes load here.

Example::

    >>> from ember.utils.safetensors import save_file, load_file
    >>> save_file(model.state_dict(), "model.safetensors", metadata={"epoch": "3"})
    >>> model.load_state_dict(load_file("model.safetensors"))
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from pathlib import Path

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["save_file", "load_file", "save", "load", "safe_metadata"]

_CODES = {
    "float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
    "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}
_DTYPES = {code: getattr(dt, name) for name, code in _CODES.items()}


def _serialize(tensors, metadata):
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str)
                                        for k, v in metadata.items()):
        raise ValueError("metadata must be a dict of str to str")
    header, chunks, offset = {}, [], 0
    seen = {}
    # larger element types first, then by name: every tensor stays aligned to its item size
    order = sorted(tensors.items(), key=lambda kv: (-kv[1].element_size(), kv[0]))
    for name, tensor in order:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"safetensors: '{name}' is a {type(tensor).__name__}, not a Tensor")
        if tensor.dtype.name not in _CODES:
            raise TypeError(f"safetensors: '{name}' has dtype {tensor.dtype}, which the format "
                            "cannot store")
        if tensor.device.type == "meta":
            raise RuntimeError(f"safetensors: '{name}' is on the meta device and has no data")
        pointer = (tensor.data_ptr(), tensor.numel(), tensor.dtype)
        if tensor.numel() and pointer in seen:
            raise RuntimeError(f"safetensors: '{name}' and '{seen[pointer]}' share memory; "
                               "save a clone of one of them")
        seen[pointer] = name
        array = np.ascontiguousarray(tensor.detach()._host_array())
        raw = array.view(np.uint8).reshape(-1) if array.size else b""
        size = array.nbytes
        header[name] = {"dtype": _CODES[tensor.dtype.name], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + size]}
        chunks.append(raw)
        offset += size
    if metadata:
        header["__metadata__"] = dict(metadata)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-len(text)) % 8)
    return struct.pack("<Q", len(text)) + text, chunks


def save(tensors, metadata=None):
    """The safetensors bytes of a dict of tensors.

    Example::

        >>> data = ember.utils.safetensors.save({"w": ember.ones(2)})
    """
    head, chunks = _serialize(tensors, metadata)
    return head + b"".join(bytes(c) for c in chunks)


def save_file(tensors, filename, metadata=None):
    """Write a dict of tensors to ``filename`` atomically (temporary file, then rename).

    Example::

        >>> ember.utils.safetensors.save_file({"w": ember.ones(2)}, "w.safetensors")
    """
    head, chunks = _serialize(tensors, metadata)
    path = Path(filename)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                   dir=path.parent if str(path.parent) else ".")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(head)
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _parse(buffer, source):
    if len(buffer) < 8:
        raise RuntimeError(f"{source}: not a safetensors file (shorter than its 8-byte header "
                           "length)")
    (length,) = struct.unpack("<Q", bytes(buffer[:8]))
    if length > len(buffer) - 8:
        raise RuntimeError(f"{source}: corrupt safetensors file (header of {length} bytes does "
                           f"not fit in {len(buffer)} bytes)")
    try:
        header = json.loads(bytes(buffer[8:8 + length]).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RuntimeError(f"{source}: corrupt safetensors header ({error})") from None
    if not isinstance(header, dict):
        raise RuntimeError(f"{source}: corrupt safetensors header (not a JSON object)")
    return header, 8 + length


def _entries(header, data_size, source):
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _DTYPES[info["dtype"]]
            shape = tuple(int(s) for s in info["shape"])
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise RuntimeError(f"{source}: corrupt safetensors entry '{name}' "
                               f"({info!r})") from None
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * dtype.itemsize or begin < 0 or end > data_size:
            raise RuntimeError(f"{source}: safetensors entry '{name}' has offsets [{begin}, "
                               f"{end}) that do not match its shape {list(shape)} and dtype "
                               f"{info['dtype']} within {data_size} data bytes")
        entries.append((name, dtype, shape, begin, end))
    return entries


def _tensors(buffer, start, entries, device):
    from .._device import canonical

    result = {}
    for name, dtype, shape, begin, end in entries:
        array = np.frombuffer(buffer, dtype=dtype.np, count=(end - begin) // dtype.itemsize,
                              offset=start + begin).reshape(shape)
        t = Tensor._make(array.copy(), canonical("cpu"))
        result[name] = t if device in (None, "cpu") else t.to(device)
    return result


def load(data, device="cpu"):
    """The dict of tensors in safetensors ``data`` (bytes)."""
    header, start = _parse(data, "<bytes>")
    entries = _entries(header, len(data) - start, "<bytes>")
    return _tensors(data, start, entries, device)


def load_file(filename, device="cpu"):
    """The dict of tensors in the safetensors file ``filename``.

    Example::

        >>> state = ember.utils.safetensors.load_file("model.safetensors")
    """
    path = Path(filename)
    buffer = np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else b""
    header, start = _parse(buffer, str(path))
    entries = _entries(header, len(buffer) - start, str(path))
    return _tensors(buffer, start, entries, device)


def safe_metadata(filename):
    """The ``__metadata__`` dict stored in a safetensors file (empty when there is none)."""
    path = Path(filename)
    with open(path, "rb") as f:
        head = f.read(8)
        header, _ = _parse(head + f.read(struct.unpack("<Q", head)[0]) if len(head) == 8
                           else head, str(path))
    return header.get("__metadata__", {})
