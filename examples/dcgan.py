"""A DCGAN (Radford et al., 2015) that learns to draw scikit-learn's 8x8 digits.

    python examples/dcgan.py                       # 60 epochs, about a minute
    python examples/dcgan.py --steps 60 --out gan_out/
    python examples/dcgan.py --fake                # on FakeData instead (random noise images)
    python examples/dcgan.py --device webgpu

The generator turns noise into an image with transposed convolutions (2x2 -> 4x4 -> 8x8); the
discriminator scores images with strided convolutions. They are trained against each other
with the non-saturating GAN loss. Progress is measured by how far the statistics of generated
images (mean image and pixel covariance) are from those of the real ones.
"""

import argparse
import os

import ember as torch
from ember import nn
from ember.utils.data import DataLoader
from ember.vision import datasets, transforms
from ember.vision.utils import save_image


class Generator(nn.Module):
    def __init__(self, nz=16, ngf=32):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 2, 1, 0, bias=False),       # 2 x 2
            nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),  # 4 x 4
            nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, 1, 4, 2, 1, bias=False),        # 8 x 8
            nn.Tanh())

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=32):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),                      # 4 x 4
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),                # 2 x 2
            nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False))                  # 1 x 1: a logit

    def forward(self, x):
        return self.main(x).flatten()


def weights_init(m):
    """DCGAN's initialisation: N(0, 0.02) convolutions, N(1, 0.02) batch-norm scales."""
    if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


def covariance(x):
    centred = x - x.mean(0)
    return centred.T @ centred / (len(x) - 1)


def statistics_gap(fake, real):
    """Distance between the mean images and pixel covariances of two batches (lower: closer)."""
    fake, real = fake.flatten(1), real.flatten(1)
    mean_gap = (fake.mean(0) - real.mean(0)).pow(2).sum()
    cov_gap = (covariance(fake) - covariance(real)).pow(2).sum()
    return (mean_gap + cov_gap).sqrt().item()


def main(argv=None):
    parser = argparse.ArgumentParser(description="DCGAN on the digits")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--nz", type=int, default=16, help="size of the noise vector")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fake", action="store_true", help="train on FakeData instead")
    parser.add_argument("--out", default=None, help="folder for sample PNGs")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or webgpu")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (small matrices)")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    to_unit_range = transforms.Normalize((0.5,), (0.5,))          # [0, 1] -> [-1, 1] (tanh)
    if args.fake:
        dataset = datasets.FakeData(size=1024, image_size=(1, 8, 8), transform=transforms.Compose(
            [transforms.ToTensor(), to_unit_range]))
    else:
        dataset = datasets.Digits(train=True, transform=to_unit_range)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, drop_last=True)
    reference = torch.stack([dataset[i][0] for i in range(min(len(dataset), 512))]).to(device)

    netG, netD = Generator(args.nz), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    netG.to(device)
    netD.to(device)
    criterion = nn.BCEWithLogitsLoss()
    optD = torch.optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.999))
    fixed_noise = torch.randn(64, args.nz, 1, 1, device=device)

    def gap():
        netG.eval()
        with torch.no_grad():
            value = statistics_gap(netG(torch.randn(512, args.nz, 1, 1, device=device)), reference)
        netG.train()
        return value

    history = {"loss_D": [], "loss_G": [], "gap": [gap()]}
    step = 0
    for epoch in range(1, args.epochs + 1):
        for real, _ in loader:
            real = real.to(device)
            b = len(real)
            ones, zeros = torch.ones(b, device=device), torch.zeros(b, device=device)
            # (1) the discriminator: real images -> 1, generated images -> 0
            fake = netG(torch.randn(b, args.nz, 1, 1, device=device))
            loss_D = criterion(netD(real), ones) + criterion(netD(fake.detach()), zeros)
            optD.zero_grad()
            loss_D.backward()
            optD.step()
            # (2) the generator: make the discriminator call its images real
            loss_G = criterion(netD(fake), ones)
            optG.zero_grad()
            loss_G.backward()
            optG.step()
            history["loss_D"].append(loss_D.item())
            history["loss_G"].append(loss_G.item())
            step += 1
            if args.steps is not None and step >= args.steps:
                break
        done = args.steps is not None and step >= args.steps
        if epoch % 10 == 0 or epoch == 1 or done or epoch == args.epochs:
            history["gap"].append(gap())
            print(f"epoch {epoch:3d}  loss_D {loss_D.item():.3f}  loss_G {loss_G.item():.3f}  "
                  f"statistics gap {history['gap'][-1]:.3f} (from {history['gap'][0]:.3f})")
        if done:
            break
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        netG.eval()
        with torch.no_grad():
            samples = netG(fixed_noise)
        path = os.path.join(args.out, "samples.png")
        save_image(samples.cpu(), path, normalize=True, value_range=(-1, 1))
        print(f"wrote {path}")
    return history


if __name__ == "__main__":
    main()
