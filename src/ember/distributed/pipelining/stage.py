"""``PipelineStage``: one rank's part of a model split into sequential stages
(``torch.distributed.pipelining.stage``). Stage ``i`` receives its inputs from the rank of
stage ``i - 1`` and sends its outputs to the rank of stage ``i + 1`` (ranks in ``group``
are stage indices); backward sends the gradients the other way. Tensors travel with a small
header (dtype and shape), so no shapes need to be declared.
"""

from __future__ import annotations

from ... import _dtype
from .._ddp_internals import RankType  # noqa: F401  (torch's module names it)

__all__ = ["PipelineStage", "build_stage"]

_DTYPES = [_dtype.float32, _dtype.float64, _dtype.float16, _dtype.bfloat16, _dtype.int64,
           _dtype.int32, _dtype.int16, _dtype.int8, _dtype.uint8, _dtype.bool,
           _dtype.complex64, _dtype.complex128]
_HEADER = 12  # dtype, number of dims, up to ten sizes


def _c10d():
    from .. import distributed_c10d

    return distributed_c10d


class PipelineStage:
    """Stage ``stage_index`` of ``num_stages``: ``submodule`` runs on this rank.

    Example::

        >>> stage = PipelineStage(layers[rank], rank, world_size, ember.device("cpu"))
        >>> schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=loss_fn)
    """

    def __init__(self, submodule, stage_index, num_stages, device, input_args=None,
                 output_args=None, output_grads=None, input_grads=None, group=None,
                 dw_builder=None, get_mesh=None):
        if not 0 <= stage_index < num_stages:
            raise ValueError(f"Stage index {stage_index} is out of range of {num_stages}")
        if dw_builder is not None:
            raise NotImplementedError("PipelineStage(dw_builder=...): split weight-gradient "
                                      "computation (zero-bubble schedules) is not supported "
                                      "by ember")
        self.submod = submodule
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.device = device
        self.group = group
        self._inputs = {}   # microbatch -> the tensors it received (requiring grad)
        self._outputs = {}  # microbatch -> the tensors it produced

    @property
    def is_first(self):
        return self.stage_index == 0

    @property
    def is_last(self):
        return self.stage_index == self.num_stages - 1

    # ------------------------------------------------------------ communication

    def _peer(self, stage):
        return _c10d().get_global_rank(self.group, stage) if self.group is not None else stage

    def _send(self, tensors, stage):
        from ..._tensor import tensor

        c10d = _c10d()
        peer = self._peer(stage)
        c10d.send(tensor([len(tensors)]), dst=peer, group=self.group)
        for value in tensors:
            sizes = list(value.shape)
            if len(sizes) > _HEADER - 2:
                raise ValueError("PipelineStage: tensors of more than 10 dims cannot be sent")
            header = [_DTYPES.index(value.dtype), len(sizes), *sizes]
            c10d.send(tensor(header + [0] * (_HEADER - len(header))), dst=peer,
                      group=self.group)
            c10d.send(value.detach().contiguous(), dst=peer, group=self.group)

    def _recv(self, stage):
        from ...ops.creation import empty, zeros

        c10d = _c10d()
        peer = self._peer(stage)
        count = zeros(1, dtype=_dtype.int64)
        c10d.recv(count, src=peer, group=self.group)
        received = []
        for _ in range(int(count.item())):
            header = zeros(_HEADER, dtype=_dtype.int64)
            c10d.recv(header, src=peer, group=self.group)
            code, ndim, *sizes = header.tolist()
            value = empty(*sizes[:ndim], dtype=_DTYPES[code])
            c10d.recv(value, src=peer, group=self.group)
            received.append(value)
        return received

    # ------------------------------------------------------------ one microbatch

    def forward_one_chunk(self, index, args, kwargs=None):
        """Run microbatch ``index`` (its inputs received unless this is the first stage) and
        send the outputs on; the outputs."""
        from ..._tensor import Tensor

        if not self.is_first:
            args = tuple(t.requires_grad_() if t.is_floating_point() else t
                         for t in self._recv(self.stage_index - 1))
            kwargs = {}
        self._inputs[index] = [a for a in args if isinstance(a, Tensor)]
        output = self.submod(*args, **(kwargs or {}))
        outputs = list(output) if isinstance(output, (tuple, list)) else [output]
        self._outputs[index] = outputs
        if not self.is_last:
            self._send(outputs, self.stage_index + 1)
        return output

    def backward_one_chunk(self, index, loss=None):
        """Backward of microbatch ``index``: from ``loss`` on the last stage, else from the
        gradients the next stage sends; the inputs' gradients go to the previous stage."""
        from ...autograd import backward
        from ...ops.creation import zeros_like

        if self.is_last:
            backward([loss])
        else:
            grads = self._recv(self.stage_index + 1)
            pairs = [(out, grad) for out, grad in zip(self._outputs[index], grads)
                     if out.requires_grad]
            if pairs:
                backward([o for o, _ in pairs], [g for _, g in pairs])
        inputs = self._inputs.pop(index)
        self._outputs.pop(index, None)
        if not self.is_first:
            self._send([t.grad if t.grad is not None else zeros_like(t) for t in inputs],
                       self.stage_index - 1)


def build_stage(stage_module, stage_index, pipe_info, device, group=None):
    """torch's stage from a traced ``pipeline()``: not in ember (``NotImplementedError``).

    Example::

        >>> build_stage(module, 0, pipe_info, device)                # doctest: +SKIP
        Traceback (most recent call last):
        NotImplementedError: ...
    """
    raise NotImplementedError("torch.distributed.pipelining.build_stage needs a model split by "
                              "pipeline() (torch.export tracing), which ember does not build; "
                              "split the model by hand and make a PipelineStage per rank")
