"""Functions the RPC tests run on spawned workers (module level, so pickled by reference).

Each ``scenario_*`` runs on every rank of a harness world: it joins RPC on ``port``, plays its
part (rank 0 usually drives, the others serve), leaves with a graceful shutdown and returns
plain Python/NumPy values for the test to compare against torch.
"""

import gc
import os
import threading
import time

import numpy as np

import ember
import ember.distributed.autograd as dist_autograd
import ember.distributed.rpc as rpc
from ember.distributed.optim import DistributedOptimizer


def join(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    options = rpc.TensorPipeRpcBackendOptions(rpc_timeout=20)
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world_size,
                 rpc_backend_options=options)


def run(rank, world_size, port, scenario):
    join(rank, world_size, port)
    try:
        return globals()[f"scenario_{scenario}"](rank, world_size)
    finally:
        rpc.shutdown()


# ---- remote functions --------------------------------------------------------------------
def data(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def affine(x, w, b):
    return x @ w + b


def where_am_i():
    return rpc.get_worker_info().name


def make_list(n):
    return list(range(n))


def local_value_of(rref):
    return rref.local_value()


def fork_report(rref):
    """On a third worker: what a forked user RRef says of itself, and its value."""
    return rref.is_owner(), rref.owner_name(), rref.to_here()


def owned_count():
    return len(rpc.api._owners.entries)


def raise_value_error(n):
    raise ValueError(f"boom {n}")


class NeedsTwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def raise_odd_exception():
    raise NeedsTwoArgs(1, 2)


def nap(seconds):
    time.sleep(seconds)
    return seconds


class Counter:
    def __init__(self, start):
        self.total = start

    def add(self, n):
        self.total += n
        return self.total

    def value(self):
        return self.total


@rpc.functions.async_execution
def add_later(x, y):
    fut = ember.futures.Future()
    threading.Timer(0.05, lambda: fut.set_result(x + y)).start()
    return fut


class Accumulator:
    """Answers every caller once ``expected`` updates arrived (batch PS's pattern)."""

    def __init__(self, expected):
        self.expected = expected
        self.total = 0
        self.lock = threading.Lock()
        self.future = ember.futures.Future()

    @staticmethod
    @rpc.functions.async_execution
    def update(acc_rref, value):
        self = acc_rref.local_value()
        with self.lock:
            self.total += value
            self.expected -= 1
            fut = self.future
            if self.expected == 0:
                fut.set_result(self.total)
        return fut


def push(acc_rref, value):
    return rpc.rpc_sync(acc_rref.owner(), Accumulator.update, args=(acc_rref, value))


# ---- scenarios ---------------------------------------------------------------------------
def scenario_calls(rank, world_size):
    """rpc_sync / rpc_async / remote results, worker infos; rank 1 calls in during shutdown."""
    if rank == 1:
        time.sleep(0.3)  # rank 0 is in shutdown by now, still serving
        return rpc.rpc_sync("worker0", where_am_i)
    if rank != 0:
        return None
    x, w, b = data(0, 3, 4), data(1, 4, 2), data(2, 2)
    args = (ember.tensor(x), ember.tensor(w), ember.tensor(b))
    fut = rpc.rpc_async("worker1", affine, args=args)
    info = rpc.get_worker_info("worker1")
    return {
        "sync": rpc.rpc_sync("worker1", affine, args=args).numpy(),
        "sync_kwargs": rpc.rpc_sync(info, ember.add, args=(args[0],),
                                    kwargs={"other": 2.0, "alpha": 3}).numpy(),
        "async": fut.wait().numpy(),
        "remote": rpc.remote(1, affine, args=args).to_here().numpy(),
        "self": rpc.rpc_sync("worker0", where_am_i),
        "me": repr(rpc.get_worker_info()),
        "info": (info.name, info.id, repr(info)),
        "future_type": type(fut).__module__,
    }


def scenario_rrefs(rank, world_size):
    if rank != 0:
        return None
    out = {}
    rref = rpc.remote("worker1", make_list, args=(3,))
    out["to_here"] = rref.to_here()
    out["user"] = (rref.is_owner(), rref.owner_name(), rref.owner() == rpc.get_worker_info(
        "worker1"), rref.confirmed_by_owner())
    try:
        rref.local_value()
    except RuntimeError as e:
        out["local_value_error"] = str(e)
    out["on_owner"] = rpc.rpc_sync("worker1", local_value_of, args=(rref,))
    out["fork"] = rpc.rpc_sync("worker2", fork_report, args=(rref,))
    counter = rpc.remote("worker1", Counter, args=(5,))
    out["proxies"] = (counter.rpc_sync().add(2), counter.rpc_async().add(3).wait(),
                      counter.remote().value().to_here())
    local = rpc.RRef(ember.ones(2))
    out["local"] = (local.is_owner(), local.local_value() is local.to_here(),
                    rpc.rpc_sync("worker2", fork_report, args=(local,))[2].numpy())
    try:
        import pickle

        pickle.dumps(local)
    except RuntimeError as e:
        out["pickle_error"] = str(e)
    before = rpc.rpc_sync("worker1", owned_count)
    extra = rpc.remote("worker1", make_list, args=(2,))
    extra.to_here()
    during = rpc.rpc_sync("worker1", owned_count)
    del extra
    gc.collect()
    rpc.api._state["agent"].drain()  # the deletion notice has been answered
    out["counts"] = (before, during, rpc.rpc_sync("worker1", owned_count))
    return out


def scenario_errors(rank, world_size):
    if rank != 0:
        return None
    out = {}
    calls = {
        "sync": lambda: rpc.rpc_sync("worker1", raise_value_error, args=(7,)),
        "async": lambda: rpc.rpc_async("worker1", raise_value_error, args=(7,)).wait(),
        "remote": lambda: rpc.remote("worker1", raise_value_error, args=(7,)).to_here(),
        "odd": lambda: rpc.rpc_sync("worker1", raise_odd_exception),
        "timeout": lambda: rpc.rpc_sync("worker1", nap, args=(0.4,), timeout=0.2),
        "unknown": lambda: rpc.rpc_sync("nobody", where_am_i),
        "not_callable": lambda: rpc.rpc_sync("worker1", 3),
        "no_context": lambda: dist_autograd.get_gradients(12345),
    }
    for name, call in calls.items():
        try:
            call()
            out[name] = None
        except Exception as e:  # noqa: BLE001 - the test inspects it
            out[name] = (type(e).__name__, str(e))
    with dist_autograd.context() as context_id:
        for name, call in {
            "nested": lambda: dist_autograd.context().__enter__(),
            "not_scalar": lambda: dist_autograd.backward(
                context_id, [ember.ones(2, requires_grad=True) * 2]),
            "no_grad": lambda: dist_autograd.backward(context_id, [ember.ones(())]),
        }.items():
            try:
                call()
                out[name] = None
            except RuntimeError as e:
                out[name] = (type(e).__name__, str(e))
    return out


def scenario_async(rank, world_size):
    if rank != 0:
        return None
    direct = rpc.rpc_sync("worker1", add_later, args=(ember.ones(2), 4)).numpy()
    acc = rpc.RRef(Accumulator(expected=2))
    futs = [rpc.rpc_async(f"worker{r}", push, args=(acc, 10 * r)) for r in (1, 2)]
    remote_sum = rpc.remote("worker2", add_later, args=(1, 2)).to_here()
    return direct, [f.wait() for f in futs], remote_sum


# ---- distributed autograd: a model split between a trainer (rank 0) and a server (rank 1)
class Stage(ember.nn.Module):
    """The server's half: two weight matrices used before and after the trainer's layer."""

    def __init__(self):
        super().__init__()
        self.w1 = ember.nn.Parameter(ember.tensor(data(10, 4, 3)))
        self.w2 = ember.nn.Parameter(ember.tensor(data(11, 3, 2)))

    def first(self, x):
        return ember.tanh(x @ self.w1)

    def second(self, h):
        return h @ self.w2

    def param_rrefs(self):
        return [rpc.RRef(p) for p in self.parameters()]


def on_value(method, rref, *args):
    return method(rref.local_value(), *args)


def remote_method(method, rref, *args):
    return rpc.rpc_sync(rref.owner(), on_value, args=(method, rref, *args))


def grads_on_owner(context_id, rref):
    grads = dist_autograd.get_gradients(context_id)
    return [grads[p].numpy() for p in rref.local_value().parameters()]


def context_count():
    return len(dist_autograd._contexts)


def params_on_owner(rref):
    return [p.detach().numpy() for p in rref.local_value().parameters()]


def split_forward(stage, w_local, x):
    h1 = remote_method(Stage.first, stage, x)
    h2 = ember.sigmoid(h1 @ w_local)
    out = remote_method(Stage.second, stage, h2)
    again = remote_method(Stage.second, stage, h2 * 2)  # h2's graph sent twice
    return (out ** 2).mean() + 0.1 * h1.sum() + again.sum()


def scenario_autograd(rank, world_size):
    if rank != 0:
        return None
    stage = rpc.remote("worker1", Stage)
    w_local = ember.nn.Parameter(ember.tensor(data(12, 3, 3)))
    x = ember.tensor(data(13, 5, 4))
    with dist_autograd.context() as context_id:
        loss = split_forward(stage, w_local, x)
        dist_autograd.backward(context_id, [loss])
        local = dist_autograd.get_gradients(context_id)
        remote_grads = rpc.rpc_sync("worker1", grads_on_owner, args=(context_id, stage))
        keys = len(local)
    rpc.api._state["agent"].drain()  # the release notices have been answered
    left = (len(dist_autograd._contexts), rpc.rpc_sync("worker1", context_count))
    return {"loss": loss.item(), "w_local": local[w_local].numpy(), "w1": remote_grads[0],
            "w2": remote_grads[1], "keys": keys, "dot_grad": w_local.grad, "left": left}


def scenario_optimizer(rank, world_size, steps=3):
    if rank != 0:
        return None
    stage = rpc.remote("worker1", Stage)
    w_local = ember.nn.Parameter(ember.tensor(data(12, 3, 3)))
    x = ember.tensor(data(13, 5, 4))
    params = remote_method(Stage.param_rrefs, stage) + [rpc.RRef(w_local)]
    opt = DistributedOptimizer(ember.optim.SGD, params, lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        with dist_autograd.context() as context_id:
            loss = split_forward(stage, w_local, x)
            dist_autograd.backward(context_id, [loss])
            opt.step(context_id)
            losses.append(loss.item())
    w1, w2 = rpc.rpc_sync("worker1", params_on_owner, args=(stage,))
    return {"losses": losses, "w1": w1, "w2": w2, "w_local": w_local.detach().numpy()}


# ---- what values look like after a trip (run with ember here, with torch by the test) -----
def payload(lib):
    """Tensors of several kinds, a Parameter, nested containers and a module (torch or ember)."""
    return {
        "f64_transposed": lib.arange(6, dtype=lib.float64).reshape(2, 3).t(),
        "i64": lib.tensor([1, -2, 3]),
        "bool": lib.tensor([True, False]),
        "scalar": lib.tensor(2.5),
        "empty": lib.zeros(0, 3),
        "requires_grad": lib.ones(2, requires_grad=True),
        "param": lib.nn.Parameter(lib.full((2,), 3.0)),
        "nested": [lib.ones(1), (lib.zeros(1), {"k": lib.full((2,), 7)})],
        "module": lib.nn.Linear(2, 2),
    }


def describe(value):
    """Type, dtype, shape, grad flags and values: comparable between torch and ember."""
    if isinstance(value, dict):
        return {k: describe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [describe(v) for v in value]
    if hasattr(value, "weight"):  # a module: its parameters' kinds
        return type(value).__name__, describe(value.weight), describe(value.bias)
    return (type(value).__name__, str(value.dtype).rpartition(".")[2], tuple(value.shape),
            value.requires_grad, value.is_leaf, value.detach().numpy().tolist()
            if value.numel() and type(value).__name__ != "Parameter" else None)


def echo(value):
    return value


def travel(lib, rpc_module, to):
    """``describe`` of the payload seen by the callee, and of it sent back to the caller."""
    sent = payload(lib)
    return (rpc_module.rpc_sync(to, describe, args=(sent,)),
            describe(rpc_module.rpc_sync(to, echo, args=(sent,))))


def scenario_values(rank, world_size):
    return travel(ember, rpc, "worker1") if rank == 0 else None


def run_beside_process_group(rank, world_size, port):
    """RPC joined through the port of a process group's store (the store is reused)."""
    import ember.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size)
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{port}",
                                              rpc_timeout=20)
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world_size,
                 rpc_backend_options=options)
    try:
        total = ember.tensor([float(rank + 1)])
        dist.all_reduce(total)
        other = f"worker{(rank + 1) % world_size}"
        return rpc.rpc_sync(other, where_am_i), total.item()
    finally:
        rpc.shutdown()
        dist.destroy_process_group()


def stage_loss(stage, x):
    return stage.local_value().first(x).sum()


def scenario_rref_backward(rank, world_size):
    if rank != 0:
        return None
    stage = rpc.remote("worker1", Stage)
    x = ember.tensor(data(13, 5, 4), requires_grad=True)
    with dist_autograd.context() as context_id:
        loss = rpc.remote("worker1", stage_loss, args=(stage, x))
        loss.backward(context_id)
        w1, _ = rpc.rpc_sync("worker1", grads_on_owner_partial, args=(context_id, stage))
        return w1, dist_autograd.get_gradients(context_id)[x].numpy()


def grads_on_owner_partial(context_id, rref):
    grads = dist_autograd.get_gradients(context_id)
    return [grads[p].numpy() if p in grads else None for p in rref.local_value().parameters()]


# ---- RemoteModule: a Linear on worker1, trained from worker0, used by worker2 too ---------
def linear_state(module_rref):
    lin = module_rref.local_value()
    return lin.weight.detach().numpy(), lin.bias.detach().numpy()


def forward_elsewhere(remote_module, x):
    return remote_module(x)


def scenario_remote_module(rank, world_size, steps=3):
    from ember.distributed.nn import RemoteModule

    if rank != 0:
        return None
    lin = RemoteModule("worker1/cpu", ember.nn.Linear, args=(4, 2))
    start = rpc.rpc_sync("worker1", linear_state, args=(lin.get_module_rref(),))
    x, target = ember.tensor(data(20, 6, 4)), ember.tensor(data(21, 6, 2))
    opt = DistributedOptimizer(ember.optim.SGD, lin.remote_parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        with dist_autograd.context() as context_id:
            loss = ((lin(x) - target) ** 2).mean()
            dist_autograd.backward(context_id, [loss])
            opt.step(context_id)
            losses.append(loss.item())
    errors = {}
    for name, call in (("parameters", lambda: lin.parameters()), ("to", lambda: lin.to("cpu"))):
        try:
            call()
        except ValueError as e:
            errors[name] = str(e)
    return {"start": start, "losses": losses, "async": lin.forward_async(x).wait().detach().numpy(),
            "elsewhere": rpc.rpc_sync("worker2", forward_elsewhere, args=(lin, x)).detach().numpy(),
            "end": rpc.rpc_sync("worker1", linear_state, args=(lin.get_module_rref(),)),
            "errors": errors, "on": (lin.on.name, str(lin.device))}
