"""The ``'nccl'`` backend: collectives on CUDA tensors through ``cupy.cuda.nccl``.

The communicator's unique id travels through the store (rank 0 creates it). Operations run on
CuPy's current stream and synchronise it before returning. NCCL has no bitwise reductions.
Written against CuPy's NCCL API; not run in ember's CPU-only test suite.
"""

from __future__ import annotations

import pickle

import numpy as np

from ._store import DistBackendError


def _nccl():
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as error:
        raise RuntimeError("the 'nccl' backend needs CuPy built with NCCL") from error
    return cupy, nccl


class NCCLGroup:
    """A process group on one NCCL communicator; the same interface as ``GlooGroup``."""

    name = "nccl"
    serial = True  # NCCL matches collectives by call order: run async ones in order

    def __init__(self, store, rank, size, ranks, global_rank, timeout):
        cupy, nccl = _nccl()
        self.cupy, self.nccl = cupy, nccl
        self.rank, self.size, self.timeout = rank, size, timeout
        if rank == 0:
            store.set("nccl_id", pickle.dumps(nccl.get_unique_id()))
        uid = pickle.loads(store.get("nccl_id"))
        self.comm = nccl.NcclCommunicator(size, uid, rank)
        self._types = {np.dtype(np.int8): nccl.NCCL_INT8, np.dtype(np.uint8): nccl.NCCL_UINT8,
                       np.dtype(np.bool_): nccl.NCCL_UINT8, np.dtype(np.int32): nccl.NCCL_INT32,
                       np.dtype(np.int64): nccl.NCCL_INT64,
                       np.dtype(np.float16): nccl.NCCL_FLOAT16,
                       np.dtype(np.float32): nccl.NCCL_FLOAT32,
                       np.dtype(np.float64): nccl.NCCL_FLOAT64}
        self._ops = {np.add: nccl.NCCL_SUM, np.multiply: nccl.NCCL_PROD,
                     np.minimum: nccl.NCCL_MIN, np.maximum: nccl.NCCL_MAX}

    def next_seq(self):
        return 0

    def _check(self, array):
        if not isinstance(array, self.cupy.ndarray):
            raise RuntimeError("No backend type associated with device type cpu: the 'nccl' "
                               "backend takes CUDA tensors (use 'gloo' for CPU tensors)")

    def _spec(self, array):
        self._check(array)
        if array.dtype.kind == "c":  # complex: as pairs of reals
            array = array.view(np.float32 if array.dtype == np.complex64 else np.float64)
        dtype = self._types.get(np.dtype(array.dtype))
        if dtype is None:
            raise RuntimeError(f"the 'nccl' backend does not support dtype {array.dtype}")
        return array.data.ptr, array.size, dtype

    def _op(self, fn, array):
        op = self._ops.get(fn)
        if op is None or (array.dtype.kind == "c" and fn is not np.add):
            raise RuntimeError(f"the 'nccl' backend does not support this reduction on "
                               f"{array.dtype}")
        return op

    def _stream(self):
        return self.cupy.cuda.get_current_stream().ptr

    def _sync(self):
        self.cupy.cuda.get_current_stream().synchronize()

    def allreduce(self, seq, array, fn):
        ptr, count, dtype = self._spec(array)
        self.comm.allReduce(ptr, ptr, count, dtype, self._op(fn, array), self._stream())
        self._sync()

    def broadcast(self, seq, array, root):
        ptr, count, dtype = self._spec(array)
        self.comm.broadcast(ptr, ptr, count, dtype, root, self._stream())
        self._sync()

    def reduce(self, seq, array, root, fn):
        ptr, count, dtype = self._spec(array)
        self.comm.reduce(ptr, ptr, count, dtype, self._op(fn, array), root, self._stream())
        self._sync()

    def allgather(self, seq, outputs, array):
        buf = self.cupy.empty((self.size,) + array.shape, array.dtype)
        ptr, count, dtype = self._spec(array)
        self.comm.allGather(ptr, buf.data.ptr, count, dtype, self._stream())
        for out, part in zip(outputs, buf):
            out[...] = part
        self._sync()

    def reduce_scatter(self, seq, output, inputs, fn):
        buf = self.cupy.ascontiguousarray(self.cupy.stack(list(inputs)))
        ptr, count, dtype = self._spec(output)
        self.comm.reduceScatter(buf.data.ptr, ptr, count, dtype, self._op(fn, output),
                                self._stream())
        self._sync()

    def _exchange(self, sends, recvs):
        """Grouped point-to-point: ``sends``/``recvs`` are lists of (peer, array)."""
        self.nccl.groupStart()
        for peer, array in sends:
            self.comm.send(*self._spec(array), peer, self._stream())
        for peer, array in recvs:
            self.comm.recv(*self._spec(array), peer, self._stream())
        self.nccl.groupEnd()
        self._sync()

    def gather(self, seq, outputs, array, root):
        if self.rank == root:
            outputs[root][...] = array
            self._exchange([], [(p, outputs[p]) for p in range(self.size) if p != root])
        else:
            self._exchange([(root, array)], [])

    def scatter(self, seq, output, inputs, root):
        if self.rank == root:
            output[...] = inputs[root]
            self._exchange([(p, inputs[p]) for p in range(self.size) if p != root], [])
        else:
            self._exchange([], [(root, output)])

    def alltoall(self, seq, outputs, inputs):
        outputs[self.rank][...] = inputs[self.rank]
        peers = [p for p in range(self.size) if p != self.rank]
        self._exchange([(p, inputs[p]) for p in peers], [(p, outputs[p]) for p in peers])

    def barrier(self, seq):
        self.allreduce(seq, self.cupy.zeros(1, np.float32), np.add)

    def send(self, array, dst, tag):
        self._exchange([(dst, array)], [])

    def recv(self, array, src, tag):
        if src is None:
            raise DistBackendError("the 'nccl' backend cannot receive from any source: pass src")
        self._exchange([], [(src, array)])
        return src

    def close(self):
        try:
            self.comm.destroy()
        except Exception:
            pass
