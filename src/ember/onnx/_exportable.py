"""torch.onnx's helpers around export: ``ExportableModule`` (a module that knows its example
inputs and names) and ``InputObserver`` (records the inputs of real calls to propose export
arguments and dynamic axes)."""

from __future__ import annotations

import abc
import contextlib
import functools

from ..nn.modules.module import Module

__all__ = ["ExportableModule", "InputObserver"]


class ExportableModule(Module, abc.ABC):
    """A module that says how to export itself: implement ``forward`` and
    :meth:`example_arguments`; optionally :meth:`dynamic_shapes`, :meth:`input_names`,
    :meth:`output_names`. Then ``to_onnx()`` (or ``ember.onnx.export(module)``) exports it.

    Example::

        >>> class Twice(ember.onnx.ExportableModule):
        ...     def forward(self, x):
        ...         return x * 2
        ...     def example_arguments(self):
        ...         return (ember.randn(2, 3),), None
        >>> [n.op_type for n in Twice().to_onnx().model_proto.graph.node]
        ['Mul']
    """

    @abc.abstractmethod
    def example_arguments(self):
        """``(args, kwargs)``: inputs to trace the module with."""

    def dynamic_shapes(self):
        """Per input, ``{axis: name}`` for the axes whose size may change (None: none)."""
        return None

    def input_names(self):
        """The names of the graph's inputs (None: ember's defaults)."""
        return None

    def output_names(self):
        """The names of the graph's outputs (None: ember's defaults)."""
        return None

    def to_onnx(self, **kwargs):
        """Export the module with its own arguments and names; an ``ONNXProgram``."""
        from ._export import export

        return export(self, dynamo=True, **kwargs)


def _exportable_arguments(module, args, kwargs, options):
    """``(args, kwargs, options)`` for exporting an ExportableModule given without inputs."""
    example_args, example_kwargs = module.example_arguments()
    options = dict(options)
    own = {"input_names": module.input_names(), "output_names": module.output_names(),
           "dynamic_shapes": module.dynamic_shapes()}
    for key, value in own.items():
        if options.get(key) is None:
            options[key] = value
    return (args or example_args or ()), (kwargs or example_kwargs), options


class InputObserver:
    """Records the inputs of a module's calls, to propose export arguments
    (:meth:`infer_arguments`) and dynamic axes (:meth:`infer_dynamic_shapes`: the axes whose
    size changed between calls).

    Example::

        >>> net, observer = ember.nn.Linear(3, 2), ember.onnx.InputObserver()
        >>> with observer(net):
        ...     _ = net(ember.randn(4, 3))
        ...     _ = net(ember.randn(5, 3))
        >>> observer.infer_dynamic_shapes()
        ({0: DimHint(DYNAMIC)},)
    """

    def __init__(self, value_if_missing=None):
        self.value_if_missing = dict(value_if_missing or {})
        self._calls = []  # (args, kwargs, outputs) of each observed call

    @contextlib.contextmanager
    def __call__(self, model, store_n_calls=3, method_name="forward"):
        original = getattr(model, method_name)

        @functools.wraps(original)
        def observed(*args, **kwargs):
            outputs = original(*args, **kwargs)
            if len(self._calls) < store_n_calls:
                self._calls.append((args, kwargs, outputs))
            return outputs

        setattr(model, method_name, observed)
        try:
            yield self
        finally:
            if method_name in vars(model):
                delattr(model, method_name)
            if getattr(model, method_name) != original:
                setattr(model, method_name, original)

    def num_obs(self):
        """How many calls were recorded."""
        return len(self._calls)

    def _check_captured(self):
        if not self._calls:
            raise RuntimeError("No inputs were captured.")

    def _chosen(self, index):
        """The recorded call with the most tensors (or the one at ``index``)."""
        from .._tensor import Tensor

        self._check_captured()
        if index is not None:
            return self._calls[index]

        def tensor_count(call):
            args, kwargs, _ = call
            return sum(isinstance(v, Tensor) for v in (*args, *kwargs.values()))

        return max(self._calls, key=tensor_count)

    def infer_arguments(self, index_or_args_or_kwargs=None, flat=False, as_args_kwargs=False):
        """The inputs to export with: a recorded call's positional inputs (a tuple), its
        keyword inputs (a dict) when it had no positional ones, or both with
        ``as_args_kwargs=True``; ``flat=True`` gives the tensors as one list."""
        from .._tensor import Tensor

        if isinstance(index_or_args_or_kwargs, (tuple, dict)):
            given = index_or_args_or_kwargs
            args, kwargs = (given, {}) if isinstance(given, tuple) else ((), given)
        else:
            args, kwargs, _ = self._chosen(index_or_args_or_kwargs)
        kwargs = {**{k: v for k, v in self.value_if_missing.items()
                     if isinstance(k, str) and k not in kwargs}, **kwargs}
        if flat:
            return [v for v in (*args, *kwargs.values()) if isinstance(v, Tensor)]
        if as_args_kwargs:
            return tuple(args), kwargs
        return tuple(args) if args or not kwargs else kwargs

    def infer_dynamic_shapes(self, set_batch_dimension_for=None):
        """Per input, ``{axis: Dim.DYNAMIC}`` for the axes whose size differed between the
        recorded calls (None for inputs that are not tensors or never changed); inputs named
        (or numbered) in ``set_batch_dimension_for``, or all with True, get axis 0 too."""
        from .._tensor import Tensor
        from ..export import Dim

        self._check_captured()
        first_args, first_kwargs, _ = self._calls[0]

        def axes(key, value, others):
            if not isinstance(value, Tensor):
                return None
            changed = {axis for other in others if isinstance(other, Tensor)
                       and other.dim() == value.dim()
                       for axis in range(value.dim()) if other.shape[axis] != value.shape[axis]}
            wanted = set_batch_dimension_for is True or (
                set_batch_dimension_for and key in set_batch_dimension_for)
            if wanted and value.dim():
                changed.add(0)
            return {axis: Dim.DYNAMIC for axis in sorted(changed)} or None

        positional = tuple(
            axes(i, value, [call[0][i] for call in self._calls[1:] if len(call[0]) > i])
            for i, value in enumerate(first_args))
        keywords = {name: axes(name, value, [call[1][name] for call in self._calls[1:]
                                             if name in call[1]])
                    for name, value in first_kwargs.items()}
        if keywords and not positional:
            return keywords
        return positional if not keywords else (*positional, keywords)

    def check_discrepancies(self, onnx_program, atol=1e-4, rtol=0.1, progress_bar=False,
                            initializer=None, skip_none=True):
        """Run ``onnx_program`` on every recorded input and compare with the recorded outputs:
        one dict per call (``index``, ``abs``, ``rel``, ``passed``)."""
        from .._tensor import Tensor

        self._check_captured()
        if initializer is not None:
            onnx_program.initialize_inference_session(initializer)
        report = []
        for index, (args, kwargs, expected) in enumerate(self._calls):
            got = onnx_program(*args, **kwargs)
            expected = expected if isinstance(expected, (tuple, list)) else (expected,)
            expected = [e for e in expected if isinstance(e, Tensor) or not skip_none]
            worst_abs = worst_rel = 0.0
            for mine, want in zip(got, expected):
                difference = (mine.double() - want.detach().double()).abs()
                worst_abs = max(worst_abs, difference.max().item() if difference.numel() else 0)
                scale = want.detach().double().abs().clamp_min(1e-12)
                relative = (difference / scale).max().item() if difference.numel() else 0
                worst_rel = max(worst_rel, relative)
            report.append({"index": index, "abs": worst_abs, "rel": worst_rel,
                           "passed": worst_abs <= atol or worst_rel <= rtol})
        return report
