"""Rank functions for test_surface_modules.py (``fn(rank, world_size, *args)``)."""

from __future__ import annotations

import ember.distributed as dist
from ember.distributed import collective_utils


def _fails_on_rank_one():
    if dist.get_rank() == 1:
        raise ValueError("no data on this rank")
    return dist.get_rank() * 10


def collective_utils_round(rank, world_size):
    """broadcast/all_gather of values and of functions, and the errors when a rank fails."""
    group = dist.group.WORLD
    shared = collective_utils.broadcast(lambda: f"from {dist.get_rank()}", rank=1, pg=group)
    values = collective_utils.all_gather(lambda: rank * rank, stage_name="square", pg=group)
    gathered = [None] * world_size
    collective_utils.all_gather_object_enforce_type(group, gathered, {"rank": rank})
    try:
        collective_utils.all_gather(_fails_on_rank_one, pg=group)
        failure = None
    except RuntimeError as error:
        failure = (type(error.__cause__).__name__, [index for index, _ in error.args[1]])
    try:
        collective_utils.broadcast(_fails_on_rank_one, rank=1, stage_name="load", pg=group)
        broadcast_failure = None
    except RuntimeError as error:
        broadcast_failure = str(error)
    mixed = [None] * world_size
    try:
        collective_utils.all_gather_object_enforce_type(group, mixed, rank if rank else "zero")
        type_error = None
    except TypeError as error:
        type_error = str(error)
    return shared, values, gathered, failure, broadcast_failure, type_error


def launched_worker(scale):
    """A function worker for elastic_launch: its ranks, from the environment."""
    import os

    print(f"hello from {os.environ['RANK']}", flush=True)
    return int(os.environ["RANK"]) * scale, int(os.environ["WORLD_SIZE"]), \
        int(os.environ["LOCAL_RANK"])


def failing_worker():
    """Rank 1 raises; record() writes the error for the launcher's report."""
    import os

    if os.environ["RANK"] == "1":
        raise ValueError("worker one has no data")
    return "ok"


def fails_first_attempt():
    """Fails on the first start only (the launcher restarts the group)."""
    import os

    if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0" and os.environ["RANK"] == "0":
        raise RuntimeError("first attempt")
    return int(os.environ["TORCHELASTIC_RESTART_COUNT"])


def _sum_hook(seen, bucket):
    """A hook that sums (no averaging) and notes what the bucket held."""
    seen.append((bucket.index(), bucket.is_last(), [tuple(g.shape) for g in bucket.gradients()],
                 len(bucket.parameters()), bucket.buffer().tolist()))
    return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(
        lambda future: future.value()[0])


def ddp_comm_hooks(rank, world_size):
    """One backward per hook; the gradients each gives (rank r's gradient is r + 1)."""
    import ember
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    from ember.nn.parallel import DistributedDataParallel

    results = {}
    for name in ("none", "allreduce", "fp16", "sum", "builtin_fp16"):
        model = ember.nn.Linear(3, 1, bias=False)
        with ember.no_grad():
            model.weight.fill_(1.0)
        ddp = DistributedDataParallel(model)
        seen = []
        if name == "allreduce":
            ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        elif name == "fp16":
            ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        elif name == "sum":
            ddp.register_comm_hook(seen, _sum_hook)
        elif name == "builtin_fp16":
            ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
        ddp(ember.full((1, 3), float(rank + 1))).sum().backward()
        results[name] = (model.weight.grad.tolist(), seen)
    try:
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        twice = None
    except RuntimeError as error:
        twice = str(error)
    return results, twice


def _pipeline_model():
    import ember

    ember.manual_seed(3)
    return ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(), ember.nn.Linear(8, 2))


def pipeline_step(rank, world_size, schedule_name):
    """One pipelined step of a 3-layer model over two ranks, and the same step unsplit: the
    gradients of each rank's layers, the outputs and the losses."""
    import ember
    from ember.distributed.pipelining import PipelineStage
    from ember.distributed.pipelining.schedules import get_schedule_class

    ember.manual_seed(5)
    x, y = ember.randn(8, 4), ember.randn(8, 2)
    whole = _pipeline_model()
    loss = ember.nn.functional.mse_loss(whole(x), y)
    loss.backward()
    full = _pipeline_model()
    part = full[:2] if rank == 0 else full[2:]
    stage = PipelineStage(part, rank, world_size, ember.device("cpu"))
    schedule = get_schedule_class(schedule_name)(stage, n_microbatches=4,
                                                 loss_fn=ember.nn.functional.mse_loss)
    losses = []
    if rank == 0:
        output = schedule.step(x)
        mine, expected = part, whole[:2]
    else:
        output = schedule.step(target=y, losses=losses)
        mine, expected = part, whole[2:]
    grads_match = all(ember.allclose(a.grad, b.grad, atol=1e-6)
                      for a, b in zip(mine.parameters(), expected.parameters()))
    if rank == 1:
        output_match = ember.allclose(output, whole(x), atol=1e-6)
        chunk_losses = [ember.nn.functional.mse_loss(whole(xc), yc).item()
                        for xc, yc in zip(x.chunk(4), y.chunk(4))]
        losses_match = all(abs(a.item() - b) < 1e-6 for a, b in zip(losses, chunk_losses))
        return grads_match, output_match, losses_match, len(losses)
    return grads_match, output is None
