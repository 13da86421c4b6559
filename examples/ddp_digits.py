"""Data-parallel training of a CNN on scikit-learn's digits with DistributedDataParallel.

    python -m ember.distributed.run --nproc-per-node=2 examples/ddp_digits.py
    python -m ember.distributed.run --nproc-per-node=2 examples/ddp_digits.py --steps 20
    python examples/ddp_digits.py                   # one process works too

Each rank trains on its share of every epoch (``DistributedSampler``); backward averages the
gradients across the ranks (the 'gloo' backend: TCP sockets between the processes), so every
replica takes the same step and the model is the one a single process would train on the
global batch. Rank 0 evaluates and prints; at the end every rank checks that its parameters are
bit-for-bit those of rank 0. It runs on the CPU only (no ``--device``): 'gloo' reduces host
tensors.
"""

import argparse
import os
import time

import ember as torch
import ember.distributed as dist
from ember.examples.digits import MEAN, STD, DigitsCNN
from ember.nn import functional as F
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler
from ember.vision import datasets, transforms


def setup():
    """Join the process group the launcher describes (or a group of one without a launcher)."""
    if "RANK" in os.environ:
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    return dist.get_rank(), dist.get_world_size()


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(dim=1) == y).sum())
            total += len(y)
    model.train()
    return correct / total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rank, world = setup()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed + rank)  # different on purpose: DDP broadcasts rank 0's model
    normalize = transforms.Normalize((MEAN,), (STD,))
    train_set = datasets.Digits(train=True, transform=normalize)
    sampler = DistributedSampler(train_set, seed=args.seed)  # rank, world from the group
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    test_loader = DataLoader(datasets.Digits(train=False, transform=normalize), batch_size=512)

    model = DDP(DigitsCNN())
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    losses, step, start = [], 0, time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()  # gradients averaged across the ranks here
            optimizer.step()
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
            losses.append(mean_loss.item())
            step += 1
            if rank == 0 and step % 10 == 0:
                print(f"step {step}: loss {losses[-1]:.4f}", flush=True)
            if args.steps is not None and step >= args.steps:
                break
        if args.steps is not None and step >= args.steps:
            break
        if rank == 0:
            print(f"epoch {epoch + 1}: test accuracy {evaluate(model.module, test_loader):.4f}",
                  flush=True)

    # every replica holds the same parameters
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    reference = flat.clone()
    dist.broadcast(reference, src=0)
    same = bool(torch.equal(flat, reference))
    verdicts = [None] * world
    dist.all_gather_object(verdicts, same)
    if rank == 0:
        accuracy = evaluate(model.module, test_loader)
        print(f"ranks: {world}, steps: {step}, first loss {losses[0]:.4f}, last loss "
              f"{losses[-1]:.4f}, {time.perf_counter() - start:.1f} s")
        print(f"replicas identical: {all(verdicts)}")
        print(f"test accuracy: {accuracy:.4f}")
    dist.destroy_process_group()
    return {"losses": losses, "identical": all(verdicts)}


if __name__ == "__main__":
    main()
