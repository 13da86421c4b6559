"""Functions the ranks run (``fn(rank, world_size, *args)``); no torch import at module level."""

from __future__ import annotations

import datetime
import time

import numpy as np

import ember
import ember.distributed as dist

OPS = {"SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT, "MIN": dist.ReduceOp.MIN,
       "MAX": dist.ReduceOp.MAX, "AVG": dist.ReduceOp.AVG, "BAND": dist.ReduceOp.BAND,
       "BOR": dist.ReduceOp.BOR, "BXOR": dist.ReduceOp.BXOR}


def rank_input(seed, rank, shape, dtype):
    """Rank ``rank``'s input for a case (the test computes every rank's input the same way)."""
    rng = np.random.default_rng([seed, rank])
    np_dtype = getattr(ember, dtype).np
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("uint8",):
        return rng.integers(0, 4, shape).astype(np_dtype)
    if dtype.startswith("int"):
        return rng.integers(-3, 4, shape).astype(np_dtype)
    if dtype.startswith("complex"):
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np_dtype)
    return rng.normal(size=shape).astype(np.float32).astype(np_dtype)


def make(array, noncontig):
    """An ember tensor holding ``array``; a strided (non-contiguous) view when asked."""
    if noncontig and array.ndim:
        wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        wide[..., ::2] = array
        t = ember.from_numpy(wide)[..., ::2]
        assert not t.is_contiguous() or array.shape[-1] <= 1
        return t
    return ember.from_numpy(np.array(array))


def out(t):
    return np.array(t.numpy())


def all_reduce(rank, n, op, dtype, shape, noncontig, seed):
    t = make(rank_input(seed, rank, shape, dtype), noncontig)
    assert dist.all_reduce(t, op=OPS[op]) is None
    return out(t)


def broadcast(rank, n, src, dtype, shape, noncontig, seed):
    t = make(rank_input(seed, rank, shape, dtype), noncontig)
    dist.broadcast(t, src=src)
    return out(t)


def reduce(rank, n, dst, op, dtype, shape, noncontig, seed):
    t = make(rank_input(seed, rank, shape, dtype), noncontig)
    dist.reduce(t, dst=dst, op=OPS[op])
    return out(t)


def all_gather(rank, n, dtype, shape, noncontig, seed):
    t = make(rank_input(seed, rank, shape, dtype), noncontig)
    outs = [make(np.zeros(shape, t.dtype.np), noncontig) for _ in range(n)]
    dist.all_gather(outs, t)
    return [out(o) for o in outs]


def all_gather_into_tensor(rank, n, dtype, shape, stacked, seed):
    t = make(rank_input(seed, rank, shape, dtype), False)
    full = (n,) + tuple(shape) if stacked else (n * shape[0],) + tuple(shape[1:])
    o = ember.zeros(full, dtype=t.dtype)
    dist.all_gather_into_tensor(o, t)
    return out(o)


def gather(rank, n, dst, dtype, shape, noncontig, seed):
    t = make(rank_input(seed, rank, shape, dtype), noncontig)
    outs = [make(np.zeros(shape, t.dtype.np), noncontig) for _ in range(n)] \
        if rank == dst else None
    dist.gather(t, outs, dst=dst)
    return None if outs is None else [out(o) for o in outs]


def scatter(rank, n, src, dtype, shape, noncontig, seed):
    pieces = [make(rank_input(seed, 100 + r, shape, dtype), noncontig) for r in range(n)] \
        if rank == src else None
    t = make(np.zeros(shape, getattr(ember, dtype).np), noncontig)
    dist.scatter(t, pieces, src=src)
    return out(t)


def reduce_scatter(rank, n, op, dtype, shape, seed):
    ins = [make(rank_input(seed, rank * 10 + j, shape, dtype), j % 2 == 1) for j in range(n)]
    o = make(np.zeros(shape, getattr(ember, dtype).np), True)
    dist.reduce_scatter(o, ins, op=OPS[op])
    return out(o)


def reduce_scatter_tensor(rank, n, op, dtype, shape, seed):
    x = make(rank_input(seed, rank, (n * shape[0],) + tuple(shape[1:]), dtype), False)
    o = ember.zeros(shape, dtype=x.dtype)
    dist.reduce_scatter_tensor(o, x, op=OPS[op])
    return out(o)


def all_to_all(rank, n, dtype, shape, seed):
    ins = [make(rank_input(seed, rank * 10 + j, shape, dtype), j == 0) for j in range(n)]
    outs = [make(np.zeros(shape, getattr(ember, dtype).np), j == 1) for j in range(n)]
    dist.all_to_all(outs, ins)
    return [out(o) for o in outs]


def all_to_all_single(rank, n, dtype, in_splits, out_splits, seed):
    rows = sum(in_splits[rank]) if in_splits else n * 2
    x = make(rank_input(seed, rank, (rows, 3), dtype), False)
    out_rows = sum(out_splits[rank]) if out_splits else n * 2
    o = ember.zeros(out_rows, 3, dtype=x.dtype)
    dist.all_to_all_single(o, x, out_splits[rank] if out_splits else None,
                           in_splits[rank] if in_splits else None)
    return out(o)


def async_ops(rank, n, seed):
    ts = [make(rank_input(seed, rank * 10 + i, (50,), "float64"), i % 2 == 1) for i in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    results = [w.wait() for w in works]
    done = [w.is_completed() for w in works]
    b = ember.arange(3, dtype=ember.float64) if rank == 0 else ember.zeros(3,
                                                                          dtype=ember.float64)
    w = dist.broadcast(b, src=0, async_op=True)
    w.wait()
    res = w.result()
    fut = dist.all_reduce(ember.ones(2), async_op=True).get_future()
    fut_value = out(fut.wait()[0])  # torch.futures.Future's API
    return [out(t) for t in ts], results, done, out(b), out(res[0]), fut_value


def big_all_reduce(rank, n, size, dtype, seed):
    t = make(rank_input(seed, rank, (size,), dtype), False)
    dist.all_reduce(t)
    return out(t)


def subgroup(rank, n, members):
    g = dist.new_group(members)
    if g is dist.GroupMember.NON_GROUP_MEMBER:
        t = ember.full((3,), float(rank))
        r = dist.all_reduce(t, group=g)
        return ("outside", dist.get_rank(g), dist.get_world_size(g), r, out(t))
    t = ember.full((3,), float(rank + 1))
    dist.all_reduce(t, group=g)
    b = ember.full((2,), float(rank))
    dist.broadcast(b, src=members[-1], group=g)
    objs = [None] * len(members)
    dist.all_gather_object(objs, rank, group=g)
    dist.barrier(group=g)
    return ("inside", dist.get_rank(g), dist.get_world_size(g), out(t), out(b), objs,
            dist.get_process_group_ranks(g), dist.get_global_rank(g, 0))


def p2p(rank, n):
    got = {}
    if rank == 0:
        dist.send(ember.arange(4, dtype=ember.int32), dst=1)
        dist.send(ember.full((2, 2), 7.0).t(), dst=1, tag=3)
        t = ember.zeros(3)
        got["from"] = dist.recv(t)  # any source
        got["any"] = out(t)
    elif rank == 1:
        a = ember.zeros(4, dtype=ember.int32)
        got["src"] = dist.recv(a, src=0)
        got["a"] = out(a)
        b = ember.zeros(2, 4)[:, ::2]
        dist.recv(b, src=0, tag=3)
        got["b"] = out(b)
        dist.send(ember.ones(3) * 5, dst=0)
    # both post their irecv before their isend
    if n >= 2 and rank < 2:
        peer = 1 - rank
        r = ember.zeros(5, dtype=ember.float64)
        wr = dist.irecv(r, src=peer, tag=9)
        ws = dist.isend(ember.full((5,), float(rank), dtype=ember.float64), dst=peer, tag=9)
        ws.wait()
        wr.wait()
        got["swap"] = out(r)
        ops = [dist.P2POp(dist.isend, ember.full((2,), 10.0 + rank), peer),
               dist.P2POp(dist.irecv, ember.zeros(2), peer)]
        works = dist.batch_isend_irecv(ops)
        for w in works:
            w.wait()
        got["batch"] = out(ops[1].tensor)
    dist.barrier()
    return got


def objects(rank, n):
    objs = [{"a": [1, 2]}, "text", (3.5, None)] if rank == 0 else [None, None, None]
    dist.broadcast_object_list(objs, src=0)
    every = [None] * n
    dist.all_gather_object(every, {"rank": rank, "payload": "x" * (rank * 50)})
    gathered = [None] * n if rank == n - 1 else None
    dist.gather_object(("r", rank), gathered, dst=n - 1)
    scattered = [None]
    dist.scatter_object_list(scattered, [f"s{r}" for r in range(n)] if rank == 0 else None,
                             src=0)
    return objs, every, gathered, scattered[0]


def info(rank, n):
    return (dist.is_initialized(), dist.get_rank(), dist.get_world_size(),
            str(dist.get_backend()), dist.is_available())


def mismatched_sizes(rank, n):
    t = ember.ones(2 + rank)
    dist.all_reduce(t)


def mismatched_dtypes(rank, n):
    t = ember.ones(4, dtype=ember.float32 if rank == 0 else ember.int32)  # same byte size
    dist.all_reduce(t)


def recv_timeout(rank, n):
    g = dist.new_group(list(range(n)), timeout=datetime.timedelta(seconds=0.3))
    start = time.monotonic()
    try:
        if rank == 0:
            dist.recv(ember.zeros(1), src=1, group=g)
    finally:
        elapsed = time.monotonic() - start
    return elapsed


def after_error(rank, n):
    """The group still works after a failed collective."""
    t = ember.ones(2)
    dist.all_reduce(t)
    return out(t)


def sampler_defaults(rank, n):
    from ember.utils.data import DistributedSampler

    s = DistributedSampler(range(10), shuffle=False)
    return s.num_replicas, s.rank, list(s)


# ---------------------------------------------------------------- init methods (bare worlds)


def init_and_reduce(rank, n, method, port_or_path, backend="gloo"):
    import os

    if method == "env":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port_or_path),
                          RANK=str(rank), WORLD_SIZE=str(n))
        dist.init_process_group(backend, init_method="env://")
    elif method == "tcp":
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port_or_path}",
                                rank=rank, world_size=n)
    elif method == "file":
        dist.init_process_group(backend, init_method=f"file://{port_or_path}", rank=rank,
                                world_size=n)
    elif method == "store":
        store = dist.TCPStore("127.0.0.1", port_or_path, n, rank == 0,
                              timeout=datetime.timedelta(seconds=10))
        dist.init_process_group(backend, store=store, rank=rank, world_size=n)
    try:
        t = ember.full((2,), float(rank + 1))
        dist.all_reduce(t)
        return out(t), dist.get_rank(), dist.get_world_size(), str(dist.get_backend())
    finally:
        dist.destroy_process_group()
        for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
            os.environ.pop(var, None)


def tcp_store_clients(rank, n, port):
    store = dist.TCPStore("127.0.0.1", port, n, rank == 0,
                          timeout=datetime.timedelta(seconds=10))
    total = store.add("counter", rank + 1)
    store.set(f"key{rank}", f"value{rank}")
    values = [store.get(f"key{r}") for r in range(n)]  # blocks until every rank has set
    store.wait(["counter"])
    counter = int(store.get("counter"))
    store.add("done", 1)
    if rank == 0:  # the master serves the store: it leaves last
        while int(store.get("done")) < n:
            time.sleep(0.01)
    return total, values, counter


# ---------------------------------------------------------------- DistributedDataParallel


def ddp_data(n_rows=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_rows, 5)), rng.normal(size=(n_rows, 3))


class Net(ember.nn.Module):
    def __init__(self, unused=False):
        super().__init__()
        self.fc1 = ember.nn.Linear(5, 16)
        self.fc2 = ember.nn.Linear(16, 3)
        self.extra = ember.nn.Linear(5, 3) if unused else None

    def forward(self, x, use_extra=False):
        y = self.fc2(ember.tanh(self.fc1(x)))
        return y + self.extra(x) if use_extra else y


def make_net(seed, unused=False):
    ember.manual_seed(seed)
    return Net(unused).double()


def train(model, opt, xs, ys, steps, use_extra=lambda step: False):
    for step in range(steps):
        opt.zero_grad()
        loss = ((model(ember.tensor(xs), use_extra=use_extra(step)) - ember.tensor(ys)) ** 2
                ).mean()
        loss.backward()
        opt.step()


def params_of(module):
    return {k: out(v.detach()) for k, v in module.named_parameters()}


def ddp_train(rank, n, steps, options, optimizer="sgd", unused=False):
    from ember.nn.parallel import DistributedDataParallel as DDP

    net = make_net(100 + rank, unused)  # different on every rank: DDP broadcasts rank 0's
    model = DDP(net, **options)
    X, Y = ddp_data()
    rows = len(X) // n
    xs, ys = X[rank * rows:(rank + 1) * rows], Y[rank * rows:(rank + 1) * rows]
    opt = (ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if optimizer == "sgd"
           else ember.optim.Adam(model.parameters(), lr=0.01))
    # with an unused layer: used on odd steps only (find_unused_parameters=True)
    train(model, opt, xs, ys, steps, use_extra=lambda step: unused and step % 2 == 1)
    grads = {k: None if p.grad is None else out(p.grad) for k, p in net.named_parameters()}
    views = [p.grad is not None and p.grad._base is not None for p in net.parameters()
             if p.grad is not None]
    return params_of(net), grads, list(model.state_dict()), len(model._buckets), views


def ddp_no_sync(rank, n):
    from ember.nn.parallel import DistributedDataParallel as DDP

    net = make_net(0)
    model = DDP(net)
    X, Y = ddp_data()
    rows = len(X) // n
    local = slice(rank * rows, (rank + 1) * rows)
    half = rows // 2
    x1, y1 = X[local][:half], Y[local][:half]
    x2, y2 = X[local][half:], Y[local][half:]
    with model.no_sync():
        ((model(ember.tensor(x1)) - ember.tensor(y1)) ** 2).mean().backward()
    local_grads = {k: out(p.grad) for k, p in net.named_parameters()}
    ((model(ember.tensor(x2)) - ember.tensor(y2)) ** 2).mean().backward()
    synced = {k: out(p.grad) for k, p in net.named_parameters()}
    return local_grads, synced


def ddp_unused_error(rank, n):
    from ember.nn.parallel import DistributedDataParallel as DDP

    model = DDP(make_net(0, unused=True))
    x = ember.ones(2, 5, dtype=ember.float64)
    model(x).sum().backward()
    try:
        model(x)
    except RuntimeError as e:
        return str(e)
    return None


def ddp_buffers(rank, n, broadcast_buffers):
    from ember.nn.parallel import DistributedDataParallel as DDP

    ember.manual_seed(rank)
    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4)).double()
    net[1].running_mean.fill_(float(rank + 1))
    model = DDP(net, broadcast_buffers=broadcast_buffers)
    states = [out(net[1].running_mean)]
    for step in range(2):
        x = ember.tensor(np.random.default_rng([step, rank]).normal(size=(6, 3)))
        model(x).sum().backward()
        states.append(out(net[1].running_mean))
    return states, params_of(net)


def torch_ddp_compare(rank, n, port, steps):
    """ember's DDP and torch's gloo DDP on the same model, data and optimiser."""
    import torch
    import torch.distributed as tdist
    from torch.nn.parallel import DistributedDataParallel as TDDP

    from ember.nn.parallel import DistributedDataParallel as DDP

    tstore = tdist.TCPStore("127.0.0.1", port, n, rank == 0,
                            timeout=datetime.timedelta(seconds=20))
    tdist.init_process_group("gloo", store=tstore, rank=rank, world_size=n)
    try:
        net = make_net(0)
        tnet = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(),
                                   torch.nn.Linear(16, 3)).double()
        with torch.no_grad():
            for tp, p in zip(tnet.parameters(), net.parameters()):
                tp.copy_(torch.from_numpy(out(p.detach())))
        model, tmodel = DDP(net, bucket_cap_mb=0.0005), TDDP(tnet)
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        topt = torch.optim.SGD(tmodel.parameters(), lr=0.1, momentum=0.9)
        X, Y = ddp_data()
        rows = len(X) // n
        xs, ys = X[rank * rows:(rank + 1) * rows], Y[rank * rows:(rank + 1) * rows]
        train(model, opt, xs, ys, steps)
        for _ in range(steps):
            topt.zero_grad()
            ((tmodel(torch.from_numpy(xs)) - torch.from_numpy(ys)) ** 2).mean().backward()
            topt.step()
        return ([out(p.detach()) for p in net.parameters()],
                [p.detach().numpy().copy() for p in tnet.parameters()],
                list(model.state_dict()), list(tmodel.state_dict()))
    finally:
        tdist.destroy_process_group()
