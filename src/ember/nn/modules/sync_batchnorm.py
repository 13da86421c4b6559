"""SyncBatchNorm: batch normalization whose statistics cover the batch of every process.

With an initialised ``ember.distributed`` process group of two or more processes, training-mode
statistics are summed over the group: first the per-channel sums and element counts (giving
the global mean), then the sums of squared deviations from that mean (giving the global
variance, two-pass for accuracy). The sums travel through an all-reduce whose backward is again
an all-reduce, so each process's input gradient is that of the loss summed over all processes,
as torch computes it. Otherwise (one process, eval mode) it is plain BatchNorm.
"""

from __future__ import annotations

from ..._tensor import tensor
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...ops.shape import cat
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _AllReduceSum(Function):
    """Sum a tensor over the process group; the gradient is summed the same way."""

    @staticmethod
    def forward(ctx, input, group):
        from ... import distributed as dist

        ctx.group = group
        total = input.clone()
        dist.all_reduce(total, group=group)
        return total

    @staticmethod
    def backward(ctx, grad):
        from ... import distributed as dist

        total = grad.clone()
        dist.all_reduce(total, group=ctx.group)
        return total, None


def _sync_group(module):
    """The process group to synchronise over, or None when there is nothing to synchronise."""
    from ... import distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return None
    group = module.process_group if module.process_group else dist.group.WORLD
    return group if dist.get_world_size(group) > 1 else None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over N-D input ``(N, C, ...)`` with statistics synchronised across
    the processes of ``process_group`` (default: the whole world) while training.

    Parameters and buffers are BatchNorm's (same names, shapes and state dict). Unlike torch,
    which synchronises only GPU tensors, ember also synchronises CPU tensors (over gloo).

    Example::

        >>> bn = ember.nn.SyncBatchNorm(3)
        >>> bn(ember.randn(4, 3, 5)).shape   # one process: plain batch norm
        ember.Size([4, 3, 5])
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        group = _sync_group(self) if self.training else None
        if group is None:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        return self._synchronised_batch_norm(input, group, factor)

    def _synchronised_batch_norm(self, input, group, factor):
        reduce_dims = [0] + list(range(2, input.dim()))
        channels = input.size(1)
        local_count = input.numel() // channels
        count_column = tensor([float(local_count)], dtype=input.dtype, device=input.device)
        sums = _AllReduceSum.apply(cat([input.sum(dim=reduce_dims), count_column]), group)
        count = float(sums[-1])
        broadcast_shape = [1, channels] + [1] * (input.dim() - 2)
        mean = sums[:-1] / count
        centred = input - mean.reshape(broadcast_shape)
        var = _AllReduceSum.apply((centred * centred).sum(dim=reduce_dims), group) / count
        if self.track_running_stats:
            with no_grad():
                unbiased = var * (count / (count - 1))
                self.running_mean.mul_(1 - factor).add_(mean.detach() * factor)
                self.running_var.mul_(1 - factor).add_(unbiased.detach() * factor)
        out = centred * (var + self.eps).rsqrt().reshape(broadcast_shape)
        if self.weight is not None:
            out = out * self.weight.reshape(broadcast_shape)
        if self.bias is not None:
            out = out + self.bias.reshape(broadcast_shape)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every BatchNorm1d/2d/3d in ``module`` by a SyncBatchNorm sharing its
        parameters and buffers; a BatchNorm given directly comes back as a new SyncBatchNorm.

        Example::

            >>> net = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.BatchNorm2d(4))
            >>> type(ember.nn.SyncBatchNorm.convert_sync_batchnorm(net)[1]).__name__
            'SyncBatchNorm'
        """
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group,
                            bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
