"""A multilayer perceptron on scikit-learn's 8x8 digits: the smallest complete training program.

    python examples/mlp_digits.py               # 20 epochs, a few seconds
    python examples/mlp_digits.py --steps 50    # just 50 optimizer steps
    python examples/mlp_digits.py --device webgpu

Everything here is PyTorch's API: replace ``import ember as torch`` by ``import torch`` (and
``ember.vision`` by ``torchvision``-style data) and it runs there too.
"""

import argparse

import ember as torch
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader
from ember.vision import datasets, transforms


class MLP(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 10)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = x.flatten(1)                      # (B, 1, 8, 8) -> (B, 64)
        x = self.dropout(F.relu(self.fc1(x)))
        x = self.dropout(F.relu(self.fc2(x)))
        return self.out(x)                    # logits


def evaluate(model, loader, device):
    model.eval()
    correct, loss, n = 0, 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    return loss / n, correct / n


def main(argv=None):
    parser = argparse.ArgumentParser(description="MLP on the digits")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or webgpu")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    normalize = transforms.Normalize((0.3,), (0.4,))
    train_loader = DataLoader(datasets.Digits(train=True, transform=normalize),
                              batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(datasets.Digits(train=False, transform=normalize), batch_size=360)

    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.3)
    losses, step = [], 0
    for epoch in range(1, args.epochs + 1):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            step += 1
            if args.steps is not None and step >= args.steps:
                break
        scheduler.step()
        test_loss, test_acc = evaluate(model, test_loader, device)
        print(f"epoch {epoch:2d}  train loss {sum(losses[-10:]) / len(losses[-10:]):.4f}  "
              f"test loss {test_loss:.4f}  test accuracy {test_acc:.4f}")
        if args.steps is not None and step >= args.steps:
            break
    return {"losses": losses, "test_loss": test_loss, "test_accuracy": test_acc}


if __name__ == "__main__":
    main()
