"""A convolutional network on scikit-learn's 8x8 digits, with augmentation and a saved model.

    python examples/cnn_digits.py                    # 10 epochs, well under a minute
    python examples/cnn_digits.py --steps 40         # a quick look
    python examples/cnn_digits.py --save-model cnn.pt
    python examples/cnn_digits.py --device webgpu

Shows: a Dataset with random-crop augmentation, F.conv2d/max_pool2d through nn modules,
AdamW with cosine annealing, label smoothing, log-softmax + NLL, and ember.save / ember.load.
(``python -m ember.examples.digits`` is the fuller version: checkpoints, resume, plots.)
"""

import argparse

import ember as torch
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader
from ember.vision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)    # 16 x 8 x 8
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)   # 32 x 8 x 8 -> pool 4 x 4
        self.conv3 = nn.Conv2d(32, 64, kernel_size=3, padding=1)   # 64 x 4 x 4 -> pool 2 x 2
        self.fc1 = nn.Linear(64 * 2 * 2, 128)
        self.fc2 = nn.Linear(128, 10)
        self.dropout = nn.Dropout(0.3)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)
        x = self.dropout(F.relu(self.fc1(x.flatten(1))))
        return F.log_softmax(self.fc2(x), dim=1)


def train_epoch(model, loader, optimizer, scheduler, args, losses):
    model.train()
    for batch, (x, y) in enumerate(loader):
        x, y = x.to(args.device), y.to(args.device)
        log_probs = model(x)
        # label smoothing by hand on log-probabilities: (1 - eps) * NLL + eps * mean(-log p)
        loss = (1 - args.smoothing) * F.nll_loss(log_probs, y) \
            - args.smoothing * log_probs.mean(dim=1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if batch % args.log_interval == 0:
            print(f"  batch {batch:3d}/{len(loader)}  loss {loss.item():.4f}  "
                  f"lr {scheduler.get_last_lr()[0]:.2e}")
        if args.steps is not None and len(losses) >= args.steps:
            return


def test(model, loader, device):
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            log_probs = model(x)
            loss += F.nll_loss(log_probs, y, reduction="sum").item()
            correct += log_probs.argmax(dim=1).eq(y).sum().item()
    n = len(loader.dataset)
    return loss / n, correct / n


def main(argv=None):
    parser = argparse.ArgumentParser(description="CNN on the digits")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--smoothing", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=20)
    parser.add_argument("--save-model", default=None, metavar="PATH")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or webgpu")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (small matrices)")
    args = parser.parse_args(argv)

    args.device = torch.device(args.device)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    normalize = transforms.Normalize((0.3,), (0.4,))
    augment = transforms.Compose([transforms.RandomCrop(8, padding=1), normalize])
    train_loader = DataLoader(datasets.Digits(train=True, transform=augment),
                              batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(datasets.Digits(train=False, transform=normalize), batch_size=360)

    model = Net().to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    total = args.steps or args.epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total)
    losses = []
    for epoch in range(1, args.epochs + 1):
        train_epoch(model, train_loader, optimizer, scheduler, args, losses)
        test_loss, accuracy = test(model, test_loader, args.device)
        print(f"epoch {epoch}: test loss {test_loss:.4f}, accuracy {accuracy:.4f}")
        if args.steps is not None and len(losses) >= args.steps:
            break
    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
        reloaded = Net().to(args.device)
        reloaded.load_state_dict(torch.load(args.save_model))
        assert test(reloaded, test_loader, args.device) == (test_loss, accuracy)
        print(f"saved to {args.save_model}")
    return {"losses": losses, "test_loss": test_loss, "test_accuracy": accuracy}


if __name__ == "__main__":
    main()
