"""A SyncBatchNorm rank for test_nn_more, in its own module so that spawned processes import
only ember (not torch or the test module)."""

import ember


def sync_bn_rank(rank, world_size, init_file, x, g, rows, results):
    """One gloo rank: two SyncBatchNorm training steps on its rows of the batch, then backward;
    puts (rank, output, input grad, weight grad, bias grad, running mean/var, batch count)."""
    import ember.distributed as dist

    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                                world_size=world_size)
        bn = ember.nn.SyncBatchNorm(3, momentum=0.3).double()
        start, stop = rows[rank]
        mine = ember.tensor(x[start:stop], requires_grad=True)
        for _ in range(2):  # the second step sees running statistics updated by the first
            out = bn(mine)
        out.backward(ember.tensor(g[start:stop]))
        results.put((rank, out.detach().numpy(), mine.grad.numpy(), bn.weight.grad.numpy(),
                     bn.bias.grad.numpy(), bn.running_mean.numpy(), bn.running_var.numpy(),
                     int(bn.num_batches_tracked)))
        dist.destroy_process_group()
    except BaseException as error:  # noqa: BLE001  (report it, so that the test does not hang)
        results.put((rank, repr(error)))
