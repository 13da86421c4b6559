"""Functions the ranks run for the DeviceMesh / DTensor / FSDP / checkpoint tests
(``fn(rank, world_size, *args)``); no torch import at module level."""

from __future__ import annotations

import numpy as np

import ember


def out(t):
    return np.array(t.detach().numpy())


# ---------------------------------------------------------------- DeviceMesh and DTensor


def dtensor_basics(rank, n):
    from ember.distributed.tensor import (
        DTensor,
        Partial,
        Replicate,
        Shard,
        distribute_tensor,
        init_device_mesh,
    )

    mesh = init_device_mesh("cpu", (n,), mesh_dim_names=("dp",))
    x = ember.arange(10.).reshape(5, 2)
    dt = distribute_tensor(x, mesh, [Shard(0)])
    replicated = dt.redistribute(placements=[Replicate()])
    partial = DTensor.from_local(ember.ones(2) * (rank + 1), mesh, [Partial()])
    w = ember.arange(12.).reshape(4, 3).requires_grad_()
    d = distribute_tensor(w, mesh, [Shard(1)])
    (d.full_tensor() ** 2).sum().backward()
    return {"local": out(dt.to_local()), "global_shape": tuple(dt.global_shape()),
            "replicated": out(replicated.to_local()), "partial_full": out(partial.full_tensor()),
            "partial_shard": out(partial.redistribute(placements=[Shard(0)]).to_local()),
            "mesh": repr(mesh), "local_rank": mesh.get_local_rank("dp"),
            "d_grad": out(d.grad), "placements": d.placements, "is_dtensor": type(d).__name__}
