"""Train a classifier on scikit-learn's handwritten digits with ember, then report accuracy.

Run ``python -m ember.examples.digits`` (the README's demo command wraps set-up and run). The
1,797 8x8 digit images ship inside scikit-learn, so nothing is downloaded. The model is a
two-layer perceptron written with plain ember tensors and autograd; the ``nn``/``optim`` version
replaces it once those packages land.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ember


def load_digits_split(seed=0, test_fraction=0.2):
    """The digits as float32 tensors, standardised, split into train and test sets."""
    from sklearn.datasets import load_digits

    data = load_digits()
    images = data.data.astype(np.float32) / 16.0
    labels = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    mean, std = images[train].mean(0), images[train].std(0) + 1e-6
    images = (images - mean) / std
    return (ember.tensor(images[train]), ember.tensor(labels[train]),
            ember.tensor(images[test]), ember.tensor(labels[test]))


def init_params(hidden, seed):
    """Weights drawn like torch's Linear default (uniform in +-1/sqrt(fan_in))."""
    rng = np.random.default_rng(seed)

    def uniform(shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        return ember.tensor(rng.uniform(-bound, bound, shape).astype(np.float32),
                            requires_grad=True)
    return [uniform((64, hidden), 64), uniform((hidden,), 64),
            uniform((hidden, 10), hidden), uniform((10,), hidden)]


def forward(params, x):
    w1, b1, w2, b2 = params
    hidden = (x @ w1 + b1).tanh()
    return hidden @ w2 + b2


def cross_entropy(logits, labels):
    """Mean negative log-likelihood of ``labels`` under softmax(``logits``), computed stably."""
    shifted = logits - logits.amax(dim=1, keepdim=True).detach()
    log_probs = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
    one_hot = (labels.unsqueeze(1) == ember.arange(10)).to(log_probs.dtype)
    return -(one_hot * log_probs).sum(dim=1).mean()


def accuracy(params, x, y):
    with ember.no_grad():
        predictions = forward(params, x).argmax(dim=1)
    return (predictions == y).float().mean().item()


def train(epochs=30, batch_size=64, lr=0.1, hidden=64, seed=0, progress=True):
    """Train with minibatch SGD with momentum; return the final test accuracy."""
    x_train, y_train, x_test, y_test = load_digits_split(seed)
    params = init_params(hidden, seed)
    velocity = [ember.zeros_like(p) for p in params]
    rng = np.random.default_rng(seed)
    n = len(x_train)
    bar = _progress(epochs, progress)
    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            batch = ember.tensor(order[start:start + batch_size])
            loss = cross_entropy(forward(params, x_train[batch]), y_train[batch])
            loss.backward()
            with ember.no_grad():
                for p, v in zip(params, velocity):
                    v.mul_(0.9).add_(p.grad)
                    p.sub_(lr * v)
                    p.grad = None
        test_acc = accuracy(params, x_test, y_test)
        bar.set_postfix(loss=f"{loss.item():.3f}", test_acc=f"{test_acc:.3f}")
        bar.update(1)
    bar.close()
    return accuracy(params, x_test, y_test)


def _progress(total, enabled):
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is optional: fall back to silence
        enabled = False
    if enabled:
        return tqdm(total=total, desc="epochs", unit="epoch")

    class Silent:
        def set_postfix(self, **_):
            pass

        def update(self, _):
            pass

        def close(self):
            pass
    return Silent()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    acc = train(epochs=args.epochs, lr=args.lr, seed=args.seed, progress=not args.no_progress)
    print(f"test accuracy: {acc:.4f} ({time.perf_counter() - start:.1f} s)")
    return acc


if __name__ == "__main__":
    main()
