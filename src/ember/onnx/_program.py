"""``ONNXProgram``: an exported ONNX model with the means to save it and run it, as torch's
``torch.onnx.ONNXProgram``.

ember's exporter traces the model (see ``_export.py``) and holds the result as an
``onnx.ModelProto``; ``export(..., dynamo=True)`` hands it back wrapped in this class. Running
it needs ``onnxruntime`` (``__call__``, :meth:`compute_values`) or onnx's reference evaluator
(:meth:`call_reference`). torch's ``model`` (an ``onnx_ir`` model) has no counterpart: use
:attr:`model_proto`.
"""

from __future__ import annotations

import copy
import os

__all__ = ["ONNXProgram"]


def _as_arrays(args, kwargs):
    """The inputs as NumPy arrays, positional first (keyword values in their given order)."""
    from .._tensor import Tensor

    values = list(args) + list((kwargs or {}).values())
    return [v.detach().cpu().numpy() if isinstance(v, Tensor) else v for v in values]


def _as_tensors(arrays):
    from .._tensor import tensor

    return [tensor(array) for array in arrays]


class ONNXProgram:
    """An exported ONNX model: :attr:`model_proto`, :meth:`save`, and calls that run it.

    Example::

        >>> program = ember.onnx.export(ember.nn.ReLU(), (ember.randn(2),), dynamo=True)
        >>> [node.op_type for node in program.model_proto.graph.node]
        ['Relu']
        >>> program(ember.tensor([-1.0, 2.0]))        # needs onnxruntime  # doctest: +SKIP
        [tensor([0., 2.])]
    """

    def __init__(self, model, exported_program=None):
        self._proto = model
        self.exported_program = exported_program
        self._session = None

    @property
    def model_proto(self):
        """The model as an ``onnx.ModelProto``."""
        return self._proto

    def __repr__(self):
        import onnx

        return f"ONNXProgram(\n    model=\n{onnx.printer.to_text(self._proto.graph)}\n)"

    # ------------------------------------------------------------ files

    def save(self, destination, *, include_initializers=True,
             keep_initializers_as_inputs=False, external_data=None):
        """Write the model to ``destination``. ``external_data=True`` puts the weights in a
        ``<file>.data`` file next to it (as torch does for large models).

        Example::

            >>> program.save("model.onnx")                  # doctest: +SKIP
        """
        import onnx

        proto = self._proto
        if not include_initializers or keep_initializers_as_inputs:
            proto = copy.deepcopy(proto)
            graph = proto.graph
            if keep_initializers_as_inputs:
                listed = {i.name for i in graph.input}
                for init in graph.initializer:
                    if init.name not in listed:
                        graph.input.append(onnx.helper.make_tensor_value_info(
                            init.name, init.data_type, list(init.dims)))
            if not include_initializers:
                del graph.initializer[:]
        destination = os.fspath(destination)
        if external_data:
            onnx.save_model(proto, destination, save_as_external_data=True,
                            all_tensors_to_one_file=True, size_threshold=0,
                            location=os.path.basename(destination) + ".data")
        else:
            onnx.save_model(proto, destination)

    def apply_weights(self, state_dict):
        """Replace the initializers named in ``state_dict`` by its tensors.

        Example::

            >>> program.apply_weights(model.state_dict())   # doctest: +SKIP
        """
        from onnx import numpy_helper

        for init in self._proto.graph.initializer:
            if init.name in state_dict:
                array = state_dict[init.name].detach().cpu().numpy()
                init.CopyFrom(numpy_helper.from_array(array, init.name))
        self.release()

    def rename_axes(self, rename_mapping):
        """Rename symbolic axes (``{"old": "new"}``) of the graph's inputs, outputs and
        values."""
        graph = self._proto.graph
        for value in (*graph.input, *graph.output, *graph.value_info):
            for dim in value.type.tensor_type.shape.dim:
                if dim.dim_param in rename_mapping:
                    dim.dim_param = str(rename_mapping[dim.dim_param])
        self.release()

    def optimize(self):
        """Optimise the graph in place. ember's exporter already folds weight-only parts and
        removes what no output reads while exporting, so there is nothing left to do here."""

    # ------------------------------------------------------------ running

    def initialize_inference_session(self, initializer=None):
        """Make the onnxruntime session that calls use (``initializer(model_bytes)`` if
        given)."""
        model = self._proto.SerializeToString()
        if initializer is not None:
            self._session = initializer(model)
            return
        try:
            import onnxruntime
        except ImportError as error:
            raise ImportError("running an ONNXProgram needs onnxruntime: pip install "
                              "onnxruntime") from error
        self._session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])

    def release(self):
        """Drop the inference session (made again on the next call)."""
        self._session = None

    def _feeds(self, args, kwargs):
        names = [i.name for i in self._proto.graph.input
                 if i.name not in {init.name for init in self._proto.graph.initializer}]
        return dict(zip(names, _as_arrays(args, kwargs)))

    def __call__(self, *args, **kwargs):
        """Run the model with onnxruntime; the outputs as ember tensors.

        Example::

            >>> program(ember.randn(2))                    # doctest: +SKIP
        """
        if self._session is None:
            self.initialize_inference_session()
        return _as_tensors(self._session.run(None, self._feeds(args, kwargs)))

    def call_reference(self, *args, **kwargs):
        """Run the model with onnx's reference evaluator (no onnxruntime needed)."""
        from onnx.reference import ReferenceEvaluator

        return _as_tensors(ReferenceEvaluator(self._proto).run(None,
                                                                self._feeds(args, kwargs)))

    def compute_values(self, value_names, args=(), kwargs=None):
        """The values named ``value_names`` inside the graph, for these inputs.

        Example::

            >>> program.compute_values(["x"], (ember.randn(2),))   # doctest: +SKIP
        """
        import onnxruntime

        import onnx

        proto = copy.deepcopy(self._proto)
        del proto.graph.output[:]
        for name in value_names:
            proto.graph.output.append(onnx.ValueInfoProto(name=name))
        session = onnxruntime.InferenceSession(proto.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        return _as_tensors(session.run(None, self._feeds(args, kwargs)))
