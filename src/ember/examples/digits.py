"""Train a small CNN on scikit-learn's handwritten digits with ember, report test accuracy.

Run ``python -m ember.examples.digits`` (``bash scripts/demo.sh`` sets up and runs it). The
1,797 8x8 digit images ship inside scikit-learn, so nothing is downloaded. The program shows the
usual PyTorch training loop written against ember: a ``Dataset`` with transforms, the
``DataLoader``, an ``nn.Module`` CNN, Adam with a one-cycle learning-rate schedule, evaluation,
checkpoints (``--resume`` continues from the last one) and a learning-curve plot.

Example::

    $ python -m ember.examples.digits --epochs 12 --out out/
    ...
    test accuracy: 0.9833 (12 epochs, 14.2 s)
"""

from __future__ import annotations

import argparse
import os
import time

import ember
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader
from ember.vision import datasets, transforms

MEAN, STD = 0.3, 0.4  # of the digits' pixel values, roughly


class DigitsCNN(nn.Module):
    """Two conv/ReLU/max-pool stages (8x8 -> 4x4 -> 2x2) and a two-layer classifier."""

    def __init__(self, channels=32, hidden=128, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.BatchNorm2d(2 * channels),
            nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Linear(2 * channels * 2 * 2, hidden), nn.ReLU(), nn.Dropout(0.25),
            nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def make_loaders(batch_size, workers=0, augment=True):
    """Train and test loaders over :class:`ember.vision.datasets.Digits`."""
    normalize = transforms.Normalize((MEAN,), (STD,))
    train_tf = transforms.Compose([transforms.RandomCrop(8, padding=1), normalize]) \
        if augment else normalize
    train = datasets.Digits(train=True, transform=train_tf)
    test = datasets.Digits(train=False, transform=normalize)
    return (DataLoader(train, batch_size=batch_size, shuffle=True, drop_last=True,
                       num_workers=workers),
            DataLoader(test, batch_size=512, num_workers=workers))


def evaluate(model, loader, device):
    """Accuracy of ``model`` on ``loader``."""
    model.eval()
    correct = total = 0
    with ember.no_grad():
        for x, y in loader:
            predictions = model(x.to(device)).argmax(dim=1)
            correct += int((predictions == y.to(device)).sum())
            total += len(y)
    return correct / total


def _bar(iterable=None, total=None, enabled=True, **kwargs):
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is optional
        enabled = False
    if enabled:
        return tqdm(iterable, total=total, **kwargs)
    return _Silent(iterable)


class _Silent:
    def __init__(self, iterable):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def set_postfix(self, *args, **kwargs):
        pass

    def update(self, n=1):
        pass

    def close(self):
        pass


def plot_learning_curve(history, path):
    """Training loss and test accuracy per epoch, as a PNG (matplotlib, no display needed)."""
    from matplotlib.figure import Figure

    epochs = [h["epoch"] for h in history]
    fig = Figure(figsize=(8, 3.2))
    left, right = fig.subplots(1, 2)
    left.plot(epochs, [h["train_loss"] for h in history], marker="o")
    left.set_xlabel("epoch")
    left.set_ylabel("training loss")
    left.set_yscale("log")
    right.plot(epochs, [100 * h["test_acc"] for h in history], marker="o", color="tab:green")
    right.set_xlabel("epoch")
    right.set_ylabel("test accuracy (%)")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.suptitle("ember: CNN on scikit-learn digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def resolve_device(name):
    if name == "auto":
        return "cuda" if ember.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not ember.cuda.is_available():
        raise SystemExit("--device cuda: no GPU (or no CuPy) found; use --device cpu")
    return name


def train(epochs=12, batch_size=32, lr=0.01, seed=0, out="out", resume=False, device="cpu",
          workers=0, threads=1, stop_after=None, progress=True, log=print):
    """Train (or resume) and return a summary: accuracy, history, checkpoint and plot paths."""
    previous_threads = ember.get_num_threads()
    if threads:
        ember.set_num_threads(threads)
    try:
        return _train(epochs, batch_size, lr, seed, out, resume, device, workers,
                      stop_after or epochs, progress, log)
    finally:
        ember.set_num_threads(previous_threads)


def _train(epochs, batch_size, lr, seed, out, resume, device, workers, stop_after, progress,
           log):
    start = time.perf_counter()
    device = resolve_device(device)
    ember.manual_seed(seed)
    train_loader, test_loader = make_loaders(batch_size, workers)
    model = DigitsCNN().to(device)
    optimizer = ember.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    scheduler = ember.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, epochs=epochs, steps_per_epoch=len(train_loader))
    os.makedirs(out, exist_ok=True)
    checkpoint_path = os.path.join(out, "checkpoint.pt")
    history, first_epoch = [], 1
    if resume:
        if not os.path.exists(checkpoint_path):
            raise SystemExit(f"--resume: no checkpoint at {checkpoint_path}")
        state = ember.load(checkpoint_path, map_location=device)
        if state["epochs"] != epochs:
            raise SystemExit(f"--resume: the checkpoint's schedule spans {state['epochs']} "
                             f"epochs; pass --epochs {state['epochs']}")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        ember.set_rng_state(state["rng_state"])
        history, first_epoch = state["history"], state["epoch"] + 1
        log(f"resumed from {checkpoint_path} after epoch {state['epoch']}")
    last_epoch = min(epochs, stop_after)
    epoch_bar = _bar(range(first_epoch, last_epoch + 1), total=last_epoch,
                     initial=first_epoch - 1, enabled=progress, desc="epochs", unit="epoch")
    for epoch in epoch_bar:
        model.train()
        total_loss, seen = 0.0, 0
        batches = _bar(train_loader, enabled=progress, desc=f"epoch {epoch}", leave=False,
                       unit="batch")
        for x, y in batches:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            total_loss += loss.item() * len(y)
            seen += len(y)
            batches.set_postfix(loss=f"{loss.item():.3f}")
        test_acc = evaluate(model, test_loader, device)
        history.append({"epoch": epoch, "train_loss": total_loss / seen, "test_acc": test_acc})
        epoch_bar.set_postfix(loss=f"{total_loss / seen:.3f}", test_acc=f"{test_acc:.4f}")
        ember.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": epoch, "epochs": epochs,
                    "history": history,
                    "rng_state": ember.get_rng_state()}, checkpoint_path)
    epoch_bar.close()
    accuracy = history[-1]["test_acc"] if history else evaluate(model, test_loader, device)
    plot_path = plot_learning_curve(history, os.path.join(out, "learning_curve.png"))
    seconds = time.perf_counter() - start
    log(f"checkpoint: {checkpoint_path}")
    log(f"learning curve: {plot_path}")
    log(f"test accuracy: {accuracy:.4f} (epoch {last_epoch} of {epochs}, {seconds:.1f} s)")
    return {"accuracy": accuracy, "history": history, "checkpoint": checkpoint_path,
            "plot": plot_path, "seconds": seconds}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01, help="peak learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out", help="folder for the checkpoint and plot")
    parser.add_argument("--resume", action="store_true", help="continue from --out's checkpoint")
    parser.add_argument("--stop-after", type=int, default=None, metavar="EPOCH",
                        help="stop after this epoch (the schedule still spans --epochs); "
                             "continue later with --resume")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (cuda if present)")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: leave as is); the matrices here are small, and "
                             "one thread avoids synchronisation costs, above all on a busy CPU")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    return train(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                 out=args.out, resume=args.resume, device=args.device, workers=args.workers,
                 threads=args.threads, stop_after=args.stop_after,
                 progress=not args.no_progress)


if __name__ == "__main__":
    main()
