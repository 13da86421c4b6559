"""Hogwild! training: several processes update one model in shared memory, without locks.

    python examples/hogwild.py                        # 4 processes, 5 epochs each
    python examples/hogwild.py --processes 2 --steps 20

``model.share_memory()`` moves every parameter into shared memory; each worker process then
runs its own optimizer on its own shuffled batches and writes straight into those shared
parameters (Recht et al., 2011). The main process watches the shared model improve: it
evaluates it before and after, without ever receiving a copy of the weights. It runs on the CPU
only (no ``--device``): the parameters live in shared host memory.
"""

import argparse

import ember as torch
import ember.multiprocessing as mp
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader
from ember.vision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def train(rank, args, model, results):
    """One worker: its own data order and optimizer, the shared parameters."""
    torch.manual_seed(args.seed + 1 + rank)
    torch.set_num_threads(1)          # the workers already fill the cores
    dataset = datasets.Digits(train=True, transform=transforms.Normalize((0.3,), (0.4,)))
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.5)
    losses = []
    for _ in range(args.epochs):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()          # writes into the shared memory every process sees
            losses.append(loss.item())
            if args.steps is not None and len(losses) >= args.steps:
                break
        if args.steps is not None and len(losses) >= args.steps:
            break
    results.put((rank, losses))


def evaluate(model):
    test = datasets.Digits(train=False)
    x = transforms.Normalize((0.3,), (0.4,))(test.data)     # the whole test set as one batch
    with torch.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, test.targets).item()
        accuracy = (logits.argmax(1) == test.targets).float().mean().item()
    return loss, accuracy


def main(argv=None):
    parser = argparse.ArgumentParser(description="Hogwild! training on the digits")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="steps per process")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-method", default="fork", choices=["fork", "spawn",
                                                                   "forkserver"])
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    model = Net()
    model.share_memory()                      # parameters now live in shared memory
    loss_before, acc_before = evaluate(model)
    print(f"before: test loss {loss_before:.3f}, accuracy {acc_before:.3f}")

    context = mp.get_context(args.start_method)
    results = context.Queue()
    processes = [context.Process(target=train, args=(rank, args, model, results))
                 for rank in range(args.processes)]
    for p in processes:
        p.start()
    worker_losses = dict(results.get(timeout=600) for _ in processes)
    for p in processes:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a worker exited with code {p.exitcode}")

    loss_after, acc_after = evaluate(model)
    for rank in sorted(worker_losses):
        losses = worker_losses[rank]
        print(f"worker {rank}: {len(losses)} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    print(f"after:  test loss {loss_after:.3f}, accuracy {acc_after:.3f}")
    return {"loss_before": loss_before, "accuracy_before": acc_before,
            "loss_after": loss_after, "accuracy_after": acc_after,
            "worker_losses": [worker_losses[r] for r in sorted(worker_losses)]}


if __name__ == "__main__":
    main()
