"""A variational autoencoder (Kingma & Welling, 2013) on scikit-learn's 8x8 digits.

    python examples/vae.py                      # 60 epochs, well under a minute
    python examples/vae.py --steps 50 --out vae_out/
    python examples/vae.py --device webgpu

The encoder maps an image to the mean and log-variance of a Gaussian over a small latent code;
the decoder maps a code back to pixel probabilities. The loss is the negative evidence lower
bound: reconstruction cross-entropy plus the KL divergence from the prior N(0, I). With
``--out``, reconstructions and samples from the prior are saved as PNG grids.
"""

import argparse
import os

import ember as torch
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader
from ember.vision import datasets
from ember.vision.utils import save_image


class VAE(nn.Module):
    def __init__(self, latent=8, hidden=256):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.ReLU())
        self.mean = nn.Linear(hidden, latent)
        self.log_var = nn.Linear(hidden, latent)
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 64))

    def encode(self, x):
        h = self.encoder(x.flatten(1))
        return self.mean(h), self.log_var(h)

    def decode(self, z):
        return self.decoder(z).view(-1, 1, 8, 8)   # logits of the pixel intensities

    def forward(self, x):
        mean, log_var = self.encode(x)
        # the reparameterisation trick: a sample that gradients flow through
        z = mean + torch.randn_like(mean) * (0.5 * log_var).exp()
        return self.decode(z), mean, log_var


def loss_function(logits, x, mean, log_var):
    """Negative ELBO per image: reconstruction + KL(q(z|x) || N(0, I))."""
    reconstruction = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
    kl = -0.5 * (1 + log_var - mean.pow(2) - log_var.exp()).sum()
    return (reconstruction + kl) / len(x)


def main(argv=None):
    parser = argparse.ArgumentParser(description="VAE on the digits")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--latent", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="folder for reconstruction/sample PNGs")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or webgpu")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (small matrices)")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    train_loader = DataLoader(datasets.Digits(train=True), batch_size=args.batch_size,
                              shuffle=True)
    test_images = datasets.Digits(train=False).data.to(device)
    model = VAE(latent=args.latent).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    losses = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        for x, _ in train_loader:
            x = x.to(device)
            logits, mean, log_var = model(x)
            loss = loss_function(logits, x, mean, log_var)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if args.steps is not None and len(losses) >= args.steps:
                break
        model.eval()
        with torch.no_grad():
            logits, mean, log_var = model(test_images)
            test_loss = loss_function(logits, test_images, mean, log_var).item()
        if epoch % 10 == 0 or epoch == 1 or (args.steps and len(losses) >= args.steps):
            print(f"epoch {epoch:3d}  train -ELBO {sum(losses[-20:]) / len(losses[-20:]):.2f}"
                  f"  test -ELBO {test_loss:.2f}  (nats per image)")
        if args.steps is not None and len(losses) >= args.steps:
            break
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with torch.no_grad():
            originals = test_images[:32]
            reconstructed = torch.sigmoid(model.decode(model.encode(originals)[0]))
            samples = torch.sigmoid(model.decode(torch.randn(64, args.latent, device=device)))
        save_image(torch.cat([originals, reconstructed]).cpu(), os.path.join(args.out, "recon.png"))
        save_image(samples.cpu(), os.path.join(args.out, "samples.png"))
        print(f"wrote {args.out}/recon.png (top: test images, bottom: reconstructions) and "
              f"{args.out}/samples.png")
    return {"losses": losses, "test_loss": test_loss}


if __name__ == "__main__":
    main()
