"""CrossMapLRN2d: the legacy (Lua Torch) local response normalization across channels.

``out = x * (k + alpha / size * S) ** -beta`` where ``S`` sums ``x**2`` over a window of
channels. torch 2.13 keeps Lua Torch's running-sum implementation, and with it two quirks that
ember reproduces so that numbers agree:

* the window of channel ``c`` is ``[c - p + 1, c + p - 1]`` with ``p = int((size - 1) / 2 + 1)``,
  and channel 0's square is never subtracted from the running sum, so every channel
  ``c >= p`` also counts ``x[:, 0]**2``;
* its backward is a hand-written formula whose window is shifted by one channel; it is not the
  derivative of the forward (torch's own ``gradcheck`` fails on it). ember returns the same
  gradient as torch.

``ember.nn.LocalResponseNorm`` is the modern layer with a correct derivative.
"""

from __future__ import annotations

from ...autograd.function import Function
from ...ops.creation import zeros_like
from .module import Module

__all__ = ["CrossMapLRN2d"]


def _shifted_channels(x, offset):
    """``y[:, c] = x[:, c + offset]`` where that channel exists, else 0."""
    channels = x.size(1)
    shifted = zeros_like(x)
    if abs(offset) >= channels:
        return shifted
    if offset >= 0:
        shifted[:, :channels - offset] = x[:, offset:]
    else:
        shifted[:, -offset:] = x[:, :channels + offset]
    return shifted


class _CrossMapLRN2dFunction(Function):
    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        half = int((size - 1) / 2 + 1)
        squares = input * input
        window_sum = zeros_like(input)
        for offset in range(-(half - 1), half):
            window_sum += _shifted_channels(squares, offset)
        if input.size(1) > half:
            window_sum[:, half:] += squares[:, :1]  # channel 0 is never dropped (see above)
        scale = window_sum * (alpha / size) + k
        output = input * scale.pow(-beta)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.scale = scale
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        size, scale = ctx.size, ctx.scale
        ratio = grad_output * output / scale
        # torch sums ``ratio`` over channels [c - shift, c + size - 1 - shift]
        shift = int(size - (size - 1) / 2)
        accumulated = zeros_like(input)
        for offset in range(-shift, size - shift):
            accumulated += _shifted_channels(ratio, offset)
        grad_input = scale.pow(-ctx.beta) * grad_output
        grad_input -= (2 * ctx.alpha * ctx.beta / size) * input * accumulated
        return grad_input, None, None, None, None


class CrossMapLRN2d(Module):
    """Local response normalization across channels of (N, C, H, W) input, torch's legacy
    implementation (see the module notes on its window and gradient).

    Example::

        >>> lrn = ember.nn.CrossMapLRN2d(3, alpha=1e-4, beta=0.75, k=1)
        >>> lrn(ember.randn(2, 4, 5, 5)).shape
        ember.Size([2, 4, 5, 5])
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
